//! A real OpenAI-compatible streaming HTTP server on 127.0.0.1 with scripted replies, for tests
//! of every branch and for the screenshots (`examples/scripted_model.rs`). A test double: only
//! built with the `testkit` feature (tests, benches and examples), never in the shipped binary. Each request to `/v1/chat/completions` takes the next
//! [`Reply`] from the script; every request (method, path, headers, body) is recorded so a test
//! can assert on what the model was sent, count requests, and check that no key leaks.
//!
//! Replies are written the way real servers misbehave: tool-call arguments split across chunks
//! by `index`, interleaved calls, `:` keep-alive comments, CRLF line endings, a usage-only final
//! chunk with empty `choices`, `[DONE]` or a plain close, HTTP errors with `Retry-After`, a
//! connection cut mid-reply (chunked body never terminated), delays before and between chunks.
//! [`ScriptedServer::start_llama_like`] adds what llama-cpp-python's server does on its own
//! (a 500 for `content: null`, empty streams for tools and for overflow, no streamed usage);
//! `GET /props` answers what [`ScriptedServer::set_props`] set, other paths 404.
//! [`ScriptedServer::require_reasoning_back`] and [`ScriptedServer::require_thought_signatures`]
//! refuse a history without DeepSeek's `reasoning_content` or Gemini's thought signatures.
//!
//! Plain std threads: the server must not need the caller to run an async runtime.

mod conn;
mod llama;
mod replies;
mod request;
mod server;
mod shared;
mod strict;
#[cfg(test)]
mod tests;

pub use llama::LlamaLike;
pub(crate) use replies::split_n;
pub use replies::{Piece, Reply, Stream, completion_json, usage_chunk};
pub use request::RecordedRequest;
pub use server::ScriptedServer;
