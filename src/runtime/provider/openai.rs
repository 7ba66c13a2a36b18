//! OpenAI Chat Completions over SSE with reqwest (rustls + ring) and eventsource-stream.
//! 429 and 5xx are retried with bounded backoff honouring `Retry-After` (seconds or an
//! HTTP-date), but only before any of the reply arrived: a reply is never requested twice once
//! it started streaming.

use std::future::Future;
use std::sync::Once;
use std::time::Duration;

use base64::Engine;
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::{Value, json};

use super::retry_after::retry_after;
use super::sse::{Completion, Folder, StreamEvent};
use super::{
    ChatMessage, ChatRequest, ErrorKind, Provider, ProviderError, ToolDef, UserPart, quirks,
};
use crate::runtime::cancel::CancelFlag;

/// How to reach the model.
#[derive(Clone, PartialEq, Eq)]
pub struct OpenAiSettings {
    /// Base URL ending in `/v1` (the request goes to `<base_url>/chat/completions`).
    pub base_url: String,
    /// Model name.
    pub model: String,
    /// Bearer key; `None` sends no `Authorization` header (local servers).
    pub api_key: Option<String>,
    /// Time to establish the connection.
    pub connect_timeout: Duration,
    /// Longest wait for the response head and between two pieces of the stream.
    pub idle_timeout: Duration,
    /// Retries of 429 and 5xx before giving up.
    pub max_retries: u32,
    /// First backoff; doubles each retry.
    pub backoff: Duration,
    /// A `Retry-After` longer than this is not waited for: the call fails and says when to retry.
    pub max_retry_wait: Duration,
    /// `max_tokens` sent with each request; `None` leaves the server's default.
    pub max_tokens: Option<u64>,
}

// The key must never reach a log line through `{:?}`.
impl std::fmt::Debug for OpenAiSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiSettings")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("idle_timeout", &self.idle_timeout)
            .finish()
    }
}

impl OpenAiSettings {
    /// Settings with default timeouts and retries.
    pub fn new(base_url: &str, model: &str, api_key: Option<String>) -> OpenAiSettings {
        OpenAiSettings {
            base_url: base_url.trim_end_matches('/').to_string(),
            model: model.to_string(),
            api_key: api_key.filter(|k| !k.is_empty()),
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            max_retries: 3,
            backoff: Duration::from_millis(500),
            max_retry_wait: Duration::from_secs(60),
            max_tokens: None,
        }
    }

    fn url(&self) -> String {
        format!("{}/chat/completions", self.base_url)
    }
}

/// The OpenAI-compatible provider. Owns a single-threaded tokio runtime used only inside
/// [`Provider::stream`].
pub struct OpenAi {
    settings: OpenAiSettings,
    client: reqwest::Client,
    rt: tokio::runtime::Runtime,
}

pub(super) static CRYPTO: Once = Once::new();

impl OpenAi {
    /// Builds the client.
    pub fn new(settings: OpenAiSettings) -> Result<OpenAi, ProviderError> {
        CRYPTO.call_once(|| {
            // Another part of the process may have installed one already; either is fine.
            let _ = rustls::crypto::ring::default_provider().install_default();
        });
        let fail = |e: String| ProviderError {
            kind: ErrorKind::Protocol,
            message: e,
            partial: None,
        };
        let client = reqwest::Client::builder()
            .connect_timeout(settings.connect_timeout)
            .build()
            .map_err(|e| fail(format!("cannot set up the HTTP client: {e}")))?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| fail(format!("cannot start the provider's runtime: {e}")))?;
        Ok(OpenAi {
            settings,
            client,
            rt,
        })
    }

    /// The settings.
    pub fn settings(&self) -> &OpenAiSettings {
        &self.settings
    }

    /// The models the server offers (`GET <base_url>/models`), sorted; one attempt, no
    /// retries, at most the idle timeout (10 s if that is longer).
    pub fn models(&self) -> Result<Vec<String>, ProviderError> {
        let s = &self.settings;
        let url = format!("{}/models", s.base_url);
        let limit = s.idle_timeout.min(Duration::from_secs(10));
        let mut rb = self.client.get(&url).timeout(limit);
        if let Some(k) = &s.api_key {
            rb = rb.bearer_auth(k);
        }
        let fetched = self.rt.block_on(async {
            let resp = rb.send().await?;
            let status = resp.status().as_u16();
            let text = resp.text().await?;
            Ok::<_, reqwest::Error>((status, text))
        });
        let (status, text) = fetched.map_err(|e| {
            let kind = if e.is_timeout() {
                ErrorKind::Timeout
            } else {
                ErrorKind::Unreachable
            };
            self.err(
                kind,
                format!("cannot list the models of {url}: {}", root_cause(&e)),
                None,
            )
        })?;
        if !(200..300).contains(&status) {
            let kind = match status {
                401 | 403 => ErrorKind::Auth,
                404 => ErrorKind::NotFound,
                _ => ErrorKind::BadRequest,
            };
            return Err(self.err(
                kind,
                format!(
                    "{url} answered HTTP {status} ({}): this server does not list its models",
                    super::quirks::server_message(&text)
                ),
                None,
            ));
        }
        let v: Value = serde_json::from_str(&text).map_err(|_| {
            self.err(
                ErrorKind::Protocol,
                format!("{url} did not answer a model list (JSON with `data`)"),
                None,
            )
        })?;
        let mut names: Vec<String> = v["data"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["id"].as_str().map(str::to_string))
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// The request body; `stream: false` for a server that cannot stream this request.
    /// Tools go with `tool_choice: "auto"` (llama-cpp-python ignores tools without it).
    fn body(&self, req: &ChatRequest, stream: bool) -> Value {
        let mut body = json!({
            "model": self.settings.model,
            "messages": chat_messages(req),
            "stream": stream,
        });
        if stream {
            body["stream_options"] = json!({"include_usage": true});
        }
        if let Some(n) = self.settings.max_tokens {
            body["max_tokens"] = n.into();
        }
        if !req.tools.is_empty() {
            body["tools"] = Value::Array(tool_definitions(&req.tools));
            body["tool_choice"] = "auto".into();
        }
        body
    }

    /// Removes the key (and anything shaped like an OpenAI key) from text shown to the user.
    fn redact(&self, s: &str) -> String {
        redact(s, self.settings.api_key.as_deref())
    }

    fn err(
        &self,
        kind: ErrorKind,
        message: String,
        partial: Option<Box<Completion>>,
    ) -> ProviderError {
        ProviderError {
            kind,
            message: self.redact(&message),
            partial,
        }
    }
}

/// The Chat Completions `messages` of `req`: the system prompt first, then one object per
/// message. Reasoning is not sent back (Chat Completions has no field for it) and a result's
/// `is_error` is not either (its text says so).
pub fn chat_messages(req: &ChatRequest) -> Vec<Value> {
    let mut out = Vec::with_capacity(req.messages.len() + 1);
    if !req.system.is_empty() {
        out.push(json!({"role": "system", "content": req.system}));
    }
    out.extend(req.messages.iter().map(chat_message));
    out
}

fn chat_message(m: &ChatMessage) -> Value {
    match m {
        ChatMessage::System(text) => json!({"role": "system", "content": text}),
        ChatMessage::User(parts) => json!({"role": "user", "content": user_content(parts)}),
        ChatMessage::Assistant {
            text, tool_calls, ..
        } => {
            // Always a string, "" for a reply made of calls alone: llama-cpp-python answers
            // `content: null` (and a missing content) with a 500 on every later request.
            let mut v = json!({"role": "assistant", "content": text});
            if !tool_calls.is_empty() {
                v["tool_calls"] = tool_calls
                    .iter()
                    .map(|c| {
                        json!({"id": c.id, "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments}})
                    })
                    .collect();
            }
            v
        }
        ChatMessage::ToolResult { call_id, text, .. } => {
            json!({"role": "tool", "tool_call_id": call_id, "content": text})
        }
    }
}

/// A user message's `content`: a string when it is text only (the parts joined by blank
/// lines), else an array of text and `image_url` parts with the image inlined as a data URL.
fn user_content(parts: &[UserPart]) -> Value {
    if parts.iter().all(|p| matches!(p, UserPart::Text(_))) {
        let texts: Vec<&str> = parts
            .iter()
            .filter_map(|p| match p {
                UserPart::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        return Value::String(texts.join("\n\n"));
    }
    parts
        .iter()
        .map(|p| match p {
            UserPart::Text(text) => json!({"type": "text", "text": text}),
            UserPart::Image { mime, bytes } => {
                let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
                json!({"type": "image_url",
                    "image_url": {"url": format!("data:{mime};base64,{b64}")}})
            }
            UserPart::Unavailable { asset_id, reason } => {
                json!({"type": "text", "text": UserPart::unavailable_text(asset_id, reason)})
            }
        })
        .collect()
}

/// The Chat Completions `tools`: one `function` object per definition.
pub fn tool_definitions(tools: &[ToolDef]) -> Vec<Value> {
    tools
        .iter()
        .map(|t| {
            json!({
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                }
            })
        })
        .collect()
}

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

/// The name sessions store for this provider.
const NAME: &str = "openai";

impl Provider for OpenAi {
    fn name(&self) -> &str {
        NAME
    }

    fn model(&self) -> &str {
        &self.settings.model
    }

    fn stream(
        &mut self,
        req: &ChatRequest,
        cancel: &CancelFlag,
        on_event: &mut dyn FnMut(StreamEvent),
    ) -> Result<Completion, ProviderError> {
        let base = self.settings.base_url.clone();
        let tools = !req.tools.is_empty();
        let streamed = !(tools && quirks::cannot_stream_tools(&base));
        let body = self.body(req, streamed);
        let this = &*self;
        let c = match this.rt.block_on(this.call(&body, cancel, on_event))? {
            Answer::Done(c) => c,
            Answer::Unstreamed(why) if streamed => {
                // Asked again without streaming: an empty stream is what llama-cpp-python
                // sends both for a prompt too long and for tool calls it cannot stream; the
                // plain answer says which.
                let plain = self.body(req, false);
                let mut held = Vec::new();
                let again = this
                    .rt
                    .block_on(this.call(&plain, cancel, &mut |e| held.push(e)))?;
                let Answer::Done(c) = again else {
                    return Err(this.no_completion());
                };
                let message = if tools && quirks::remember_cannot_stream_tools(&base) {
                    format!(
                        "{base} {why} for a request with tools; it answered when asked without streaming, so requests with tools are sent unstreamed from now on (replies arrive whole)"
                    )
                } else {
                    format!("{base} {why}; it answered when asked without streaming")
                };
                on_event(StreamEvent::NotStreamed(
                    crate::sanitize::line(&message).into_owned(),
                ));
                held.into_iter().for_each(&mut *on_event);
                c
            }
            Answer::Unstreamed(_) => return Err(this.no_completion()),
        };
        if c.usage_estimated && quirks::first_missing_usage(&base) {
            on_event(StreamEvent::UsageEstimated(format!(
                "{base} reports no token usage; neocode estimates the counts from the text (marked estimated)"
            )));
        }
        Ok(c)
    }

    fn context_window(&mut self) -> Option<u64> {
        let base = self.settings.base_url.clone();
        if let Some(w) = quirks::known_window(&base) {
            return w;
        }
        // OpenAI's own API says nothing of windows: no requests made for it.
        let w = if base.contains("api.openai.com") {
            None
        } else {
            self.rt.block_on(self.probe_window())
        };
        quirks::remember_window(&base, w);
        w
    }
}

/// What one request got.
enum Answer {
    /// A completion (the usage estimated when the server reported none).
    Done(Completion),
    /// The server sent nothing a model says (an empty stream) or said it cannot stream the
    /// request: why, in words.
    Unstreamed(String),
}

impl OpenAi {
    /// One request: sent (429 and 5xx retried), then read as a stream or a whole answer.
    async fn call(
        &self,
        body: &Value,
        cancel: &CancelFlag,
        on_event: &mut dyn FnMut(StreamEvent),
    ) -> Result<Answer, ProviderError> {
        let resp = match self.send(body, cancel, on_event).await? {
            Sent::Response(r) => r,
            Sent::CannotStream(why) => return Ok(Answer::Unstreamed(why)),
        };
        let json_body = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        let mut folder = Folder::new();
        if json_body {
            self.read_whole(resp, &mut folder, cancel, on_event).await?;
        } else {
            self.read_stream(resp, &mut folder, body, cancel, on_event)
                .await?;
        }
        if !folder.has_content() {
            return Ok(Answer::Unstreamed("sent an empty stream".into()));
        }
        Ok(Answer::Done(self.complete(folder, false, body)))
    }

    /// The completion `folder` holds; when the server reported no usage, an estimate from
    /// the request and the answer, marked so.
    fn complete(&self, folder: Folder, incomplete: bool, body: &Value) -> Completion {
        let reported = folder.usage_reported();
        let mut c = folder.finish(incomplete);
        if !reported {
            c.usage = quirks::estimate_usage(body, &c);
            c.usage_estimated = true;
        }
        c
    }

    /// Sends `body`, retrying 429 and 5xx (not a 5xx that says the request is invalid) with
    /// bounded backoff; an error status becomes its [`ProviderError`].
    async fn send(
        &self,
        body: &Value,
        cancel: &CancelFlag,
        on_event: &mut dyn FnMut(StreamEvent),
    ) -> Result<Sent, ProviderError> {
        let s = &self.settings;
        let url = s.url();
        let mut attempt = 0u32;
        let mut resent = false;
        loop {
            let mut rb = self.client.post(&url).json(body);
            if let Some(k) = &s.api_key {
                rb = rb.bearer_auth(k);
            }
            let streamed = body.get("stream") == Some(&Value::Bool(true));
            let resp = match wait(rb.send(), cancel, s.idle_timeout).await {
                Waited::Done(Ok(r)) => r,
                // A kept-alive connection the server closed meanwhile (llama-cpp-python does
                // after a stream that failed): sent once more, on a new connection.
                Waited::Done(Err(e)) if closed_unanswered(&e) && !resent => {
                    resent = true;
                    continue;
                }
                // Twice: the server drops a streamed request unanswered; asked unstreamed.
                Waited::Done(Err(e)) if streamed && closed_unanswered(&e) => {
                    return Ok(Sent::CannotStream(
                        "closed the connection without answering a streamed request".into(),
                    ));
                }
                Waited::Done(Err(e)) => return Err(self.send_failed(&e)),
                Waited::Cancelled => {
                    return Err(self.err(ErrorKind::Cancelled, "cancelled".into(), None));
                }
                Waited::TimedOut => {
                    return Err(self.err(
                        ErrorKind::Timeout,
                        format!("no answer from {url} within {}", secs(s.idle_timeout)),
                        None,
                    ));
                }
            };
            let status = resp.status().as_u16();
            if (200..300).contains(&status) {
                return Ok(Sent::Response(resp));
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
            if streamed && status >= 500 && quirks::cannot_stream(&text) {
                let msg = quirks::server_message(&text);
                return Ok(Sent::CannotStream(format!(
                    "said it cannot stream this request (HTTP {status}: {msg})"
                )));
            }
            if let Some(o) = quirks::overflow(&text) {
                if o.window.is_some() {
                    quirks::remember_window(&s.base_url, o.window);
                }
                return Err(self.err(ErrorKind::ContextOverflow, self.overflow_text(o), None));
            }
            let retryable = (status == 429 || status >= 500) && !quirks::request_invalid(&text);
            if retryable && attempt < s.max_retries {
                let backoff = s.backoff.saturating_mul(1 << attempt.min(10));
                let pause = retry_after.unwrap_or(backoff);
                if pause <= s.max_retry_wait {
                    attempt += 1;
                    on_event(StreamEvent::Retrying {
                        status,
                        attempt,
                        of: s.max_retries,
                        wait: pause,
                    });
                    if let Waited::Cancelled = wait(
                        tokio::time::sleep(pause),
                        cancel,
                        pause + Duration::from_secs(1),
                    )
                    .await
                    {
                        return Err(self.err(ErrorKind::Cancelled, "cancelled".into(), None));
                    }
                    continue;
                }
            }
            return Err(self.status_error(status, &text, attempt, retry_after));
        }
    }

    fn send_failed(&self, e: &reqwest::Error) -> ProviderError {
        let s = &self.settings;
        let url = s.url();
        if e.is_connect() {
            let why = if e.is_timeout() {
                format!("no connection within {}", secs(s.connect_timeout))
            } else {
                root_cause(e)
            };
            return self.err(
                ErrorKind::Unreachable,
                format!(
                    "cannot reach {url}: {why}; check base_url (NEOCODE_BASE_URL) and that the server runs"
                ),
                None,
            );
        }
        if e.is_timeout() {
            return self.err(
                ErrorKind::Timeout,
                format!(
                    "no answer from {url} within {}",
                    secs(self.settings.idle_timeout)
                ),
                None,
            );
        }
        self.err(
            ErrorKind::Unreachable,
            format!("request to {url} failed: {}", root_cause(e)),
            None,
        )
    }

    /// The error an HTTP error status is, in words.
    fn status_error(
        &self,
        status: u16,
        text: &str,
        attempt: u32,
        retry_after: Option<Duration>,
    ) -> ProviderError {
        let s = &self.settings;
        let url = s.url();
        let msg = quirks::server_message(text);
        let tries = if attempt > 0 {
            format!(" (after {} attempts)", attempt + 1)
        } else {
            String::new()
        };
        let (kind, message) = match status {
            401 | 403 => (
                ErrorKind::Auth,
                format!(
                    "the provider rejected the API key (HTTP {status}: {msg}); set NEOCODE_API_KEY or OPENAI_API_KEY to a valid key for {}",
                    s.base_url
                ),
            ),
            404 => (
                ErrorKind::NotFound,
                format!(
                    "model `{}` or URL wrong: {url} answered HTTP 404 ({msg}); check model (NEOCODE_MODEL, --model) and base_url (NEOCODE_BASE_URL, --base-url)",
                    s.model
                ),
            ),
            429 => (
                ErrorKind::RateLimited,
                match retry_after {
                    Some(d) => format!(
                        "rate limited by {}{tries}: {msg}; retry after {}",
                        s.base_url,
                        secs(d)
                    ),
                    None => format!("rate limited by {}{tries}: {msg}", s.base_url),
                },
            ),
            500.. if quirks::request_invalid(text) => (
                ErrorKind::BadRequest,
                format!(
                    "{url} refused the request (HTTP {status}, not retried: the server says the request is invalid): {msg}"
                ),
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
        };
        self.err(kind, message, None)
    }

    /// The window the server tells: llama.cpp's `/props` (beside `/v1`), else the model's
    /// entry in `/v1/models`. A short wait each; any failure is "not told".
    async fn probe_window(&self) -> Option<u64> {
        let s = &self.settings;
        let get = |url: String| {
            let mut rb = self.client.get(url).timeout(Duration::from_secs(3));
            if let Some(k) = &s.api_key {
                rb = rb.bearer_auth(k);
            }
            async move {
                let r = rb.send().await.ok()?;
                if !r.status().is_success() {
                    return None;
                }
                r.json::<Value>().await.ok()
            }
        };
        let root = s.base_url.strip_suffix("/v1").unwrap_or(&s.base_url);
        if let Some(w) = get(format!("{root}/props"))
            .await
            .as_ref()
            .and_then(quirks::props_window)
        {
            return Some(w);
        }
        get(format!("{}/models", s.base_url))
            .await
            .and_then(|v| quirks::models_window(&v, &s.model))
    }

    /// A context overflow in words, with the numbers the server gave.
    fn overflow_text(&self, o: quirks::Overflow) -> String {
        let base = &self.settings.base_url;
        let what = match (o.prompt, o.window) {
            (Some(p), Some(w)) => format!(
                "the prompt needs {p} tokens but the model's context window at {base} is {w} tokens"
            ),
            (None, Some(w)) => format!(
                "the prompt is longer than the model's context window at {base} ({w} tokens)"
            ),
            _ => format!("the prompt is longer than the model's context window at {base}"),
        };
        format!(
            "{what}; compact the session (/compact, or `neocode compact`) or start a new one, and set context_window in config.toml to the server's window"
        )
    }

    /// Reads a whole (non-streamed) completion: a server that ignores `stream: true`, or the
    /// request sent without streaming.
    async fn read_whole(
        &self,
        resp: reqwest::Response,
        folder: &mut Folder,
        cancel: &CancelFlag,
        on_event: &mut dyn FnMut(StreamEvent),
    ) -> Result<(), ProviderError> {
        let url = self.settings.url();
        let text = match wait(resp.text(), cancel, self.settings.idle_timeout).await {
            Waited::Done(Ok(t)) => t,
            Waited::Cancelled => {
                return Err(self.err(ErrorKind::Cancelled, "cancelled".into(), None));
            }
            Waited::Done(Err(_)) | Waited::TimedOut => {
                return Err(self.err(
                    ErrorKind::StreamCut,
                    format!("the answer from {url} broke off"),
                    None,
                ));
            }
        };
        let events = folder.feed(&text).map_err(|e| {
            self.err(
                ErrorKind::Server,
                format!("{} reported: {}", self.settings.base_url, e.0),
                None,
            )
        })?;
        events.into_iter().for_each(on_event);
        Ok(())
    }

    /// Reads the event stream into `folder` until `[DONE]` or the end; a cut, a stall, a
    /// cancel or an error chunk is an error carrying what arrived.
    async fn read_stream(
        &self,
        resp: reqwest::Response,
        folder: &mut Folder,
        body: &Value,
        cancel: &CancelFlag,
        on_event: &mut dyn FnMut(StreamEvent),
    ) -> Result<(), ProviderError> {
        let s = &self.settings;
        let url = s.url();
        let partial = |f: &mut Folder| Some(Box::new(self.complete(std::mem::take(f), true, body)));
        let mut events = resp.bytes_stream().eventsource();
        loop {
            let next = match wait(events.next(), cancel, s.idle_timeout).await {
                Waited::Done(n) => n,
                Waited::Cancelled => {
                    return Err(self.err(
                        ErrorKind::Cancelled,
                        "cancelled".into(),
                        partial(folder),
                    ));
                }
                Waited::TimedOut => {
                    return Err(self.err(
                        ErrorKind::Timeout,
                        format!(
                            "{url} sent nothing for {}; the reply so far is kept",
                            secs(s.idle_timeout)
                        ),
                        partial(folder),
                    ));
                }
            };
            match next {
                // A clean close before `[DONE]` or a `finish_reason` (what proxies and load
                // balancers do on a timeout) is a cut, not an answer.
                None if !folder.is_done() && !folder.has_finished() && folder.has_content() => {
                    let n = folder.text_chars();
                    return Err(self.err(
                        ErrorKind::StreamCut,
                        format!(
                            "the reply was cut off after {n} characters: {} closed the connection before the reply finished; what arrived is kept, and continuing will ask again",
                            s.base_url
                        ),
                        partial(folder),
                    ));
                }
                None => return Ok(()),
                Some(Ok(ev)) => match folder.feed(&ev.data) {
                    Ok(out) => {
                        out.into_iter().for_each(&mut *on_event);
                        if folder.is_done() {
                            return Ok(());
                        }
                    }
                    Err(e) => {
                        let msg = crate::sanitize::line(&e.0).into_owned();
                        let kind = if quirks::overflow(&msg).is_some() {
                            ErrorKind::ContextOverflow
                        } else {
                            ErrorKind::Server
                        };
                        return Err(self.err(
                            kind,
                            format!("{} reported an error mid-reply: {msg}", s.base_url),
                            partial(folder),
                        ));
                    }
                },
                // A connection that breaks before anything arrived is what llama-cpp-python
                // does when its stream fails at once: the same as an empty stream.
                Some(Err(_)) if !folder.has_content() => return Ok(()),
                Some(Err(e)) => {
                    return Err(self.err(
                        ErrorKind::StreamCut,
                        format!(
                            "the reply was cut off after {} characters: the connection to {} broke ({}); what arrived is kept, and continuing will ask again",
                            folder.text_chars(),
                            s.base_url,
                            root_cause(&e)
                        ),
                        partial(folder),
                    ));
                }
            }
        }
    }

    /// The error for a 200 that held nothing a model says, even when asked again unstreamed.
    fn no_completion(&self) -> ProviderError {
        let url = self.settings.url();
        self.err(
            ErrorKind::Protocol,
            format!(
                "{url} answered but sent no completion, streamed or not; is base_url an OpenAI-compatible endpoint ending in /v1?"
            ),
            None,
        )
    }
}

/// Whether the server accepted the request and closed the connection before any response
/// (hyper's "connection closed before message completed"), not a refused connection.
fn closed_unanswered(e: &reqwest::Error) -> bool {
    !e.is_connect() && !e.is_timeout() && root_cause(e).contains("connection closed before message")
}

/// What sending got.
enum Sent {
    /// A 2xx answer, its body not read yet.
    Response(reqwest::Response),
    /// An error saying the server cannot stream this request (why, in words).
    CannotStream(String),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::provider::INTERRUPTED_RESULT;
    use crate::session::ToolCall;

    #[test]
    fn the_request_encodes_as_chat_completions_messages() {
        let req = ChatRequest {
            system: "be brief".into(),
            messages: vec![
                ChatMessage::System("step context".into()),
                ChatMessage::User(vec![
                    UserPart::Text("one".into()),
                    UserPart::Text("two".into()),
                ]),
                ChatMessage::User(vec![
                    UserPart::Text("look".into()),
                    UserPart::Image {
                        mime: "image/png".into(),
                        bytes: b"png".to_vec(),
                    },
                    UserPart::Unavailable {
                        asset_id: "a1".into(),
                        reason: "gone".into(),
                    },
                ]),
                ChatMessage::Assistant {
                    text: String::new(),
                    reasoning: vec![super::super::Reasoning::text("not sent")],
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: "read_file".into(),
                        arguments: r#"{"path":"a"}"#.into(),
                    }],
                },
                ChatMessage::ToolResult {
                    call_id: "c1".into(),
                    text: INTERRUPTED_RESULT.into(),
                    is_error: true,
                },
                ChatMessage::Assistant {
                    text: String::new(),
                    reasoning: vec![],
                    tool_calls: vec![],
                },
                ChatMessage::Assistant {
                    text: "done".into(),
                    reasoning: vec![],
                    tool_calls: vec![],
                },
            ],
            ..ChatRequest::default()
        };
        let expected = json!([
            {"role": "system", "content": "be brief"},
            {"role": "system", "content": "step context"},
            {"role": "user", "content": "one\n\ntwo"},
            {"role": "user", "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,cG5n"}},
                {"type": "text", "text": "[image a1 unavailable: gone]"},
            ]},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}},
            ]},
            {"role": "tool", "tool_call_id": "c1",
             "content": "No result: the call was interrupted before it finished."},
            {"role": "assistant", "content": ""},
            {"role": "assistant", "content": "done"},
        ]);
        assert_eq!(Value::Array(chat_messages(&req)), expected);
    }

    #[test]
    fn the_body_carries_function_tools_with_tool_choice_auto_only_when_there_are_some() {
        let mut settings = OpenAiSettings::new("http://127.0.0.1:9/v1", "m", None);
        let p = OpenAi::new(settings.clone()).unwrap();
        let mut req = ChatRequest {
            messages: vec![ChatMessage::user_text("hi")],
            ..ChatRequest::default()
        };
        let body = p.body(&req, true);
        assert_eq!(body["messages"], json!([{"role": "user", "content": "hi"}]));
        assert!(body.get("tools").is_none(), "{body}");
        assert!(body.get("tool_choice").is_none(), "{body}");
        assert!(body.get("max_tokens").is_none(), "{body}");
        assert_eq!(body["stream_options"]["include_usage"], true);
        req.tools
            .push(ToolDef::new("grep", "search", json!({"type": "object"})));
        let body = p.body(&req, true);
        assert_eq!(
            body["tools"],
            json!([{"type": "function", "function":
                {"name": "grep", "description": "search", "parameters": {"type": "object"}}}])
        );
        assert_eq!(body["tool_choice"], "auto");
        // Unstreamed: no stream_options (a server that cannot stream may reject them).
        let plain = p.body(&req, false);
        assert_eq!(plain["stream"], false);
        assert!(plain.get("stream_options").is_none(), "{plain}");
        settings.max_tokens = Some(256);
        let p = OpenAi::new(settings).unwrap();
        assert_eq!(p.body(&req, true)["max_tokens"], 256);
    }

    #[test]
    fn redact_removes_key_and_sk_tokens() {
        let s = redact(
            "Incorrect API key provided: sk-abc123XYZ. mykey-secret",
            Some("mykey-secret"),
        );
        assert!(!s.contains("abc123"));
        assert!(!s.contains("mykey-secret"));
        assert!(s.contains("***"));
    }

    #[test]
    fn debug_hides_key() {
        let s = OpenAiSettings::new("http://x/v1", "m", Some("sk-secret".into()));
        assert!(!format!("{s:?}").contains("secret"));
    }
}
