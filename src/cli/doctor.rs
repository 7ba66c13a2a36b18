//! `neocode doctor`: are the session databases sound (SQLite's integrity check), what to do
//! when one is not (`--recover`), the provider settings (never the key), what the configured
//! server can do (a probe of three small calls, in `doctor_probe.rs`; `--no-probe` skips it)
//! and what confines commands.

use std::io::Write;

use super::{CmdResult, Failure};
use crate::runtime::Location;
use crate::runtime::config::{Overrides, Settings};
use crate::sanitize;
use crate::session::doctor;

/// Runs the checks; exit 1 when a database is damaged (and not recovered) or the probe of
/// the configured provider failed.
#[expect(clippy::too_many_lines)]
pub fn run(loc: &Location, recover: bool, probe: bool) -> CmdResult {
    let mut out = String::new();
    let line = |out: &mut String, s: String| {
        out.push_str(&sanitize::line(&s));
        out.push('\n');
    };
    line(&mut out, format!("home       {}", loc.home.display()));
    line(&mut out, format!("workspace  {}", loc.root().display()));

    out.push_str("\nDatabases\n");
    let mut dbs = crate::session::workspace::all_workspace_dbs(&loc.home);
    let current = loc.paths.db();
    if current.is_file() && !dbs.contains(&current) {
        dbs.push(current);
    }
    if dbs.is_empty() {
        out.push_str("  none yet\n");
    }
    let mut damaged = 0usize;
    let mut failed = 0usize;
    let mut probe_failed = false;
    for db in &dbs {
        let h = doctor::check(db);
        if h.ok {
            line(&mut out, format!("  ok       {}", db.display()));
            continue;
        }
        line(&mut out, format!("  DAMAGED  {}", db.display()));
        for p in h.problems.iter().take(10) {
            line(&mut out, format!("           {p}"));
        }
        if let Some(m) = &h.marked {
            line(
                &mut out,
                format!("           a write stopped earlier on: {}", m.trim()),
            );
        }
        if !recover {
            damaged += 1;
            out.push_str("           neocode writes nothing more to it. Stop every neocode using this workspace, then run\n");
            out.push_str("           `neocode doctor --recover`: it writes a recovered copy in its place and keeps the\n");
            out.push_str("           damaged file beside it (session.db.damaged-<time>); nothing is deleted.\n");
            continue;
        }
        if let Some(id) = running_turn(db) {
            failed += 1;
            line(
                &mut out,
                format!(
                    "  NOT RECOVERED {}: session {id} is running a turn in another neocode; stop it first",
                    db.display()
                ),
            );
            continue;
        }
        match doctor::recover(db) {
            Ok(r) => {
                let how = if r.method == "vacuum" {
                    "copied whole through VACUUM INTO".to_string()
                } else {
                    format!("salvaged row by row ({} unreadable rows lost)", r.lost_rows)
                };
                line(
                    &mut out,
                    format!(
                        "  RECOVERED {}: {how}; {} sessions; the damaged file is kept as {}",
                        db.display(),
                        r.sessions,
                        r.kept.display()
                    ),
                );
            }
            Err(e) => {
                failed += 1;
                line(&mut out, format!("  NOT RECOVERED {}: {e}", db.display()));
            }
        }
    }

    out.push_str("\nProvider\n");
    match Settings::load(&loc.home, &Overrides::default()) {
        Ok(s) => {
            line(
                &mut out,
                format!(
                    "  base url  {}",
                    s.effective_base_url().as_deref().unwrap_or("(not set)")
                ),
            );
            line(
                &mut out,
                format!("  model     {}", s.model.as_deref().unwrap_or("(not set)")),
            );
            line(&mut out, format!("  api       {}", s.api.as_str()));
            let key = match s.key_source() {
                Some(src) if s.has_api_key() => format!("yes (from {src})"),
                _ => "no".to_string(),
            };
            line(&mut out, format!("  api key   {key}"));
            if let crate::runtime::config::ProviderStatus::Missing(m) = s.provider_status() {
                line(&mut out, format!("  missing   {m}"));
            } else if probe {
                probe_failed = !super::doctor_probe::probe_provider(&s, &mut out);
            }
            out.push_str("\nSandbox\n");
            line(&mut out, format!("  {}", sandbox_report(&s.sandbox)));
        }
        Err(e) => {
            line(&mut out, format!("  cannot read the settings: {e}"));
            out.push_str("\nSandbox\n");
            line(
                &mut out,
                format!("  {}", sandbox_report(&Default::default())),
            );
        }
    }
    rules_report(loc, &mut out);
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_all(out.as_bytes()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            return Err(Failure::quiet());
        }
        return Err(Failure::runtime(format!("writing the report: {e}")));
    }
    if damaged > 0 {
        return Err(Failure::runtime(format!(
            "{damaged} damaged database(s); run `neocode doctor --recover`"
        )));
    }
    if failed > 0 {
        return Err(Failure::runtime(format!(
            "{failed} database(s) could not be recovered; the damaged files were left as they are"
        )));
    }
    if probe_failed {
        return Err(Failure::runtime(
            "the provider probe failed (see above); `neocode doctor --no-probe` skips it",
        ));
    }
    Ok(())
}

/// The window in words: the server's, the configured one, or neither (and what to set). A
/// turn uses the smaller of the two when both are known.
pub(super) fn window_words(told: Option<u64>, s: &Settings) -> String {
    let set = s.context_window;
    match told {
        Some(w) if s.context_window_known && set > w => format!(
            "{w} tokens (told by the server); context_window = {set} in config.toml is larger, so neocode uses {w}"
        ),
        Some(w) if s.context_window_known && set < w => format!(
            "{w} tokens (told by the server); neocode keeps context_window = {set} from config.toml"
        ),
        Some(w) => format!("{w} tokens (told by the server; the gauge and compaction use it)"),
        None if s.context_window_known => {
            format!("not told by the server; context_window = {set} from config.toml is used")
        }
        None => "not told by the server: set context_window in config.toml to the server's window (until then the gauge says \"window unknown\" and compaction cannot plan)".into(),
    }
}

/// A session of the database `db`'s workspace whose turn a live process runs (its lease is
/// held), if any: recovering under it would leave it writing to the damaged file.
fn running_turn(db: &std::path::Path) -> Option<String> {
    let dir = db.parent()?;
    let leases = std::fs::read_dir(dir.join("leases")).ok()?;
    leases.flatten().find_map(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        let id = name.strip_suffix(".lock")?;
        crate::runtime::lease::is_held(dir, id).then(|| id.to_string())
    })
}

/// The sandbox's walls: which of them stand, in one line.
fn sandbox_report(s: &crate::runtime::tools::SandboxSettings) -> String {
    crate::runtime::tools::sandbox::walls(s).to_string()
}

/// The permission rules and hooks: where they come from, and which read denials commands
/// are not held to (the sandbox cannot hide a file from a command yet: only `read_file`,
/// `grep` and `list_dir` honour them).
fn rules_report(loc: &Location, out: &mut String) {
    use crate::runtime::permissions::List;
    out.push('\n');
    let mut line = |s: String| {
        out.push_str(&sanitize::line(&s));
        out.push('\n');
    };
    line("Rules and hooks".into());
    let admission = crate::runtime::trust::Admission::check(&loc.home, loc.root());
    line(format!(
        "  workspace trust  {}",
        match &admission.state {
            crate::runtime::trust::TrustState::Trusted { .. } =>
                "trusted: its hooks, rules and skills are used".to_string(),
            crate::runtime::trust::TrustState::NothingDeclared =>
                "nothing to trust: the workspace declares no settings".to_string(),
            _ => admission.left_out().unwrap_or_default(),
        }
    ));
    let rules = match admission.rules(&loc.home) {
        Ok(r) => r,
        Err(e) => {
            line(format!("  BAD RULE FILE  {e}"));
            return;
        }
    };
    if rules.rules().is_empty() {
        line("  no permission rules (the approval policy decides every call)".into());
    }
    for f in rules.files() {
        let n = rules.rules().iter().filter(|r| &r.at.file == f).count();
        line(format!("  {n} rule(s)  {}", f.display()));
    }
    for r in rules.rules().iter().filter(|r| r.list == List::Deny) {
        if r.tool() == "read_file" || r.tool() == "*" {
            line(format!(
                "  {}: read_file, grep and list_dir honour it; commands are not held to it (the sandbox cannot hide files from run_command here): deny the commands too, e.g. run_command(cat *)",
                r.at.text
            ));
        }
    }
    for r in rules.ignored() {
        line(format!(
            "  not used (workspace not trusted)  allow {}  ({}:{})",
            r.text,
            r.file.display(),
            r.line
        ));
    }
    match admission.hooks(&loc.home) {
        Ok(h) if h.commands().is_empty() => line("  no hooks".into()),
        Ok(h) => {
            for f in h.files() {
                let n = h.commands().iter().filter(|c| &c.file == f).count();
                line(format!("  {n} hook(s)  {}", f.display()));
            }
        }
        Err(e) => line(format!("  BAD HOOKS FILE  {e}")),
    }
}
