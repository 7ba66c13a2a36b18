//! What the `neocode bridge` tests share: the event sequences a turn answers with, reading a
//! bridge's events (in-process or from a real process), and the session a turn's
//! `session_init` names.

use std::sync::mpsc::Receiver;
use std::time::Duration;

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

/// The next event a bridge wrote, waiting up to 30 s.
pub fn next(events: &Receiver<Value>) -> Value {
    events
        .recv_timeout(Duration::from_secs(30))
        .expect("an event within 30 s")
}

/// Events up to and including the next one of type `ty`.
pub fn until(events: &Receiver<Value>, ty: &str) -> Vec<Value> {
    let mut out = Vec::new();
    loop {
        let v = next(events);
        let done = v["type"] == ty;
        out.push(v);
        if done {
            return out;
        }
    }
}

/// The first event of type `ty`.
pub fn find<'a>(events: &'a [Value], ty: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["type"] == ty)
        .unwrap_or_else(|| panic!("no {ty} in {events:#?}"))
}
