//! What a session records about the workspace files its tools changed (issue 26), as plain
//! data: a file tool's before- and after-image, the paths a command changed, the rows read
//! back, and a rewind's journal. The store keeps the bytes as content-addressed blobs
//! (SHA-256) beside the assets; nothing here knows SQL or the layout.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Largest file whose before-image is stored (10 MiB); a larger one is recorded as
/// "not snapshotted" and a rewind cannot restore it.
pub(crate) const SNAPSHOT_LIMIT: u64 = 10 * 1024 * 1024;

/// Lower-case hex SHA-256 of `data`: a blob's name.
pub fn blob_hash(data: &[u8]) -> String {
    let digest = Sha256::digest(data);
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        out.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
    }
    out
}

/// A file's content at one moment, as a tool saw it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Image {
    /// There was no file.
    #[default]
    Absent,
    /// The file's bytes and permission bits (`st_mode & 0o7777`).
    Bytes { data: Vec<u8>, mode: u32 },
    /// A file over [`SNAPSHOT_LIMIT`]: not kept.
    TooLarge { size: u64, mode: u32 },
}

/// How a command changed a path (seen by comparing fingerprints of the workspace).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandChange {
    Created,
    Modified,
    Deleted,
}

impl CommandChange {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            CommandChange::Created => "created",
            CommandChange::Modified => "modified",
            CommandChange::Deleted => "deleted",
        }
    }
}

/// One change a tool call made to a workspace file, stored with its result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileChange {
    /// `write_file` / `edit_file`: the file before and after (`path` relative to the root).
    Written {
        path: String,
        before: Image,
        after: Image,
    },
    /// `run_command` changed this path. `after`: its state once the command ended
    /// (`Unknown` over the size cap). `before_tree`: inside a git work tree, the tree object
    /// of the working tree before the command (a rewind reads the file's earlier content
    /// there); without one the change cannot be restored.
    ByCommand {
        path: String,
        change: CommandChange,
        after: FileState,
        before_tree: Option<String>,
    },
}

/// A file's state as recorded: what a rewind puts back or compares against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum FileState {
    /// No file.
    Absent,
    /// The blob `hash` with permission bits `mode`.
    Stored { hash: String, mode: u32, size: u64 },
    /// A file existed but its bytes were not kept (over the size cap, or changed by a
    /// command).
    Unknown,
}

impl FileState {
    /// The state of a file with `data` and `mode` (hashing it).
    pub(crate) fn of(data: &[u8], mode: u32) -> FileState {
        FileState::Stored {
            hash: blob_hash(data),
            mode,
            size: data.len() as u64,
        }
    }

    /// Whether two states have the same bytes and mode (`Unknown` equals nothing).
    pub(crate) fn same(&self, other: &FileState) -> bool {
        match (self, other) {
            (FileState::Absent, FileState::Absent) => true,
            (
                FileState::Stored { hash, mode, .. },
                FileState::Stored {
                    hash: h2, mode: m2, ..
                },
            ) => hash == h2 && mode == m2,
            _ => false,
        }
    }
}

/// One recorded change, read back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChangeRow {
    /// The tool result's message.
    pub seq: i64,
    /// Relative to the workspace root.
    pub path: String,
    /// `None` for a file tool; the change for a command.
    pub by_command: Option<CommandChange>,
    pub before: FileState,
    pub after: FileState,
    /// For a command's change inside git: the tree object holding the state before.
    pub before_tree: Option<String>,
}

/// One file of a rewind's journal: what it is set to, and what was there before (kept, so
/// the rewind can be undone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewindFile {
    pub path: String,
    /// `Absent`: the file is deleted.
    pub target: FileState,
    /// The file as the rewind found it (its bytes are stored first).
    pub previous: FileState,
}

/// Where a rewind stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RewindState {
    /// Journaled, files being replaced; a start finds it and finishes it.
    Applying,
    Done,
    /// Undone by a later rewind.
    Undone,
}

impl RewindState {
    pub fn parse(s: &str) -> Option<RewindState> {
        match s {
            "applying" => Some(RewindState::Applying),
            "done" => Some(RewindState::Done),
            "undone" => Some(RewindState::Undone),
            _ => None,
        }
    }
}

/// A rewind's journal row and its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewind {
    pub id: String,
    /// The session rewound.
    pub session_id: String,
    /// The user message rewound to (`0` for an undo).
    pub to_seq: i64,
    /// The session to continue: the fork made at `to_seq - 1` (made when the rewind
    /// finishes if it does not exist yet), or `session_id` itself.
    pub result_id: String,
    /// Whether `result_id` is a fork this rewind makes.
    pub forks: bool,
    /// The rewind this one undoes.
    pub undo_of: Option<String>,
    pub state: RewindState,
    /// The process applying it (a start leaves a live one alone).
    pub pid: u32,
    pub files: Vec<RewindFile>,
}
