//! The slash commands' table and the pure parsing of what is typed: the completion popup,
//! the help screen and the command handlers all read these.

use crate::runtime::extensions::commands::CustomCommands;
use crate::sanitize;

/// The commands: name, arguments, what it does (the completion popup and the help show them).
pub const COMMANDS: &[(&str, &str, &str)] = &[
    (
        "/compact",
        "",
        "summarise the transcript now (older messages → a summary)",
    ),
    ("/new", "", "start a new session"),
    (
        "/resume",
        "",
        "switch to another session: the list, filtered as you type; Enter switches, Esc returns",
    ),
    (
        "/find",
        "[TEXT]",
        "search this session's transcript (Ctrl-F), for TEXT when given: n/N move, Esc closes",
    ),
    (
        "/plan",
        "[--width N] [--retry-failed] [GOAL]",
        "draft a plan for GOAL, approve it, run it step by step (no goal: resume the plan); --width N runs up to N independent steps at once, --retry-failed reruns failed steps on resume",
    ),
    (
        "/fork",
        "",
        "fork this session (at the selected message, else the end)",
    ),
    (
        "/undo",
        "",
        "put back the files the last turn changed (`neocode rewind ID --undo` reverts it)",
    ),
    ("/rename", "TITLE", "rename this session"),
    (
        "/model",
        "[NAME]",
        "switch the model of the next turns (no name: pick from the server's models)",
    ),
    (
        "/provider",
        "[NAME]",
        "switch to a [providers.NAME] profile of config.toml for the next turns (no name: list them)",
    ),
    ("/limits", "", "budgets of this session: used and left"),
    (
        "/permissions",
        "",
        "every permission rule in force and where it comes from (this session, the workspace, your config); d revokes this session's",
    ),
    (
        "/approve",
        "[ask|auto-edit|never-ask|network]",
        "show or set the approval policy; `network` opens the network to this session's commands",
    ),
    (
        "/skill",
        "[NAME]",
        "list the skills, or activate one in this session",
    ),
    (
        "/attach",
        "PATH",
        "attach an image (png, jpeg, gif, webp) to the next message",
    ),
    (
        "/paste",
        "",
        "attach the clipboard's image to the next message (Ctrl-V; reads it with wl-paste or xclip)",
    ),
    (
        "/init",
        "[NOTES]",
        "read the project and write or update AGENTS.md (the write is a diff you approve)",
    ),
    ("/help", "", "keys and commands"),
];

/// The options of `/plan`, named as `neocode run --plan`'s flags.
pub(crate) const PLAN_OPTIONS: &[&str] = &["--width", "--retry-failed"];

/// Options of `/plan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PlanOpts {
    /// Steps of one layer that may run at once.
    pub width: usize,
    /// Run failed steps again (resume only).
    pub retry_failed: bool,
}

impl Default for PlanOpts {
    fn default() -> PlanOpts {
        PlanOpts {
            width: 1,
            retry_failed: false,
        }
    }
}

/// Splits `/plan`'s argument into its leading options and the goal (the rest, as typed; `--`
/// ends the options, for a goal that starts with one). Errors are one line for the user.
pub(crate) fn parse_plan_args(arg: &str) -> Result<(PlanOpts, &str), crate::tui::error::Failure> {
    let mut opts = PlanOpts::default();
    let mut rest = arg.trim_start();
    let next_word = |s: &str| -> (usize, usize) {
        let end = s.find(char::is_whitespace).unwrap_or(s.len());
        (end, end + s[end..].len() - s[end..].trim_start().len())
    };
    while rest.starts_with("--") {
        let (end, after) = next_word(rest);
        let word = &rest[..end];
        rest = &rest[after..];
        let (name, inline) = match word.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (word, None),
        };
        match name {
            "--" => break,
            "--retry-failed" if inline.is_none() => opts.retry_failed = true,
            "--width" => {
                let value = match inline {
                    Some(v) => v,
                    None => {
                        let (end, after) = next_word(rest);
                        let v = &rest[..end];
                        rest = &rest[after..];
                        v
                    }
                };
                if value.is_empty() {
                    return Err("/plan: --width needs a number: /plan --width 3 GOAL".into());
                }
                match value.parse::<usize>() {
                    Ok(n) if n >= 1 => opts.width = n,
                    _ => {
                        return Err(crate::tui::error::failed!(
                            "/plan: --width must be a whole number of steps at once, at least 1 (not `{}`)",
                            sanitize::line(value)
                        ));
                    }
                }
            }
            _ => {
                return Err(crate::tui::error::failed!(
                    "/plan: unknown option `{}`; /plan takes --width N and --retry-failed",
                    sanitize::line(word)
                ));
            }
        }
    }
    Ok((opts, rest.trim_end()))
}

/// Commands whose name starts with what is typed (the word after `/`, before any space).
pub fn matching(typed: &str) -> Vec<&'static (&'static str, &'static str, &'static str)> {
    let t = typed.trim_start();
    if !t.starts_with('/') || t.contains(char::is_whitespace) {
        return Vec::new();
    }
    COMMANDS.iter().filter(|c| c.0.starts_with(t)).collect()
}

/// Built-in commands, then the custom ones (`custom`), whose name starts with what is
/// typed: name, arguments, what it does. A custom command's text comes from its file:
/// one sanitised line, its origin after its description.
pub(crate) fn matching_all(typed: &str, custom: &CustomCommands) -> Vec<(String, String, String)> {
    let t = typed.trim_start();
    if !t.starts_with('/') || t.contains(char::is_whitespace) {
        return Vec::new();
    }
    let mut out: Vec<(String, String, String)> = matching(typed)
        .iter()
        .map(|(n, a, w)| ((*n).to_string(), (*a).to_string(), (*w).to_string()))
        .collect();
    for c in &custom.commands {
        let name = format!("/{}", c.name);
        if name.starts_with(t) {
            let what = if c.description.is_empty() {
                format!("({})", c.origin.as_str())
            } else {
                format!("{} ({})", c.description, c.origin.as_str())
            };
            out.push((
                sanitize::line(&name).into_owned(),
                sanitize::line(&c.argument_hint).into_owned(),
                sanitize::line(&what).into_owned(),
            ));
        }
    }
    out
}

/// The path being typed after a trailing `@`, if the editor ends in one.
pub(crate) fn at_word(text: &str) -> Option<&str> {
    let last = text.rsplit(char::is_whitespace).next()?;
    last.strip_prefix('@')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_options_come_before_the_goal() {
        let p = parse_plan_args;
        assert_eq!(p("fix it"), Ok((PlanOpts::default(), "fix it")));
        let w3 = PlanOpts {
            width: 3,
            retry_failed: false,
        };
        assert_eq!(p("--width 3 fix it"), Ok((w3, "fix it")));
        assert_eq!(p("--width=3  fix it "), Ok((w3, "fix it")));
        let retry = PlanOpts {
            width: 1,
            retry_failed: true,
        };
        assert_eq!(p("--retry-failed"), Ok((retry, "")));
        // `--` ends the options; an option after the goal's first word is the goal's.
        assert_eq!(
            p("-- --width is a word"),
            Ok((PlanOpts::default(), "--width is a word"))
        );
        assert_eq!(
            p("add --width 2"),
            Ok((PlanOpts::default(), "add --width 2"))
        );
        assert!(
            p("--width 0 x")
                .unwrap_err()
                .as_str()
                .contains("at least 1")
        );
        assert!(p("--width -1 x").unwrap_err().as_str().contains("not `-1`"));
        assert!(
            p("--width")
                .unwrap_err()
                .as_str()
                .contains("needs a number")
        );
        assert!(
            p("--retry-failed=yes")
                .unwrap_err()
                .as_str()
                .contains("unknown option")
        );
        // Hostile text in an error is neutralised.
        assert!(!p("--\u{1b}[2J x").unwrap_err().as_str().contains('\u{1b}'));
    }
}
