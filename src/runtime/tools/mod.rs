//! The tools the model can call. Tools are data: a registry of (name, JSON schema, kind, run
//! function). The approval policy reads [`ToolKind`], the provider reads the schema, the front
//! ends read the name and [`summary`]. Every tool works inside the workspace root; a path
//! outside it (absolute, `..`, or through a symlink) is refused. Tool failures are results
//! with `is_error: true` that go back to the model; they never end the turn.
//!
//! `update_plan` is listed here (the model must see its schema) but carried out by the agent
//! turn, which owns the session store: [`run`] answers it with an error.
//!
//! One file per tool: it holds the tool's [`ToolSpec`] (name, description, schema, kind and
//! run function); [`specs`] lists them. `run_command` confines its child with [`sandbox`].

mod access;
mod diff;
mod edit_file;
mod files;
mod fingerprint;
pub(crate) mod git_snapshot;
mod grep;
pub mod interpreter;
mod list_dir;
pub(crate) mod path;
#[doc(hidden)]
pub use path::force_walk_fallback;
pub(crate) mod protected;
mod read_file;
mod registry;
mod run_command;
pub mod sandbox;
mod spec;
mod terminal;
pub(crate) mod verification;
mod watch;
mod web_fetch;
pub(crate) mod worktree;
mod write_file;

pub use crate::runtime::cancel::CancelFlag;
pub use files::{FileAccess, FileAccessError};
pub use registry::{preview, run, spec, specs, summary};
pub use spec::{
    DEFAULT_COMMAND_TIMEOUT, DEFAULT_OUTPUT_CAP, Preview, ReadDenials, SandboxMode,
    SandboxSettings, ToolContext, ToolKind, ToolOutput, ToolSpec, WebFetchSettings,
};
pub(crate) use terminal::signal_number;
pub use terminal::{CommandTerminal, TerminalCommand, TerminalError, TerminalExit};
