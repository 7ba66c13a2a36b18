//! Why the bridge refused a request: [`BridgeError`], whose [`BridgeError::code`] is the
//! `error` event's stable wire code.

use crate::runtime::agent::{StartCode, StartError};

/// The stable code of an `error` event the bridge answers a request with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// No model provider is configured (or the settings do not load).
    Config,
    /// Another process runs the session.
    Busy,
    /// The store failed.
    Storage,
    /// The request is malformed (a bad history, an empty message ...).
    InvalidRequest,
    /// The caller speaks a newer protocol.
    UnsupportedVersion,
    /// The request's `cwd` is not a usable directory.
    InvalidCwd,
    /// The request names a session this workspace does not have.
    SessionNotFound,
    /// The request needs a session and names none (the nonoka dialect's paused calls).
    SessionIdMissing,
    /// An answer or a result for a call that is not waiting.
    UnknownCall,
    /// The agent answered something it should not have.
    Internal,
    /// A request line over the limit was skipped.
    LineTooLong,
    /// Standard input could not be read.
    ReadFailed,
    /// A `cancel` names another turn's request.
    UnknownRequest,
    /// A `cancel` or `approval` while no turn runs.
    NoRunningTurn,
}

impl ErrorCode {
    /// The wire string.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Config => "config",
            ErrorCode::Busy => "busy",
            ErrorCode::Storage => "storage",
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::UnsupportedVersion => "unsupported_version",
            ErrorCode::InvalidCwd => "invalid_cwd",
            ErrorCode::SessionNotFound => "session_not_found",
            ErrorCode::SessionIdMissing => "session_id_missing",
            ErrorCode::UnknownCall => "unknown_call",
            ErrorCode::Internal => "internal",
            ErrorCode::LineTooLong => "line_too_long",
            ErrorCode::ReadFailed => "read_failed",
            ErrorCode::UnknownRequest => "unknown_request",
            ErrorCode::NoRunningTurn => "no_running_turn",
        }
    }
}

/// A refused request: the `error` event's code and its one-line message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct BridgeError {
    /// Why, as a stable code ([`BridgeError::code`] spells it).
    pub kind: ErrorCode,
    /// What failed and what to do, in words.
    pub message: String,
}

impl BridgeError {
    /// A refusal.
    pub fn new(kind: ErrorCode, message: impl Into<String>) -> BridgeError {
        BridgeError {
            kind,
            message: message.into(),
        }
    }

    /// The wire code.
    pub(crate) fn code(&self) -> &'static str {
        self.kind.as_str()
    }
}

impl From<&StartError> for BridgeError {
    /// A turn that could not start, in the bridge's codes.
    fn from(e: &StartError) -> BridgeError {
        let kind = match e.code {
            StartCode::Config => ErrorCode::Config,
            StartCode::Busy => ErrorCode::Busy,
            StartCode::NotFound => ErrorCode::SessionNotFound,
            StartCode::Usage => ErrorCode::InvalidRequest,
            StartCode::Store | StartCode::Provider => ErrorCode::Storage,
        };
        BridgeError::new(kind, crate::sanitize::line(&e.message).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wire_codes_are_the_documented_strings() {
        let all = [
            (ErrorCode::Config, "config"),
            (ErrorCode::Busy, "busy"),
            (ErrorCode::Storage, "storage"),
            (ErrorCode::InvalidRequest, "invalid_request"),
            (ErrorCode::UnsupportedVersion, "unsupported_version"),
            (ErrorCode::InvalidCwd, "invalid_cwd"),
            (ErrorCode::SessionNotFound, "session_not_found"),
            (ErrorCode::SessionIdMissing, "session_id_missing"),
            (ErrorCode::UnknownCall, "unknown_call"),
            (ErrorCode::Internal, "internal"),
            (ErrorCode::LineTooLong, "line_too_long"),
            (ErrorCode::ReadFailed, "read_failed"),
            (ErrorCode::UnknownRequest, "unknown_request"),
            (ErrorCode::NoRunningTurn, "no_running_turn"),
        ];
        for (code, wire) in all {
            assert_eq!(BridgeError::new(code, "m").code(), wire);
        }
        let busy = StartError::new(StartCode::Busy, "session s is running in pid 7");
        let e = BridgeError::from(&busy);
        assert_eq!(
            (e.code(), e.to_string().as_str()),
            ("busy", "session s is running in pid 7")
        );
    }
}
