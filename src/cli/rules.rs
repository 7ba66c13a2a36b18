//! `neocode rules check|list`: the permission rules of `.neocode/permissions.toml` and the
//! home config's `[permissions]` (docs/RULES.md).

use clap::Subcommand;
use serde_json::{Value, json};

use super::out::Out;
use super::{CmdResult, Failure};
use crate::runtime::Location;
use crate::runtime::permissions::{Decision, Rules, Verdict, parse_rule, shell};
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
    },
    /// Every rule with the file and line it comes from.
    #[command(after_help = "Example:\n  neocode rules list")]
    List,
}

/// Runs a `rules` subcommand.
pub fn run(loc: &Location, cmd: &RulesCommand) -> CmdResult {
    let admission = Admission::check(&loc.home, loc.root());
    let rules = admission
        .rules(&loc.home)
        .map_err(|e| Failure::usage(sanitize::line(&e.to_string()).into_owned()))?;
    let left_out = admission.left_out().filter(|_| !rules.ignored().is_empty());
    match cmd {
        RulesCommand::Check { subject, tool } => check(&rules, tool, subject, left_out.as_deref()),
        RulesCommand::List => list(loc, &rules, left_out.as_deref()),
    }
}

/// The workspace's allow rules left out, and why, one line each.
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

fn list(loc: &Location, rules: &Rules, left_out: Option<&str>) -> CmdResult {
    let mut out = Out::stdout();
    let ignored = ignored_lines(rules, left_out);
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
