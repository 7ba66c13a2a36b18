//! Scripted replies in the Anthropic Messages and OpenAI Responses stream formats, served by
//! the same [`super::scripted::ScriptedServer`] (which answers any path, so `/v1/messages` and
//! `/v1/responses` too). Built from the APIs' documented event sequences and as messy as the
//! real servers: named `event:` lines, `ping`s, tool input split across `input_json_delta`s,
//! thinking with a signature, `redacted_thinking`, an `error` event mid-stream, cache usage,
//! `response.incomplete`. A test double: only built with the `testkit` feature.

use serde_json::{Value, json};

use super::scripted::{Piece, Reply, Stream, split_n};

/// One named SSE event: `event: NAME` then `data: JSON`.
pub(crate) fn event(name: &str, data: &Value) -> Piece {
    Piece::Raw(format!("event: {name}\ndata: {data}\n\n"))
}

/// An Anthropic Messages stream, block by block.
#[derive(Debug, Clone)]
pub struct Messages {
    pieces: Vec<Piece>,
    index: u64,
}

impl Messages {
    /// `message_start` with the input side of the usage (`input_tokens`, cache reads and
    /// writes), then a `ping`.
    pub fn start(input: u64, cache_read: u64, cache_write: u64) -> Messages {
        let msg = json!({"type": "message_start", "message": {
            "id": "msg_scripted", "type": "message", "role": "assistant", "model": "scripted",
            "content": [], "stop_reason": null,
            "usage": {"input_tokens": input, "cache_read_input_tokens": cache_read,
                "cache_creation_input_tokens": cache_write, "output_tokens": 1}}});
        Messages {
            pieces: vec![
                event("message_start", &msg),
                event("ping", &json!({"type": "ping"})),
            ],
            index: 0,
        }
    }

    fn block(mut self, start: Value, deltas: Vec<Value>) -> Messages {
        let i = self.index;
        self.index += 1;
        self.pieces.push(event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": i, "content_block": start}),
        ));
        for d in deltas {
            self.pieces.push(event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": i, "delta": d}),
            ));
        }
        self.pieces.push(event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": i}),
        ));
        self
    }

    /// A thinking block in `parts` deltas, then its signature.
    pub fn thinking(self, text: &str, signature: &str, parts: usize) -> Messages {
        let mut d: Vec<Value> = split_n(text, parts)
            .into_iter()
            .map(|p| json!({"type": "thinking_delta", "thinking": p}))
            .collect();
        d.push(json!({"type": "signature_delta", "signature": signature}));
        self.block(json!({"type": "thinking", "thinking": ""}), d)
    }

    /// A `redacted_thinking` block (its data arrives whole in the start event).
    pub fn redacted(self, data: &str) -> Messages {
        self.block(
            json!({"type": "redacted_thinking", "data": data}),
            Vec::new(),
        )
    }

    /// A text block in `parts` deltas.
    pub fn text(self, text: &str, parts: usize) -> Messages {
        let d: Vec<Value> = split_n(text, parts)
            .into_iter()
            .map(|p| json!({"type": "text_delta", "text": p}))
            .collect();
        self.block(json!({"type": "text", "text": ""}), d)
    }

    /// A `ping` between blocks.
    pub fn ping(mut self) -> Messages {
        self.pieces.push(event("ping", &json!({"type": "ping"})));
        self
    }

    /// A `tool_use` block whose input arrives in `fragments` `input_json_delta`s (the first
    /// one empty, as the API sends it).
    pub fn tool_use(self, id: &str, name: &str, input: &str, fragments: usize) -> Messages {
        let mut d = vec![json!({"type": "input_json_delta", "partial_json": ""})];
        d.extend(
            split_n(input, fragments)
                .into_iter()
                .map(|p| json!({"type": "input_json_delta", "partial_json": p})),
        );
        self.block(
            json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
            d,
        )
    }

    /// An `error` event (e.g. `overloaded_error`), and the stream ends there.
    pub fn error(mut self, kind: &str, message: &str) -> Stream {
        self.pieces.push(event(
            "error",
            &json!({"type": "error", "error": {"type": kind, "message": message}}),
        ));
        self.into_stream()
    }

    /// `message_delta` with the stop reason and output tokens, then `message_stop`.
    pub fn stop(mut self, reason: &str, output: u64) -> Stream {
        self.pieces.push(event(
            "message_delta",
            &json!({"type": "message_delta",
                "delta": {"stop_reason": reason, "stop_sequence": null},
                "usage": {"output_tokens": output}}),
        ));
        self.pieces
            .push(event("message_stop", &json!({"type": "message_stop"})));
        self.into_stream()
    }

    fn into_stream(self) -> Stream {
        let mut s = Stream::new().no_done();
        s.pieces = self.pieces;
        s
    }
}

/// An OpenAI Responses stream, item by item.
#[derive(Debug, Clone)]
pub struct ResponsesStream {
    pieces: Vec<Piece>,
    index: u64,
    seq: u64,
}

impl ResponsesStream {
    /// `response.created` and `response.in_progress`.
    pub fn start() -> ResponsesStream {
        let mut s = ResponsesStream {
            pieces: Vec::new(),
            index: 0,
            seq: 0,
        };
        let r = json!({"id": "resp_scripted", "object": "response", "status": "in_progress",
            "output": [], "usage": null});
        s.push(json!({"type": "response.created", "response": r}));
        s.push(json!({"type": "response.in_progress", "response": r}));
        s
    }

    fn push(&mut self, mut v: Value) {
        v["sequence_number"] = json!(self.seq);
        self.seq += 1;
        let name = v["type"].as_str().unwrap_or("").to_string();
        self.pieces.push(event(&name, &v));
    }

    /// A reasoning item: summary text in `parts` deltas, its encrypted content in `.done`.
    pub fn reasoning(mut self, id: &str, summary: &str, encrypted: &str, parts: usize) -> Self {
        let i = self.index;
        self.index += 1;
        self.push(
            json!({"type": "response.output_item.added", "output_index": i,
            "item": {"type": "reasoning", "id": id, "summary": []}}),
        );
        self.push(
            json!({"type": "response.reasoning_summary_part.added", "output_index": i,
            "item_id": id, "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
        );
        for p in split_n(summary, parts) {
            self.push(json!({"type": "response.reasoning_summary_text.delta",
                "output_index": i, "item_id": id, "summary_index": 0, "delta": p}));
        }
        self.push(
            json!({"type": "response.output_item.done", "output_index": i,
            "item": {"type": "reasoning", "id": id, "encrypted_content": encrypted,
                "summary": [{"type": "summary_text", "text": summary}]}}),
        );
        self
    }

    /// An assistant message whose text arrives in `parts` deltas.
    pub fn text(mut self, text: &str, parts: usize) -> Self {
        let i = self.index;
        self.index += 1;
        let id = format!("msg_{i}");
        self.push(
            json!({"type": "response.output_item.added", "output_index": i,
            "item": {"type": "message", "id": id, "role": "assistant", "content": []}}),
        );
        for p in split_n(text, parts) {
            self.push(
                json!({"type": "response.output_text.delta", "output_index": i,
                "item_id": id, "content_index": 0, "delta": p}),
            );
        }
        self.push(
            json!({"type": "response.output_item.done", "output_index": i,
            "item": {"type": "message", "id": id, "role": "assistant",
                "content": [{"type": "output_text", "text": text}]}}),
        );
        self
    }

    /// A function call whose arguments arrive in `fragments` deltas, then `.done`.
    pub fn function_call(
        mut self,
        call_id: &str,
        name: &str,
        args: &str,
        fragments: usize,
    ) -> Self {
        let i = self.index;
        self.index += 1;
        let id = format!("fc_{i}");
        self.push(
            json!({"type": "response.output_item.added", "output_index": i,
            "item": {"type": "function_call", "id": id, "call_id": call_id, "name": name,
                "arguments": ""}}),
        );
        for p in split_n(args, fragments) {
            self.push(json!({"type": "response.function_call_arguments.delta",
                "output_index": i, "item_id": id, "delta": p}));
        }
        self.push(
            json!({"type": "response.function_call_arguments.done", "output_index": i,
            "item_id": id, "arguments": args}),
        );
        self.push(
            json!({"type": "response.output_item.done", "output_index": i,
            "item": {"type": "function_call", "id": id, "call_id": call_id, "name": name,
                "arguments": args, "status": "completed"}}),
        );
        self
    }

    /// `response.completed` with usage (`cached` of `input` read from the cache, `reasoning`
    /// of `output` spent reasoning).
    pub fn completed(mut self, input: u64, cached: u64, output: u64, reasoning: u64) -> Stream {
        self.push(json!({"type": "response.completed", "response": {
            "id": "resp_scripted", "status": "completed",
            "usage": {"input_tokens": input, "input_tokens_details": {"cached_tokens": cached},
                "output_tokens": output,
                "output_tokens_details": {"reasoning_tokens": reasoning},
                "total_tokens": input + output}}}));
        self.into_stream()
    }

    /// `response.incomplete` with its reason (e.g. `max_output_tokens`).
    pub fn incomplete(mut self, reason: &str, input: u64, output: u64) -> Stream {
        self.push(json!({"type": "response.incomplete", "response": {
            "id": "resp_scripted", "status": "incomplete",
            "incomplete_details": {"reason": reason},
            "usage": {"input_tokens": input, "output_tokens": output}}}));
        self.into_stream()
    }

    fn into_stream(self) -> Stream {
        let mut s = Stream::new().no_done();
        s.pieces = self.pieces;
        s
    }
}

/// Anthropic's overloaded answer: HTTP 529.
pub fn overloaded() -> Reply {
    Reply::error(529, "Overloaded")
}
