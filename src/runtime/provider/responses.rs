//! OpenAI Responses (`POST <base_url>/responses`), streamed and stateless.
//!
//! The request: `instructions` (the system prompt), `input` items (messages, `function_call`
//! and `function_call_output` pairs, and the reasoning items this model family made, by their
//! encrypted content), `store: false` with `include: ["reasoning.encrypted_content"]` so
//! reasoning survives a resume in another process, `reasoning: {effort, summary}` and
//! `prompt_cache_key` = the session id.
//!
//! The stream: `response.created`, `response.output_item.added` / `.done`,
//! `response.output_text.delta`, `response.function_call_arguments.delta` / `.done`,
//! `response.reasoning_summary_text.delta`, and the end: `response.completed`,
//! `response.incomplete` (the reply is kept, marked with its reason), `response.failed` or
//! `error`.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::contract::Provider;
use super::error::ProviderError;
use super::http::{ApiSettings, Call, Wire, WireError, WireFold, json as parse, n, s};
use super::request::{ChatMessage, ChatRequest};
use super::request::{Reasoning, StopNote, ToolDef, UserPart, replays_to};
use super::sse::{Completion, StreamEvent};
use crate::runtime::cancel::CancelFlag;
use crate::session::TokenDetail;
use crate::session::{ReasoningReplay, ToolCall, Usage};

/// The name sessions store for this provider (and reasoning provenance).
pub(crate) const NAME: &str = "openai-responses";

/// The OpenAI Responses provider.
pub(crate) struct Responses {
    wire: Wire,
}

impl Responses {
    /// Builds the client.
    pub(crate) fn new(settings: ApiSettings) -> Result<Responses, ProviderError> {
        Ok(Responses {
            wire: Wire::new(settings)?,
        })
    }

    /// The request body of `req`.
    pub(crate) fn body(&self, req: &ChatRequest) -> Value {
        let st = &self.wire.settings;
        let model = &st.http.model;
        let mut body = json!({
            "model": model,
            "input": input(req, model),
            "stream": true,
            "store": false,
        });
        if !req.system.is_empty() {
            body["instructions"] = json!(req.system);
        }
        if !req.tools.is_empty() {
            body["tools"] = Value::Array(tool_definitions(&req.tools));
            if req.require_tool {
                body["tool_choice"] = json!("required");
            }
        }
        if !req.cache_key.is_empty() {
            body["prompt_cache_key"] = json!(req.cache_key);
        }
        if let Some(schema) = &req.output_schema {
            body["text"] = json!({"format": {
                "type": "json_schema", "name": "output", "schema": schema, "strict": false,
            }});
        }
        if let Some(max) = st.http.max_tokens {
            body["max_output_tokens"] = json!(max);
        }
        if st.reasoning_effort.is_some() || reasoning_model(model) {
            let mut r = json!({"summary": "auto"});
            if let Some(e) = &st.reasoning_effort {
                r["effort"] = json!(e);
            }
            body["reasoning"] = r;
            body["include"] = json!(["reasoning.encrypted_content"]);
        }
        body
    }
}

/// Models that reason (and take `reasoning` and encrypted reasoning): the o-series, GPT-5
/// and Codex models. Others get neither unless `reasoning_effort` is set.
fn reasoning_model(model: &str) -> bool {
    let m = model.trim().to_ascii_lowercase();
    let o_series = m.starts_with('o') && m[1..].starts_with(|c: char| c.is_ascii_digit());
    o_series || m.starts_with("gpt-5") || m.contains("codex")
}

/// The Responses `tools`: one `function` per definition.
pub(crate) fn tool_definitions(tools: &[ToolDef]) -> Vec<Value> {
    tools
        .iter()
        .map(|t| {
            json!({"type": "function", "name": t.name, "description": t.description,
                "parameters": t.parameters})
        })
        .collect()
}

/// The `input` items of `req`.
pub(crate) fn input(req: &ChatRequest, model: &str) -> Vec<Value> {
    let mut out = Vec::with_capacity(req.messages.len());
    for m in &req.messages {
        match m {
            ChatMessage::System(t) => out.push(json!({"role": "system", "content": t})),
            ChatMessage::User(parts) => {
                out.push(json!({"role": "user", "content": user_content(parts)}));
            }
            ChatMessage::Assistant {
                text,
                reasoning,
                tool_calls,
            } => {
                // Only items with their encrypted content, and without their id: with
                // `store: false` an id points at nothing the server kept.
                for r in reasoning.iter().filter(|r| replays_to(r, NAME, model)) {
                    let Some(enc) = r.replay.as_ref().and_then(|p| p.encrypted.as_ref()) else {
                        continue;
                    };
                    let summary: Vec<Value> = if r.text.is_empty() {
                        Vec::new()
                    } else {
                        vec![json!({"type": "summary_text", "text": r.text})]
                    };
                    out.push(json!({"type": "reasoning", "summary": summary,
                        "encrypted_content": enc}));
                }
                if !text.is_empty() {
                    out.push(json!({"type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": text}]}));
                }
                for c in tool_calls {
                    out.push(json!({"type": "function_call", "call_id": c.id,
                        "name": c.name, "arguments": c.arguments}));
                }
            }
            ChatMessage::ToolResult { call_id, text, .. } => out
                .push(json!({"type": "function_call_output", "call_id": call_id, "output": text})),
        }
    }
    out
}

fn user_content(parts: &[UserPart]) -> Vec<Value> {
    parts
        .iter()
        .map(|p| match p {
            UserPart::Text(t) => json!({"type": "input_text", "text": t}),
            UserPart::Image { mime, bytes } => {
                json!({"type": "input_image", "image_url": UserPart::data_url(mime, bytes)})
            }
            UserPart::Unavailable { asset_id, reason } => {
                json!({"type": "input_text", "text": UserPart::unavailable_text(asset_id, reason)})
            }
        })
        .collect()
}

impl Provider for Responses {
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
        let body = self.body(req);
        let mut headers = Vec::new();
        if let Some(k) = &http.api_key {
            headers.push(("authorization", format!("Bearer {k}")));
        }
        let call = Call {
            url: format!("{}/responses", http.base_url),
            headers,
            body: &body,
            key_hint: "NEOCODE_API_KEY or OPENAI_API_KEY",
        };
        let model = http.model.clone();
        let limit = http.max_tokens;
        self.wire.stream(&call, cancel, on_event, &mut || {
            Fold::new(&model).with_limit(limit)
        })
    }
}

#[derive(Debug, Default)]
struct Item {
    kind: String,
    id: String,
    call_id: String,
    name: String,
    /// Output text, reasoning summary text, or call arguments.
    text: String,
    encrypted: Option<String>,
    done: bool,
}

/// Folds one Responses stream.
#[derive(Debug)]
pub struct Fold {
    model: String,
    items: BTreeMap<u64, Item>,
    usage: Usage,
    detail: TokenDetail,
    stop: Option<StopNote>,
    status: Option<String>,
    done: bool,
    output: bool,
    /// The `max_output_tokens` sent, if any.
    limit: Option<u64>,
}

impl Fold {
    /// A fresh fold; `model` is recorded as the reasoning items' provenance.
    pub fn new(model: &str) -> Fold {
        Fold {
            model: model.to_string(),
            items: BTreeMap::new(),
            usage: Usage::default(),
            detail: TokenDetail::default(),
            stop: None,
            status: None,
            done: false,
            output: false,
            limit: None,
        }
    }

    /// The fold of a request sent with `max_output_tokens` = `limit`: a reply that used all of
    /// it is cut even when the server calls it `completed` (llama.cpp's `llama-server` never
    /// sends `response.incomplete`).
    pub fn with_limit(mut self, limit: Option<u64>) -> Fold {
        self.limit = limit;
        self
    }

    fn item(&mut self, v: &Value) -> &mut Item {
        self.items.entry(n(v, "output_index")).or_default()
    }

    /// `output_item.added` / `.done`: the item's fields; `done` takes the final text.
    fn take_item(&mut self, v: &Value, done: bool) -> Vec<StreamEvent> {
        let it = &v["item"];
        let entry = self.item(v);
        entry.kind = s(it, "type").to_string();
        for (field, key) in [
            (&mut entry.id, "id"),
            (&mut entry.call_id, "call_id"),
            (&mut entry.name, "name"),
        ] {
            if !s(it, key).is_empty() {
                *field = s(it, key).to_string();
            }
        }
        if let Some(e) = it.get("encrypted_content").and_then(Value::as_str) {
            entry.encrypted = Some(e.to_string());
        }
        let mut out = Vec::new();
        if done {
            entry.done = true;
            let full = match entry.kind.as_str() {
                "function_call" => s(it, "arguments").to_string(),
                "message" => join_texts(&it["content"], "text"),
                "reasoning" => join_texts(&it["summary"], "text"),
                _ => String::new(),
            };
            // A server that sent no deltas sends it whole here.
            if entry.text.is_empty() && !full.is_empty() {
                entry.text = full.clone();
                match entry.kind.as_str() {
                    "message" => out.push(StreamEvent::Text(full)),
                    "reasoning" => out.push(StreamEvent::Reasoning(full)),
                    _ => {}
                }
            } else if entry.kind == "function_call" && !full.is_empty() {
                entry.text = full;
            }
        }
        if entry.kind == "function_call" {
            self.output = true;
        }
        if !out.is_empty() {
            self.output = true;
        }
        out
    }

    /// The end of the response: usage, and why it stopped short if it did.
    fn end(&mut self, r: &Value) {
        self.done = true;
        self.status = Some(s(r, "status").to_string());
        let u = &r["usage"];
        let cached = n(&u["input_tokens_details"], "cached_tokens");
        self.usage.input_tokens = n(u, "input_tokens").saturating_sub(cached);
        self.usage.output_tokens = n(u, "output_tokens");
        self.detail.cached_input_tokens = cached;
        self.detail.reasoning_tokens = n(&u["output_tokens_details"], "reasoning_tokens");
        let calls = self.items.values().any(|i| i.kind == "function_call");
        if self.stop.is_none()
            && !calls
            && self
                .limit
                .is_some_and(|l| l > 0 && self.usage.output_tokens >= l)
        {
            self.stop = Some(StopNote::Truncated("max_output_tokens".into()));
            self.status = Some("incomplete".to_string());
        }
    }
}

/// A `*.delta` event read straight into fields, without building a JSON tree: the event that
/// comes once per token, so the hot path.
#[derive(serde::Deserialize)]
struct Delta<'a> {
    #[serde(rename = "type", borrow)]
    ty: Cow<'a, str>,
    #[serde(default)]
    output_index: u64,
    #[serde(borrow, default)]
    delta: Cow<'a, str>,
}

fn is_delta(ty: &str) -> bool {
    matches!(
        ty,
        "response.output_text.delta"
            | "response.reasoning_summary_text.delta"
            | "response.function_call_arguments.delta"
    )
}

impl Fold {
    /// Text, reasoning summary or call arguments arriving for the item at `index`.
    fn delta(&mut self, ty: &str, index: u64, d: &str) -> Vec<StreamEvent> {
        if d.is_empty() {
            return Vec::new();
        }
        let kind = match ty {
            "response.output_text.delta" => "message",
            "response.reasoning_summary_text.delta" => "reasoning",
            _ => {
                self.items.entry(index).or_default().text.push_str(d);
                return Vec::new();
            }
        };
        self.output = true;
        let it = self.items.entry(index).or_default();
        if it.kind.is_empty() {
            it.kind = kind.to_string();
        }
        it.text.push_str(d);
        vec![if kind == "reasoning" {
            StreamEvent::Reasoning(d.to_string())
        } else {
            StreamEvent::Text(d.to_string())
        }]
    }
}

fn join_texts(parts: &Value, key: &str) -> String {
    parts
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| s(p, key))
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

impl WireFold for Fold {
    fn feed(&mut self, event: &str, data: &str) -> Result<Vec<StreamEvent>, WireError> {
        if is_delta(event)
            && let Ok(d) = serde_json::from_str::<Delta<'_>>(data)
            && d.ty == event
        {
            return Ok(self.delta(event, d.output_index, &d.delta));
        }
        let Some(v) = parse(data) else {
            return Ok(Vec::new());
        };
        let ty = match s(&v, "type") {
            "" => event.to_string(),
            t => t.to_string(),
        };
        match ty.as_str() {
            "response.output_item.added" => return Ok(self.take_item(&v, false)),
            "response.output_item.done" => return Ok(self.take_item(&v, true)),
            "response.output_text.delta"
            | "response.reasoning_summary_text.delta"
            | "response.function_call_arguments.delta" => {
                return Ok(self.delta(&ty, n(&v, "output_index"), s(&v, "delta")));
            }
            "response.reasoning_summary_part.added" => {
                let it = self.item(&v);
                if !it.text.is_empty() {
                    it.text.push_str("\n\n");
                }
            }
            "response.function_call_arguments.done" => {
                let a = s(&v, "arguments").to_string();
                if !a.is_empty() {
                    self.item(&v).text = a;
                }
            }
            "response.completed" => self.end(&v["response"]),
            "response.incomplete" => {
                let r = &v["response"];
                let why = match s(&r["incomplete_details"], "reason") {
                    "" => "incomplete".to_string(),
                    w => w.to_string(),
                };
                self.stop = Some(StopNote::Truncated(why));
                self.end(r);
            }
            "response.failed" | "error" => {
                let e = if ty == "error" {
                    &v
                } else {
                    &v["response"]["error"]
                };
                let code = s(e, "code");
                let msg = match (s(e, "message"), code) {
                    ("", "") => "the response failed".to_string(),
                    ("", c) => c.to_string(),
                    (m, "") => m.to_string(),
                    (m, c) => format!("{m} ({c})"),
                };
                return Err(WireError {
                    message: msg,
                    retryable: matches!(
                        code,
                        "server_error" | "overloaded" | "server_is_overloaded"
                    ),
                });
            }
            // `response.created`, `.in_progress`, content part events, and new ones.
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
        self.items
            .values()
            .filter(|i| i.kind == "message")
            .map(|i| i.text.chars().count())
            .sum()
    }

    fn finish(self, incomplete: bool) -> Completion {
        let mut c = Completion {
            usage: self.usage,
            detail: self.detail,
            incomplete,
            stop: self.stop,
            ..Completion::default()
        };
        let mut calls = false;
        for (_, it) in self.items {
            match it.kind.as_str() {
                "message" => {
                    if !c.text.is_empty() && !it.text.is_empty() {
                        c.text.push_str("\n\n");
                    }
                    c.text.push_str(&it.text);
                }
                "reasoning" => {
                    c.reasoning.push_str(&it.text);
                    c.reasoning_items.push(Reasoning {
                        text: it.text,
                        replay: Some(Box::new(ReasoningReplay {
                            provider: NAME.to_string(),
                            model: self.model.clone(),
                            id: (!it.id.is_empty()).then_some(it.id),
                            signature: None,
                            encrypted: it.encrypted,
                            redacted: false,
                        })),
                    });
                }
                // A call whose item did not finish may have cut arguments: left out.
                "function_call" if it.done || (!incomplete && self.done) => {
                    calls = true;
                    c.tool_calls.push(ToolCall {
                        id: if it.call_id.is_empty() {
                            it.id
                        } else {
                            it.call_id
                        },
                        name: it.name,
                        arguments: if it.text.trim().is_empty() {
                            "{}".to_string()
                        } else {
                            it.text
                        },
                    });
                }
                _ => {}
            }
        }
        c.finish_reason = match self.status.as_deref() {
            Some("incomplete") => Some("length".to_string()),
            Some(_) if calls => Some("tool_calls".to_string()),
            Some(_) => Some("stop".to_string()),
            None => None,
        };
        c
    }
}

#[cfg(test)]
mod tests;
