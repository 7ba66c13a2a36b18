//! Anthropic Messages (`POST <base_url>/messages`, `x-api-key`, `anthropic-version`), streamed.
//!
//! The request: the system prompt as the `system` field, `tool_use` / `tool_result` blocks,
//! images as base64 blocks, extended thinking with a budget, and prompt-cache breakpoints
//! (`cache_control: ephemeral`) on the tools, the system prompt and the end of the
//! conversation, so a long session pays the cache-read price for everything but the new turn.
//! Thinking blocks (with their signature) and `redacted_thinking` blocks made by the same
//! model family are sent back verbatim, as the API requires for tool use with thinking.
//!
//! The stream: `message_start` (input and cache usage), `content_block_start` / `_delta`
//! (`text_delta`, `input_json_delta` in fragments, `thinking_delta`, `signature_delta`) /
//! `_stop`, `message_delta` (stop reason, output usage), `message_stop`, `ping`, and `error`
//! (an `overloaded_error` before anything was shown is retried like a 529). Stop reasons:
//! `max_tokens` keeps the reply marked truncated, `refusal` is said plainly, `pause_turn` is
//! continued by sending the paused reply back.

use std::collections::BTreeMap;

use base64::Engine;
use serde_json::{Value, json};

use super::http::{ApiSettings, Call, Wire, WireError, WireFold, json as parse, n, s};
use super::sse::{Completion, StreamEvent};
use super::{
    ChatMessage, ChatRequest, Provider, ProviderError, Reasoning, StopNote, TokenDetail, ToolDef,
    UserPart, replays_to,
};
use crate::runtime::cancel::CancelFlag;
use crate::session::{ReasoningReplay, ToolCall, Usage};

/// The name sessions store for this provider (and reasoning provenance).
pub const NAME: &str = "anthropic";
/// The API version sent in `anthropic-version`.
pub const VERSION: &str = "2023-06-01";
/// How often a `pause_turn` is continued before the reply is taken as it is.
const MAX_PAUSES: usize = 4;

/// The Anthropic Messages provider.
pub struct Anthropic {
    wire: Wire,
}

impl Anthropic {
    /// Builds the client.
    pub fn new(settings: ApiSettings) -> Result<Anthropic, ProviderError> {
        Ok(Anthropic {
            wire: Wire::new(settings)?,
        })
    }

    /// The request body of `req`.
    pub fn body(&self, req: &ChatRequest) -> Value {
        let st = &self.wire.settings;
        let model = &st.http.model;
        let mut max_tokens = st.max_output_tokens;
        let mut body = json!({
            "model": model,
            "messages": messages(req, model),
            "stream": true,
        });
        let system = system_blocks(req);
        if !system.is_empty() {
            body["system"] = Value::Array(system);
        }
        if !req.tools.is_empty() {
            body["tools"] = Value::Array(tool_definitions(&req.tools));
        }
        if st.thinking_budget > 0 {
            // The budget must be at least 1024 and below max_tokens.
            let budget = st.thinking_budget.max(1024);
            max_tokens = max_tokens.max(budget + 1024);
            body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
        }
        body["max_tokens"] = json!(max_tokens);
        body
    }
}

/// The system prompt and the conversation's own system messages as text blocks; the cache
/// breakpoint goes on the last one.
fn system_blocks(req: &ChatRequest) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    if !req.system.is_empty() {
        out.push(json!({"type": "text", "text": req.system}));
    }
    for m in &req.messages {
        if let ChatMessage::System(t) = m
            && !t.is_empty()
        {
            out.push(json!({"type": "text", "text": t}));
        }
    }
    if let Some(last) = out.last_mut() {
        last["cache_control"] = json!({"type": "ephemeral"});
    }
    out
}

/// The Messages `tools`, the cache breakpoint on the last.
pub fn tool_definitions(tools: &[ToolDef]) -> Vec<Value> {
    let mut out: Vec<Value> = tools
        .iter()
        .map(
            |t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}),
        )
        .collect();
    if let Some(last) = out.last_mut() {
        last["cache_control"] = json!({"type": "ephemeral"});
    }
    out
}

/// The Messages `messages` of `req`: user and assistant turns alternating (tool results
/// and the user text after them share one user turn), the cache breakpoint on the last
/// block. System messages go to the `system` field.
pub fn messages(req: &ChatRequest, model: &str) -> Vec<Value> {
    let mut out: Vec<(&str, Vec<Value>)> = Vec::new();
    let mut push = |role: &'static str, blocks: Vec<Value>| {
        if blocks.is_empty() {
            return;
        }
        match out.last_mut() {
            Some((r, b)) if *r == role => b.extend(blocks),
            _ => out.push((role, blocks)),
        }
    };
    for m in &req.messages {
        match m {
            ChatMessage::System(_) => {}
            ChatMessage::User(parts) => push("user", user_blocks(parts)),
            ChatMessage::Assistant {
                text,
                reasoning,
                tool_calls,
            } => push(
                "assistant",
                assistant_blocks(text, reasoning, tool_calls, model),
            ),
            ChatMessage::ToolResult {
                call_id,
                text,
                is_error,
            } => push(
                "user",
                vec![json!({"type": "tool_result", "tool_use_id": call_id,
                    "content": text, "is_error": is_error})],
            ),
        }
    }
    if let Some(last) = out.last_mut().and_then(|(_, b)| b.last_mut()) {
        last["cache_control"] = json!({"type": "ephemeral"});
    }
    out.into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

fn user_blocks(parts: &[UserPart]) -> Vec<Value> {
    parts
        .iter()
        .filter_map(|p| match p {
            UserPart::Text(t) if t.is_empty() => None,
            UserPart::Text(t) => Some(json!({"type": "text", "text": t})),
            UserPart::Image { mime, bytes } => Some(json!({"type": "image", "source": {
                "type": "base64",
                "media_type": mime,
                "data": base64::engine::general_purpose::STANDARD.encode(bytes),
            }})),
            UserPart::Unavailable { asset_id, reason } => {
                Some(json!({"type": "text", "text": UserPart::unavailable_text(asset_id, reason)}))
            }
        })
        .collect()
}

/// An assistant turn: its thinking blocks that this model may read back (verbatim, first),
/// its text, its calls with their input as JSON.
fn assistant_blocks(
    text: &str,
    reasoning: &[Reasoning],
    calls: &[ToolCall],
    model: &str,
) -> Vec<Value> {
    let mut out = Vec::new();
    for r in reasoning.iter().filter(|r| replays_to(r, NAME, model)) {
        let Some(p) = &r.replay else { continue };
        if p.redacted {
            out.push(json!({"type": "redacted_thinking",
                "data": p.encrypted.clone().unwrap_or_default()}));
        } else if let Some(sig) = &p.signature {
            out.push(json!({"type": "thinking", "thinking": r.text, "signature": sig}));
        }
    }
    if !text.is_empty() {
        out.push(json!({"type": "text", "text": text}));
    }
    for c in calls {
        let input = serde_json::from_str::<Value>(&c.arguments)
            .ok()
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}));
        out.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
    }
    out
}

impl Provider for Anthropic {
    fn name(&self) -> &str {
        NAME
    }

    fn model(&self) -> &str {
        &self.wire.settings.http.model
    }

    fn stream(
        &mut self,
        req: &ChatRequest,
        cancel: &CancelFlag,
        on_event: &mut dyn FnMut(StreamEvent),
    ) -> Result<Completion, ProviderError> {
        let http = &self.wire.settings.http;
        let mut body = self.body(req);
        let mut headers = vec![("anthropic-version", VERSION.to_string())];
        if let Some(k) = &http.api_key {
            headers.push(("x-api-key", k.clone()));
        }
        let model = http.model.clone();
        let mut total: Option<Completion> = None;
        for _ in 0..=MAX_PAUSES {
            let call = Call {
                url: format!("{}/messages", http.base_url),
                headers: headers.clone(),
                body: &body,
                key_hint: "NEOCODE_API_KEY or ANTHROPIC_API_KEY",
            };
            let c = self
                .wire
                .stream(&call, cancel, on_event, &mut || Fold::new(&model));
            let c = match c {
                Ok(c) => c,
                Err(mut e) => {
                    // What the paused parts said before is kept with what arrived.
                    e.partial = match (total.take(), e.partial.take()) {
                        (Some(t), Some(p)) => Some(Box::new(merge(t, *p))),
                        (Some(mut t), None) => {
                            t.incomplete = true;
                            Some(Box::new(t))
                        }
                        (None, p) => p,
                    };
                    return Err(e);
                }
            };
            let paused = c.finish_reason.as_deref() == Some("pause_turn");
            let blocks = if paused {
                assistant_blocks(&c.text, &c.reasoning_items, &c.tool_calls, &model)
            } else {
                Vec::new()
            };
            let c = match total.take() {
                Some(t) => merge(t, c),
                None => c,
            };
            if !paused || blocks.is_empty() {
                return Ok(c);
            }
            // Send what the paused turn said so far back; the model goes on from there.
            if let Some(msgs) = body["messages"].as_array_mut() {
                msgs.push(json!({"role": "assistant", "content": blocks}));
            }
            total = Some(c);
        }
        Ok(total.unwrap_or_default())
    }
}

/// Two completions of one paused turn as one.
fn merge(mut a: Completion, b: Completion) -> Completion {
    a.text.push_str(&b.text);
    a.reasoning.push_str(&b.reasoning);
    a.reasoning_items.extend(b.reasoning_items);
    a.tool_calls.extend(b.tool_calls);
    a.usage.input_tokens += b.usage.input_tokens;
    a.usage.output_tokens += b.usage.output_tokens;
    a.detail.cached_input_tokens += b.detail.cached_input_tokens;
    a.detail.cache_write_tokens += b.detail.cache_write_tokens;
    a.detail.reasoning_tokens += b.detail.reasoning_tokens;
    a.finish_reason = b.finish_reason;
    a.stop = b.stop;
    a.incomplete = b.incomplete;
    a
}

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

    fn delta(&mut self, v: &Value) -> Vec<StreamEvent> {
        let d = &v["delta"];
        let Some(b) = self.blocks.get_mut(&n(v, "index")) else {
            return Vec::new();
        };
        match s(d, "type") {
            "text_delta" => {
                let t = s(d, "text");
                b.text.push_str(t);
                if !t.is_empty() {
                    self.output = true;
                    return vec![StreamEvent::Text(t.to_string())];
                }
            }
            "thinking_delta" => {
                let t = s(d, "thinking");
                b.text.push_str(t);
                if !t.is_empty() {
                    self.output = true;
                    return vec![StreamEvent::Reasoning(t.to_string())];
                }
            }
            "signature_delta" => b.signature.push_str(s(d, "signature")),
            "input_json_delta" => b.text.push_str(s(d, "partial_json")),
            _ => {}
        }
        Vec::new()
    }
}

impl WireFold for Fold {
    fn feed(&mut self, event: &str, data: &str) -> Result<Vec<StreamEvent>, WireError> {
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
            "content_block_delta" => return Ok(self.delta(&v)),
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
    use crate::runtime::provider::OpenAiSettings;

    fn feed_all(f: &mut Fold, events: &[(&str, Value)]) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        for (e, v) in events {
            out.extend(f.feed(e, &v.to_string()).unwrap());
        }
        out
    }

    #[test]
    fn a_stream_with_thinking_fragments_and_a_call_folds_into_one_completion() {
        let mut f = Fold::new("claude-sonnet-4-5");
        let ev = feed_all(
            &mut f,
            &[
                (
                    "message_start",
                    json!({"type": "message_start", "message": {"usage":
                    {"input_tokens": 12, "cache_creation_input_tokens": 300,
                     "cache_read_input_tokens": 4000, "output_tokens": 1}}}),
                ),
                ("ping", json!({"type": "ping"})),
                (
                    "content_block_start",
                    json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "thinking", "thinking": ""}}),
                ),
                (
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "thinking_delta", "thinking": "let me "}}),
                ),
                (
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "thinking_delta", "thinking": "look"}}),
                ),
                (
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "signature_delta", "signature": "sig=="}}),
                ),
                (
                    "content_block_stop",
                    json!({"type": "content_block_stop", "index": 0}),
                ),
                (
                    "content_block_start",
                    json!({"type": "content_block_start", "index": 1,
                    "content_block": {"type": "redacted_thinking", "data": "opaque"}}),
                ),
                (
                    "content_block_stop",
                    json!({"type": "content_block_stop", "index": 1}),
                ),
                (
                    "content_block_start",
                    json!({"type": "content_block_start", "index": 2,
                    "content_block": {"type": "tool_use", "id": "toolu_1", "name": "read_file",
                        "input": {}}}),
                ),
                (
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 2,
                    "delta": {"type": "input_json_delta", "partial_json": "{\"pa"}}),
                ),
                (
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 2,
                    "delta": {"type": "input_json_delta", "partial_json": "th\":\"a\"}"}}),
                ),
                (
                    "content_block_stop",
                    json!({"type": "content_block_stop", "index": 2}),
                ),
                (
                    "message_delta",
                    json!({"type": "message_delta",
                    "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 40}}),
                ),
                ("message_stop", json!({"type": "message_stop"})),
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
    fn images_results_and_system_messages_take_their_places() {
        let req = ChatRequest {
            system: "rules".into(),
            messages: vec![
                ChatMessage::System("step context".into()),
                ChatMessage::User(vec![
                    UserPart::Text("look".into()),
                    UserPart::Image {
                        mime: "image/png".into(),
                        bytes: b"png".to_vec(),
                    },
                ]),
                ChatMessage::Assistant {
                    text: "two calls".into(),
                    reasoning: vec![Reasoning::text("no signature: not sent")],
                    tool_calls: vec![
                        ToolCall {
                            id: "a".into(),
                            name: "grep".into(),
                            arguments: "not json".into(),
                        },
                        ToolCall {
                            id: "b".into(),
                            name: "grep".into(),
                            arguments: "{}".into(),
                        },
                    ],
                },
                ChatMessage::ToolResult {
                    call_id: "a".into(),
                    text: "boom".into(),
                    is_error: true,
                },
                ChatMessage::ToolResult {
                    call_id: "b".into(),
                    text: "ok".into(),
                    is_error: false,
                },
                ChatMessage::user_text("next"),
            ],
            ..ChatRequest::default()
        };
        let system = system_blocks(&req);
        assert_eq!(system.len(), 2);
        assert_eq!(system[1]["text"], "step context");
        assert!(system[0].get("cache_control").is_none());
        let m = messages(&req, "claude-sonnet-4-5");
        assert_eq!(m.len(), 3, "{m:#?}");
        assert_eq!(
            m[0]["content"][1],
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "cG5n"}})
        );
        assert_eq!(
            m[1]["content"][0],
            json!({"type": "text", "text": "two calls"})
        );
        assert_eq!(m[1]["content"][1]["input"], json!({}));
        let user = m[2]["content"].as_array().unwrap();
        assert_eq!(user[0]["is_error"], true);
        assert_eq!(user[1]["tool_use_id"], "b");
        assert_eq!(user[2]["text"], "next");
        assert_eq!(user[2]["cache_control"]["type"], "ephemeral");
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
                (
                    "content_block_start",
                    json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "tool_use", "id": "t", "name": "grep"}}),
                ),
                (
                    "message_delta",
                    json!({"type": "message_delta",
                    "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 9}}),
                ),
                ("message_stop", json!({"type": "message_stop"})),
            ],
        );
        let c = f.finish(false);
        assert!(c.tool_calls.is_empty(), "an unfinished call is left out");
        assert_eq!(c.stop, Some(StopNote::Truncated("max_tokens".into())));
    }

    #[test]
    fn the_body_has_breakpoints_system_thinking_and_replays_only_own_reasoning() {
        let mut st = ApiSettings {
            http: OpenAiSettings::new("http://127.0.0.1:9/v1", "claude-sonnet-4-5", None),
            reasoning_effort: None,
            thinking_budget: 2000,
            max_output_tokens: 1000,
        };
        st.http.max_retries = 0;
        let p = Anthropic::new(st).unwrap();
        let own = |text: &str, provider: &str, model: &str| Reasoning {
            text: text.into(),
            replay: Some(Box::new(ReasoningReplay {
                provider: provider.into(),
                model: model.into(),
                id: None,
                signature: Some(format!("sig-{text}")),
                encrypted: None,
                redacted: false,
            })),
        };
        let req = ChatRequest {
            system: "be brief".into(),
            messages: vec![
                ChatMessage::user_text("hi"),
                ChatMessage::Assistant {
                    text: String::new(),
                    reasoning: vec![
                        own("mine", NAME, "claude-sonnet-4-5-20250929"),
                        own("theirs", "openai-responses", "gpt-5"),
                    ],
                    tool_calls: vec![ToolCall {
                        id: "toolu_1".into(),
                        name: "grep".into(),
                        arguments: r#"{"pattern":"x"}"#.into(),
                    }],
                },
                ChatMessage::ToolResult {
                    call_id: "toolu_1".into(),
                    text: "found".into(),
                    is_error: false,
                },
            ],
            tools: vec![ToolDef::new("grep", "search", json!({"type": "object"}))],
            cache_key: "s1".into(),
        };
        let b = p.body(&req);
        assert_eq!(b["system"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(b["tools"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(b["thinking"]["budget_tokens"], 2000);
        assert_eq!(b["max_tokens"], 3024);
        let msgs = b["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 3);
        let a = &msgs[1]["content"];
        assert_eq!(
            a[0],
            json!({"type": "thinking", "thinking": "mine", "signature": "sig-mine"})
        );
        assert_eq!(a[1]["type"], "tool_use");
        assert_eq!(a[1]["input"], json!({"pattern": "x"}));
        assert_eq!(
            a.as_array().unwrap().len(),
            2,
            "foreign reasoning is left out: {a}"
        );
        let last = &msgs[2]["content"][0];
        assert_eq!(last["type"], "tool_result");
        assert_eq!(last["cache_control"]["type"], "ephemeral");
    }
}
