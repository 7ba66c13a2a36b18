//! What every HTTP provider (Chat Completions, Responses, Anthropic Messages) shares: the
//! client and its runtime, the send path (429 and 5xx retried with backoff and `Retry-After`,
//! the error body read, a connection dropped unanswered sent once more), waiting with a
//! cancel and a limit, durations and errors in words.

use std::future::Future;
use std::time::Duration;

use super::error::ErrorKind;
use super::error::ProviderError;
use super::retry_after::retry_after;
use super::settings::OpenAiSettings;
use super::sse::StreamEvent;
use crate::runtime::cancel::CancelFlag;
pub(super) use crate::runtime::net::root_cause;
use crate::runtime::net::tls_config;

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

/// The HTTP client (with `connect_timeout`) and the single-threaded runtime a provider runs
/// its calls on; the crypto provider is installed once per process, and the TLS settings
/// ([`tls_config`]) are made once and shared.
pub(super) fn client_and_runtime(
    connect_timeout: Duration,
) -> Result<(reqwest::Client, tokio::runtime::Runtime), ProviderError> {
    let fail = |e: String| ProviderError {
        kind: ErrorKind::Protocol,
        message: e,
        partial: None,
    };
    let tls = tls_config().map_err(|e| fail(format!("cannot set up TLS: {e}")))?;
    let client = reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .tls_backend_preconfigured(tls)
        .build()
        .map_err(|e| fail(format!("cannot set up the HTTP client: {e}")))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| fail(format!("cannot start the provider's runtime: {e}")))?;
    Ok((client, rt))
}

/// Whether the server took the request and dropped the connection before any answer:
/// hyper's "connection closed before message completed" (a kept-alive connection the server
/// closed meanwhile), or a reset by peer (llama-cpp-python under an overflowing prompt). Not
/// a refused connection, not a timeout.
pub(super) fn dropped_unanswered(e: &reqwest::Error) -> bool {
    !e.is_connect() && !e.is_timeout() && is_drop(&root_cause(e))
}

/// Whether an error's innermost text is a connection closed or reset under the request.
pub(super) fn is_drop(cause: &str) -> bool {
    let c = cause.to_ascii_lowercase();
    c.contains("connection closed before message") || c.contains("reset by peer")
}

/// A non-2xx answer, read: its status, its body, and the wait its `Retry-After` asks for.
pub(super) struct Refused {
    pub status: u16,
    pub text: String,
    pub retry_after: Option<Duration>,
}

/// What posting got.
pub(super) enum Posted {
    /// A 2xx answer, its body not read yet.
    Answer(reqwest::Response),
    /// An error status the retries did not fix (or that is not retried).
    Refused(Refused),
    /// The connection was dropped unanswered twice (sent once more on a new connection).
    Dropped(reqwest::Error),
}

/// The n-th backoff: `backoff` doubled `attempt` times (bounded).
pub(super) fn backoff(s: &OpenAiSettings, attempt: u32) -> Duration {
    s.backoff.saturating_mul(1 << attempt.min(10))
}

/// Says a retry is coming (`status`, the attempt it will be) and waits `pause`; `Err` when
/// the user cancelled meanwhile.
pub(super) async fn pause_before_retry(
    s: &OpenAiSettings,
    status: u16,
    attempt: &mut u32,
    pause: Duration,
    cancel: &CancelFlag,
    on_event: &mut dyn FnMut(StreamEvent),
) -> Result<(), Cancelled> {
    *attempt += 1;
    on_event(StreamEvent::Retrying {
        status,
        attempt: *attempt,
        of: s.max_retries,
        wait: pause,
    });
    match wait(
        tokio::time::sleep(pause),
        cancel,
        pause + Duration::from_secs(1),
    )
    .await
    {
        Waited::Cancelled => Err(Cancelled),
        _ => Ok(()),
    }
}

/// The user cancelled.
pub(super) struct Cancelled;

/// Posts the request `build` makes until the server answers 2xx. 429 and 5xx are retried
/// with doubling backoff (`Retry-After` honoured up to `max_retry_wait`) while retries are
/// left and `retryable` agrees; a connection dropped unanswered is sent once more at once.
/// A failed send (no answer) is its kind and message, unredacted.
pub(super) async fn post(
    s: &OpenAiSettings,
    url: &str,
    build: &dyn Fn() -> reqwest::RequestBuilder,
    retryable: &dyn Fn(&Refused) -> bool,
    attempt: &mut u32,
    cancel: &CancelFlag,
    on_event: &mut dyn FnMut(StreamEvent),
) -> Result<Posted, (ErrorKind, String)> {
    let mut resent = false;
    loop {
        let resp = match wait(build().send(), cancel, s.idle_timeout).await {
            Waited::Done(Ok(r)) => r,
            Waited::Done(Err(e)) if dropped_unanswered(&e) && !resent => {
                resent = true;
                continue;
            }
            Waited::Done(Err(e)) if dropped_unanswered(&e) => return Ok(Posted::Dropped(e)),
            Waited::Done(Err(e)) => {
                return Err(send_error(&e, url, s.connect_timeout, s.idle_timeout));
            }
            Waited::Cancelled => return Err((ErrorKind::Cancelled, "cancelled".into())),
            Waited::TimedOut => {
                return Err((
                    ErrorKind::Timeout,
                    format!("no answer from {url} within {}", secs(s.idle_timeout)),
                ));
            }
        };
        let status = resp.status().as_u16();
        if (200..300).contains(&status) {
            return Ok(Posted::Answer(resp));
        }
        let retry_after = resp
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| retry_after(v, chrono::Utc::now()));
        let text = match wait(resp.text(), cancel, s.idle_timeout).await {
            Waited::Done(Ok(t)) => t,
            _ => String::new(),
        };
        let refused = Refused {
            status,
            text,
            retry_after,
        };
        let pause = retry_after.unwrap_or(backoff(s, *attempt));
        if (status == 429 || status >= 500)
            && retryable(&refused)
            && *attempt < s.max_retries
            && pause <= s.max_retry_wait
        {
            if pause_before_retry(s, status, attempt, pause, cancel, on_event)
                .await
                .is_err()
            {
                return Err((ErrorKind::Cancelled, "cancelled".into()));
            }
            continue;
        }
        return Ok(Posted::Refused(refused));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn plain_http_reads_no_certificate_and_clients_share_the_tls_settings() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            for _ in 0..2 {
                let (mut c, _) = listener.accept().unwrap();
                let mut buf = [0u8; 4096];
                let _ = c.read(&mut buf).unwrap();
                c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                    .unwrap();
            }
        });
        for _ in 0..2 {
            let (client, rt) = client_and_runtime(Duration::from_secs(5)).unwrap();
            let text = rt.block_on(async {
                client
                    .get(format!("http://{addr}/"))
                    .send()
                    .await
                    .unwrap()
                    .text()
                    .await
                    .unwrap()
            });
            assert_eq!(text, "ok");
        }
        server.join().unwrap();
        assert!(
            !crate::runtime::net::tls_roots_loaded(),
            "the system's certificate authorities were read for plain HTTP"
        );
        // The verifier still checks signatures and names its schemes without the roots.
        assert!(crate::runtime::net::verifier_schemes() > 0);
        assert!(!crate::runtime::net::tls_roots_loaded());
    }
}
