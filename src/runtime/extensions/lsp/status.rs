//! What `neocode lsp list` shows of each configured server.

use std::path::PathBuf;

use crate::runtime::config::lsp::LspServerConfig;

/// A server's state in this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LspState {
    /// Turned off in `[lsp]`.
    Disabled,
    /// Its command is not installed.
    Missing,
    /// Installed (at this path), not started.
    Found(PathBuf),
    /// Running and initialised (its `serverInfo`, if it sent one).
    Ready(Option<String>),
    /// Could not be started or initialised.
    Failed(String),
    /// Was running, then stopped.
    Stopped(String),
}

impl LspState {
    /// One word for it.
    pub fn label(&self) -> &'static str {
        match self {
            LspState::Disabled => "disabled",
            LspState::Missing => "missing",
            LspState::Found(_) => "found",
            LspState::Ready(_) => "ready",
            LspState::Failed(_) => "failed",
            LspState::Stopped(_) => "stopped",
        }
    }

    /// Whether it is a problem (missing servers are not: most workspaces lack most).
    pub fn is_problem(&self) -> bool {
        matches!(self, LspState::Failed(_) | LspState::Stopped(_))
    }
}

/// One configured server and its state.
#[derive(Debug, Clone)]
pub struct LspStatus {
    /// Its table entry.
    pub config: LspServerConfig,
    /// Its state.
    pub state: LspState,
}
