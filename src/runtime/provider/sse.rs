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

use super::{Reasoning, TokenDetail};
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
    pub stop: Option<super::StopNote>,
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
pub fn push_merged(out: &mut Vec<StreamEvent>, e: StreamEvent) {
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
    pub fn new() -> Folder {
        Folder::default()
    }

    /// The provider name and model that kept reasoning and signatures are recorded as made
    /// by ([`ReasoningReplay::provider`], [`ReasoningReplay::model`]).
    pub fn set_origin(&mut self, provider: &str, model: &str) {
        provider.clone_into(&mut self.provider);
        model.clone_into(&mut self.model);
    }

    /// Whether `[DONE]` arrived.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Whether anything of a completion arrived (text, reasoning, calls, a finish or usage).
    pub fn has_content(&self) -> bool {
        !self.text.is_empty()
            || !self.reasoning.is_empty()
            || !self.calls.is_empty()
            || self.finish_reason.is_some()
            || self.usage != Usage::default()
    }

    /// Characters of answer text so far.
    pub fn text_chars(&self) -> usize {
        self.text.chars().count()
    }

    /// Whether the server reported usage (a `usage` object arrived).
    pub fn usage_reported(&self) -> bool {
        self.usage_reported
    }

    /// Whether the choice has finished (`finish_reason` arrived).
    pub fn has_finished(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// Feeds one event's `data` payload; returns what streams to the user. Payloads that are
    /// not JSON are skipped (some servers send stray lines); an `error` object is an error.
    pub fn feed(&mut self, data: &str) -> Result<Vec<StreamEvent>, StreamError> {
        let mut out = Vec::new();
        self.feed_into(data, &mut out)?;
        Ok(out)
    }

    /// [`Folder::feed`] appending what streams to `out`, text joined to a text event
    /// already last in `out` ([`push_merged`]).
    pub fn feed_into(&mut self, data: &str, out: &mut Vec<StreamEvent>) -> Result<(), StreamError> {
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
    pub fn finish(self, incomplete: bool) -> Completion {
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
mod tests {
    use super::*;
    use crate::testkit::scripted::{Piece, Stream};

    fn fold_all(body: &[u8], split: usize) -> (Vec<StreamEvent>, Completion) {
        let pieces = body.chunks(split.max(1)).map(<[u8]>::to_vec).collect();
        fold_sse_bytes(pieces).unwrap()
    }

    fn text_of(ev: &[StreamEvent]) -> String {
        ev.iter()
            .filter_map(|e| match e {
                StreamEvent::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn text_stream_in_every_split_gives_the_same_answer() {
        let s = Stream::text("héllo wörld, ünïcode ✓")
            .keep_alives_between()
            .crlf();
        let body = s.body_bytes();
        for split in [1, 2, 3, 7, 64, body.len()] {
            let (ev, c) = fold_all(&body, split);
            assert_eq!(text_of(&ev), "héllo wörld, ünïcode ✓", "split {split}");
            assert_eq!(c.text, "héllo wörld, ünïcode ✓");
            assert_eq!(
                c.usage,
                Usage {
                    input_tokens: 10,
                    output_tokens: 5
                }
            );
            assert_eq!(c.finish_reason.as_deref(), Some("stop"));
            assert!(c.tool_calls.is_empty());
        }
    }

    #[test]
    fn interleaved_fragmented_tool_calls_are_assembled_by_index() {
        let a = r#"{"path":"src/main.rs","limit":20}"#;
        let b = r#"{"pattern":"fn main","path":"."}"#;
        let s = Stream::new()
            .role()
            .reasoning("think first", 4)
            .interleaved_calls(&[("call_a", "read_file", a), ("call_b", "grep", b)], 5)
            .finish("tool_calls")
            .usage(7, 3)
            .no_done();
        let (ev, c) = fold_all(&s.body_bytes(), 5);
        assert_eq!(c.tool_calls.len(), 2);
        assert_eq!(c.tool_calls[0].id, "call_a");
        assert_eq!(c.tool_calls[0].name, "read_file");
        assert_eq!(c.tool_calls[0].arguments, a);
        assert_eq!(c.tool_calls[1].arguments, b);
        assert_eq!(c.reasoning, "think first");
        assert!(ev.contains(&StreamEvent::Reasoning("thi".into())) || !ev.is_empty());
        assert_eq!(c.usage.input_tokens, 7);
    }

    #[test]
    fn the_deltas_of_one_read_are_one_event() {
        let body = Stream::new()
            .role()
            .text_deltas("one two three four five six", 6)
            .finish("stop")
            .usage(3, 6)
            .body_bytes();
        // Arrived together: one event with the whole text.
        let (ev, c) = fold_all(&body, body.len());
        assert_eq!(
            ev,
            [StreamEvent::Text("one two three four five six".into())]
        );
        assert_eq!(c.text, "one two three four five six");
        // Arrived apart: as many events, the same text.
        let (ev, _) = fold_all(&body, 40);
        assert!(ev.len() > 1, "{ev:?}");
        assert_eq!(text_of(&ev), "one two three four five six");
    }

    /// A chunk's `field` as one of the shapes servers send, and some they should not.
    fn shape() -> impl proptest::strategy::Strategy<Value = Option<Value>> {
        use proptest::prelude::*;
        prop_oneof![
            Just(None),
            Just(Some(Value::Null)),
            "[a-z é\\\\\"]{0,6}".prop_map(|t| Some(Value::String(t))),
            Just(Some(serde_json::json!(""))),
            (0u64..3).prop_map(|n| Some(serde_json::json!(n))),
            Just(Some(serde_json::json!(-1))),
            Just(Some(serde_json::json!(1.5))),
            Just(Some(serde_json::json!(["x"]))),
            Just(Some(serde_json::json!({"message": "m"}))),
            Just(Some(
                serde_json::json!([{"index": 0, "id": "c", "function": {"name": "grep", "arguments": "{}"}}])
            )),
        ]
    }

    proptest::proptest! {
        /// The borrowed reading of a chunk folds exactly as the JSON tree does, whatever each
        /// field holds (a shape it cannot read goes to the tree).
        #[test]
        fn the_fast_reading_folds_as_the_tree(
            fields in proptest::collection::vec(shape(), 14),
            as_array in proptest::prelude::any::<bool>(),
            twice in proptest::prelude::any::<bool>(),
        ) {
            let put = |o: &mut serde_json::Map<String, Value>, k: &str, v: &Option<Value>| {
                if let Some(v) = v {
                    o.insert(k.to_string(), v.clone());
                }
            };
            let mut delta = serde_json::Map::new();
            for (k, v) in ["content", "reasoning_content", "reasoning", "tool_calls"].iter().zip(&fields[..4]) {
                put(&mut delta, k, v);
            }
            let mut choice = serde_json::Map::new();
            put(&mut choice, "index", &fields[4]);
            put(&mut choice, "finish_reason", &fields[5]);
            match &fields[6] {
                Some(Value::Null) => {
                    choice.insert("delta".into(), Value::Null);
                }
                Some(_) if as_array => {
                    choice.insert("delta".into(), Value::Array(delta.values().cloned().collect()));
                }
                Some(_) => {
                    choice.insert("delta".into(), Value::Object(delta));
                }
                None => {}
            }
            put(&mut choice, "message", &fields[7]);
            let mut chunk = serde_json::Map::new();
            put(&mut chunk, "error", &fields[8]);
            put(&mut chunk, "usage", &fields[9].as_ref().map(|v| match v {
                Value::Array(_) => serde_json::json!({"prompt_tokens": 5, "completion_tokens": 2}),
                other => other.clone(),
            }));
            match &fields[10] {
                Some(Value::Null) => {
                    chunk.insert("choices".into(), Value::Null);
                }
                Some(Value::String(_)) => {
                    chunk.insert("choices".into(), serde_json::json!("x"));
                }
                Some(_) => {
                    chunk.insert("choices".into(), Value::Array(vec![Value::Object(choice)]));
                }
                None => {}
            }
            put(&mut chunk, "id", &fields[11]);
            let mut text = Value::Object(chunk).to_string();
            if twice {
                // A duplicate key: the tree keeps the last.
                text = text.replacen('{', r#"{"choices":[{"delta":{"content":"dup"}}],"#, 1);
            }
            let (mut fast, mut tree) = (Folder::new(), Folder::new());
            let (mut fast_out, mut tree_out) = (Vec::new(), Vec::new());
            let a = fast.feed_into(&text, &mut fast_out);
            let b = match serde_json::from_str::<Value>(&text) {
                Ok(v) => tree.value(&v, &mut tree_out),
                Err(_) => Ok(()),
            };
            proptest::prop_assert_eq!(a, b);
            proptest::prop_assert_eq!(fast_out, tree_out);
            proptest::prop_assert_eq!(fast.finish(false), tree.finish(false));
        }
    }

    #[test]
    fn error_chunk_is_an_error_and_junk_lines_are_skipped() {
        let mut f = Folder::new();
        assert!(f.feed("not json").unwrap().is_empty());
        assert!(f.feed("").unwrap().is_empty());
        let e = f.feed(r#"{"error":{"message":"overloaded"}}"#).unwrap_err();
        assert_eq!(e.0, "overloaded");
    }

    #[test]
    fn call_without_id_gets_one_and_empty_arguments_become_an_object() {
        let mut f = Folder::new();
        f.feed(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"list_dir"}}]}}]}"#)
            .unwrap();
        let c = f.finish(true);
        assert!(c.incomplete);
        assert_eq!(c.tool_calls[0].name, "list_dir");
        assert_eq!(c.tool_calls[0].arguments, "{}");
        assert!(c.tool_calls[0].id.starts_with("call_0_"));
    }

    #[test]
    fn raw_event_split_inside_the_data_prefix() {
        let s = Stream::new()
            .piece(Piece::Raw("da".into()))
            .piece(Piece::Raw(
                "ta: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n".into(),
            ));
        let (_, c) = fold_all(&s.body_bytes(), 1);
        assert_eq!(c.text, "x");
    }

    #[test]
    fn repeated_names_and_ids_in_every_delta_fold_into_one_call() {
        // As llama-cpp-python and vLLM stream a call: id and the whole name in every delta.
        let args = r#"{"path":"."}"#;
        let s = Stream::new()
            .role()
            .repeated_tool_call(0, "call__0_list_dir", "list_dir", args, 6)
            .finish("tool_calls");
        for split in [1, 9, 4096] {
            let (_, c) = fold_all(&s.body_bytes(), split);
            assert_eq!(c.tool_calls.len(), 1, "split {split}");
            assert_eq!(c.tool_calls[0].name, "list_dir");
            assert_eq!(c.tool_calls[0].id, "call__0_list_dir");
            assert_eq!(c.tool_calls[0].arguments, args);
            assert_eq!(c.text, "", "content: null is no text");
        }
        // A name that really arrives in pieces is still joined.
        let mut f = Folder::new();
        for n in ["list_", "dir"] {
            f.feed(&format!(
                r#"{{"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"function":{{"name":"{n}"}}}}]}}}}]}}"#
            ))
            .unwrap();
        }
        assert_eq!(f.finish(false).tool_calls[0].name, "list_dir");
    }

    #[test]
    fn a_tool_turn_keeps_its_reasoning_and_signatures_with_provenance_and_cache_counts() {
        let s = Stream::new()
            .role()
            .reasoning("I should list it.", 3)
            .signed_tool_call(0, "call_g", "list_dir", r#"{"path":"."}"#, "sig-G1")
            .tool_call(1, "call_h", "grep", "{}", 1)
            .finish("tool_calls")
            .usage_detail(1200, 60, 1024, 40);
        let mut f = Folder::new();
        f.set_origin("openai", "deepseek-reasoner");
        for p in &s.pieces {
            if let Piece::Data(v) = p {
                f.feed(&v.to_string()).unwrap();
            }
        }
        let c = f.finish(false);
        assert_eq!(c.usage.input_tokens, 176, "cached tokens are counted apart");
        assert_eq!(c.detail.cached_input_tokens, 1024);
        assert_eq!(c.detail.reasoning_tokens, 40);
        assert_eq!(c.reasoning, "I should list it.");
        let items: Vec<(&str, Option<&str>, Option<&str>)> = c
            .reasoning_items
            .iter()
            .map(|r| {
                let p = r.replay.as_ref().unwrap();
                assert_eq!(
                    (p.provider.as_str(), p.model.as_str()),
                    ("openai", "deepseek-reasoner")
                );
                (r.text.as_str(), p.id.as_deref(), p.signature.as_deref())
            })
            .collect();
        assert_eq!(
            items,
            [
                ("I should list it.", None, None),
                ("", Some("call_g"), Some("sig-G1"))
            ]
        );
        // DeepSeek's own cache fields.
        let mut f = Folder::new();
        f.feed(r#"{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":5,"prompt_cache_hit_tokens":64,"prompt_cache_miss_tokens":36}}"#)
            .unwrap();
        let c = f.finish(false);
        assert_eq!(
            (c.usage.input_tokens, c.detail.cached_input_tokens),
            (36, 64)
        );
    }

    #[test]
    fn reasoning_without_calls_is_text_only_and_sent_once_under_either_key() {
        let mut f = Folder::new();
        f.set_origin("openai", "m");
        f.feed(r#"{"choices":[{"index":0,"delta":{"reasoning_content":"hm","reasoning":"hm"}}]}"#)
            .unwrap();
        f.feed(r#"{"choices":[{"index":0,"delta":{"reasoning":" ok","content":"hi"}}]}"#)
            .unwrap();
        let c = f.finish(false);
        assert_eq!(c.reasoning, "hm ok");
        assert!(c.reasoning_items.is_empty(), "{:?}", c.reasoning_items);
    }

    #[test]
    fn a_stream_without_usage_says_so_and_length_is_kept() {
        let s = Stream::new()
            .role()
            .text_deltas("a long answer that", 3)
            .finish("length");
        let mut f = Folder::new();
        for p in &s.pieces {
            if let Piece::Data(v) = p {
                f.feed(&v.to_string()).unwrap();
            }
        }
        assert!(!f.usage_reported(), "no usage chunk arrived");
        let c = f.finish(false);
        assert_eq!(c.finish_reason.as_deref(), Some("length"));
        assert_eq!(c.usage, Usage::default());
        let mut f = Folder::new();
        f.feed(&crate::testkit::scripted::usage_chunk(0, 0).to_string())
            .unwrap();
        assert!(f.usage_reported(), "a reported zero is reported");
    }
}
