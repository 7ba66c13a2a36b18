//! Folding one Messages stream into a completion: content blocks by `index` (text,
//! thinking with its signature, `redacted_thinking`, `tool_use` with its input in
//! `input_json_delta` fragments), usage from `message_start` and `message_delta`, the stop
//! reason, and `error` events (retryable when the server was overloaded).

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::runtime::provider::http::{WireError, WireFold, json as parse, n, s};
use crate::runtime::provider::request::{Reasoning, StopNote};
use crate::runtime::provider::sse::{Completion, StreamEvent};
use crate::session::TokenDetail;
use crate::session::{ReasoningReplay, ToolCall, Usage};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Thinking,
    Redacted,
    ToolUse,
    Other,
}

#[derive(Debug)]
struct Block {
    kind: Kind,
    /// Text, thinking text, or the tool input's JSON fragments.
    text: String,
    signature: String,
    /// `redacted_thinking` data.
    data: String,
    id: String,
    name: String,
    /// The input that came whole with `content_block_start` (used when no fragment came).
    input: Option<Value>,
    stopped: bool,
}

/// The name sessions store for this provider (and reasoning provenance).
pub const NAME: &str = "anthropic";

/// Folds one Messages stream.
#[derive(Debug)]
pub struct Fold {
    model: String,
    blocks: BTreeMap<u64, Block>,
    usage: Usage,
    detail: TokenDetail,
    stop_reason: Option<String>,
    done: bool,
    output: bool,
}

impl Fold {
    /// A fresh fold; `model` is recorded as the thinking blocks' provenance.
    pub fn new(model: &str) -> Fold {
        Fold {
            model: model.to_string(),
            blocks: BTreeMap::new(),
            usage: Usage::default(),
            detail: TokenDetail::default(),
            stop_reason: None,
            done: false,
            output: false,
        }
    }

    fn read_usage(&mut self, u: &Value) {
        // `message_start` carries the input side; `message_delta` the cumulative output
        // (and, from some versions on, the input side again).
        if u.get("input_tokens").is_some() {
            self.usage.input_tokens = n(u, "input_tokens");
        }
        if u.get("cache_creation_input_tokens").is_some() {
            self.detail.cache_write_tokens = n(u, "cache_creation_input_tokens");
        }
        if u.get("cache_read_input_tokens").is_some() {
            self.detail.cached_input_tokens = n(u, "cache_read_input_tokens");
        }
        if u.get("output_tokens").is_some() {
            self.usage.output_tokens = n(u, "output_tokens");
        }
    }

    fn start_block(&mut self, v: &Value) {
        let b = &v["content_block"];
        let kind = match s(b, "type") {
            "text" => Kind::Text,
            "thinking" => Kind::Thinking,
            "redacted_thinking" => Kind::Redacted,
            "tool_use" => Kind::ToolUse,
            _ => Kind::Other,
        };
        if kind == Kind::ToolUse {
            self.output = true;
        }
        let block = Block {
            kind,
            text: s(
                b,
                if kind == Kind::Thinking {
                    "thinking"
                } else {
                    "text"
                },
            )
            .to_string(),
            signature: s(b, "signature").to_string(),
            data: s(b, "data").to_string(),
            id: s(b, "id").to_string(),
            name: s(b, "name").to_string(),
            input: b
                .get("input")
                .filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
                .cloned(),
            stopped: false,
        };
        self.blocks.insert(n(v, "index"), block);
    }

    fn delta(&mut self, index: u64, d: &DeltaBody<'_>) -> Vec<StreamEvent> {
        let Some(b) = self.blocks.get_mut(&index) else {
            return Vec::new();
        };
        match &*d.ty {
            "text_delta" => {
                b.text.push_str(&d.text);
                if !d.text.is_empty() {
                    self.output = true;
                    return vec![StreamEvent::Text(d.text.to_string())];
                }
            }
            "thinking_delta" => {
                b.text.push_str(&d.thinking);
                if !d.thinking.is_empty() {
                    self.output = true;
                    return vec![StreamEvent::Reasoning(d.thinking.to_string())];
                }
            }
            "signature_delta" => b.signature.push_str(&d.signature),
            "input_json_delta" => b.text.push_str(&d.partial_json),
            _ => {}
        }
        Vec::new()
    }
}

/// A `content_block_delta` read straight into fields, without building a JSON tree: the
/// event that comes once per token, so the hot path.
#[derive(Deserialize)]
struct BlockDelta<'a> {
    #[serde(rename = "type", borrow)]
    ty: Cow<'a, str>,
    #[serde(default)]
    index: u64,
    #[serde(borrow)]
    delta: DeltaBody<'a>,
}

#[derive(Deserialize, Default)]
struct DeltaBody<'a> {
    #[serde(rename = "type", borrow, default)]
    ty: Cow<'a, str>,
    #[serde(borrow, default)]
    text: Cow<'a, str>,
    #[serde(borrow, default)]
    thinking: Cow<'a, str>,
    #[serde(borrow, default)]
    partial_json: Cow<'a, str>,
    #[serde(borrow, default)]
    signature: Cow<'a, str>,
}

impl<'a> DeltaBody<'a> {
    /// The same fields from a parsed event (the path for events without their name).
    fn of(d: &'a Value) -> DeltaBody<'a> {
        DeltaBody {
            ty: Cow::Borrowed(s(d, "type")),
            text: Cow::Borrowed(s(d, "text")),
            thinking: Cow::Borrowed(s(d, "thinking")),
            partial_json: Cow::Borrowed(s(d, "partial_json")),
            signature: Cow::Borrowed(s(d, "signature")),
        }
    }
}

impl WireFold for Fold {
    fn feed(&mut self, event: &str, data: &str) -> Result<Vec<StreamEvent>, WireError> {
        if event == "content_block_delta"
            && let Ok(d) = serde_json::from_str::<BlockDelta<'_>>(data)
            && d.ty == "content_block_delta"
        {
            return Ok(self.delta(d.index, &d.delta));
        }
        let Some(v) = parse(data) else {
            return Ok(Vec::new());
        };
        let ty = match s(&v, "type") {
            "" => event,
            t => t,
        };
        match ty {
            "message_start" => self.read_usage(&v["message"]["usage"]),
            "content_block_start" => self.start_block(&v),
            "content_block_delta" => {
                return Ok(self.delta(n(&v, "index"), &DeltaBody::of(&v["delta"])));
            }
            "content_block_stop" => {
                if let Some(b) = self.blocks.get_mut(&n(&v, "index")) {
                    b.stopped = true;
                }
            }
            "message_delta" => {
                if let Some(r) = v["delta"].get("stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(r.to_string());
                }
                self.read_usage(&v["usage"]);
            }
            "message_stop" => self.done = true,
            "error" => {
                let e = &v["error"];
                let kind = s(e, "type");
                let msg = match s(e, "message") {
                    "" => kind.to_string(),
                    m => format!("{m} ({kind})"),
                };
                return Err(WireError {
                    message: msg,
                    retryable: matches!(kind, "overloaded_error" | "api_error"),
                });
            }
            // `ping` and events this version does not know.
            _ => {}
        }
        Ok(Vec::new())
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn has_output(&self) -> bool {
        self.output
    }

    fn text_chars(&self) -> usize {
        self.blocks
            .values()
            .filter(|b| b.kind == Kind::Text)
            .map(|b| b.text.chars().count())
            .sum()
    }

    fn finish(self, incomplete: bool) -> Completion {
        let mut c = Completion {
            usage: self.usage,
            detail: self.detail,
            incomplete,
            ..Completion::default()
        };
        let reason = self.stop_reason.clone();
        for (_, b) in self.blocks {
            match b.kind {
                Kind::Text => c.text.push_str(&b.text),
                Kind::Thinking | Kind::Redacted => {
                    if b.kind == Kind::Thinking {
                        c.reasoning.push_str(&b.text);
                    }
                    let redacted = b.kind == Kind::Redacted;
                    c.reasoning_items.push(Reasoning {
                        text: b.text,
                        replay: Some(Box::new(ReasoningReplay {
                            provider: NAME.to_string(),
                            model: self.model.clone(),
                            id: None,
                            signature: (!b.signature.is_empty()).then_some(b.signature),
                            encrypted: redacted.then_some(b.data),
                            redacted,
                        })),
                    });
                }
                // A call whose block did not stop may have cut arguments: left out.
                Kind::ToolUse if b.stopped && !b.name.is_empty() => {
                    let arguments = if b.text.trim().is_empty() {
                        b.input.map_or_else(|| "{}".to_string(), |i| i.to_string())
                    } else {
                        b.text
                    };
                    c.tool_calls.push(ToolCall {
                        id: b.id,
                        name: b.name,
                        arguments,
                    });
                }
                Kind::ToolUse | Kind::Other => {}
            }
        }
        c.stop = match reason.as_deref() {
            Some("max_tokens") => Some(StopNote::Truncated("max_tokens".into())),
            Some("model_context_window_exceeded") => {
                Some(StopNote::Truncated("model_context_window_exceeded".into()))
            }
            Some("refusal") => Some(StopNote::Refused),
            _ => None,
        };
        c.finish_reason = reason.map(|r| {
            match r.as_str() {
                "end_turn" | "stop_sequence" => "stop",
                "tool_use" => "tool_calls",
                "max_tokens" => "length",
                other => other,
            }
            .to_string()
        });
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Feeds each event under its SSE name, which is its `type`.
    fn feed_all(f: &mut Fold, events: &[Value]) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        for v in events {
            out.extend(f.feed(s(v, "type"), &v.to_string()).unwrap());
        }
        out
    }

    #[test]
    fn a_stream_with_thinking_fragments_and_a_call_folds_into_one_completion() {
        let mut f = Fold::new("claude-sonnet-4-5");
        let ev = feed_all(
            &mut f,
            &[
                json!({"type": "message_start", "message": {"usage":
                    {"input_tokens": 12, "cache_creation_input_tokens": 300,
                     "cache_read_input_tokens": 4000, "output_tokens": 1}}}),
                json!({"type": "ping"}),
                json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "thinking", "thinking": ""}}),
                json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "thinking_delta", "thinking": "let me "}}),
                json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "thinking_delta", "thinking": "look"}}),
                json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "signature_delta", "signature": "sig=="}}),
                json!({"type": "content_block_stop", "index": 0}),
                json!({"type": "content_block_start", "index": 1,
                    "content_block": {"type": "redacted_thinking", "data": "opaque"}}),
                json!({"type": "content_block_stop", "index": 1}),
                json!({"type": "content_block_start", "index": 2,
                    "content_block": {"type": "tool_use", "id": "toolu_1", "name": "read_file",
                        "input": {}}}),
                json!({"type": "content_block_delta", "index": 2,
                    "delta": {"type": "input_json_delta", "partial_json": "{\"pa"}}),
                json!({"type": "content_block_delta", "index": 2,
                    "delta": {"type": "input_json_delta", "partial_json": "th\":\"a\"}"}}),
                json!({"type": "content_block_stop", "index": 2}),
                json!({"type": "message_delta",
                    "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 40}}),
                json!({"type": "message_stop"}),
            ],
        );
        assert!(f.is_done());
        assert_eq!(
            ev,
            [
                StreamEvent::Reasoning("let me ".into()),
                StreamEvent::Reasoning("look".into())
            ]
        );
        let c = f.finish(false);
        assert_eq!(c.tool_calls[0].arguments, r#"{"path":"a"}"#);
        assert_eq!(c.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(
            c.usage,
            Usage {
                input_tokens: 12,
                output_tokens: 40
            }
        );
        assert_eq!(c.detail.cached_input_tokens, 4000);
        assert_eq!(c.detail.cache_write_tokens, 300);
        assert_eq!(c.reasoning, "let me look");
        let r0 = c.reasoning_items[0].replay.as_ref().unwrap();
        assert_eq!(r0.signature.as_deref(), Some("sig=="));
        let r1 = c.reasoning_items[1].replay.as_ref().unwrap();
        assert!(r1.redacted);
        assert_eq!(r1.encrypted.as_deref(), Some("opaque"));
    }

    #[test]
    fn an_overloaded_error_is_retryable_and_max_tokens_truncates() {
        let mut f = Fold::new("m");
        let e = f
            .feed(
                "error",
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            )
            .unwrap_err();
        assert!(e.retryable && !f.has_output(), "{e:?}");
        let mut f = Fold::new("m");
        feed_all(
            &mut f,
            &[
                json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "tool_use", "id": "t", "name": "grep"}}),
                json!({"type": "message_delta",
                    "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 9}}),
                json!({"type": "message_stop"}),
            ],
        );
        let c = f.finish(false);
        assert!(c.tool_calls.is_empty(), "an unfinished call is left out");
        assert_eq!(c.stop, Some(StopNote::Truncated("max_tokens".into())));
    }
}
