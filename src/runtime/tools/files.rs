//! Where `read_file`, `write_file` and `edit_file` get and put file text when a front end
//! holds the files: an editor over ACP (`fs/read_text_file`, `fs/write_text_file`), so the
//! model reads unsaved buffers and its writes land in them. Without one ([`ToolContext`]'s
//! `files` is `None`) the tools read and write the disk themselves, as always. Either way the
//! tool confines the path, refuses protected ones and records the change for a rewind first.
//!
//! [`ToolContext`]: super::ToolContext

use std::path::Path;

/// Why the front end could not read or write a file (its words, one line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FileAccessError(pub String);

/// A front end's file text, by absolute path (already confined to the workspace).
pub trait FileAccess: std::fmt::Debug + Send + Sync {
    /// Whether reads go to the front end (`read_file`; the before-image of `write_file`).
    fn reads(&self) -> bool;
    /// Whether writes go to the front end (`write_file`; `edit_file` when it reads too).
    fn writes(&self) -> bool;
    /// The text the front end has for `abs` (an open buffer's, else the file's).
    fn read_text(&self, abs: &Path) -> Result<String, FileAccessError>;
    /// Replaces `abs`'s text with `content` in the front end (it saves or keeps the buffer).
    fn write_text(&self, abs: &Path, content: &str) -> Result<(), FileAccessError>;
}
