//! Why the box could not be built: what was attempted and what the system said. The message
//! is what the helper prints before it refuses to run a command, and what the probe reports.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub(crate) enum BoxError {
    /// A system call or a write that failed: what was attempted, and the system's words.
    #[error("{what}: {source}")]
    Os {
        what: String,
        source: std::io::Error,
    },
    /// A path the kernel cannot be given.
    #[error("{} has a NUL byte", .0.display())]
    NulPath(PathBuf),
    #[error(transparent)]
    Nul(#[from] std::ffi::NulError),
    /// Something the box needs that this system or build does not give, or a check of the
    /// built box that failed.
    #[error("{0}")]
    Lacks(&'static str),
    /// Landlock refused a step, in the crate's words.
    #[error("Landlock{rule}: {detail}", rule = if *.rule { " rule" } else { "" })]
    Landlock { rule: bool, detail: String },
    #[error("Landlock could not enforce the rules (ABI {0})")]
    NotEnforced(i32),
    /// A system call that failed, in the system's words alone.
    #[error("{0}")]
    System(std::io::Error),
    /// What the probe's trial run said about why it failed (its child's words).
    #[error("{0}")]
    Trial(String),
}

impl BoxError {
    /// `what` failed with the error the last system call left.
    pub(crate) fn last_os(what: impl Into<String>) -> BoxError {
        let source = std::io::Error::last_os_error();
        BoxError::Os {
            what: what.into(),
            source,
        }
    }

    /// `what` failed with `source`.
    pub(crate) fn os(what: impl Into<String>, source: std::io::Error) -> BoxError {
        BoxError::Os {
            what: what.into(),
            source,
        }
    }
}
