//! Hooks (issue 27): the user's own commands run around a session's events, in Claude
//! Code's format so users can bring theirs.
//!
//! Configured in `<workspace>/.neocode/hooks.json` and `<home>/hooks.json`:
//! `{"hooks": {"PreToolUse": [{"matcher": "edit_file|write_file", "hooks": [{"type":
//! "command", "command": "…", "timeout": 30}]}]}}`. The matcher is a regular expression over
//! the tool name (anchored: `edit_file` matches only `edit_file`; empty or `*` matches every
//! tool); for `SessionStart` it is matched against the source (`startup`, `resume`, …), for
//! `PreCompact` the trigger (`manual`, `auto`), for `Notification` the notification type;
//! the other events ignore it.
//!
//! [`Hooks::run_hooks`] runs every matching hook, one after the other (workspace file first):
//! `sh -c COMMAND` in the workspace root, the event's JSON on stdin, the user's environment
//! minus neocode's key variables (plus `NEOCODE_PROJECT_DIR` and `CLAUDE_PROJECT_DIR` = the
//! workspace root), in its own process group, which is killed at the timeout (default
//! [`DEFAULT_TIMEOUT`](spec::DEFAULT_TIMEOUT)). stdout and stderr are read to the end but only the first
//! [`OUTPUT_KEEP`](run::OUTPUT_KEEP) bytes of each are kept. Exit 0 continues (JSON on stdout may decide), 2
//! blocks with stderr as the reason, anything else is a non-blocking error for the user.
//! Hooks run outside the model's sandbox: they are the user's commands, not the model's.

mod claude;
mod import;
mod run;
mod set;
mod spec;

pub(crate) use import::{SourceImport, import_claude_settings, merge_hooks, write_hooks_file};
pub(crate) use run::strip_keys;
pub(crate) use set::Hooks;
pub(crate) use spec::{HookEvent, HookRun, HooksError};
pub(crate) use spec::{HookOutcome, HookPayload, PermissionDecision, parse_hooks};

#[cfg(test)]
mod tests;
