//! Why a turn could not start: [`StartCode`] and [`StartError`].

use crate::session::StoreError;

pub(super) fn thread_error(e: std::io::Error) -> StartError {
    StartError {
        code: StartCode::Store,
        message: format!("cannot start a thread: {e}"),
    }
}

/// Why a turn (or a one-call intent) could not start: the stable code the bridge, `run` and
/// the TUI show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartCode {
    /// No provider is configured (or it cannot be built).
    Config,
    /// Another process runs the session.
    Busy,
    /// No such session.
    NotFound,
    /// The request is wrong (ambiguous id, empty goal, a file that is not an image ...).
    Usage,
    /// The store (or a thread) failed.
    Store,
    /// The provider failed (a compaction's summary).
    Provider,
}

impl StartCode {
    /// `config`, `busy`, `not_found`, `usage`, `store` or `provider`.
    pub fn as_str(self) -> &'static str {
        match self {
            StartCode::Config => "config",
            StartCode::Busy => "busy",
            StartCode::NotFound => "not_found",
            StartCode::Usage => "usage",
            StartCode::Store => "store",
            StartCode::Provider => "provider",
        }
    }
}

impl std::fmt::Display for StartCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for StartCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A turn that could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct StartError {
    /// Why, as a stable code ([`StartError::code`] spells it).
    pub code: StartCode,
    /// What to do, in words; never contains the key.
    pub message: String,
}

impl StartError {
    /// A start error.
    pub(crate) fn new(code: StartCode, message: impl Into<String>) -> StartError {
        StartError {
            code,
            message: message.into(),
        }
    }
}

impl From<StoreError> for StartError {
    fn from(e: StoreError) -> StartError {
        let code = if e.is_usage() {
            StartCode::Usage
        } else {
            StartCode::Store
        };
        StartError::new(code, e.to_string())
    }
}
