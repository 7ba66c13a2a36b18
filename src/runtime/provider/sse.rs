//! Folding Chat Completions stream chunks into one completion: a pure function over the `data:`
//! payloads, so the nastiest streams can be tested without a network. Text and reasoning deltas
//! pass straight through as events; tool-call fragments are accumulated per `index` (the id and
//! name arrive once, the arguments in pieces, calls may interleave); usage arrives last, often
//! in a chunk with empty `choices`.
//!
//! What a server needs back is kept with its provenance ([`Folder::set_origin`]): the
//! `reasoning_content` of a reply that makes tool calls (DeepSeek answers 400 without it on
//! the following requests) and Gemini's `extra_content.google.thought_signature` on a call,
//! each as a reasoning part with replay data ([`Completion::reasoning_items`]).

use std::collections::BTreeMap;

use serde_json::Value;

use super::request::Reasoning;

use crate::session::TokenDetail;
use crate::session::{ReasoningReplay, ToolCall, Usage};

/// What a stream says as it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent {
    /// Answer text.
    Text(String),
    /// Reasoning text.
    Reasoning(String),
    /// The server answered 429 or 5xx before any of the reply; the request is sent again
    /// after `wait` (retry `attempt` of `of`).
    Retrying {
        /// The HTTP status.
        status: u16,
        /// This retry, from 1.
        attempt: u32,
        /// Retries allowed.
        of: u32,
        /// The pause before it.
        wait: std::time::Duration,
    },
    /// The server could not stream this request (an empty stream, or an error saying so): it
    /// was asked again without streaming (in words, what and for how long).
    NotStreamed(String),
    /// The server reports no usage: the counts are estimated (said once per server and
    /// process, in words).
    UsageEstimated(String),
}

impl StreamEvent {
    /// A retry in words: `rate limited (429), retry 2/3 in 4 s`.
    pub fn retry_text(status: u16, attempt: u32, of: u32, wait: std::time::Duration) -> String {
        let what = if status == 429 {
            "rate limited"
        } else {
            "server error"
        };
        let wait = if wait.as_millis() < 1000 {
            format!("{} ms", wait.as_millis())
        } else {
            format!("{} s", wait.as_secs_f64().round() as u64)
        };
        format!("{what} ({status}), retry {attempt}/{of} in {wait}")
    }
}

/// One model call's whole answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Completion {
    /// Answer text.
    pub text: String,
    /// Reasoning text (models that send it).
    pub reasoning: String,
    /// Tool calls, in index order.
    pub tool_calls: Vec<ToolCall>,
    /// Usage reported by the server; when it sent none, the provider's estimate (see
    /// `usage_estimated`), never a silent zero.
    pub usage: Usage,
    /// `usage` is neocode's estimate (the server reported none, as llama-cpp-python does when
    /// streaming), not the server's count.
    pub usage_estimated: bool,
    /// `finish_reason` of the choice, if one arrived.
    pub finish_reason: Option<String>,
    /// The stream stopped before its end (cut, timeout, cancel): what is here is what arrived.
    pub incomplete: bool,
    /// Reasoning with what its API needs to have it back (Anthropic thinking blocks,
    /// Responses reasoning items, the `reasoning_content` and thought signatures of a Chat
    /// Completions tool turn), in order; stored instead of `reasoning` when not empty.
    pub reasoning_items: Vec<Reasoning>,
    /// Cache and reasoning token counts, where the API reports them.
    pub detail: TokenDetail,
    /// The reply stopped short (output limit, refusal), as the API said.
    pub stop: Option<super::request::StopNote>,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
    /// Gemini's `extra_content.google.thought_signature`; empty: none.
    signature: String,
}

/// Accumulates one stream's chunks.
#[derive(Debug, Default)]
pub struct Folder {
    text: String,
    reasoning: String,
    calls: BTreeMap<u64, PartialCall>,
    usage: Usage,
    /// A `usage` object arrived.
    usage_reported: bool,
    finish_reason: Option<String>,
    done: bool,
    detail: TokenDetail,
    /// The provider and model recorded as the provenance of what is kept for replay.
    provider: String,
    model: String,
}

/// A chunk the server sent that says something went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamError(pub String);

/// An `error` object's message (its `message`, else the object as JSON).
fn error_message(err: &Value) -> StreamError {
    StreamError(
        err.get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| err.to_string()),
    )
}

/// Appends `e` to `out`, joined to the last event when both are text, or both reasoning:
/// the deltas of one network read reach the front ends as one event (one write, one redraw
/// instead of one per delta), in order and with the same text.
pub(crate) fn push_merged(out: &mut Vec<StreamEvent>, e: StreamEvent) {
    match (out.last_mut(), e) {
        (Some(StreamEvent::Text(last)), StreamEvent::Text(t))
        | (Some(StreamEvent::Reasoning(last)), StreamEvent::Reasoning(t)) => last.push_str(&t),
        (_, e) => out.push(e),
    }
}

/// A Chat Completions chunk of the usual shape, its strings borrowed where they have no
/// escapes. Anything else (a field of another type, a duplicate key) fails to read and the
/// chunk is read as a JSON tree instead, so both readings agree on every chunk this reads.
#[derive(serde::Deserialize)]
struct Chunk<'a> {
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default, borrow)]
    choices: Option<Vec<MapOnly<Choice<'a>>>>,
}

#[derive(serde::Deserialize)]
struct Choice<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default, borrow)]
    finish_reason: Option<std::borrow::Cow<'a, str>>,
    /// Absent: None; `null`: Some(None).
    #[serde(default, borrow, deserialize_with = "present")]
    delta: Option<Option<MapOnly<Delta<'a>>>>,
    #[serde(default, borrow, deserialize_with = "present")]
    message: Option<Option<MapOnly<Delta<'a>>>>,
}

#[derive(serde::Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_content: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    tool_calls: Option<Vec<Value>>,
}

/// `T` read only from a JSON object: serde also reads a struct from an array, which the
/// tree reading does not.
struct MapOnly<T>(T);

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for MapOnly<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Object<T>(std::marker::PhantomData<T>);
        impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for Object<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(Object(std::marker::PhantomData))
            .map(MapOnly)
    }
}

/// A field that is there, `null` or not: `Some(None)` for `null`.
fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    <Option<T> as serde::Deserialize>::deserialize(d).map(Some)
}

impl Folder {
    /// A fresh folder.
    pub(crate) fn new() -> Folder {
        Folder::default()
    }

    /// The provider name and model that kept reasoning and signatures are recorded as made
    /// by ([`ReasoningReplay::provider`], [`ReasoningReplay::model`]).
    pub(crate) fn set_origin(&mut self, provider: &str, model: &str) {
        provider.clone_into(&mut self.provider);
        model.clone_into(&mut self.model);
    }

    /// Whether `[DONE]` arrived.
    pub(crate) fn is_done(&self) -> bool {
        self.done
    }

    /// Whether anything of a completion arrived (text, reasoning, calls, a finish or usage).
    pub(crate) fn has_content(&self) -> bool {
        !self.text.is_empty()
            || !self.reasoning.is_empty()
            || !self.calls.is_empty()
            || self.finish_reason.is_some()
            || self.usage != Usage::default()
    }

    /// Characters of answer text so far.
    pub(crate) fn text_chars(&self) -> usize {
        self.text.chars().count()
    }

    /// Whether the server reported usage (a `usage` object arrived).
    pub(crate) fn usage_reported(&self) -> bool {
        self.usage_reported
    }

    /// Whether the choice has finished (`finish_reason` arrived).
    pub(crate) fn has_finished(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// Feeds one event's `data` payload; returns what streams to the user. Payloads that are
    /// not JSON are skipped (some servers send stray lines); an `error` object is an error.
    pub(crate) fn feed(&mut self, data: &str) -> Result<Vec<StreamEvent>, StreamError> {
        let mut out = Vec::new();
        self.feed_into(data, &mut out)?;
        Ok(out)
    }

    /// [`Folder::feed`] appending what streams to `out`, text joined to a text event
    /// already last in `out` ([`push_merged`]).
    pub(crate) fn feed_into(
        &mut self,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), StreamError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        // The usual chunk is read into borrowed fields; any other shape (or JSON that is not
        // a chunk) goes through the JSON tree, which decides what it means.
        match serde_json::from_str::<MapOnly<Chunk<'_>>>(data) {
            Ok(MapOnly(c)) => self.chunk(c, out),
            Err(_) => {
                let Ok(v) = serde_json::from_str::<Value>(data) else {
                    return Ok(());
                };
                self.value(&v, out)
            }
        }
    }

    /// A chunk of the usual shape: the same reading as [`Folder::value`] gives its tree.
    fn chunk(&mut self, c: Chunk<'_>, out: &mut Vec<StreamEvent>) -> Result<(), StreamError> {
        if let Some(err) = c.error {
            return Err(error_message(&err));
        }
        if let Some(u) = c.usage.filter(Value::is_object) {
            self.read_usage(&u);
        }
        for MapOnly(choice) in c.choices.into_iter().flatten() {
            // Only the first choice is asked for; ignore others should a server send them.
            if choice.index.unwrap_or(0) != 0 {
                continue;
            }
            if let Some(f) = choice.finish_reason {
                self.finish_reason = Some(f.into_owned());
            }
            // A `delta` key, even null, is read and `message` not.
            let delta = match choice.delta {
                Some(d) => d,
                None => choice.message.flatten(),
            };
            let Some(MapOnly(d)) = delta else { continue };
            let reasoning = [&d.reasoning_content, &d.reasoning]
                .into_iter()
                .find_map(|r| r.as_deref().filter(|r| !r.is_empty()));
            if let Some(r) = reasoning {
                self.reasoning.push_str(r);
                push_merged(out, StreamEvent::Reasoning(r.to_string()));
            }
            if let Some(t) = d.content.as_deref().filter(|t| !t.is_empty()) {
                self.text.push_str(t);
                push_merged(out, StreamEvent::Text(t.to_string()));
            }
            for (pos, tc) in d.tool_calls.iter().flatten().enumerate() {
                self.read_call(pos, tc);
            }
        }
        Ok(())
    }

    /// A chunk read as a JSON tree (any shape).
    fn value(&mut self, v: &Value, out: &mut Vec<StreamEvent>) -> Result<(), StreamError> {
        if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
            return Err(error_message(err));
        }
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            self.read_usage(u);
        }
        let choices = v.get("choices").and_then(Value::as_array);
        for choice in choices.into_iter().flatten() {
            // Only the first choice is asked for; ignore others should a server send them.
            if choice.get("index").and_then(Value::as_u64).unwrap_or(0) != 0 {
                continue;
            }
            if let Some(f) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish_reason = Some(f.to_string());
            }
            let Some(delta) = choice.get("delta").or_else(|| choice.get("message")) else {
                continue;
            };
            // DeepSeek, Kimi, vLLM and llama.cpp say `reasoning_content`, some servers
            // `reasoning`; a server sending both sends the same text twice.
            let reasoning = ["reasoning_content", "reasoning"]
                .into_iter()
                .find_map(|k| {
                    delta
                        .get(k)
                        .and_then(Value::as_str)
                        .filter(|r| !r.is_empty())
                });
            if let Some(r) = reasoning {
                self.reasoning.push_str(r);
                push_merged(out, StreamEvent::Reasoning(r.to_string()));
            }
            if let Some(t) = delta.get("content").and_then(Value::as_str)
                && !t.is_empty()
            {
                self.text.push_str(t);
                push_merged(out, StreamEvent::Text(t.to_string()));
            }
            for (pos, tc) in delta
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                self.read_call(pos, tc);
            }
        }
        Ok(())
    }

    /// One `usage` object: prompt tokens with the cached ones counted apart
    /// (`prompt_tokens_details.cached_tokens`; DeepSeek's `prompt_cache_hit_tokens`, Kimi's
    /// `cached_tokens`), and the reasoning part of the completion tokens.
    fn read_usage(&mut self, u: &Value) {
        self.usage_reported = true;
        let n = |k: &str| u.get(k).and_then(Value::as_u64);
        let cached = u
            .get("prompt_tokens_details")
            .and_then(|d| d.get("cached_tokens"))
            .and_then(Value::as_u64)
            .or_else(|| n("prompt_cache_hit_tokens"))
            .or_else(|| n("cached_tokens"))
            .unwrap_or(0);
        if let Some(i) = n("prompt_tokens").or_else(|| n("input_tokens")) {
            self.usage.input_tokens = i.saturating_sub(cached);
        }
        if let Some(o) = n("completion_tokens").or_else(|| n("output_tokens")) {
            self.usage.output_tokens = o;
        }
        self.detail.cached_input_tokens = cached;
        self.detail.reasoning_tokens = u
            .get("completion_tokens_details")
            .and_then(|d| d.get("reasoning_tokens"))
            .and_then(Value::as_u64)
            .unwrap_or(0);
    }

    /// One tool-call fragment, `pos` its place in the delta (the index when it has none).
    fn read_call(&mut self, pos: usize, tc: &Value) {
        let index = tc
            .get("index")
            .and_then(Value::as_u64)
            .unwrap_or(pos as u64);
        let call = self.calls.entry(index).or_default();
        if let Some(id) = tc.get("id").and_then(Value::as_str)
            && !id.is_empty()
        {
            call.id = id.to_string();
        }
        if let Some(f) = tc.get("function") {
            // vLLM and llama-cpp-python repeat the whole name in every delta of a
            // call: a copy of the name already set is not appended again.
            if let Some(n) = f.get("name").and_then(Value::as_str)
                && n != call.name
            {
                call.name.push_str(n);
            }
            if let Some(a) = f.get("arguments") {
                match a {
                    Value::String(s) => call.arguments.push_str(s),
                    // Some servers send the arguments as an object in one piece.
                    Value::Null => {}
                    other => call.arguments.push_str(&other.to_string()),
                }
            }
        }
        if let Some(sig) = tc
            .get("extra_content")
            .and_then(|e| e.get("google"))
            .and_then(|g| g.get("thought_signature"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            sig.clone_into(&mut call.signature);
        }
    }

    /// The answer so far; `incomplete` marks a stream that stopped early. Calls without an id
    /// get one (some local servers omit it) so results can be paired with them. A complete
    /// reply that makes calls keeps its reasoning and the calls' thought signatures as
    /// reasoning items with their provenance, to be sent back on the following requests.
    pub(crate) fn finish(self, incomplete: bool) -> Completion {
        let mut signed = Vec::new();
        let tool_calls: Vec<ToolCall> = self
            .calls
            .into_iter()
            .filter(|(_, c)| !c.name.is_empty())
            .map(|(i, c)| {
                let id = if c.id.is_empty() {
                    format!("call_{i}_{}", uuid::Uuid::new_v4().simple())
                } else {
                    c.id
                };
                if !c.signature.is_empty() {
                    signed.push((id.clone(), c.signature));
                }
                ToolCall {
                    id,
                    name: c.name,
                    arguments: if c.arguments.trim().is_empty() {
                        "{}".to_string()
                    } else {
                        c.arguments
                    },
                }
            })
            .collect();
        let replay = |id: Option<String>, signature: Option<String>| {
            Some(Box::new(ReasoningReplay {
                provider: self.provider.clone(),
                model: self.model.clone(),
                id,
                signature,
                encrypted: None,
                redacted: false,
            }))
        };
        let mut reasoning_items = Vec::new();
        // A reply cut short keeps no calls (the turn drops them): nothing to send back.
        if !tool_calls.is_empty() && !incomplete {
            if !self.reasoning.is_empty() {
                reasoning_items.push(Reasoning {
                    text: self.reasoning.clone(),
                    replay: replay(None, None),
                });
            }
            reasoning_items.extend(signed.into_iter().map(|(id, sig)| Reasoning {
                text: String::new(),
                replay: replay(Some(id), Some(sig)),
            }));
        }
        Completion {
            text: self.text,
            reasoning: self.reasoning,
            tool_calls,
            usage: self.usage,
            usage_estimated: false,
            finish_reason: self.finish_reason,
            incomplete,
            reasoning_items,
            detail: self.detail,
            ..Completion::default()
        }
    }
}

/// Folds a whole SSE body (bytes as they came, in any split) into events and a completion,
/// decoding with the same SSE decoder the provider uses, each piece's events merged as the
/// provider merges one network read's. For tests and the benchmark.
pub fn fold_sse_bytes(pieces: Vec<Vec<u8>>) -> Result<(Vec<StreamEvent>, Completion), StreamError> {
    let mut decoder = super::sse_decode::SseDecoder::new();
    let mut folder = Folder::new();
    let mut out = Vec::new();
    'pieces: for p in pieces {
        decoder.push(&p);
        let mut read = Vec::new();
        while let Some(ev) = decoder
            .next_event()
            .map_err(|e| StreamError(e.to_string()))?
        {
            folder.feed_into(ev.data, &mut read)?;
            if folder.is_done() {
                out.append(&mut read);
                break 'pieces;
            }
        }
        out.append(&mut read);
    }
    Ok((out, folder.finish(false)))
}

#[cfg(test)]
mod tests;
