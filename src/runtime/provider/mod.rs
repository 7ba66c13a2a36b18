//! Model providers: a trait with one streaming call that takes neocode's typed request
//! ([`ChatRequest`]) and encodes it in its own wire format: OpenAI Chat Completions
//! (`openai.rs`, which OpenAI, Ollama, llama.cpp, vLLM and most gateways serve), OpenAI
//! Responses (`responses.rs`) and Anthropic Messages (`anthropic.rs`), the last two sharing
//! `http.rs`. tokio stays inside the provider: callers are plain threads.
//!
//! A new provider is its own file here implementing [`Provider`], plus one line in the
//! constructor (`provider_factory` in `runtime/agent/mod.rs`). The demo model ([`demo`]) is
//! the one other: in process and scripted, for `neocode demo` only.

pub mod anthropic;
pub mod demo;
pub mod http;
pub mod openai;
pub mod quirks;
mod request;
pub mod responses;
mod retry_after;
pub mod sse;
mod sse_decode;
mod transport;

pub use anthropic::Anthropic;
pub use demo::DemoModel;
pub use http::ApiSettings;
pub use openai::{OpenAi, OpenAiSettings};
pub use request::{
    ChatMessage, ChatRequest, INTERRUPTED_RESULT, Reasoning, StopNote, TokenDetail, ToolDef,
    UserPart, model_family, replays_to,
};
pub use responses::Responses;
pub use sse::{Completion, Folder, StreamEvent};

use super::cancel::CancelFlag;

/// What kind of failure, so front ends can say what to do and the turn knows what to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// 401 / 403: the key was rejected.
    Auth,
    /// 404: the model or the URL is wrong.
    NotFound,
    /// 429 after the retries.
    RateLimited,
    /// 5xx after the retries.
    Server,
    /// Another 4xx (bad request, context too long ...).
    BadRequest,
    /// Connection refused, DNS failure, TLS failure.
    Unreachable,
    /// No answer, or the stream went quiet, for longer than the timeout.
    Timeout,
    /// The connection broke mid-reply.
    StreamCut,
    /// The user cancelled.
    Cancelled,
    /// The server sent something that is not a Chat Completions stream.
    Protocol,
    /// The prompt does not fit the model's context window (the message gives the numbers).
    ContextOverflow,
}

impl ErrorKind {
    /// Stable code for events and `--json` (`FinishReason::Failed::code`).
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::Auth => "auth",
            ErrorKind::NotFound => "not_found",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::Server => "server_error",
            ErrorKind::BadRequest => "bad_request",
            ErrorKind::Unreachable => "unreachable",
            ErrorKind::Timeout => "timeout",
            ErrorKind::StreamCut => "stream_cut",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Protocol => "protocol",
            ErrorKind::ContextOverflow => "context_overflow",
        }
    }
}

/// A failed model call. The message is for the user and never contains the key.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderError {
    /// What kind.
    pub kind: ErrorKind,
    /// What went wrong and what to do, in words.
    pub message: String,
    /// What arrived before the failure (marked incomplete), if anything did.
    pub partial: Option<Box<Completion>>,
}

impl std::fmt::Display for ProviderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ProviderError {}

/// A model provider.
pub trait Provider: Send {
    /// Provider name stored with the session (e.g. `openai`): every append made with this
    /// provider records it, and nothing else names one.
    fn name(&self) -> &str;
    /// Model name stored with the session.
    fn model(&self) -> &str;
    /// Streams one completion, calling `on_event` for text and reasoning as they arrive.
    /// Blocks until the answer is complete, fails, or `cancel` is raised.
    fn stream(
        &mut self,
        req: &ChatRequest,
        cancel: &CancelFlag,
        on_event: &mut dyn FnMut(StreamEvent),
    ) -> Result<Completion, ProviderError>;
    /// The model's context window in tokens, when the server tells it (llama.cpp's `/props`,
    /// `/v1/models` metadata, an overflow error's numbers); `None`: unknown.
    fn context_window(&mut self) -> Option<u64> {
        None
    }
}
