//! What a rewind plans (its scope, each file's action) and why one cannot be made.

use crate::session::{FileState, StoreError};

/// The mark a session made by a rewind carries in front of its title.
pub const REWOUND: &str = "↺";

/// What a rewind covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// A fork at the message and the files (the default).
    Both,
    /// The files only; the session itself is continued.
    FilesOnly,
    /// A fork only; no file is touched.
    ConversationOnly,
}

/// What happens to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Its earlier content is written back.
    Restore,
    /// Deleted: the session created it.
    Delete,
    /// Written again: it is gone now.
    Recreate,
    /// Already as it was.
    Unchanged,
    /// Left alone, and why.
    Skip(String),
    /// Cannot be restored, and why (changed by a command, not snapshotted).
    NotRestorable(String),
}

impl Action {
    /// The word the report starts the file's line with.
    pub(crate) fn word(&self) -> &'static str {
        match self {
            Action::Restore => "restored",
            Action::Delete => "deleted",
            Action::Recreate => "recreated",
            Action::Unchanged => "unchanged",
            Action::Skip(_) => "skipped",
            Action::NotRestorable(_) => "not restorable",
        }
    }

    /// Whether the file is written or deleted.
    pub fn changes_file(&self) -> bool {
        matches!(self, Action::Restore | Action::Delete | Action::Recreate)
    }

    /// Why, for the report (empty for a plain restore).
    pub(crate) fn why(&self) -> String {
        match self {
            Action::Delete => "created by the session".into(),
            Action::Recreate => "it was deleted since".into(),
            Action::Skip(w) | Action::NotRestorable(w) => w.clone(),
            Action::Restore | Action::Unchanged => String::new(),
        }
    }
}

/// One file of a rewind's plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePlan {
    /// Relative to the workspace root.
    pub path: String,
    pub action: Action,
    /// What the file is set to.
    pub target: FileState,
    /// The target's bytes when they come from outside the blob store (a command's change,
    /// read from git's snapshot); stored as a blob when the rewind is applied.
    pub from_git: Option<Vec<u8>>,
}

impl FilePlan {
    /// A file the rewind leaves as it is, and why.
    pub(super) fn not_restorable(path: &str, why: String) -> FilePlan {
        FilePlan {
            path: path.to_string(),
            action: Action::NotRestorable(why),
            target: FileState::Unknown,
            from_git: None,
        }
    }
}

/// What a rewind (or its undo) will do, before it does it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The session rewound.
    pub session_id: String,
    /// The user message gone back to (0 for an undo).
    pub to_seq: i64,
    pub scope: Scope,
    /// The session to continue once it is done (a fork's id is chosen now).
    pub result_id: String,
    /// Whether `result_id` is a new fork.
    pub forks: bool,
    /// The rewind undone.
    pub undo_of: Option<String>,
    /// By path.
    pub files: Vec<FilePlan>,
}

/// Why a rewind cannot be planned or applied: one line for the user.
#[derive(Debug, thiserror::Error)]
pub enum RewindError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "message {seq} of session {session_id} is not a user message; rewind to one of: {user_seqs}"
    )]
    NotUserMessage {
        session_id: String,
        seq: i64,
        user_seqs: String,
    },
    #[error("session {0} has no rewind to undo")]
    NothingToUndo(String),
    #[error("{path}: {detail}")]
    File { path: String, detail: String },
    #[error(
        "session {session_id} changed its files in the worktree {path}, which is gone (its changes are on its branch): rewind only its conversation"
    )]
    WorktreeGone { session_id: String, path: String },
}

impl RewindError {
    /// Bad input (exit 2) rather than a failure.
    pub(crate) fn is_usage(&self) -> bool {
        match self {
            RewindError::Store(e) => e.is_usage(),
            RewindError::NotUserMessage { .. }
            | RewindError::NothingToUndo(_)
            | RewindError::WorktreeGone { .. } => true,
            RewindError::File { .. } => false,
        }
    }
}
