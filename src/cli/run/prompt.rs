//! The questions `run` asks on the terminal during a turn: run the plan, allow a call, which
//! rules an "always" keeps and where.

use std::io::{BufRead, Write};

use super::text::short;
use crate::runtime::agent::{RuleScope, TurnCommand};
use crate::runtime::policy::approval;
use crate::runtime::tools;
use crate::sanitize;

/// Asks whether to run the proposed plan.
pub(super) fn plan_answer(interactive: bool) -> TurnCommand {
    let mut err = std::io::stderr().lock();
    if !interactive {
        let _ = writeln!(
            err,
            "neocode: the plan needs your approval and there is no terminal to ask on; rerun with --yes to run it"
        );
        return TurnCommand::RejectPlan;
    }
    let _ = write!(err, "Run this plan? [y]es / [n]o / [d]rop <step ids>: ");
    let _ = err.flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    let mut words = answer.split_whitespace();
    match words.next().map(str::to_ascii_lowercase).as_deref() {
        Some("y" | "yes") => TurnCommand::ApprovePlan,
        Some("d" | "drop") => TurnCommand::EditPlan {
            drop: words
                .flat_map(|w| w.split(','))
                .filter(|w| !w.is_empty())
                .map(str::to_string)
                .collect(),
        },
        _ => TurnCommand::RejectPlan,
    }
}

/// Asks whether to run a call; `kind` is its approval class (for the flag that would allow
/// it when there is no terminal to ask on).
pub(super) fn approval(
    interactive: bool,
    kind: tools::ToolKind,
    call: &crate::session::ToolCall,
    summary: &str,
    reason: &str,
    rules: &[String],
) -> TurnCommand {
    let mut err = std::io::stderr().lock();
    if !interactive {
        // An `ask` rule or hook asks under every policy: no flag lifts it.
        let fix = if reason.starts_with("the rule `") || reason.starts_with("a PreToolUse hook") {
            "answer it on a terminal, or allow it with a rule (neocode rules check)".to_string()
        } else if reason.starts_with("replay of a call") {
            // A replay asks under every policy but never-ask.
            "rerun with --approve never-ask to run it again".to_string()
        } else {
            format!(
                "rerun with --approve {} to allow it",
                approval::policy_allowing(kind)
            )
        };
        let msg = format!(
            "{} needs approval ({}) and there is no terminal to ask on; {fix}",
            short(summary, 80),
            sanitize::line(reason)
        );
        let _ = writeln!(err, "neocode: denied: {msg}");
        return TurnCommand::Deny {
            call_id: call.id.clone(),
            reason: Some(msg),
        };
    }
    let choices = match rules.len() {
        0 => "[y]es / [n]o (no rule can allow this call, so there is no \"always\")",
        1 => "[y]es / [n]o / [a]lways (proposes a rule)",
        _ => "[y]es / [n]o / [a]lways (proposes a rule for each part)",
    };
    let _ = write!(
        err,
        "Allow {}? ({})\n  {choices}: ",
        short(summary, 100),
        sanitize::line(reason)
    );
    loop {
        let _ = err.flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        match answer.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => {
                return TurnCommand::Approve {
                    call_id: call.id.clone(),
                    always: false,
                };
            }
            "a" | "always" if rules.is_empty() => {
                let _ = write!(
                    err,
                    "  No rule can allow this call ({}): [y]es / [n]o: ",
                    sanitize::line(reason)
                );
            }
            "a" | "always" => {
                let (rules, scope) = always_rules(&mut err, rules);
                return TurnCommand::AlwaysAllow {
                    call_id: call.id.clone(),
                    rules,
                    scope,
                };
            }
            _ => {
                return TurnCommand::Deny {
                    call_id: call.id.clone(),
                    reason: None,
                };
            }
        }
    }
}

/// A line typed on the terminal, trimmed.
fn read_answer() -> String {
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    line.trim().to_string()
}

/// Asks which rules an "always" answer keeps (the proposed ones, each of which can be
/// retyped or left out) and where: this session (the default), this workspace or
/// everywhere. One rule is shown with `Rule:` and kept with Enter; several are listed
/// together, numbered, and a number changes that one.
fn always_rules(err: &mut impl Write, proposed: &[String]) -> (Vec<String>, RuleScope) {
    let mut rules: Vec<String> = proposed.to_vec();
    if let [only] = proposed {
        let _ = write!(
            err,
            "  Rule: {}\n  Enter keeps it, or type the rule to keep: ",
            sanitize::line(only)
        );
        let _ = err.flush();
        let typed = read_answer();
        if !typed.is_empty() {
            rules = vec![typed];
        }
    } else {
        loop {
            let _ = writeln!(err, "  Rules, one for each part of the command:");
            for (i, r) in rules.iter().enumerate() {
                let _ = writeln!(err, "    {}. {}", i + 1, sanitize::line(r));
            }
            let _ = write!(
                err,
                "  Enter keeps them all, or type a rule's number to change it: "
            );
            let _ = err.flush();
            let typed = read_answer();
            let Some(n) = typed
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=rules.len()).contains(n))
            else {
                break;
            };
            let _ = write!(
                err,
                "  Rule {n}: {}\n  Enter keeps it, type the rule to keep, or - to leave it out: ",
                sanitize::line(&rules[n - 1])
            );
            let _ = err.flush();
            match read_answer().as_str() {
                "" => {}
                "-" => {
                    rules.remove(n - 1);
                }
                other => rules[n - 1] = other.to_string(),
            }
            if rules.is_empty() {
                break;
            }
        }
    }
    let what = match rules.as_slice() {
        [] => {
            let _ = writeln!(err, "  No rule kept: the call runs once.");
            return (rules, RuleScope::Session);
        }
        [one] => format!("`{}`", sanitize::line(one)),
        many => format!("these {} rules", many.len()),
    };
    let _ = write!(
        err,
        "  Keep {what} for [s]this session / [w]this workspace (.neocode/permissions.toml) / [e]verywhere (config.toml): "
    );
    let _ = err.flush();
    let scope = match read_answer().to_ascii_lowercase().chars().next() {
        Some('w') => RuleScope::Workspace,
        Some('e') => RuleScope::Everywhere,
        _ => RuleScope::Session,
    };
    let _ = writeln!(err, "  Kept for {}.", scope.label());
    (rules, scope)
}
