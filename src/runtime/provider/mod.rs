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
mod contract;
pub(crate) mod demo;
mod error;
pub mod http;
pub(crate) mod openai;
pub(crate) mod quirks;
mod redact;
mod request;
pub mod responses;
mod retry_after;
mod settings;
pub mod sse;
mod sse_decode;
mod transport;

pub(crate) use anthropic::Anthropic;
pub use contract::Provider;
pub(crate) use demo::DemoModel;
pub use error::{ErrorKind, ProviderError};
pub(crate) use http::ApiSettings;
pub use openai::OpenAi;
pub use request::{
    ChatMessage, ChatRequest, INTERRUPTED_RESULT, Reasoning, StopNote, ToolDef, UserPart,
    model_family, replays_to,
};
pub(crate) use responses::Responses;
pub use settings::OpenAiSettings;
pub use sse::{Completion, Folder, StreamEvent};
