//! `neocode run /name ARGS`: a slash command as the prompt. `/init` and the custom commands
//! (`runtime::extensions::commands`) expand to the prompt that is sent, the same way the
//! TUI expands them; an unknown `/name` is a usage error naming the commands there are.

use std::io::Write;

use crate::cli::common::Failure;
use crate::runtime::Location;
use crate::runtime::extensions::commands::{self, INIT};
use crate::sanitize;

/// The prompt `prompt` stands for when it invokes a command (`None`: it is a plain prompt,
/// sent as it is). Files left out are said on stderr when `warn`.
pub(super) fn expand(
    loc: &Location,
    prompt: Option<&str>,
    warn: bool,
) -> Result<Option<String>, Failure> {
    let Some((name, args)) = prompt.and_then(commands::invocation) else {
        return Ok(None);
    };
    if name == INIT {
        return Ok(Some(commands::init_prompt(args)));
    }
    let built_in: Vec<&str> = crate::tui::app::SLASH_COMMANDS
        .iter()
        .map(|c| c.0)
        .collect();
    let found = crate::runtime::trust::custom_commands(&loc.home, loc.root(), &built_in);
    if warn {
        let mut err = std::io::stderr().lock();
        for w in &found.warnings {
            let _ = writeln!(err, "neocode: warning: {}", sanitize::line(w));
        }
    }
    if let Some(c) = found.get(name) {
        return Ok(Some(c.expand(args)));
    }
    let typed = sanitize::line(name);
    if built_in.contains(&format!("/{name}").as_str()) {
        return Err(Failure::usage(format!(
            "/{typed} is a command of the TUI; run takes /{INIT} and custom commands"
        )));
    }
    let mut known = vec![format!("/{INIT}")];
    known.extend(found.names());
    let mut msg = format!(
        "unknown command /{typed}; the commands are {} (custom ones live in .neocode/commands/, .claude/commands/ and the home's commands/)",
        known.join(", ")
    );
    if let Some(why) = &found.workspace_left_out {
        msg.push_str(&format!("; the workspace's are not used: {why}"));
    }
    Err(Failure::usage(msg))
}
