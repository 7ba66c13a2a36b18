//! `neocode run`: one agent turn without the TUI. Streamed text to stdout, tool activity as
//! one-line summaries on stderr; `--json` prints the event lines the bridge uses,
//! `--output-format json|stream-json` the versioned headless stream (docs/headless.md). SIGINT
//! cancels. Exit 0 done, 1 provider or tool failure, 2 bad usage, 3 a limit stopped the turn,
//! 130 cancelled.
//!
//! `neocode compact`: summarise a session's transcript now.

mod args;
mod command;
mod headless;
mod input;
mod print;
mod prompt;
mod schema;
mod text;
mod turn;
mod worktree;

pub(crate) use args::{RUN_EXAMPLES, RunArgs};
pub use turn::{compact, run};
pub(super) use worktree::{enter as enter_worktree, report as report_worktree};
