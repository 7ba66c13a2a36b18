//! Why trust could not be checked, recorded or revoked.

use std::path::{Path, PathBuf};

/// Why trust could not be checked, recorded or revoked: one line for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrustError {
    /// A declared file or the record cannot be read.
    #[error("cannot read {}: {message}", path.display())]
    Read { path: PathBuf, message: String },
    /// The record cannot be written.
    #[error("cannot write the trust record {}: {message}", path.display())]
    Write { path: PathBuf, message: String },
    /// The record does not parse.
    #[error("the trust record {} is damaged ({message}); every workspace counts as untrusted until trusted again", path.display())]
    Corrupt { path: PathBuf, message: String },
    /// The record could have been written by someone else.
    #[error("the trust record {} is not yours alone (another owner, or writable by others); every workspace counts as untrusted until trusted again", path.display())]
    Unsafe { path: PathBuf },
    /// Too much is declared to review.
    #[error("{} declares more than {max_files} files or {max_mib} MiB under .neocode/, .claude/ and .mcp.json; neocode does not review that much, so it cannot be trusted", root.display())]
    TooLarge {
        root: PathBuf,
        max_files: usize,
        max_mib: u64,
    },
    /// The files changed between the review the user saw and the answer.
    #[error(
        "the workspace's files changed while you looked at them; nothing was trusted, look again"
    )]
    ChangedMeanwhile,
    /// The root's path cannot be a key of the record.
    #[error("the workspace path {} is not valid UTF-8, so its trust cannot be recorded", root.display())]
    NotUtf8 { root: PathBuf },
}

impl TrustError {
    pub(super) fn read(path: &Path, e: &std::io::Error) -> TrustError {
        TrustError::Read {
            path: path.to_path_buf(),
            message: crate::session::io_error(e),
        }
    }

    pub(super) fn write(path: &Path, e: &std::io::Error) -> TrustError {
        TrustError::Write {
            path: path.to_path_buf(),
            message: crate::session::io_error(e),
        }
    }
}
