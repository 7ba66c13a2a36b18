//! How to reach an OpenAI-compatible server ([`OpenAiSettings`]); the other wire APIs build
//! on it too.

use std::time::Duration;

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
    /// `reasoning_effort` sent with each request (`low`, `medium`, `high` ...: the config's
    /// `reasoning_effort`, which Responses sends as `reasoning.effort`); `None`: not sent.
    pub reasoning_effort: Option<String>,
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
            reasoning_effort: None,
        }
    }

    pub(super) fn url(&self) -> String {
        format!("{}/chat/completions", self.base_url)
    }
}
