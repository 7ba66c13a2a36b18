//! What a policy file (the permission rules, the hooks) says when it is wrong: one error for
//! both, naming the file and the line, and the one read both begin with.

use std::fmt;
use std::path::{Path, PathBuf};

/// A malformed rule or hooks file (or one that cannot be read or written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyFileError {
    pub file: PathBuf,
    /// 1-based; 0 when the problem is not on a line (the file cannot be read).
    pub line: usize,
    pub message: String,
}

impl fmt::Display for PolicyFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file.display(), self.message)
        } else {
            write!(f, "{}:{}: {}", self.file.display(), self.line, self.message)
        }
    }
}

impl std::error::Error for PolicyFileError {}

/// A file's text, `None` when it does not exist.
pub(crate) fn read_optional(file: &Path) -> Result<Option<String>, PolicyFileError> {
    match std::fs::read_to_string(file) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(PolicyFileError {
            file: file.to_path_buf(),
            line: 0,
            message: format!("cannot read it: {e}"),
        }),
    }
}
