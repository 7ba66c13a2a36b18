//! One request: sent through the shared send path (`transport::post`: 429 and 5xx retried
//! only before any of the reply arrived), then read; an error status in words.

use std::time::Duration;

use super::client::OpenAi;
use crate::runtime::cancel::CancelFlag;
use crate::runtime::provider::error::{ErrorKind, ProviderError};
use crate::runtime::provider::http::{Asked, status_error};
use crate::runtime::provider::quirks;
use crate::runtime::provider::sse::{Completion, Folder, StreamEvent};
use crate::runtime::provider::transport::{self, Posted, Refused};
use serde_json::Value;

/// What one request got.
pub(super) enum Answer {
    /// A completion (the usage estimated when the server reported none).
    Done(Completion),
    /// The server sent nothing a model says (an empty stream) or said it cannot stream the
    /// request: why, in words.
    Unstreamed(String),
}

impl OpenAi {
    /// One request: sent (429 and 5xx retried), then read as a stream or a whole answer.
    pub(super) async fn call(
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
    pub(super) fn complete(&self, folder: Folder, incomplete: bool, body: &Value) -> Completion {
        let reported = folder.usage_reported();
        let mut c = folder.finish(incomplete);
        if !reported {
            c.usage = quirks::estimate_usage(body, &c);
            c.usage_estimated = true;
        }
        c
    }

    /// Sends `body` through the shared send path (429 and 5xx retried with bounded backoff,
    /// but not a 5xx that says the request is invalid or cannot be streamed, nor an
    /// overflow); an error status becomes its [`ProviderError`].
    async fn send(
        &self,
        body: &Value,
        cancel: &CancelFlag,
        on_event: &mut dyn FnMut(StreamEvent),
    ) -> Result<Sent, ProviderError> {
        let s = &self.settings;
        let url = s.url();
        let streamed = body.get("stream") == Some(&Value::Bool(true));
        let build = || {
            let rb = self.client.post(&url).json(body);
            match &s.api_key {
                Some(k) => rb.bearer_auth(k),
                None => rb,
            }
        };
        // Not retried: a request the server calls invalid, one it cannot stream, an overflow.
        let retryable = |r: &Refused| {
            let invalid = quirks::request_invalid(&r.text);
            let cannot_stream = streamed && r.status >= 500 && quirks::cannot_stream(&r.text);
            !invalid && !cannot_stream && quirks::overflow(&r.text).is_none()
        };
        let mut attempt = 0u32;
        let posted = transport::post(s, &url, &build, &retryable, &mut attempt, cancel, on_event)
            .await
            .map_err(|(kind, message)| self.err(kind, message, None))?;
        let r = match posted {
            Posted::Answer(resp) => return Ok(Sent::Response(resp)),
            // Twice: the server drops a streamed request unanswered; asked unstreamed.
            Posted::Dropped(_) if streamed => {
                return Ok(Sent::CannotStream(
                    "closed the connection without answering a streamed request".into(),
                ));
            }
            Posted::Dropped(e) => {
                let (kind, message) =
                    transport::send_error(&e, &url, s.connect_timeout, s.idle_timeout);
                return Err(self.err(kind, message, None));
            }
            Posted::Refused(r) => r,
        };
        let (status, text) = (r.status, &r.text);
        if streamed && status >= 500 && quirks::cannot_stream(text) {
            let msg = quirks::server_message(text);
            return Ok(Sent::CannotStream(format!(
                "said it cannot stream this request (HTTP {status}: {msg})"
            )));
        }
        if let Some(o) = quirks::overflow(text) {
            if o.window.is_some() {
                quirks::remember_window(&s.base_url, o.window);
            }
            return Err(self.err(
                ErrorKind::ContextOverflow,
                quirks::overflow_text(&s.base_url, &o),
                None,
            ));
        }
        Err(self.status_error(status, text, attempt, r.retry_after))
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
        let (kind, message) = if status >= 500 && quirks::request_invalid(text) {
            (
                ErrorKind::BadRequest,
                format!(
                    "{url} refused the request (HTTP {status}, not retried: the server says the request is invalid): {msg}"
                ),
            )
        } else {
            let to = Asked {
                url: &url,
                key_hint: "NEOCODE_API_KEY or OPENAI_API_KEY",
                check: "model (NEOCODE_MODEL, --model) and base_url (NEOCODE_BASE_URL, --base-url)",
            };
            status_error(s, &to, status, &msg, retry_after, attempt)
        };
        self.err(kind, message, None)
    }
}

/// What sending got.
enum Sent {
    /// A 2xx answer, its body not read yet.
    Response(reqwest::Response),
    /// An error saying the server cannot stream this request (why, in words).
    CannotStream(String),
}
