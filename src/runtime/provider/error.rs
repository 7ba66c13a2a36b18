//! How a model call fails: the [`ErrorKind`] front ends and turns read, and the
//! [`ProviderError`] that carries it.

use super::sse::Completion;

/// What kind of failure, so front ends can say what to do and the turn knows what to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// 401 / 403: the key was rejected.
    Auth,
    /// 404: the model or the URL is wrong.
    NotFound,
    /// 429 after the retries.
    RateLimited,
    /// 5xx after the retries.
    Server,
    /// Another 4xx (bad request, context too long ...).
    BadRequest,
    /// Connection refused, DNS failure, TLS failure.
    Unreachable,
    /// No answer, or the stream went quiet, for longer than the timeout.
    Timeout,
    /// The connection broke mid-reply.
    StreamCut,
    /// The user cancelled.
    Cancelled,
    /// The server sent something that is not a Chat Completions stream.
    Protocol,
    /// The prompt does not fit the model's context window (the message gives the numbers).
    ContextOverflow,
}

impl ErrorKind {
    /// Stable code for events and `--json` (`FinishReason::Failed::code`).
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::Auth => "auth",
            ErrorKind::NotFound => "not_found",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::Server => "server_error",
            ErrorKind::BadRequest => "bad_request",
            ErrorKind::Unreachable => "unreachable",
            ErrorKind::Timeout => "timeout",
            ErrorKind::StreamCut => "stream_cut",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Protocol => "protocol",
            ErrorKind::ContextOverflow => "context_overflow",
        }
    }
}

/// A failed model call. The message is for the user and never contains the key.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderError {
    /// What kind.
    pub kind: ErrorKind,
    /// What went wrong and what to do, in words.
    pub message: String,
    /// What arrived before the failure (marked incomplete), if anything did.
    pub partial: Option<Box<Completion>>,
}

impl ProviderError {
    /// A failure whose message has `key` (and anything shaped like an API key) removed.
    pub(crate) fn redacted(
        kind: ErrorKind,
        message: &str,
        key: Option<&str>,
        partial: Option<Box<Completion>>,
    ) -> ProviderError {
        ProviderError {
            kind,
            message: super::redact::redact(message, key),
            partial,
        }
    }
}

impl std::fmt::Display for ProviderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ProviderError {}
