//! The TUI's errors: what a failed action says on the status line, in one line.

/// A failure the TUI only shows (the status line, a notice, the transcript): its words,
/// one line, already worded for the user. Nothing branches on it, so it carries no kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Failure(String);

impl Failure {
    /// A failure saying `words`.
    pub fn new(words: impl Into<String>) -> Failure {
        Failure(words.into())
    }

    /// Its words.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Failure {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<String> for Failure {
    fn from(words: String) -> Failure {
        Failure(words)
    }
}

impl From<&str> for Failure {
    fn from(words: &str) -> Failure {
        Failure(words.to_string())
    }
}

impl From<Failure> for String {
    fn from(failure: Failure) -> String {
        failure.0
    }
}

/// A [`Failure`] worded like `format!`.
macro_rules! failed {
    ($($words:tt)*) => {
        $crate::tui::error::Failure::new(format!($($words)*))
    };
}
pub(crate) use failed;
