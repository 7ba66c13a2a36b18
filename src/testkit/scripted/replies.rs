//! The scripted replies: streamed chunks as real OpenAI-compatible servers send them, HTTP
//! errors, whole JSON bodies.

use std::time::Duration;

use serde_json::{Value, json};

/// One piece of a streamed reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    /// A `data: <json>` event.
    Data(Value),
    /// A `: <text>` comment (keep-alive).
    Comment(String),
    /// Raw bytes written as they are (for malformed streams).
    Raw(String),
    /// Nothing for this long (a server that stalls mid-reply).
    Pause(Duration),
}

/// A scripted streaming reply (status 200, `text/event-stream`).
#[derive(Debug, Clone, PartialEq)]
pub struct Stream {
    /// The events, in order.
    pub pieces: Vec<Piece>,
    /// Use `\r\n` line endings.
    pub crlf: bool,
    /// End with `data: [DONE]` (else the body just ends).
    pub done: bool,
    /// Wait this long before sending the response head.
    pub delay_before: Duration,
    /// Wait this long before each piece.
    pub delay_between: Duration,
    /// Cut the connection after this many pieces (the chunked body is never terminated).
    pub cut_after: Option<usize>,
    /// Write the event bytes in slices of this size, each flushed on its own, so events break
    /// across reads.
    pub write_size: Option<usize>,
}

/// One scripted answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A streamed completion.
    Stream(Stream),
    /// An HTTP error with a JSON body `{"error": {"message": ...}}`.
    Error {
        /// Status code, e.g. 401, 429, 500.
        status: u16,
        /// The error message in the body.
        message: String,
        /// `Retry-After` seconds.
        retry_after: Option<u64>,
    },
    /// A non-streamed JSON body with status 200.
    Json(Value),
    /// The connection reset by peer (TCP RST) once the request is read: before any answer,
    /// or after a 200 event-stream head (`after_head`), as llama-cpp-python's server does
    /// under an overflowing prompt.
    Reset {
        /// Send the 200 head first.
        after_head: bool,
    },
}

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "scripted",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    })
}

/// A usage-only chunk (empty `choices`), as `stream_options.include_usage` sends last.
pub fn usage_chunk(input: u64, output: u64) -> Value {
    json!({
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "scripted",
        "choices": [],
        "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output},
    })
}

/// Splits `s` into about `n` pieces on char boundaries (at least one piece).
pub(crate) fn split_n(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    let size = chars.len().div_ceil(n.max(1));
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

impl Stream {
    /// An empty stream (no pieces) ending with `[DONE]`.
    pub fn new() -> Stream {
        Stream {
            pieces: Vec::new(),
            crlf: false,
            done: true,
            delay_before: Duration::ZERO,
            delay_between: Duration::ZERO,
            cut_after: None,
            write_size: None,
        }
    }

    /// A reply saying `text` in a few deltas, then `finish_reason: stop` and usage.
    pub fn text(text: &str) -> Stream {
        Stream::new()
            .role()
            .text_deltas(text, 3)
            .finish("stop")
            .usage(10, 5)
    }

    /// A reply making the given tool calls `(id, name, arguments)`, arguments split in
    /// fragments, then `finish_reason: tool_calls` and usage.
    pub fn tool_calls(calls: &[(&str, &str, &str)]) -> Stream {
        let mut s = Stream::new().role();
        for (i, (id, name, args)) in calls.iter().enumerate() {
            s = s.tool_call(i, id, name, args, 3);
        }
        s.finish("tool_calls").usage(20, 8)
    }

    /// Adds the assistant role delta.
    pub fn role(mut self) -> Stream {
        self.pieces.push(Piece::Data(chunk(
            json!({"role": "assistant", "content": ""}),
            None,
        )));
        self
    }

    /// Adds `text` as `parts` content deltas.
    pub fn text_deltas(mut self, text: &str, parts: usize) -> Stream {
        for p in split_n(text, parts) {
            self.pieces
                .push(Piece::Data(chunk(json!({"content": p}), None)));
        }
        self
    }

    /// Adds `text` as reasoning deltas (`reasoning_content`, as DeepSeek, vLLM and llama.cpp
    /// send it).
    pub fn reasoning(mut self, text: &str, parts: usize) -> Stream {
        for p in split_n(text, parts) {
            self.pieces
                .push(Piece::Data(chunk(json!({"reasoning_content": p}), None)));
        }
        self
    }

    /// Adds one tool call at `index`: the first chunk carries id and name, the arguments follow
    /// in `fragments` chunks.
    pub fn tool_call(
        mut self,
        index: usize,
        id: &str,
        name: &str,
        args: &str,
        fragments: usize,
    ) -> Stream {
        self.pieces.push(Piece::Data(chunk(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                "function": {"name": name, "arguments": ""}}]}),
            None,
        )));
        for f in split_n(args, fragments) {
            self.pieces.push(Piece::Data(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": f}}]}),
                None,
            )));
        }
        self
    }

    /// Adds one tool call at `index` as Gemini's OpenAI endpoint streams a Gemini 3 call: whole
    /// in one chunk, with its thought signature in `extra_content.google.thought_signature`.
    pub fn signed_tool_call(
        mut self,
        index: usize,
        id: &str,
        name: &str,
        args: &str,
        signature: &str,
    ) -> Stream {
        self.pieces.push(Piece::Data(chunk(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                "function": {"name": name, "arguments": args},
                "extra_content": {"google": {"thought_signature": signature}}}]}),
            None,
        )));
        self
    }

    /// Adds one tool call at `index` the way vLLM and llama-cpp-python stream it: every delta
    /// repeats the call's `id`, `type` and whole `function.name` (and a legacy
    /// `function_call`), with `content: null`, while the arguments arrive in `fragments`.
    pub fn repeated_tool_call(
        mut self,
        index: usize,
        id: &str,
        name: &str,
        args: &str,
        fragments: usize,
    ) -> Stream {
        for f in split_n(args, fragments) {
            self.pieces.push(Piece::Data(chunk(
                json!({"role": null, "content": null,
                    "function_call": {"name": name, "arguments": f},
                    "tool_calls": [{"index": index, "id": id, "type": "function",
                        "function": {"name": name, "arguments": f}}]}),
                None,
            )));
        }
        self
    }

    /// Adds calls whose argument fragments alternate between them (`index` tells them apart),
    /// as parallel tool calls arrive from some servers.
    pub fn interleaved_calls(mut self, calls: &[(&str, &str, &str)], fragments: usize) -> Stream {
        for (i, (id, name, _)) in calls.iter().enumerate() {
            self.pieces.push(Piece::Data(chunk(
                json!({"tool_calls": [{"index": i, "id": id, "type": "function",
                    "function": {"name": name, "arguments": ""}}]}),
                None,
            )));
        }
        let split: Vec<Vec<String>> = calls
            .iter()
            .map(|(_, _, a)| split_n(a, fragments))
            .collect();
        let longest = split.iter().map(Vec::len).max().unwrap_or(0);
        for k in 0..longest {
            for (i, parts) in split.iter().enumerate() {
                if let Some(f) = parts.get(k) {
                    self.pieces.push(Piece::Data(chunk(
                        json!({"tool_calls": [{"index": i, "function": {"arguments": f}}]}),
                        None,
                    )));
                }
            }
        }
        self
    }

    /// Adds a chunk with `finish_reason` and an empty delta.
    pub fn finish(mut self, reason: &str) -> Stream {
        self.pieces
            .push(Piece::Data(chunk(json!({}), Some(reason))));
        self
    }

    /// Adds the usage-only final chunk.
    pub fn usage(mut self, input: u64, output: u64) -> Stream {
        self.pieces.push(Piece::Data(usage_chunk(input, output)));
        self
    }

    /// Adds the usage-only final chunk with OpenAI's details: `input` prompt tokens of which
    /// `cached` were read from the cache, `output` completion tokens of which `reasoning`
    /// were reasoning.
    pub fn usage_detail(mut self, input: u64, output: u64, cached: u64, reasoning: u64) -> Stream {
        let mut u = usage_chunk(input, output);
        u["usage"]["prompt_tokens_details"] = json!({"cached_tokens": cached});
        u["usage"]["completion_tokens_details"] = json!({"reasoning_tokens": reasoning});
        self.pieces.push(Piece::Data(u));
        self
    }

    /// Adds a `: keep-alive` comment.
    pub fn keep_alive(mut self) -> Stream {
        self.pieces.push(Piece::Comment("keep-alive".into()));
        self
    }

    /// Puts a keep-alive comment between every two pieces.
    pub fn keep_alives_between(mut self) -> Stream {
        let mut out = Vec::with_capacity(self.pieces.len() * 2);
        for p in self.pieces {
            out.push(Piece::Comment("keep-alive".into()));
            out.push(p);
        }
        self.pieces = out;
        self
    }

    /// Adds any piece.
    pub fn piece(mut self, p: Piece) -> Stream {
        self.pieces.push(p);
        self
    }

    /// Uses CRLF line endings.
    pub fn crlf(mut self) -> Stream {
        self.crlf = true;
        self
    }

    /// Ends without `data: [DONE]`.
    pub fn no_done(mut self) -> Stream {
        self.done = false;
        self
    }

    /// Cuts the connection after `n` pieces.
    pub fn cut_after(mut self, n: usize) -> Stream {
        self.cut_after = Some(n);
        self
    }

    /// Waits before the response head and before each piece.
    pub fn delays(mut self, before: Duration, between: Duration) -> Stream {
        self.delay_before = before;
        self.delay_between = between;
        self
    }

    /// Writes the body in slices of `n` bytes.
    pub fn write_size(mut self, n: usize) -> Stream {
        self.write_size = Some(n.max(1));
        self
    }

    /// Wraps it as a [`Reply`].
    pub fn reply(self) -> Reply {
        Reply::Stream(self)
    }

    /// The body bytes this stream sends (all pieces, no cut), for parser tests.
    pub fn body_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for p in &self.pieces {
            out.extend_from_slice(&self.piece_bytes(p));
        }
        if self.done {
            out.extend_from_slice(&self.piece_bytes(&Piece::Raw(String::new())));
        }
        out
    }

    pub(super) fn piece_bytes(&self, p: &Piece) -> Vec<u8> {
        let nl = if self.crlf { "\r\n" } else { "\n" };
        let s = match p {
            Piece::Data(v) => format!("data: {v}{nl}{nl}"),
            Piece::Comment(c) => format!(": {c}{nl}{nl}"),
            Piece::Raw(r) if r.is_empty() => format!("data: [DONE]{nl}{nl}"),
            Piece::Raw(r) => r.clone(),
            Piece::Pause(_) => String::new(),
        };
        s.into_bytes()
    }
}

impl Default for Stream {
    fn default() -> Stream {
        Stream::new()
    }
}

impl Reply {
    /// A streamed text answer.
    pub fn text(text: &str) -> Reply {
        Stream::text(text).reply()
    }

    /// A streamed answer making tool calls `(id, name, arguments)`.
    pub fn tool_calls(calls: &[(&str, &str, &str)]) -> Reply {
        Stream::tool_calls(calls).reply()
    }

    /// An HTTP error.
    pub fn error(status: u16, message: &str) -> Reply {
        Reply::Error {
            status,
            message: message.into(),
            retry_after: None,
        }
    }

    /// A 429 with `Retry-After: secs`.
    pub fn rate_limited(secs: u64) -> Reply {
        Reply::Error {
            status: 429,
            message: "Rate limit reached".into(),
            retry_after: Some(secs),
        }
    }
}

/// The whole (non-streamed) completion a stream adds up to, with its usage.
pub fn completion_json(s: &Stream) -> Value {
    let folded = crate::runtime::provider::sse::fold_sse_bytes(vec![s.body_bytes()]);
    let c = folded.map(|(_, c)| c).unwrap_or_default();
    let signature = |id: &str| {
        c.reasoning_items
            .iter()
            .filter_map(|r| r.replay.as_ref())
            .find(|p| p.id.as_deref() == Some(id))
            .and_then(|p| p.signature.clone())
    };
    let calls: Vec<Value> = c
        .tool_calls
        .iter()
        .map(|t| {
            let mut v = json!({"id": t.id, "type": "function",
                "function": {"name": t.name, "arguments": t.arguments}});
            if let Some(sig) = signature(&t.id) {
                v["extra_content"] = json!({"google": {"thought_signature": sig}});
            }
            v
        })
        .collect();
    let mut message = json!({"role": "assistant",
        "content": if c.text.is_empty() { Value::Null } else { Value::String(c.text.clone()) }});
    if !c.reasoning.is_empty() {
        message["reasoning_content"] = Value::String(c.reasoning.clone());
    }
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    json!({
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [{"index": 0, "message": message,
            "finish_reason": c.finish_reason.unwrap_or_else(|| "stop".into())}],
        "usage": {"prompt_tokens": c.usage.input_tokens + c.detail.cached_input_tokens,
            "completion_tokens": c.usage.output_tokens,
            "total_tokens": c.usage.input_tokens + c.detail.cached_input_tokens + c.usage.output_tokens,
            "prompt_tokens_details": {"cached_tokens": c.detail.cached_input_tokens},
            "completion_tokens_details": {"reasoning_tokens": c.detail.reasoning_tokens}},
    })
}
