//! The [`Provider`] trait every model provider implements.

use super::error::ProviderError;
use super::request::ChatRequest;
use super::sse::{Completion, StreamEvent};
use crate::runtime::cancel::CancelFlag;

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
