//! What can go wrong talking to a language server, each a one-line message.

/// A message could not be read off a server's output.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// Reading the pipe failed.
    #[error("reading the server's output failed: {0}")]
    Io(std::io::Error),
    /// The stream ended inside a message.
    #[error("the server's output ended inside a message")]
    Truncated,
    /// A header line is not `Name: value`, or its length is not a number.
    #[error("the server sent a malformed header: {0}")]
    BadHeader(String),
    /// A header block without `Content-Length`.
    #[error("the server sent a message without Content-Length")]
    NoLength,
    /// A body over 64 MiB.
    #[error("the server announced a {0}-byte message (too large)")]
    TooLarge(usize),
}

/// A language server could not be used.
#[derive(Debug, thiserror::Error)]
pub enum LspError {
    /// The command is not on `PATH` (or the configured path does not exist).
    #[error("`{0}` is not installed (not found on PATH)")]
    Missing(String),
    /// The process could not be started.
    #[error("`{command}` could not be started: {reason}")]
    Spawn {
        /// The command.
        command: String,
        /// Why, in words.
        reason: String,
    },
    /// A request got no answer in time.
    #[error("no answer to `{method}` within {millis} ms")]
    Timeout {
        /// The request's method.
        method: String,
        /// The limit.
        millis: u128,
    },
    /// The server's process ended.
    #[error("the server stopped ({0})")]
    Stopped(String),
    /// The server answered a request with an error.
    #[error("`{method}` failed: {message}")]
    Refused {
        /// The request's method.
        method: String,
        /// The server's message.
        message: String,
    },
    /// No server is configured for the file.
    #[error("no language server is configured for {0}")]
    NoServer(String),
    /// A path cannot be written as a `file:` URI.
    #[error("{0} cannot be named to a language server")]
    BadPath(String),
}
