//! What a headless run prints besides its turn's events: the `run_start` line that opens a
//! `stream-json` stream and the `result` object that ends it (alone with `--output-format
//! json`). The stream's contract is docs/headless.md; [`STREAM_VERSION`] is its version.

use std::collections::BTreeSet;
use std::io::Write;

use serde_json::{Value, json};

use crate::runtime::Sessions;
use crate::runtime::agent::FinishReason;
use crate::sanitize;
use crate::session::{Message, Role, SessionHeader, Usage};

/// Version of the `stream-json` event stream (docs/headless.md, "Versioning").
pub(crate) const STREAM_VERSION: u32 = 1;

/// Where the session stood before the run: its last message and its spending so far (a new
/// session: nothing).
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Before {
    last_seq: i64,
    cost_usd: f64,
}

impl Before {
    /// The state of the session `key` names (nothing when it does not resolve).
    pub(super) fn of(sessions: &Sessions, key: Option<&str>) -> Before {
        // The header alone: a long transcript is not read to learn where it ends.
        let Some(h) = key
            .and_then(|k| sessions.resolve(k).ok())
            .and_then(|id| sessions.header(&id).ok())
        else {
            return Before::default();
        };
        Before {
            last_seq: h.last_seq,
            cost_usd: cost(&h),
        }
    }
}

fn cost(h: &SessionHeader) -> f64 {
    h.ledger
        .as_ref()
        .and_then(|l| l.usage.cost_usd)
        .unwrap_or(0.0)
}

/// How the run ended, for the result object.
pub(super) struct Ended<'a> {
    pub(super) session_id: &'a str,
    pub(super) reason: &'a FinishReason,
    pub(super) usage: Usage,
    /// Exit code the process ends with.
    pub(super) exit_code: u8,
    /// The failure's one line, if the run failed.
    pub(super) error: Option<String>,
    /// The answer parsed as the `--output-schema` document, when it is one.
    pub(super) structured: Option<Value>,
}

/// The run's final answer: the text of the last assistant message it stored.
pub(super) fn answer(sessions: &Sessions, id: &str, before: Before) -> String {
    // Only the messages the run added are read, however long the session was before it.
    sessions
        .messages(id, before.last_seq.saturating_add(1), i64::MAX)
        .unwrap_or_default()
        .iter()
        .rev()
        .filter(|m| m.role == Role::Assistant)
        .map(Message::text)
        .find(|t| !t.trim().is_empty())
        .unwrap_or_default()
}

/// The `result` object.
pub(super) fn result(sessions: &Sessions, before: Before, answer: &str, end: &Ended) -> Value {
    let header = sessions.header(end.session_id).ok();
    let cost_usd = header.as_ref().and_then(|h| {
        let spent = cost(h) - before.cost_usd;
        h.ledger
            .as_ref()
            .and_then(|l| l.usage.cost_usd)
            .map(|_| (spent * 1e6).round() / 1e6)
    });
    let files: BTreeSet<String> = sessions
        .file_changes(end.session_id)
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c.seq > before.last_seq)
        .map(|c| c.path)
        .collect();
    let limit = match end.reason {
        FinishReason::LimitReached(why) => Some(why.clone()),
        _ => None,
    };
    let mut v = json!({
        "type": "result",
        "version": STREAM_VERSION,
        "session_id": end.session_id,
        "stop_reason": end.reason.as_str(),
        "limit": limit,
        "is_error": end.exit_code != 0,
        "exit_code": end.exit_code,
        "answer": answer,
        "usage": end.usage,
        "cost_usd": cost_usd,
        "files_changed": files,
        "error": end.error,
    });
    if let (Some(s), Some(obj)) = (&end.structured, v.as_object_mut()) {
        obj.insert("structured_output".into(), s.clone());
    }
    v
}

/// The first line of a `stream-json` stream.
pub(super) fn run_start() -> Value {
    json!({
        "type": "run_start",
        "version": STREAM_VERSION,
        "neocode_version": env!("CARGO_PKG_VERSION"),
    })
}

/// A `warning` line of the stream (the same shape as the turn's).
pub(super) fn warning(code: &str, message: &str) -> Value {
    json!({"type": "warning", "code": code, "message": message})
}

/// Writes one JSON line on stdout, model text escaped as the turn's lines are; a closed
/// stdout is ignored (the run's outcome does not depend on it).
pub(super) fn print_line(v: &Value) {
    // Keys in order at every level, as the turn's lines.
    let mut v = v.clone();
    v.sort_all_objects();
    let mut line = sanitize::json(&v.to_string()).into_owned();
    line.push('\n');
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(line.as_bytes()).and_then(|_| o.flush());
}

/// Adds `b` to `a`.
pub(super) fn add(a: Usage, b: Usage) -> Usage {
    Usage {
        input_tokens: a.input_tokens + b.input_tokens,
        output_tokens: a.output_tokens + b.output_tokens,
    }
}
