//! `neocode doctor`: are the session databases sound (SQLite's integrity check), what to do
//! when one is not (`--recover`), the provider settings (never the key), what the configured
//! server can do (a probe of four small calls, in `doctor_probe.rs`, which imports nothing
//! from here; `--no-probe` skips it) and what confines commands.

use std::io::Write;

use super::common::{CmdResult, Failure};
use crate::runtime::Location;
use crate::runtime::config::{Overrides, Settings};
use crate::sanitize;
use crate::session::doctor;

/// Runs the checks; exit 1 when a database is damaged (and not recovered) or the probe of
/// the configured provider failed.
pub(super) fn run(loc: &Location, recover: bool, probe: bool) -> CmdResult {
    let mut out = String::new();
    line(&mut out, format!("home       {}", loc.home.display()));
    line(&mut out, format!("workspace  {}", loc.root().display()));
    let dbs = databases_report(loc, recover, &mut out);
    let probe_failed = provider_report(loc, probe, &mut out);
    rules_report(loc, &mut out);
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_all(out.as_bytes()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            return Err(Failure::quiet());
        }
        return Err(Failure::runtime(format!("writing the report: {e}")));
    }
    if dbs.damaged > 0 {
        return Err(Failure::runtime(format!(
            "{} damaged database(s); run `neocode doctor --recover`",
            dbs.damaged
        )));
    }
    if dbs.failed > 0 {
        return Err(Failure::runtime(format!(
            "{} database(s) could not be recovered; the damaged files were left as they are",
            dbs.failed
        )));
    }
    if probe_failed {
        return Err(Failure::runtime(
            "the provider probe failed (see above); `neocode doctor --no-probe` skips it",
        ));
    }
    Ok(())
}

/// One line of the report, sanitised.
fn line(out: &mut String, s: String) {
    out.push_str(&sanitize::line(&s));
    out.push('\n');
}

/// What the databases section found: damaged ones left as they are (no `--recover`) and
/// ones `--recover` could not recover.
struct Databases {
    damaged: usize,
    failed: usize,
}

/// The databases section: every workspace database's integrity, and with `recover` a
/// recovered copy of each damaged one.
fn databases_report(loc: &Location, recover: bool, out: &mut String) -> Databases {
    out.push_str("\nDatabases\n");
    let mut dbs = crate::session::workspace::all_workspace_dbs(&loc.home);
    let current = loc.paths.db();
    if current.is_file() && !dbs.contains(&current) {
        dbs.push(current);
    }
    if dbs.is_empty() {
        out.push_str("  none yet\n");
    }
    let mut found = Databases {
        damaged: 0,
        failed: 0,
    };
    for db in &dbs {
        let h = doctor::check(db);
        if h.ok {
            line(out, format!("  ok       {}", db.display()));
            continue;
        }
        line(out, format!("  DAMAGED  {}", db.display()));
        for p in h.problems.iter().take(10) {
            line(out, format!("           {p}"));
        }
        if let Some(m) = &h.marked {
            line(
                out,
                format!("           a write stopped earlier on: {}", m.trim()),
            );
        }
        if !recover {
            found.damaged += 1;
            out.push_str("           neocode writes nothing more to it. Stop every neocode using this workspace, then run\n");
            out.push_str("           `neocode doctor --recover`: it writes a recovered copy in its place and keeps the\n");
            out.push_str("           damaged file beside it (session.db.damaged-<time>); nothing is deleted.\n");
            continue;
        }
        if !recover_one(db, out) {
            found.failed += 1;
        }
    }
    found
}

/// Recovers one damaged database and says how; false when it could not.
fn recover_one(db: &std::path::Path, out: &mut String) -> bool {
    if let Some(id) = running_turn(db) {
        line(
            out,
            format!(
                "  NOT RECOVERED {}: session {id} is running a turn in another neocode; stop it first",
                db.display()
            ),
        );
        return false;
    }
    match doctor::recover(db) {
        Ok(r) => {
            let how = if r.method == "vacuum" {
                "copied whole through VACUUM INTO".to_string()
            } else {
                format!("salvaged row by row ({} unreadable rows lost)", r.lost_rows)
            };
            line(
                out,
                format!(
                    "  RECOVERED {}: {how}; {} sessions; the damaged file is kept as {}",
                    db.display(),
                    r.sessions,
                    r.kept.display()
                ),
            );
            true
        }
        Err(e) => {
            line(out, format!("  NOT RECOVERED {}: {e}", db.display()));
            false
        }
    }
}

/// The provider section (settings, never the key; the probe unless `probe` is off) and the
/// sandbox section; true when the probe ran and failed.
fn provider_report(loc: &Location, probe: bool, out: &mut String) -> bool {
    out.push_str("\nProvider\n");
    let mut probe_failed = false;
    match Settings::load(&loc.home, &Overrides::default()) {
        Ok(s) => {
            line(
                out,
                format!(
                    "  base url  {}",
                    s.effective_base_url().as_deref().unwrap_or("(not set)")
                ),
            );
            line(
                out,
                format!("  model     {}", s.model.as_deref().unwrap_or("(not set)")),
            );
            line(out, format!("  api       {}", s.api.as_str()));
            let key = match s.key_source() {
                Some(src) if s.has_api_key() => format!("yes (from {src})"),
                _ => "no".to_string(),
            };
            line(out, format!("  api key   {key}"));
            if let crate::runtime::config::ProviderStatus::Missing(m) = s.provider_status() {
                line(out, format!("  missing   {m}"));
            } else if probe {
                probe_failed = !super::doctor_probe::probe_provider(&s, out);
            }
            out.push_str("\nSandbox\n");
            line(out, format!("  {}", sandbox_report(&s.sandbox)));
        }
        Err(e) => {
            line(out, format!("  cannot read the settings: {e}"));
            out.push_str("\nSandbox\n");
            line(out, format!("  {}", sandbox_report(&Default::default())));
        }
    }
    probe_failed
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
    use crate::runtime::policy::permissions::List;
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
