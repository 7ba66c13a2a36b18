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

mod stream;

use serde_json::{Value, json};

use super::contract::Provider;
use super::error::ProviderError;
use super::http::{ApiSettings, Call, Wire};
use super::request::{ChatMessage, ChatRequest};
use super::request::{Reasoning, ToolDef, UserPart, replays_to};
use super::sse::{Completion, StreamEvent};
use crate::runtime::cancel::CancelFlag;
use crate::session::ToolCall;

pub use stream::{Fold, NAME};

/// The API version sent in `anthropic-version`.
pub(crate) const VERSION: &str = "2023-06-01";
/// How often a `pause_turn` is continued before the reply is taken as it is.
const MAX_PAUSES: usize = 4;

/// The Anthropic Messages provider.
pub(crate) struct Anthropic {
    wire: Wire,
}

impl Anthropic {
    /// Builds the client.
    pub(crate) fn new(settings: ApiSettings) -> Result<Anthropic, ProviderError> {
        Ok(Anthropic {
            wire: Wire::new(settings)?,
        })
    }

    /// The request body of `req`.
    pub(crate) fn body(&self, req: &ChatRequest) -> Value {
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
            body["system"] = if st.system_as_text {
                // Some gateways pass blocks on as content lists a local server refuses.
                let texts: Vec<&str> = system.iter().filter_map(|b| b["text"].as_str()).collect();
                Value::String(texts.join("\n\n"))
            } else {
                Value::Array(system)
            };
        }
        if !req.tools.is_empty() {
            body["tools"] = Value::Array(tool_definitions(&req.tools));
            // Extended thinking allows only `auto`.
            if req.require_tool && st.thinking_budget == 0 {
                body["tool_choice"] = json!({"type": "any"});
            }
        }
        if st.thinking_budget > 0 {
            // The budget must be at least 1024 and below max_tokens.
            let budget = st.thinking_budget.max(1024);
            max_tokens = max_tokens.max(budget + 1024);
            body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
        }
        body["max_tokens"] = json!(max_tokens);
        if let Some(schema) = &req.output_schema {
            body["output_config"] = json!({"format": {"type": "json_schema", "schema": schema}});
        }
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
pub(crate) fn tool_definitions(tools: &[ToolDef]) -> Vec<Value> {
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
pub(crate) fn messages(req: &ChatRequest, model: &str) -> Vec<Value> {
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
                "data": UserPart::base64(bytes),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::ReasoningReplay;

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
    fn an_output_schema_is_the_output_config_format() {
        let st = ApiSettings::for_test("http://127.0.0.1:9/v1", "claude-sonnet-4-5");
        let p = Anthropic::new(st).unwrap();
        let mut req = ChatRequest {
            messages: vec![ChatMessage::user_text("list")],
            ..ChatRequest::default()
        };
        assert!(p.body(&req).get("output_config").is_none());
        req.output_schema = Some(serde_json::json!({"type": "object"}));
        assert_eq!(
            p.body(&req)["output_config"],
            serde_json::json!({"format": {"type": "json_schema", "schema": {"type": "object"}}})
        );
    }

    #[test]
    fn the_body_has_breakpoints_system_thinking_and_replays_only_own_reasoning() {
        let mut st = ApiSettings::for_test("http://127.0.0.1:9/v1", "claude-sonnet-4-5");
        st.thinking_budget = 2000;
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
            output_schema: None,
            require_tool: false,
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

    /// llama.cpp's `llama-server` refuses an overflowing prompt on `/v1/messages` and
    /// `/v1/responses` with its Chat Completions body (HTTP 400 `exceed_context_size_error`):
    /// both APIs tell it as a context overflow with the numbers, not as a bad request.
    #[test]
    fn an_overflow_refused_as_llama_server_does_is_a_context_overflow() {
        use crate::runtime::provider::error::ErrorKind;
        use crate::runtime::provider::responses::Responses;
        use std::io::{BufRead, BufReader, Read, Write};
        let body = r#"{"error":{"code":400,"message":"request (3185 tokens) exceeds the available context size (2048 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":3185,"n_ctx":2048}}"#;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let mut paths = Vec::new();
            for _ in 0..2 {
                let (c, _) = listener.accept().unwrap();
                let mut r = BufReader::new(c);
                let mut line = String::new();
                r.read_line(&mut line).unwrap();
                paths.push(line.split(' ').nth(1).unwrap_or("").to_string());
                let mut len = 0;
                loop {
                    let mut h = String::new();
                    r.read_line(&mut h).unwrap();
                    if h.trim().is_empty() {
                        break;
                    }
                    if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap();
                    }
                }
                let mut sent = vec![0u8; len];
                r.read_exact(&mut sent).unwrap();
                let reply = format!(
                    "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                r.get_mut().write_all(reply.as_bytes()).unwrap();
            }
            paths
        });
        let settings = || {
            let mut st = ApiSettings::for_test(&format!("http://{addr}/v1"), "smollm2");
            st.http.max_retries = 0;
            st
        };
        let req = ChatRequest {
            system: "rules".into(),
            messages: vec![ChatMessage::user_text("word ".repeat(3000))],
            tools: vec![],
            cache_key: String::new(),
            output_schema: None,
            require_tool: false,
        };
        let mut providers: Vec<Box<dyn Provider>> = vec![
            Box::new(Anthropic::new(settings()).unwrap()),
            Box::new(Responses::new(settings()).unwrap()),
        ];
        for p in &mut providers {
            let e = p
                .stream(&req, &CancelFlag::default(), &mut |_| {})
                .unwrap_err();
            assert_eq!(
                e.kind,
                ErrorKind::ContextOverflow,
                "{}: {}",
                p.name(),
                e.message
            );
            assert!(
                e.message.contains("needs 3185 tokens") && e.message.contains("is 2048 tokens"),
                "{}",
                e.message
            );
        }
        assert_eq!(server.join().unwrap(), ["/v1/messages", "/v1/responses"]);
    }
}
