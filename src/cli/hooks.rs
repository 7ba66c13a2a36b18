//! `neocode hooks list|import|run`: the hooks of `.neocode/hooks.json` and
//! `<home>/hooks.json` (docs/RULES.md).

use std::path::PathBuf;

use clap::Subcommand;

use super::out::Out;
use super::{CmdResult, Failure};
use crate::runtime::Location;
use crate::runtime::hooks::{HookEvent, HookPayload, Hooks, import_claude_settings};
use crate::runtime::trust::{Admission, OwnWrite};
use crate::sanitize;

/// `neocode hooks ...`.
#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Every configured hook: event, matcher, command, timeout, file.
    #[command(after_help = "Example:\n  neocode hooks list")]
    List,
    /// Convert a Claude Code settings file's hooks into .neocode/hooks.json (tool names in
    /// matchers mapped: Bash → run_command, Edit/MultiEdit → edit_file, Write → write_file,
    /// Read → read_file, Grep → grep, Glob/LS → list_dir).
    #[command(
        after_help = "Examples:\n  neocode hooks import                      ~/.claude/settings.json and .claude/settings.json\n  neocode hooks import .claude/settings.local.json --force"
    )]
    Import {
        /// The settings file (default: ~/.claude/settings.json and the workspace's
        /// .claude/settings.json, merged).
        file: Option<PathBuf>,
        /// Replace an existing .neocode/hooks.json.
        #[arg(long)]
        force: bool,
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
pub fn run(loc: &Location, cmd: &HooksCommand) -> CmdResult {
    match cmd {
        HooksCommand::List => list(loc),
        HooksCommand::Import { file, force } => import(loc, file.as_ref(), *force),
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
            "{}  {}  {}  (timeout {}s, {})",
            c.event,
            sanitize::line(matcher),
            sanitize::line(&c.command),
            c.timeout.as_secs_f64(),
            shown(&c.file)
        ))?;
    }
    out.finish()
}

fn import(loc: &Location, file: Option<&PathBuf>, force: bool) -> CmdResult {
    let target = Hooks::workspace_file(loc.root());
    if target.exists() && !force {
        return Err(Failure::usage(format!(
            "{} exists; pass --force to replace it",
            shown(&target)
        )));
    }
    let sources: Vec<PathBuf> = match file {
        Some(f) => {
            if !f.exists() {
                return Err(Failure::usage(format!("{}: no such file", shown(f))));
            }
            vec![f.clone()]
        }
        None => {
            let mut v = Vec::new();
            if let Some(h) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
                v.push(PathBuf::from(h).join(".claude").join("settings.json"));
            }
            v.push(loc.root().join(".claude").join("settings.json"));
            v
        }
    };
    let report = import_claude_settings(&sources)
        .map_err(|e| Failure::usage(sanitize::line(&e).into_owned()))?;
    let mut out = Out::stdout();
    for n in &report.notes {
        out.line(&sanitize::line(n))?;
    }
    if report.imported == 0 {
        out.finish()?;
        return Err(Failure::runtime(format!(
            "no command hooks to import from {}",
            sources
                .iter()
                .map(|s| shown(s))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let text = serde_json::to_string_pretty(&report.hooks)
        .map_err(|e| Failure::runtime(format!("cannot write the hooks: {e}")))?;
    // What is written must load: the same parser the session uses.
    crate::runtime::hooks::parse_hooks(&text, &target)
        .map_err(|e| Failure::runtime(format!("the converted hooks do not load: {e}")))?;
    if let Some(dir) = target.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| Failure::runtime(format!("cannot create {}: {e}", shown(dir))))?;
    }
    let own = OwnWrite::begin(&loc.home, loc.root());
    std::fs::write(&target, text + "\n")
        .map_err(|e| Failure::runtime(format!("cannot write {}: {e}", shown(&target))))?;
    // The user's own change: a trusted workspace stays trusted (an untrusted one is not
    // trusted by it: `neocode trust` reviews it).
    let trusted = own.was_trusted();
    match own.done(crate::runtime::trust::scan::HOOKS_FILE) {
        Ok(true) => {}
        Ok(false) if trusted => out.line(
            "other files of this workspace changed too, so it is not trusted as it is: review it with `neocode trust`",
        )?,
        Ok(false) => out.line(
            "this workspace is not trusted: its hooks run once you trust it (`neocode trust`)",
        )?,
        Err(e) => out.line(&format!(
            "the trust record was not refreshed: {}",
            sanitize::line(&e.to_string())
        ))?,
    }
    out.line(&format!(
        "wrote {} hook{} to {}",
        report.imported,
        if report.imported == 1 { "" } else { "s" },
        shown(&target)
    ))?;
    out.finish()
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
            crate::runtime::hooks::PermissionDecision::Allow => "allow",
            crate::runtime::hooks::PermissionDecision::Ask => "ask",
            crate::runtime::hooks::PermissionDecision::Deny => "deny",
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
