//! What the Anthropic Messages and OpenAI Responses providers share: their settings, the
//! HTTP client (built, and requests sent, through `transport.rs` as for Chat Completions), the retries (429, 5xx and Anthropic's 529 before any of the reply arrived, and
//! an `overloaded` error event that comes before anything was shown) and reading a stream of
//! named SSE events into a [`WireFold`], the per-API state machine.

use std::time::Duration;

use serde_json::Value;

use super::error::ErrorKind;
use super::error::ProviderError;
use super::quirks::{self, server_message};
use super::settings::OpenAiSettings;
use super::sse::{Completion, StreamEvent, push_merged};
use super::sse_decode::{NotUtf8, SseDecoder};
use super::transport::{self, Posted, Waited, root_cause, secs, wait};
use crate::runtime::cancel::CancelFlag;

/// How to reach a model over the Messages or Responses API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiSettings {
    /// Base URL, model, key, timeouts and retries (as for Chat Completions).
    pub http: OpenAiSettings,
    /// `reasoning.effort` (Responses): `minimal`, `low`, `medium`, `high`.
    pub reasoning_effort: Option<String>,
    /// Extended thinking budget in tokens (Anthropic); 0: off.
    pub thinking_budget: u32,
    /// `max_tokens` of one reply (Anthropic requires one).
    pub max_output_tokens: u32,
    /// The system prompt as one plain string instead of text blocks with a cache breakpoint
    /// (Anthropic; `system_as_text` in config.toml, for servers that refuse blocks).
    pub system_as_text: bool,
}

#[cfg(test)]
impl ApiSettings {
    /// Settings for `model` at `base_url` without a key: no reasoning effort, no thinking,
    /// 1000 output tokens, system blocks.
    pub(crate) fn for_test(base_url: &str, model: &str) -> ApiSettings {
        ApiSettings {
            http: OpenAiSettings::new(base_url, model, None),
            reasoning_effort: None,
            thinking_budget: 0,
            max_output_tokens: 1000,
            system_as_text: false,
        }
    }
}

/// An event that says the reply failed: its message, and whether asking again may help
/// (the server was overloaded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError {
    /// The server's message.
    pub message: String,
    /// Overloaded or a server error: worth a retry while nothing was shown yet.
    pub retryable: bool,
}

/// Folds one API's stream events into a completion.
pub trait WireFold {
    /// Feeds one event (`event:` name, may be empty, and its `data`); returns what streams to
    /// the user.
    fn feed(&mut self, event: &str, data: &str) -> Result<Vec<StreamEvent>, WireError>;
    /// The stream's last event arrived (`message_stop`, `response.completed` ...).
    fn is_done(&self) -> bool;
    /// Something reached the user (text, reasoning) or a call began: asking again would
    /// repeat it.
    fn has_output(&self) -> bool;
    /// Characters of answer text so far.
    fn text_chars(&self) -> usize;
    /// The answer so far; `incomplete` marks a stream that stopped early.
    fn finish(self, incomplete: bool) -> Completion;
}

/// The HTTP side of a provider: a client and the single-threaded runtime it runs on.
pub(crate) struct Wire {
    pub settings: ApiSettings,
    client: reqwest::Client,
    rt: tokio::runtime::Runtime,
}

/// How reading a stream ended when it did not give a completion.
enum ReadError {
    /// An overloaded or server error event before anything was shown: ask again.
    Retry(String),
    /// The connection was dropped before the first event (why): ask again, once.
    Dropped(String),
    Fail(ProviderError),
}

/// One request: where, with which headers, what body, and which variables name the key
/// (for the message when it is refused).
pub(crate) struct Call<'a> {
    pub url: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: &'a Value,
    pub key_hint: &'static str,
}

impl Wire {
    /// Builds the client.
    pub(crate) fn new(settings: ApiSettings) -> Result<Wire, ProviderError> {
        let (client, rt) = transport::client_and_runtime(settings.http.connect_timeout)?;
        Ok(Wire {
            settings,
            client,
            rt,
        })
    }

    /// An error whose message never contains the key.
    pub(crate) fn err(
        &self,
        kind: ErrorKind,
        message: String,
        partial: Option<Box<Completion>>,
    ) -> ProviderError {
        ProviderError::redacted(
            kind,
            &message,
            self.settings.http.api_key.as_deref(),
            partial,
        )
    }

    /// Sends `call` and folds its stream with a fresh fold from `new_fold` per attempt.
    pub(crate) fn stream<F: WireFold>(
        &self,
        call: &Call<'_>,
        cancel: &CancelFlag,
        on_event: &mut dyn FnMut(StreamEvent),
        new_fold: &mut dyn FnMut() -> F,
    ) -> Result<Completion, ProviderError> {
        self.rt.block_on(async {
            let s = &self.settings.http;
            let mut attempt = 0u32;
            let mut resent = false;
            loop {
                let resp = self.send(call, cancel, on_event, &mut attempt).await?;
                match self.read(resp, new_fold(), cancel, on_event).await {
                    Ok(c) => return Ok(c),
                    Err(ReadError::Fail(e)) => return Err(e),
                    // Reset before the first event (llama-cpp-python under an overflowing
                    // prompt): asked once more, as an empty 200 is for Chat Completions.
                    Err(ReadError::Dropped(_)) if !resent => resent = true,
                    Err(ReadError::Dropped(why)) => {
                        return Err(self.err(
                            ErrorKind::StreamCut,
                            format!(
                                "{} dropped the connection before the reply began, twice ({why}); check the server's log (a prompt longer than its window does this)",
                                s.base_url
                            ),
                            None,
                        ));
                    }
                    Err(ReadError::Retry(_)) if attempt < s.max_retries => {
                        let pause = transport::backoff(s, attempt);
                        transport::pause_before_retry(s, 529, &mut attempt, pause, cancel, on_event)
                            .await
                            .map_err(|_| self.err(ErrorKind::Cancelled, "cancelled".into(), None))?;
                    }
                    Err(ReadError::Retry(msg)) => {
                        return Err(self.err(
                            ErrorKind::Server,
                            format!(
                                "{} is overloaded (after {} attempts): {msg}",
                                s.base_url,
                                attempt + 1
                            ),
                            None,
                        ));
                    }
                }
            }
        })
    }

    /// Posts the request through the shared send path until the server answers 2xx
    /// (429 and 5xx retried, `Retry-After` honoured, while retries are left).
    async fn send(
        &self,
        call: &Call<'_>,
        cancel: &CancelFlag,
        on_event: &mut dyn FnMut(StreamEvent),
        attempt: &mut u32,
    ) -> Result<reqwest::Response, ProviderError> {
        let s = &self.settings.http;
        let url = &call.url;
        let build = || {
            let mut rb = self
                .client
                .post(url)
                .header("accept", "text/event-stream")
                .json(call.body);
            for (k, v) in &call.headers {
                rb = rb.header(*k, v);
            }
            rb
        };
        let posted = transport::post(s, url, &build, &|_| true, attempt, cancel, on_event)
            .await
            .map_err(|(kind, message)| self.err(kind, message, None))?;
        match posted {
            Posted::Answer(resp) => Ok(resp),
            Posted::Dropped(e) => {
                let (kind, message) =
                    transport::send_error(&e, url, s.connect_timeout, s.idle_timeout);
                Err(self.err(kind, message, None))
            }
            // llama-server answers an overflow on /v1/messages and /v1/responses as on
            // /v1/chat/completions: HTTP 400 `exceed_context_size_error`.
            Posted::Refused(r) if quirks::overflow(&r.text).is_some() => {
                let o = quirks::overflow(&r.text).unwrap_or_default();
                if o.window.is_some() {
                    quirks::remember_window(&s.base_url, o.window);
                }
                let message = quirks::overflow_text(&s.base_url, &o);
                Err(self.err(ErrorKind::ContextOverflow, message, None))
            }
            Posted::Refused(r) => {
                let msg = server_message(&r.text);
                let to = Asked {
                    url: &call.url,
                    key_hint: call.key_hint,
                    check: "model (NEOCODE_MODEL, --model), base_url (NEOCODE_BASE_URL, --base-url) and api (NEOCODE_API, --api)",
                };
                let (kind, message) = status_error(s, &to, r.status, &msg, r.retry_after, *attempt);
                Err(self.err(kind, message, None))
            }
        }
    }

    /// Reads the event stream into `fold` until its last event, a cut, a timeout or a
    /// cancel. The events of one network read reach `on_event` together, consecutive text
    /// joined ([`push_merged`]).
    async fn read<F: WireFold>(
        &self,
        mut resp: reqwest::Response,
        mut fold: F,
        cancel: &CancelFlag,
        on_event: &mut dyn FnMut(StreamEvent),
    ) -> Result<Completion, ReadError> {
        let s = &self.settings.http;
        let base = &s.base_url;
        let mut decoder = SseDecoder::new();
        let fail = |kind, message: String, partial: Option<Completion>| {
            ReadError::Fail(self.err(kind, message, partial.map(Box::new)))
        };
        let mut seen = 0usize;
        let mut read = Vec::new();
        loop {
            let fed = fold_ready(&mut decoder, &mut fold, &mut read, &mut seen);
            read.drain(..).for_each(&mut *on_event);
            let broke = match fed {
                Ok(true) => break,
                Ok(false) => None,
                Err(Ok(e)) if e.retryable && !fold.has_output() => {
                    return Err(ReadError::Retry(e.message));
                }
                Err(Ok(e)) => {
                    let msg = crate::sanitize::line(&e.message).into_owned();
                    return Err(fail(
                        ErrorKind::Server,
                        format!("{base} reported an error mid-reply: {msg}"),
                        Some(fold.finish(true)),
                    ));
                }
                Err(Err(e)) => Some(e.to_string()),
            };
            let next = match broke {
                Some(why) => Err(why),
                None => match wait(resp.chunk(), cancel, s.idle_timeout).await {
                    Waited::Done(Ok(chunk)) => Ok(chunk),
                    Waited::Done(Err(e)) if seen == 0 && transport::is_drop(&root_cause(&e)) => {
                        return Err(ReadError::Dropped(root_cause(&e)));
                    }
                    Waited::Done(Err(e)) => Err(root_cause(&e)),
                    Waited::Cancelled => {
                        return Err(fail(
                            ErrorKind::Cancelled,
                            "cancelled".into(),
                            Some(fold.finish(true)),
                        ));
                    }
                    Waited::TimedOut => {
                        return Err(fail(
                            ErrorKind::Timeout,
                            format!(
                                "{base} sent nothing for {}; the reply so far is kept",
                                secs(s.idle_timeout)
                            ),
                            Some(fold.finish(true)),
                        ));
                    }
                },
            };
            match next {
                Ok(Some(bytes)) => decoder.push(&bytes),
                Ok(None) if fold.is_done() => break,
                Ok(None) if seen == 0 => {
                    return Err(fail(
                        ErrorKind::Protocol,
                        format!(
                            "{base} answered but sent no event stream; check base_url (NEOCODE_BASE_URL) and api (NEOCODE_API)"
                        ),
                        None,
                    ));
                }
                cut => {
                    let n = fold.text_chars();
                    let why = match cut {
                        Err(why) => format!("the connection broke ({why})"),
                        Ok(_) => {
                            "the server closed the connection before the reply finished".to_string()
                        }
                    };
                    return Err(fail(
                        ErrorKind::StreamCut,
                        format!(
                            "the reply from {base} was cut off after {n} characters: {why}; what arrived is kept, and continuing will ask again"
                        ),
                        Some(fold.finish(true)),
                    ));
                }
            }
        }
        Ok(fold.finish(false))
    }
}

/// Feeds `fold` every event the bytes `decoder` holds complete, their stream events merged
/// into `read`, counting them in `seen`: whether the fold's last event came, or the error
/// the fold found (`Ok`) or the bytes are (`Err`).
fn fold_ready<F: WireFold>(
    decoder: &mut SseDecoder,
    fold: &mut F,
    read: &mut Vec<StreamEvent>,
    seen: &mut usize,
) -> Result<bool, Result<WireError, NotUtf8>> {
    while let Some(ev) = decoder.next_event().map_err(Err)? {
        *seen += 1;
        for e in fold.feed(ev.event, ev.data).map_err(Ok)? {
            push_merged(read, e);
        }
        if fold.is_done() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Where a request the server refused went, for the words of its error.
pub(super) struct Asked<'a> {
    pub(super) url: &'a str,
    /// The variables that hold the key.
    pub(super) key_hint: &'a str,
    /// The settings to check when the server answers 404.
    pub(super) check: &'a str,
}

/// The error for a status the retries did not fix, in words that say what to set.
pub(super) fn status_error(
    s: &OpenAiSettings,
    to: &Asked<'_>,
    status: u16,
    msg: &str,
    after: Option<Duration>,
    attempt: u32,
) -> (ErrorKind, String) {
    let url = to.url;
    let tries = if attempt > 0 {
        format!(" (after {} attempts)", attempt + 1)
    } else {
        String::new()
    };
    match status {
        401 | 403 => (
            ErrorKind::Auth,
            format!(
                "the provider rejected the API key (HTTP {status}: {msg}); set {} to a valid key for {}",
                to.key_hint, s.base_url
            ),
        ),
        404 => (
            ErrorKind::NotFound,
            format!(
                "model `{}` or URL wrong: {url} answered HTTP 404 ({msg}); check {}",
                s.model, to.check
            ),
        ),
        429 => (
            ErrorKind::RateLimited,
            match after {
                Some(d) => format!(
                    "rate limited by {}{tries}: {msg}; retry after {}",
                    s.base_url,
                    secs(d)
                ),
                None => format!("rate limited by {}{tries}: {msg}", s.base_url),
            },
        ),
        500.. => (
            ErrorKind::Server,
            format!(
                "server error HTTP {status} from {}{tries}: {msg}",
                s.base_url
            ),
        ),
        _ => (
            ErrorKind::BadRequest,
            format!("{url} refused the request (HTTP {status}): {msg}"),
        ),
    }
}

/// `data` as JSON, or `None` for the stray lines some servers send.
pub(crate) fn json(data: &str) -> Option<Value> {
    serde_json::from_str(data.trim()).ok()
}

/// A number field of `v`, 0 when absent.
pub(crate) fn n(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// A string field of `v`, empty when absent.
pub(crate) fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Folds a whole SSE body (bytes as they came, in any split) with `fold`, decoding with the
/// same SSE decoder the providers use, until the fold's last event; each piece's events are
/// merged as the providers merge one network read's. For tests and the benchmark.
pub fn fold_wire_bytes<F: WireFold>(
    pieces: Vec<Vec<u8>>,
    mut fold: F,
) -> Result<(Vec<StreamEvent>, Completion), WireError> {
    let mut decoder = SseDecoder::new();
    let mut out = Vec::new();
    'pieces: for p in pieces {
        decoder.push(&p);
        let mut read = Vec::new();
        while let Some(ev) = decoder.next_event().map_err(|e| WireError {
            message: e.to_string(),
            retryable: false,
        })? {
            for e in fold.feed(ev.event, ev.data)? {
                push_merged(&mut read, e);
            }
            if fold.is_done() {
                out.append(&mut read);
                break 'pieces;
            }
        }
        out.append(&mut read);
    }
    Ok((out, fold.finish(false)))
}
