//! What every HTTP provider shares: the crypto set-up, waiting with a cancel and a limit,
//! durations and errors in words, and the key kept out of messages.

use std::future::Future;
use std::sync::Once;
use std::time::Duration;

use super::ErrorKind;
use crate::runtime::cancel::CancelFlag;

pub(super) static CRYPTO: Once = Once::new();

/// Replaces `key` and `sk-...` tokens in `s` with `***`.
pub fn redact(s: &str, key: Option<&str>) -> String {
    let mut out = match key {
        Some(k) if k.len() >= 4 => s.replace(k, "***"),
        _ => s.to_string(),
    };
    while let Some(i) = out.find("sk-") {
        let end = out[i..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '*'))
            .map_or(out.len(), |e| i + e);
        if end - i <= 3 {
            break;
        }
        out.replace_range(i..end, "***");
    }
    out
}

pub(super) enum Waited<T> {
    Done(T),
    Cancelled,
    TimedOut,
}

/// Awaits `fut` unless `cancel` is raised or `limit` passes first.
pub(super) async fn wait<F: Future>(
    fut: F,
    cancel: &CancelFlag,
    limit: Duration,
) -> Waited<F::Output> {
    let deadline = tokio::time::Instant::now() + limit;
    tokio::pin!(fut);
    loop {
        if cancel.is_cancelled() {
            return Waited::Cancelled;
        }
        let tick = tokio::time::Instant::now() + Duration::from_millis(50);
        tokio::select! {
            out = &mut fut => return Waited::Done(out),
            _ = tokio::time::sleep_until(tick.min(deadline)) => {
                if tokio::time::Instant::now() >= deadline {
                    return Waited::TimedOut;
                }
            }
        }
    }
}

pub(super) fn secs(d: Duration) -> String {
    if d.as_millis() < 1000 {
        format!("{} ms", d.as_millis())
    } else {
        format!("{} s", d.as_secs())
    }
}

/// The innermost error's text: reqwest's outer text says only "error sending request".
pub(super) fn root_cause(e: &dyn std::error::Error) -> String {
    let mut cur: &dyn std::error::Error = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    let s = cur.to_string();
    if s.is_empty() { e.to_string() } else { s }
}

/// What a failed send (no HTTP answer) is, in words: for `url`, with the connect and idle
/// timeouts the request had.
pub(super) fn send_error(
    e: &reqwest::Error,
    url: &str,
    connect_timeout: Duration,
    idle_timeout: Duration,
) -> (ErrorKind, String) {
    if e.is_connect() {
        let why = if e.is_timeout() {
            format!("no connection within {}", secs(connect_timeout))
        } else {
            root_cause(e)
        };
        return (
            ErrorKind::Unreachable,
            format!(
                "cannot reach {url}: {why}; check base_url (NEOCODE_BASE_URL) and that the server runs"
            ),
        );
    }
    if e.is_timeout() {
        return (
            ErrorKind::Timeout,
            format!("no answer from {url} within {}", secs(idle_timeout)),
        );
    }
    (
        ErrorKind::Unreachable,
        format!("request to {url} failed: {}", root_cause(e)),
    )
}
