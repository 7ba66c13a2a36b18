//! The state the server thread and its connections share.

use std::collections::VecDeque;
use std::sync::atomic::AtomicBool;
use std::sync::{Mutex, PoisonError};

use serde_json::Value;

use super::llama::LlamaLike;
use super::replies::Reply;
use super::request::RecordedRequest;
use super::strict::Strict;

pub(super) struct Shared {
    pub(super) like: Option<LlamaLike>,
    /// What the server refuses as DeepSeek and Gemini do (nothing at first).
    pub(super) strict: Mutex<Strict>,
    /// What `GET /props` answers (llama.cpp's server), if set.
    pub(super) props: Mutex<Option<Value>>,
    pub(super) script: Mutex<VecDeque<Reply>>,
    /// What `GET /v1/models` lists (it takes no reply from the script).
    pub(super) models: Mutex<Vec<String>>,
    pub(super) requests: Mutex<Vec<RecordedRequest>>,
    pub(super) stop: AtomicBool,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
