//! `neocode hooks list|import|run`: the hooks of `.neocode/hooks.json` and
//! `<home>/hooks.json` (docs/RULES.md).

use std::path::PathBuf;

use clap::Subcommand;

use super::common::{CmdResult, Failure};
use super::out::Out;
use crate::runtime::Location;
use crate::runtime::policy::hooks::{HookEvent, HookPayload, Hooks, import_claude_settings};
use crate::runtime::policy::permissions::Rules;
use crate::runtime::trust::{Admission, OwnWrite};
use crate::sanitize;

/// `neocode hooks ...`.
#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Every configured hook: event, matcher, command, timeout, file.
    #[command(after_help = "Example:\n  neocode hooks list")]
    List,
    /// Convert Claude Code settings files: their hooks (tool names in matchers mapped: Bash
    /// → run_command, Edit/MultiEdit → edit_file, Write → write_file, Read → read_file, Grep
    /// → grep, Glob/LS → list_dir; the hooks are sent Claude Code's names) and their
    /// permissions.allow/ask/deny. Your own (~/.claude/settings.json, settings.local.json) go
    /// to neocode's home, the workspace's .claude/settings.json to .neocode/; what is written
    /// and where is listed first, and asked on a terminal.
    #[command(
        after_help = "Examples:\n  neocode hooks import                      ~/.claude/settings.json → <home>, .claude/settings.json → .neocode/\n  neocode hooks import --dry-run            list what would be written, and where\n  neocode hooks import .claude/settings.local.json --to workspace --force"
    )]
    Import {
        /// One settings file (default: ~/.claude/settings.json and the workspace's
        /// .claude/settings.json).
        file: Option<PathBuf>,
        /// Where everything goes (default: your own settings to your home, the workspace's
        /// to the workspace).
        #[arg(long, value_enum)]
        to: Option<ImportTo>,
        /// Replace an existing hooks file.
        #[arg(long)]
        force: bool,
        /// List what would be written, and where, and write nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Run the hooks of one event now, as a session would, and print what they decided.
    #[command(
        after_help = "Examples:\n  neocode hooks run PreToolUse --tool run_command --input '{\"command\":\"ls\"}'\n  neocode hooks run UserPromptSubmit --prompt 'fix the tests'"
    )]
    Run {
        /// SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop, PreCompact or
        /// Notification.
        event: String,
        /// The tool (PreToolUse, PostToolUse).
        #[arg(long, value_name = "NAME")]
        tool: Option<String>,
        /// The tool's input as JSON.
        #[arg(long, value_name = "JSON")]
        input: Option<String>,
        /// The prompt (UserPromptSubmit).
        #[arg(long, value_name = "TEXT")]
        prompt: Option<String>,
    },
}

/// Runs a `hooks` subcommand.
pub(super) fn run(loc: &Location, cmd: &HooksCommand) -> CmdResult {
    match cmd {
        HooksCommand::List => list(loc),
        HooksCommand::Import {
            file,
            to,
            force,
            dry_run,
        } => import(
            loc,
            file.as_ref(),
            ImportOpts {
                to: *to,
                force: *force,
                dry_run: *dry_run,
            },
        ),
        HooksCommand::Run {
            event,
            tool,
            input,
            prompt,
        } => run_event(
            loc,
            event,
            tool.as_deref(),
            input.as_deref(),
            prompt.as_deref(),
        ),
    }
}

/// The hooks a session of this workspace runs (the workspace's only when it is trusted),
/// and why the workspace's are left out when it declares some and they are.
fn load(loc: &Location) -> Result<(Hooks, Option<String>), Failure> {
    let admission = Admission::check(&loc.home, loc.root());
    let hooks = admission
        .hooks(&loc.home)
        .map_err(|e| Failure::usage(sanitize::line(&e.to_string()).into_owned()))?;
    let left_out = admission
        .left_out()
        .filter(|_| admission.declares_hooks())
        .map(|why| format!("not run: {}", sanitize::line(&why)));
    Ok((hooks, left_out))
}

fn shown(p: &std::path::Path) -> String {
    sanitize::line(&p.display().to_string()).into_owned()
}

fn list(loc: &Location) -> CmdResult {
    let (hooks, left_out) = load(loc)?;
    let mut out = Out::stdout();
    if let Some(l) = &left_out {
        out.line(l)?;
    }
    if hooks.commands().is_empty() && left_out.is_none() {
        out.line(&format!(
            "no hooks (configure them in {} or {}; `neocode hooks import` converts Claude Code's)",
            shown(&Hooks::workspace_file(loc.root())),
            shown(&Hooks::home_file(&loc.home))
        ))?;
        return out.finish();
    }
    for c in hooks.commands() {
        let matcher = if c.matcher.text.is_empty() {
            "*"
        } else {
            c.matcher.text.as_str()
        };
        out.line(&format!(
            "{}  {}  {}  (timeout {}s, {}{})",
            c.event,
            sanitize::line(matcher),
            sanitize::line(&c.command),
            c.timeout.as_secs_f64(),
            shown(&c.file),
            if c.claude_code {
                "; sent Claude Code's names"
            } else {
                ""
            }
        ))?;
    }
    out.finish()
}

/// Where imported hooks and rules go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ImportTo {
    /// `.neocode/hooks.json` and `.neocode/permissions.toml`: shared with the repository.
    Workspace,
    /// `<home>/hooks.json` and `[permissions]` of `<home>/config.toml`: yours, in every
    /// workspace.
    Home,
}

/// `hooks import`'s switches.
#[derive(Debug, Clone, Copy)]
struct ImportOpts {
    to: Option<ImportTo>,
    force: bool,
    dry_run: bool,
}

/// The files of one destination and what goes into them.
struct Target {
    to: ImportTo,
    hooks_file: PathBuf,
    rules_file: PathBuf,
    hooks: serde_json::Value,
    hook_count: usize,
    rules: Vec<(crate::runtime::policy::permissions::List, String)>,
}

impl Target {
    fn new(loc: &Location, to: ImportTo) -> Target {
        let (hooks_file, rules_file) = match to {
            ImportTo::Workspace => (
                Hooks::workspace_file(loc.root()),
                Rules::workspace_file(loc.root()),
            ),
            ImportTo::Home => (Hooks::home_file(&loc.home), Rules::home_file(&loc.home)),
        };
        Target {
            to,
            hooks_file,
            rules_file,
            hooks: serde_json::json!({ "hooks": {} }),
            hook_count: 0,
            rules: Vec::new(),
        }
    }

    fn whose(&self) -> &'static str {
        match self.to {
            ImportTo::Workspace => "shared with the repository",
            ImportTo::Home => "yours, in every workspace",
        }
    }
}

/// The settings files to read, each with whether it is the user's own and where it goes:
/// the user's own (`~/.claude/settings.json`, a `settings.local.json`) to neocode's home,
/// the workspace's to the workspace, unless `to` says.
fn import_sources(
    loc: &Location,
    file: Option<&PathBuf>,
    to: Option<ImportTo>,
) -> Result<Vec<(PathBuf, bool, ImportTo)>, Failure> {
    let user_claude = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".claude"));
    let personal = |f: &std::path::Path| user_claude.as_ref().is_some_and(|d| f.starts_with(d));
    Ok(match file {
        Some(f) => {
            if !f.exists() {
                return Err(Failure::usage(format!("{}: no such file", shown(f))));
            }
            let mine = personal(f);
            // Claude Code's settings.local.json is the user's own too (not committed).
            let local = f.file_name().is_some_and(|n| n == "settings.local.json");
            let default = if mine || local {
                ImportTo::Home
            } else {
                ImportTo::Workspace
            };
            vec![(f.clone(), mine, to.unwrap_or(default))]
        }
        None => {
            let mut v = Vec::new();
            if let Some(d) = &user_claude {
                v.push((d.join("settings.json"), true, to.unwrap_or(ImportTo::Home)));
            }
            v.push((
                loc.root().join(".claude").join("settings.json"),
                false,
                to.unwrap_or(ImportTo::Workspace),
            ));
            v
        }
    })
}

/// `hooks import`: lists what each settings file gives and where it goes, asks on a
/// terminal, then writes.
fn import(loc: &Location, file: Option<&PathBuf>, opts: ImportOpts) -> CmdResult {
    let sources = import_sources(loc, file, opts.to)?;
    let files: Vec<(PathBuf, bool)> = sources.iter().map(|(f, p, _)| (f.clone(), *p)).collect();
    let report = import_claude_settings(&files, loc.root())
        .map_err(|e| Failure::usage(sanitize::line(&e.to_string()).into_owned()))?;
    let mut out = Out::stdout();
    for n in &report.notes {
        out.line(&sanitize::line(n))?;
    }
    let mut targets: Vec<Target> = Vec::new();
    for src in &report.sources {
        let to = sources
            .iter()
            .find(|(f, _, _)| *f == src.file)
            .map_or(ImportTo::Workspace, |s| s.2);
        if !targets.iter().any(|t| t.to == to) {
            targets.push(Target::new(loc, to));
        }
        if let Some(t) = targets.iter_mut().find(|t| t.to == to) {
            list_source(src, t, &mut out)?;
        }
    }
    targets.retain(|t| t.hook_count > 0 || !t.rules.is_empty());
    if targets.is_empty() {
        out.finish()?;
        return Err(Failure::runtime(format!(
            "no command hooks or permission rules to import from {}",
            files
                .iter()
                .map(|(f, _)| shown(f))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    for t in &targets {
        if t.hook_count > 0 && t.hooks_file.exists() && !opts.force {
            out.finish()?;
            return Err(Failure::usage(format!(
                "{} exists; pass --force to replace it",
                shown(&t.hooks_file)
            )));
        }
    }
    if opts.dry_run {
        out.line("Nothing written (--dry-run).")?;
        return out.finish();
    }
    out.flush()?;
    if !confirm_write()? {
        out.line("Nothing written.")?;
        return out.finish();
    }
    let own = OwnWrite::begin(&loc.home, loc.root());
    let to_workspace = targets.iter().any(|t| matches!(t.to, ImportTo::Workspace));
    for t in &targets {
        write_target(t, &mut out)?;
    }
    if to_workspace {
        trust_after_import(own, &mut out)?;
    }
    out.finish()
}

/// Prints what `src` gives and where it goes, and adds it to `t`.
fn list_source(
    src: &crate::runtime::policy::hooks::SourceImport,
    t: &mut Target,
    out: &mut Out,
) -> Result<(), Failure> {
    out.line(&format!("From {}:", shown(&src.file)))?;
    for n in &src.notes {
        out.line(&format!("  {}", sanitize::line(n)))?;
    }
    if src.imported > 0 {
        out.line(&format!(
            "  hooks → {} ({}; sent Claude Code's tool names and fields):",
            shown(&t.hooks_file),
            t.whose()
        ))?;
        for l in &src.hook_lines {
            out.line(&format!("    {}", sanitize::line(l)))?;
        }
        crate::runtime::policy::hooks::merge_hooks(&mut t.hooks, &src.hooks);
        t.hook_count += src.imported;
    }
    if !src.rules.is_empty() {
        out.line(&format!(
            "  permission rules → {} ({}):",
            shown(&t.rules_file),
            t.whose()
        ))?;
        for (list, rule, from) in &src.rules {
            out.line(&format!(
                "    {:<5}  {}  (from {})",
                list.key(),
                sanitize::line(rule),
                sanitize::line(from)
            ))?;
            t.rules.push((*list, rule.clone()));
        }
    }
    Ok(())
}

/// On a terminal, asks before writing (Enter: yes); elsewhere writes.
fn confirm_write() -> Result<bool, Failure> {
    use std::io::IsTerminal;
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Ok(true);
    }
    let mut err = std::io::stderr().lock();
    let answer = super::common::ask(&stdin, &mut err, format_args!("Write these? [Y/n] "))?;
    Ok(!answer.starts_with('n'))
}

/// The user's own change: a trusted workspace stays trusted (an untrusted one is not trusted
/// by it: `neocode trust` reviews it).
fn trust_after_import(own: OwnWrite, out: &mut Out) -> Result<(), Failure> {
    use crate::runtime::trust::scan::{HOOKS_FILE, RULES_FILE};
    let trusted = own.was_trusted();
    match own.done_all(&[HOOKS_FILE, RULES_FILE]) {
        Ok(true) => Ok(()),
        Ok(false) if trusted => out.line(
            "other files of this workspace changed too, so it is not trusted as it is: review it with `neocode trust`",
        ),
        Ok(false) => out.line(
            "this workspace is not trusted: its hooks and allow rules apply once you trust it (`neocode trust`)",
        ),
        Err(e) => out.line(&format!(
            "the trust record was not refreshed: {}",
            sanitize::line(&e.to_string())
        )),
    }
}

fn write_target(t: &Target, out: &mut Out) -> Result<(), Failure> {
    use crate::runtime::policy::permissions::List;
    if t.hook_count > 0 {
        crate::runtime::policy::hooks::write_hooks_file(&t.hooks_file, &t.hooks).map_err(|e| {
            Failure::runtime(sanitize::line(&format!("cannot write the hooks: {e}")).into_owned())
        })?;
        out.line(&format!(
            "wrote {} hook{} to {}",
            t.hook_count,
            if t.hook_count == 1 { "" } else { "s" },
            shown(&t.hooks_file)
        ))?;
    }
    for list in [List::Allow, List::Ask, List::Deny] {
        let rules: Vec<String> = t
            .rules
            .iter()
            .filter(|(l, _)| *l == list)
            .map(|(_, r)| r.clone())
            .collect();
        if rules.is_empty() {
            continue;
        }
        let added = crate::runtime::policy::permissions::append_rules(&t.rules_file, list, &rules)
            .map_err(|e| Failure::runtime(sanitize::line(&e.to_string()).into_owned()))?;
        out.line(&format!(
            "added {added} {} rule{} to {}",
            list.key(),
            if added == 1 { "" } else { "s" },
            shown(&t.rules_file)
        ))?;
    }
    Ok(())
}

fn run_event(
    loc: &Location,
    event: &str,
    tool: Option<&str>,
    input: Option<&str>,
    prompt: Option<&str>,
) -> CmdResult {
    let Some(ev) = HookEvent::parse(event) else {
        let names: Vec<&str> = HookEvent::ALL.iter().map(|e| e.name()).collect();
        return Err(Failure::usage(format!(
            "unknown event `{}` (events: {})",
            sanitize::line(event),
            names.join(", ")
        )));
    };
    let (hooks, left_out) = load(loc)?;
    if let Some(l) = &left_out {
        let mut err = std::io::stderr().lock();
        let _ = std::io::Write::write_all(&mut err, format!("neocode: {l}\n").as_bytes());
    }
    let mut p = HookPayload::new("cli", loc.root());
    p.tool_name = tool.map(str::to_string);
    if let Some(i) = input {
        let v = serde_json::from_str(i)
            .map_err(|e| Failure::usage(format!("--input is not JSON: {e}")))?;
        p.tool_input = Some(v);
    }
    p.prompt = prompt.map(str::to_string);
    match ev {
        HookEvent::SessionStart => p.source = Some("startup".into()),
        HookEvent::PreCompact => p.trigger = Some("manual".into()),
        HookEvent::Notification => {
            p.notification_type = Some("idle_prompt".into());
            p.message = Some("neocode is waiting for you".into());
        }
        HookEvent::Stop => p.stop_hook_active = Some(false),
        _ => {}
    }
    let o = hooks.run_hooks(ev, &p);
    let mut out = Out::stdout();
    if o.runs.is_empty() {
        out.line(&format!("no {ev} hook matches"))?;
        return out.finish();
    }
    for r in &o.runs {
        let status = match (r.exit_code, r.timed_out) {
            (_, true) => "killed at its timeout".to_string(),
            (Some(c), _) => format!("exit {c}"),
            (None, _) => r
                .spawn_error
                .clone()
                .unwrap_or_else(|| "ended by a signal".into()),
        };
        out.line(&format!(
            "ran `{}`: {status} in {} ms{}",
            sanitize::line(&r.command),
            r.duration_ms,
            if r.output_cut { " (output cut)" } else { "" }
        ))?;
    }
    if let Some(b) = &o.block {
        out.line(&format!("blocked: {}", sanitize::line(b)))?;
    }
    if let Some((d, why)) = &o.permission {
        let d = match d {
            crate::runtime::policy::hooks::PermissionDecision::Allow => "allow",
            crate::runtime::policy::hooks::PermissionDecision::Ask => "ask",
            crate::runtime::policy::hooks::PermissionDecision::Deny => "deny",
        };
        match why {
            Some(w) => out.line(&format!("permission: {d} ({})", sanitize::line(w)))?,
            None => out.line(&format!("permission: {d}"))?,
        }
    }
    for c in &o.additional_context {
        out.line(&format!("context: {}", sanitize::line(c)))?;
    }
    for m in &o.messages {
        out.line(&format!("message: {}", sanitize::line(m)))?;
    }
    for e in &o.errors {
        out.line(&format!("error: {}", sanitize::line(e)))?;
    }
    if let Some(s) = &o.stop {
        out.line(&format!("stop: {}", sanitize::line(s)))?;
    }
    if o.block.is_none() && o.permission.is_none() && o.errors.is_empty() && o.stop.is_none() {
        out.line("continue")?;
    }
    out.finish()
}
