//! Typed store errors, each with a message a user can act on.

use std::path::PathBuf;

/// Everything the session store can fail with.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No session (or asset) matches.
    #[error("no {what} matches '{key}' in {scope}")]
    NotFound {
        /// "session" or "asset".
        what: &'static str,
        /// What was looked up.
        key: String,
        /// Where (workspace root or session id).
        scope: String,
    },
    /// A prefix matches more than one session.
    #[error("'{prefix}' is ambiguous: it matches {}{} sessions; type more of the id", if *more { "more than " } else { "" }, candidates.len())]
    Ambiguous {
        /// The prefix given.
        prefix: String,
        /// (id, title) of the matches, newest first (at most 20).
        candidates: Vec<(String, String)>,
        /// More sessions match than are listed.
        more: bool,
    },
    /// The id is taken.
    #[error("a session with id '{0}' already exists (use --new-id to import it as a copy)")]
    AlreadyExists(String),
    /// The database was written by a newer neocode.
    #[error(
        "{} has schema version {found}, newer than this neocode understands ({supported}); upgrade neocode — the file was not touched",
        path.display()
    )]
    TooNew {
        /// Database file.
        path: PathBuf,
        /// Version found.
        found: i64,
        /// Newest version this binary knows.
        supported: i64,
    },
    /// The database file or a stored value cannot be read.
    #[error("{} is corrupt: {detail} — it was left as it is; restore it from a backup or move it aside", path.display())]
    Corrupt {
        /// Database file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// SQLite reports the database file damaged (`SQLITE_CORRUPT`, `SQLITE_NOTADB`). From
    /// then on this process writes nothing more to it; `neocode doctor` checks and recovers.
    #[error("{} is corrupt — the database is damaged: run `neocode doctor` ({detail}); nothing more is written to it", path.display())]
    Damaged {
        /// Database file.
        path: PathBuf,
        /// What SQLite said.
        detail: String,
    },
    /// A stored JSON column does not parse.
    #[error("session {session_id}: stored column '{column}' is not valid: {detail}")]
    BadColumn {
        session_id: String,
        column: &'static str,
        /// Parser message.
        detail: String,
    },
    /// An id with characters outside `[A-Za-z0-9_-]` (or empty, or too long).
    #[error("invalid {what} id '{id}': only letters, digits, '-' and '_' are allowed")]
    InvalidId {
        /// "session" or "asset".
        what: &'static str,
        /// The id given (may be hostile: sanitise before printing).
        id: String,
    },
    /// Something exceeds a size limit.
    #[error("{what} is {size} bytes, over the limit of {limit} bytes")]
    TooLarge {
        /// What is too large.
        what: &'static str,
        size: u64,
        limit: u64,
    },
    /// A stored asset path leaves the workspace folder.
    #[error("asset '{0}' has a stored path outside the workspace folder; refusing to read it")]
    PathEscape(String),
    /// A plan is not a DAG.
    #[error("invalid plan: {0}")]
    Plan(#[from] super::plan::PlanError),
    /// A message refers to a seq that does not exist.
    #[error("session {session_id} has no message {seq} (last is {last})")]
    NoSuchSeq {
        session_id: String,
        /// Seq asked for.
        seq: i64,
        /// Highest seq.
        last: i64,
    },
    /// A queued message a write was to deliver no longer waits (removed, or delivered
    /// already): nothing of that write is stored.
    #[error("queued message #{0} no longer waits (removed, or sent already)")]
    NotQueued(i64),
    /// A file-system operation failed.
    #[error("{}: {}", path.display(), io_error(source))]
    Io {
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// SQLite failed.
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

impl StoreError {
    /// Wraps an I/O error with its path.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> StoreError {
        StoreError::Io {
            path: path.into(),
            source,
        }
    }

    /// True for errors caused by what the user asked (unknown or ambiguous id, bad id, ...),
    /// which the command line reports with exit code 2.
    pub(crate) fn is_usage(&self) -> bool {
        matches!(
            self,
            StoreError::NotFound { .. }
                | StoreError::Ambiguous { .. }
                | StoreError::AlreadyExists(_)
                | StoreError::InvalidId { .. }
                | StoreError::NoSuchSeq { .. }
        )
    }
}

/// Result alias of the store.
pub type Result<T> = std::result::Result<T, StoreError>;

/// What an I/O error means, in words and without the OS's `(os error 17)`.
pub fn io_error(e: &std::io::Error) -> String {
    use std::io::ErrorKind as K;
    let words = match e.kind() {
        K::NotFound => "no such file or folder",
        K::PermissionDenied => "permission denied",
        K::AlreadyExists => "a file with that name exists",
        K::StorageFull => "the disk is full",
        K::ReadOnlyFilesystem => "the file system is read-only",
        K::IsADirectory => "that is a folder",
        K::NotADirectory => "part of the path is not a folder",
        K::InvalidFilename => "not a valid file name",
        _ => {
            let s = e.to_string();
            return match s.rfind(" (os error ") {
                Some(i) => s[..i].to_string(),
                None => s,
            };
        }
    };
    words.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_read_as_words() {
        let exists = std::io::Error::from_raw_os_error(17);
        assert_eq!(io_error(&exists), "a file with that name exists");
        let other = std::io::Error::other("disk on fire");
        assert_eq!(io_error(&other), "disk on fire");
        assert!(!io_error(&std::io::Error::from_raw_os_error(5)).contains("os error"));
    }
}
