//! What the `neocode bridge` tests share: the event sequences a turn answers with, and the
//! session a turn's `session_init` names.

use serde_json::Value;

/// A plain answered turn, one run of `text_delta`s.
pub const PLAIN_TURN: [&str; 5] = [
    "protocol_ack",
    "session_init",
    "text_delta",
    "message_stored",
    "finish",
];

/// A turn that warns before it answers (a new session or a fork instead of the one asked for).
pub const WARNED_TURN: [&str; 6] = [
    "protocol_ack",
    "session_init",
    "warning",
    "text_delta",
    "message_stored",
    "finish",
];

/// The session a turn's `session_init` names.
pub fn session_id(events: &[Value]) -> String {
    events
        .iter()
        .find(|e| e["type"] == "session_init")
        .unwrap_or_else(|| panic!("no session_init in {events:#?}"))["session_id"]
        .as_str()
        .unwrap()
        .to_string()
}
