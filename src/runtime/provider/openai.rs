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

use super::sse::{Completion, Folder, StreamEvent};
use super::{ChatMessage, ChatRequest, ErrorKind, Provider, ProviderError, ToolDef, UserPart};
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

static CRYPTO: Once = Once::new();

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
                    server_message(&text)
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

    fn body(&self, req: &ChatRequest) -> Value {
        let mut body = json!({
            "model": self.settings.model,
            "messages": chat_messages(req),
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        if !req.tools.is_empty() {
            body["tools"] = Value::Array(tool_definitions(&req.tools));
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
            // Only a reply made of calls alone has no content; an empty reply (cut before any
            // text) sends "" so the turn order stays valid.
            let content = if text.is_empty() && !tool_calls.is_empty() {
                Value::Null
            } else {
                Value::String(text.clone())
            };
            let mut v = json!({"role": "assistant", "content": content});
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

enum Waited<T> {
    Done(T),
    Cancelled,
    TimedOut,
}

/// Awaits `fut` unless `cancel` is raised or `limit` passes first.
async fn wait<F: Future>(fut: F, cancel: &CancelFlag, limit: Duration) -> Waited<F::Output> {
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

/// The server's own error message from a JSON error body, else its first line.
fn server_message(body: &str) -> String {
    let from_json = serde_json::from_str::<Value>(body).ok().and_then(|v| {
        v.get("error")
            .and_then(|e| e.get("message").and_then(Value::as_str).or(e.as_str()))
            .or(v.get("message").and_then(Value::as_str))
            .map(str::to_string)
    });
    let m = from_json.unwrap_or_else(|| body.lines().next().unwrap_or("").to_string());
    let m: String = m.chars().take(300).collect();
    crate::sanitize::line(&m).into_owned()
}

fn secs(d: Duration) -> String {
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
        let body = self.body(req);
        let this = &*self;
        this.rt.block_on(this.stream_async(body, cancel, on_event))
    }
}

impl OpenAi {
    #[expect(clippy::too_many_lines)]
    async fn stream_async(
        &self,
        body: Value,
        cancel: &CancelFlag,
        on_event: &mut dyn FnMut(StreamEvent),
    ) -> Result<Completion, ProviderError> {
        let s = &self.settings;
        let url = s.url();
        let mut attempt = 0u32;
        let resp = loop {
            let mut rb = self.client.post(&url).json(&body);
            if let Some(k) = &s.api_key {
                rb = rb.bearer_auth(k);
            }
            let sent = match wait(rb.send(), cancel, s.idle_timeout).await {
                Waited::Done(r) => r,
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
            let resp = match sent {
                Ok(r) => r,
                Err(e) if e.is_connect() => {
                    let why = if e.is_timeout() {
                        format!("no connection within {}", secs(s.connect_timeout))
                    } else {
                        root_cause(&e)
                    };
                    return Err(self.err(
                        ErrorKind::Unreachable,
                        format!("cannot reach {url}: {why}; check base_url (NEOCODE_BASE_URL) and that the server runs"),
                        None,
                    ));
                }
                Err(e) if e.is_timeout() => {
                    return Err(self.err(
                        ErrorKind::Timeout,
                        format!("no answer from {url} within {}", secs(s.idle_timeout)),
                        None,
                    ));
                }
                Err(e) => {
                    return Err(self.err(
                        ErrorKind::Unreachable,
                        format!("request to {url} failed: {}", root_cause(&e)),
                        None,
                    ));
                }
            };
            let status = resp.status().as_u16();
            if (200..300).contains(&status) {
                break resp;
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
            let msg = server_message(&text);
            let retryable = status == 429 || status >= 500;
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
            return Err(self.err(kind, message, None));
        };

        let json_body = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        let mut folder = Folder::new();
        if json_body {
            // A server that ignores `stream: true` answers with one whole completion.
            let text = match wait(resp.text(), cancel, s.idle_timeout).await {
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
            for e in folder.feed(&text).map_err(|e| {
                self.err(
                    ErrorKind::Server,
                    format!("{} reported: {}", s.base_url, e.0),
                    None,
                )
            })? {
                on_event(e);
            }
            return self.finished(folder, &url);
        }
        let mut events = resp.bytes_stream().eventsource();
        loop {
            let next = match wait(events.next(), cancel, s.idle_timeout).await {
                Waited::Done(n) => n,
                Waited::Cancelled => {
                    return Err(self.err(
                        ErrorKind::Cancelled,
                        "cancelled".into(),
                        Some(Box::new(folder.finish(true))),
                    ));
                }
                Waited::TimedOut => {
                    return Err(self.err(
                        ErrorKind::Timeout,
                        format!(
                            "{url} sent nothing for {}; the reply so far is kept",
                            secs(s.idle_timeout)
                        ),
                        Some(Box::new(folder.finish(true))),
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
                        Some(Box::new(folder.finish(true))),
                    ));
                }
                None => break,
                Some(Ok(ev)) => match folder.feed(&ev.data) {
                    Ok(out) => {
                        for e in out {
                            on_event(e);
                        }
                        if folder.is_done() {
                            break;
                        }
                    }
                    Err(e) => {
                        let msg = crate::sanitize::line(&e.0).into_owned();
                        return Err(self.err(
                            ErrorKind::Server,
                            format!("{} reported an error mid-reply: {msg}", s.base_url),
                            Some(Box::new(folder.finish(true))),
                        ));
                    }
                },
                Some(Err(e)) => {
                    return Err(self.err(
                        ErrorKind::StreamCut,
                        format!(
                            "the reply was cut off after {} characters: the connection to {} broke ({}); what arrived is kept, and continuing will ask again",
                            folder.text_chars(),
                            s.base_url,
                            root_cause(&e)
                        ),
                        Some(Box::new(folder.finish(true))),
                    ));
                }
            }
        }
        self.finished(folder, &url)
    }

    /// The completion, unless the server answered 200 with nothing a model says.
    fn finished(&self, folder: Folder, url: &str) -> Result<Completion, ProviderError> {
        if !folder.has_content() {
            return Err(self.err(
                ErrorKind::Protocol,
                format!(
                    "{url} answered but sent no completion; is base_url an OpenAI-compatible endpoint ending in /v1?"
                ),
                None,
            ));
        }
        Ok(folder.finish(false))
    }
}

/// The wait a `Retry-After` value asks for (RFC 9110 §10.2.3): delay-seconds, or an HTTP-date
/// (IMF-fixdate, and the obsolete RFC 850 and asctime forms) taken relative to `now`; a date
/// already past means at once. `None` for anything else, so the caller keeps its own backoff.
fn retry_after(value: &str, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    let v = value.trim();
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        // Too many digits to fit is still "a very long time", which the caller bounds.
        return Some(Duration::from_secs(v.parse::<u64>().unwrap_or(u64::MAX)));
    }
    let date = http_date(v)?;
    Some((date - now).to_std().unwrap_or(Duration::ZERO))
}

/// An HTTP-date in any of the three forms RFC 9110 §5.6.7 says a recipient accepts; all are
/// in GMT.
fn http_date(v: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    use chrono::NaiveDateTime;
    // IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
    if let Ok(t) = NaiveDateTime::parse_from_str(v, "%a, %d %b %Y %H:%M:%S GMT") {
        return Some(t.and_utc());
    }
    // RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT`; a two-digit year more than 50 years ahead
    // is in the past century (RFC 9110 §5.6.7).
    if let Some((weekday, rest)) = v.split_once(", ")
        && weekday.len() > 3
        && let Ok(t) = NaiveDateTime::parse_from_str(rest, "%d-%b-%y %H:%M:%S GMT")
    {
        use chrono::Datelike;
        let this_year = chrono::Utc::now().year();
        let t = if t.year() > this_year + 50 {
            t.with_year(t.year() - 100)?
        } else {
            t
        };
        return Some(t.and_utc());
    }
    // asctime: `Sun Nov  6 08:49:37 1994` (the day is space-padded).
    let words: Vec<&str> = v.split_ascii_whitespace().collect();
    if words.len() == 5 {
        let joined = format!(
            "{} {} {:0>2} {} {}",
            words[0], words[1], words[2], words[3], words[4]
        );
        if let Ok(t) = NaiveDateTime::parse_from_str(&joined, "%a %b %d %H:%M:%S %Y") {
            return Some(t.and_utc());
        }
    }
    None
}

/// The innermost error's text: reqwest's outer text says only "error sending request".
fn root_cause(e: &dyn std::error::Error) -> String {
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
                    reasoning: vec![super::super::Reasoning {
                        text: "not sent".into(),
                    }],
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
            tools: vec![],
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
            {"role": "assistant", "content": null, "tool_calls": [
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
    fn the_body_carries_function_tools_only_when_there_are_some() {
        let p = OpenAi::new(OpenAiSettings::new("http://127.0.0.1:9/v1", "m", None)).unwrap();
        let mut req = ChatRequest {
            messages: vec![ChatMessage::user_text("hi")],
            ..ChatRequest::default()
        };
        let body = p.body(&req);
        assert_eq!(body["messages"], json!([{"role": "user", "content": "hi"}]));
        assert!(body.get("tools").is_none(), "{body}");
        req.tools
            .push(ToolDef::new("grep", "search", json!({"type": "object"})));
        assert_eq!(
            p.body(&req)["tools"],
            json!([{"type": "function", "function":
                {"name": "grep", "description": "search", "parameters": {"type": "object"}}}])
        );
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
    fn retry_after_reads_seconds_and_all_three_date_forms() {
        let now = chrono::DateTime::parse_from_rfc3339("1994-11-06T08:49:30Z")
            .unwrap()
            .to_utc();
        let secs = |v: &str| retry_after(v, now).map(|d| d.as_secs());
        assert_eq!(secs("120"), Some(120));
        assert_eq!(secs(" 7 "), Some(7));
        assert_eq!(secs("Sun, 06 Nov 1994 08:49:37 GMT"), Some(7));
        assert_eq!(secs("Sunday, 06-Nov-94 08:49:37 GMT"), Some(7));
        assert_eq!(secs("Sun Nov  6 08:49:37 1994"), Some(7));
        assert_eq!(secs("Sun, 06 Nov 1994 09:49:30 GMT"), Some(3600));
        // Already past: at once.
        assert_eq!(secs("Sat, 05 Nov 1994 08:49:37 GMT"), Some(0));
        // A huge number is a huge wait (bounded by the caller), not "no header".
        assert_eq!(secs("99999999999999999999999"), Some(u64::MAX));
    }

    #[test]
    fn a_malformed_retry_after_is_none() {
        let now = chrono::Utc::now();
        for v in [
            "",
            "-5",
            "1.5",
            "soon",
            "Sun, 06 Nov 1994 08:49:37",
            "Sun, 06 Nov 1994 08:49:37 PST",
            "Sun, 31 Feb 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 25:49:37 GMT",
            "Sun Nov  6 08:49:37",
        ] {
            assert_eq!(retry_after(v, now), None, "{v:?}");
        }
    }

    #[test]
    fn debug_hides_key() {
        let s = OpenAiSettings::new("http://x/v1", "m", Some("sk-secret".into()));
        assert!(!format!("{s:?}").contains("secret"));
    }
}
