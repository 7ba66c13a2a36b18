//! OpenAI Chat Completions over SSE with reqwest (rustls + ring) and eventsource-stream.
//! 429 and 5xx are retried with bounded backoff honouring `Retry-After` (seconds or an
//! HTTP-date), but only before any of the reply arrived: a reply is never requested twice once
//! it started streaming.
//!
//! A tool turn's `reasoning_content` and Gemini thought signatures are kept (`sse.rs`) and sent
//! back on its assistant message to the same model family (`encode.rs`); `reasoning_effort` is
//! sent when set.

mod client;
mod encode;
mod models;
mod read;
mod send;
mod stream;

pub(crate) use super::redact::redact;
pub use client::OpenAi;
