//! OpenAI Chat Completions over SSE with reqwest (rustls + ring) and eventsource-stream.
//! 429 and 5xx are retried with bounded backoff honouring `Retry-After` (seconds or an
//! HTTP-date), but only before any of the reply arrived: a reply is never requested twice once
//! it started streaming.
//!
//! A tool turn's `reasoning_content` and Gemini thought signatures are kept (`sse.rs`) and sent
//! back on its assistant message to the same model family (`encode.rs`); `reasoning_effort` is
//! sent when set.

mod encode;
mod models;
mod read;
mod send;

use super::settings::OpenAiSettings;

pub use super::transport::redact;
pub(super) use super::transport::{Waited, root_cause, secs, wait};
pub use encode::{chat_messages, tool_definitions};

use super::contract::Provider;
use super::error::ErrorKind;
use super::error::ProviderError;
use super::quirks;
use super::request::ChatRequest;
use super::sse::{Completion, StreamEvent};
use crate::runtime::cancel::CancelFlag;
use send::Answer;

/// The OpenAI-compatible provider. Owns a single-threaded tokio runtime used only inside
/// [`Provider::stream`].
pub struct OpenAi {
    settings: OpenAiSettings,
    client: reqwest::Client,
    rt: tokio::runtime::Runtime,
}

impl OpenAi {
    /// Builds the client.
    pub fn new(settings: OpenAiSettings) -> Result<OpenAi, ProviderError> {
        let (client, rt) = super::transport::client_and_runtime(settings.connect_timeout)?;
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

#[cfg(test)]
mod tests {
    use super::*;

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
