//! `neocode rules check|list`: the permission rules of `.neocode/permissions.toml` and the
//! home config's `[permissions]` (docs/RULES.md).

use clap::Subcommand;
use serde_json::{Value, json};

use super::common::{CmdResult, Failure};
use super::out::Out;
use crate::runtime::Location;
use crate::runtime::policy::approval::NETWORK_GRANT;
use crate::runtime::policy::permissions::{Decision, Rules, SESSION_SOURCE, Verdict, parse_rule};
use crate::runtime::shell;
use crate::runtime::trust::Admission;
use crate::sanitize;

/// `neocode rules ...`.
#[derive(Debug, Subcommand)]
pub enum RulesCommand {
    /// What the rules decide about a command (or, with --tool, a path or a tool), and which
    /// rule decides it.
    #[command(
        after_help = "Examples:\n  neocode rules check \"git push origin main\"\n  neocode rules check .env --tool read_file\n  neocode rules check '' --tool mcp__github__delete_repo"
    )]
    Check {
        /// The command line (run_command), the path (file tools), or the call's JSON
        /// arguments (other tools; may be empty).
        subject: String,
        /// The tool called.
        #[arg(long, value_name = "NAME", default_value = "run_command")]
        tool: String,
        /// Also the rules that session keeps ("always" answered for this session): full
        /// id, unique prefix, or `last`.
        #[arg(long, value_name = "ID")]
        session: Option<String>,
    },
    /// Every rule with the file and line it comes from (with --session, that session's
    /// rules too).
    #[command(after_help = "Examples:\n  neocode rules list\n  neocode rules list --session last")]
    List {
        /// Also the rules that session keeps ("always" answered for this session): full
        /// id, unique prefix, or `last`.
        #[arg(long, value_name = "ID")]
        session: Option<String>,
    },
}

/// A session's own rules ("always" for this session), from its header.
struct SessionGrants {
    id: String,
    grants: Vec<String>,
}

/// Runs a `rules` subcommand.
pub(super) fn run(loc: &Location, cmd: &RulesCommand) -> CmdResult {
    let admission = Admission::check(&loc.home, loc.root());
    let rules = admission
        .rules(&loc.home)
        .map_err(|e| Failure::usage(sanitize::line(&e.to_string()).into_owned()))?;
    let left_out = admission.left_out().filter(|_| !rules.ignored().is_empty());
    let session = match cmd {
        RulesCommand::Check { session, .. } | RulesCommand::List { session } => session,
    };
    let session = match session {
        Some(key) => {
            let (sessions, id) = super::common::open_for_id(loc, key)?;
            let header = sessions.header(&id)?;
            let grants = header.ledger.map(|l| l.approved_tools).unwrap_or_default();
            Some(SessionGrants { id, grants })
        }
        None => None,
    };
    match cmd {
        RulesCommand::Check { subject, tool, .. } => {
            let rules = match &session {
                Some(s) => rules.with_session_grants(&s.grants),
                None => rules,
            };
            check(&rules, tool, subject, left_out.as_deref())
        }
        RulesCommand::List { .. } => list(loc, &rules, session.as_ref(), left_out.as_deref()),
    }
}

fn ignored_lines(rules: &Rules, why: Option<&str>) -> Vec<String> {
    let Some(why) = why else {
        return Vec::new();
    };
    let mut lines = vec![format!("not used: {}", sanitize::line(why))];
    for r in rules.ignored() {
        lines.push(format!(
            "allow  {}  {}:{}  (not used)",
            sanitize::line(&r.text),
            sanitize::line(&r.file.display().to_string()),
            r.line
        ));
    }
    lines
}

fn args_for(tool: &str, subject: &str) -> Result<Value, Failure> {
    Ok(match tool {
        "run_command" => json!({ "command": subject }),
        "read_file" | "write_file" | "edit_file" | "list_dir" | "grep" => {
            json!({ "path": subject })
        }
        _ if subject.trim().is_empty() => json!({}),
        _ => serde_json::from_str(subject).map_err(|e| {
            Failure::usage(format!(
                "--tool {tool} takes the call's arguments as JSON: {e}"
            ))
        })?,
    })
}

/// The decision's line: `deny  run_command(rm *)  (file:line)`.
fn describe(d: &Decision) -> String {
    let verdict = d.verdict.label();
    match (&d.rule, &d.reason) {
        // A session's rule has no line.
        (Some(r), _) if r.line == 0 => format!(
            "{verdict}: {}  ({})",
            sanitize::line(&r.text),
            sanitize::line(&r.file.display().to_string()),
        ),
        (Some(r), _) => format!(
            "{verdict}: {}  ({}:{})",
            sanitize::line(&r.text),
            sanitize::line(&r.file.display().to_string()),
            r.line
        ),
        (None, Some(reason)) => format!("{verdict}: no rule: {}", sanitize::line(reason)),
        (None, None) => format!("{verdict}: no rule: the approval policy decides"),
    }
}

fn check(rules: &Rules, tool: &str, subject: &str, left_out: Option<&str>) -> CmdResult {
    if tool.contains(['(', ')']) || parse_rule(tool, std::path::Path::new("/"), None).is_err() {
        return Err(Failure::usage(format!(
            "--tool {}: not a tool name (read_file, list_dir, grep, write_file, edit_file, run_command, update_plan, mcp__server__tool)",
            sanitize::line(tool)
        )));
    }
    let args = args_for(tool, subject)?;
    let d = rules.decide(tool, &args);
    let mut out = Out::stdout();
    let mut head = describe(&d);
    if d.verdict == Verdict::Ask && d.rule.is_none() {
        // What a turn does with it: the rules cannot allow it, the policy decides.
        head.push_str(
            " (no rule can allow it: the approval policy decides, asking unless never-ask)",
        );
    }
    out.line(&head)?;
    if tool == "run_command" {
        let parts = shell::split(subject);
        if parts.len() > 1 {
            for p in &parts {
                let text = p.text().replace('\n', " ");
                let pd = match p {
                    shell::Part::Simple { .. } => {
                        rules.decide("run_command", &json!({ "command": text }))
                    }
                    shell::Part::Unknown { reason, .. } => Decision {
                        verdict: Verdict::Ask,
                        rule: None,
                        reason: Some(reason.clone()),
                    },
                };
                out.line(&format!(
                    "  {}  ←  {}",
                    sanitize::line(&text),
                    describe(&pd)
                ))?;
            }
        }
    }
    if let Some(why) = left_out {
        out.line(&format!("not used: {}", sanitize::line(why)))?;
    }
    out.finish()
}

fn list(
    loc: &Location,
    rules: &Rules,
    session: Option<&SessionGrants>,
    left_out: Option<&str>,
) -> CmdResult {
    let mut out = Out::stdout();
    let ignored = ignored_lines(rules, left_out);
    if let Some(s) = session {
        let short = crate::format::short_id(&s.id, 8);
        if s.grants.is_empty() {
            out.line(&format!(
                "session {short}: no rules of its own (\"always\" for this session adds them)"
            ))?;
        }
        for g in &s.grants {
            let what = if g == NETWORK_GRANT {
                "network  its commands may use the network (/approve network)".to_string()
            } else {
                format!("allow  {}", sanitize::line(g))
            };
            out.line(&format!("{what}  {SESSION_SOURCE} ({short})"))?;
        }
    }
    if rules.rules().is_empty() && ignored.is_empty() {
        out.line(&format!(
            "no rules (allow/ask/deny lists in {} or [permissions] in {})",
            sanitize::line(&Rules::workspace_file(loc.root()).display().to_string()),
            sanitize::line(&Rules::home_file(&loc.home).display().to_string())
        ))?;
        return out.finish();
    }
    for r in rules.rules() {
        out.line(&format!(
            "{:<5}  {}  {}:{}",
            r.list.key(),
            sanitize::line(&r.at.text),
            sanitize::line(&r.at.file.display().to_string()),
            r.at.line
        ))?;
    }
    for l in ignored {
        out.line(&l)?;
    }
    out.finish()
}
