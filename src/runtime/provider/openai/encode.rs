//! The Chat Completions request body: messages, user content with inlined images, tools,
//! and what servers need back on a tool turn (`reasoning_content`, thought signatures).

use super::client::{NAME, OpenAi};
use crate::runtime::provider::request::{
    ChatMessage, ChatRequest, Reasoning, ToolDef, UserPart, replays_to,
};
use crate::session::ToolCall;
use serde_json::{Value, json};

impl OpenAi {
    /// The request body; `stream: false` for a server that cannot stream this request.
    /// Tools go with `tool_choice: "auto"` (llama-cpp-python ignores tools without it).
    pub(super) fn body(&self, req: &ChatRequest, stream: bool) -> Value {
        let mut body = json!({
            "model": self.settings.model,
            "messages": chat_messages(req, &self.settings.model),
            "stream": stream,
        });
        if stream {
            body["stream_options"] = json!({"include_usage": true});
        }
        if let Some(n) = self.settings.max_tokens {
            body["max_tokens"] = n.into();
        }
        if let Some(e) = &self.settings.reasoning_effort {
            body["reasoning_effort"] = e.as_str().into();
        }
        if !req.tools.is_empty() {
            body["tools"] = Value::Array(tool_definitions(&req.tools));
            body["tool_choice"] = if req.require_tool { "required" } else { "auto" }.into();
        }
        if let Some(schema) = &req.output_schema {
            body["response_format"] = json!({
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": schema, "strict": false},
            });
        }
        body
    }
}

/// The Chat Completions `messages` of `req` for `model`: the system prompt first, then one
/// object per message. An assistant message with tool calls carries back what this provider
/// and model family kept of it ([`replays_to`]): its reasoning as `reasoning_content` (DeepSeek
/// answers 400 without it) and each call's Gemini thought signature as
/// `extra_content.google.thought_signature`. Other reasoning is not sent, nor a result's
/// `is_error` (its text says so).
pub(crate) fn chat_messages(req: &ChatRequest, model: &str) -> Vec<Value> {
    let mut out = Vec::with_capacity(req.messages.len() + 1);
    if !req.system.is_empty() {
        out.push(json!({"role": "system", "content": req.system}));
    }
    out.extend(req.messages.iter().map(|m| chat_message(m, model)));
    out
}

fn chat_message(m: &ChatMessage, model: &str) -> Value {
    match m {
        ChatMessage::System(text) => json!({"role": "system", "content": text}),
        ChatMessage::User(parts) => json!({"role": "user", "content": user_content(parts)}),
        ChatMessage::Assistant {
            text,
            reasoning,
            tool_calls,
        } => {
            // Always a string, "" for a reply made of calls alone: llama-cpp-python answers
            // `content: null` (and a missing content) with a 500 on every later request.
            let mut v = json!({"role": "assistant", "content": text});
            if !tool_calls.is_empty() {
                let own: Vec<&Reasoning> = reasoning
                    .iter()
                    .filter(|r| replays_to(r, NAME, model))
                    .collect();
                let thought: Vec<&str> = own
                    .iter()
                    .filter(|r| !r.text.is_empty() && signature_of(r).is_none())
                    .map(|r| r.text.as_str())
                    .collect();
                if !thought.is_empty() {
                    v["reasoning_content"] = thought.join("\n\n").into();
                }
                v["tool_calls"] = tool_calls.iter().map(|c| tool_call(c, &own)).collect();
            }
            v
        }
        ChatMessage::ToolResult { call_id, text, .. } => {
            json!({"role": "tool", "tool_call_id": call_id, "content": text})
        }
    }
}

/// The call id and thought signature a reasoning part keeps, if it is one.
fn signature_of(r: &Reasoning) -> Option<(&str, &str)> {
    let p = r.replay.as_ref()?;
    Some((p.id.as_deref()?, p.signature.as_deref()?))
}

/// One `tool_calls` entry, with its thought signature when `own` holds one for it.
fn tool_call(c: &ToolCall, own: &[&Reasoning]) -> Value {
    let mut v = json!({"id": c.id, "type": "function",
        "function": {"name": c.name, "arguments": c.arguments}});
    if let Some((_, sig)) = own
        .iter()
        .filter_map(|r| signature_of(r))
        .find(|(id, _)| *id == c.id)
    {
        v["extra_content"] = json!({"google": {"thought_signature": sig}});
    }
    v
}

/// A user message's `content`: a string when it is text only (the parts joined by blank
/// lines), else an array of text and `image_url` parts with the image inlined as a data URL.
fn user_content(parts: &[UserPart]) -> Value {
    if parts.iter().all(|p| matches!(p, UserPart::Text(_))) {
        let texts: Vec<&str> = parts
            .iter()
            .filter_map(|p| match p {
                UserPart::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        return Value::String(texts.join("\n\n"));
    }
    parts
        .iter()
        .map(|p| match p {
            UserPart::Text(text) => json!({"type": "text", "text": text}),
            UserPart::Image { mime, bytes } => {
                json!({"type": "image_url", "image_url": {"url": UserPart::data_url(mime, bytes)}})
            }
            UserPart::Unavailable { asset_id, reason } => {
                json!({"type": "text", "text": UserPart::unavailable_text(asset_id, reason)})
            }
        })
        .collect()
}

/// The Chat Completions `tools`: one `function` object per definition.
pub(crate) fn tool_definitions(tools: &[ToolDef]) -> Vec<Value> {
    tools
        .iter()
        .map(|t| {
            json!({
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                }
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::provider::request::INTERRUPTED_RESULT;
    use crate::runtime::provider::settings::OpenAiSettings;
    use crate::session::ToolCall;

    #[test]
    fn the_request_encodes_as_chat_completions_messages() {
        let req = ChatRequest {
            system: "be brief".into(),
            messages: vec![
                ChatMessage::System("step context".into()),
                ChatMessage::User(vec![
                    UserPart::Text("one".into()),
                    UserPart::Text("two".into()),
                ]),
                ChatMessage::User(vec![
                    UserPart::Text("look".into()),
                    UserPart::Image {
                        mime: "image/png".into(),
                        bytes: b"png".to_vec(),
                    },
                    UserPart::Unavailable {
                        asset_id: "a1".into(),
                        reason: "gone".into(),
                    },
                ]),
                ChatMessage::Assistant {
                    text: String::new(),
                    reasoning: vec![crate::runtime::provider::request::Reasoning::text(
                        "not sent",
                    )],
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: "read_file".into(),
                        arguments: r#"{"path":"a"}"#.into(),
                    }],
                },
                ChatMessage::ToolResult {
                    call_id: "c1".into(),
                    text: INTERRUPTED_RESULT.into(),
                    is_error: true,
                },
                ChatMessage::Assistant {
                    text: String::new(),
                    reasoning: vec![],
                    tool_calls: vec![],
                },
                ChatMessage::Assistant {
                    text: "done".into(),
                    reasoning: vec![],
                    tool_calls: vec![],
                },
            ],
            ..ChatRequest::default()
        };
        let expected = json!([
            {"role": "system", "content": "be brief"},
            {"role": "system", "content": "step context"},
            {"role": "user", "content": "one\n\ntwo"},
            {"role": "user", "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,cG5n"}},
                {"type": "text", "text": "[image a1 unavailable: gone]"},
            ]},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}},
            ]},
            {"role": "tool", "tool_call_id": "c1",
             "content": "No result: the call was interrupted before it finished."},
            {"role": "assistant", "content": ""},
            {"role": "assistant", "content": "done"},
        ]);
        assert_eq!(Value::Array(chat_messages(&req, "m")), expected);
    }

    #[test]
    fn a_tool_turn_sends_back_its_own_reasoning_and_signatures_only() {
        use crate::runtime::provider::request::Reasoning;
        use crate::session::ReasoningReplay;
        let kept = |text: &str, provider: &str, model: &str, call: Option<&str>| Reasoning {
            text: text.into(),
            replay: Some(Box::new(ReasoningReplay {
                provider: provider.into(),
                model: model.into(),
                id: call.map(str::to_string),
                signature: call.map(|c| format!("sig-{c}")),
                encrypted: None,
                redacted: false,
            })),
        };
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "list_dir".into(),
            arguments: "{}".into(),
        };
        let req = ChatRequest {
            messages: vec![
                ChatMessage::Assistant {
                    text: String::new(),
                    reasoning: vec![
                        kept("mine", NAME, "deepseek-chat", None),
                        kept("theirs", "anthropic", "deepseek-chat", None),
                        kept("other model", NAME, "gemini-3-pro", None),
                        Reasoning::text("text only"),
                        kept("", NAME, "deepseek-chat", Some("c1")),
                        kept("", NAME, "gemini-3-pro", Some("c2")),
                    ],
                    tool_calls: vec![call("c1"), call("c2")],
                },
                ChatMessage::Assistant {
                    text: "done".into(),
                    reasoning: vec![kept("no calls", NAME, "deepseek-chat", None)],
                    tool_calls: vec![],
                },
            ],
            ..ChatRequest::default()
        };
        let m = chat_messages(&req, "deepseek-chat");
        assert_eq!(m[0]["reasoning_content"], "mine");
        assert_eq!(
            m[0]["tool_calls"][0]["extra_content"],
            json!({"google": {"thought_signature": "sig-c1"}})
        );
        assert!(
            m[0]["tool_calls"][1].get("extra_content").is_none(),
            "{}",
            m[0]
        );
        assert_eq!(m[1], json!({"role": "assistant", "content": "done"}));
        // Another model family gets none of it.
        let other = chat_messages(&req, "qwen3-coder");
        assert!(other[0].get("reasoning_content").is_none(), "{}", other[0]);
        assert!(other[0]["tool_calls"][0].get("extra_content").is_none());
    }

    #[test]
    fn the_body_carries_function_tools_with_tool_choice_auto_only_when_there_are_some() {
        let mut settings = OpenAiSettings::new("http://127.0.0.1:9/v1", "m", None);
        let p = OpenAi::new(settings.clone()).unwrap();
        let mut req = ChatRequest {
            messages: vec![ChatMessage::user_text("hi")],
            ..ChatRequest::default()
        };
        let body = p.body(&req, true);
        assert_eq!(body["messages"], json!([{"role": "user", "content": "hi"}]));
        assert!(body.get("tools").is_none(), "{body}");
        assert!(body.get("tool_choice").is_none(), "{body}");
        assert!(body.get("max_tokens").is_none(), "{body}");
        assert!(body.get("reasoning_effort").is_none(), "{body}");
        assert_eq!(body["stream_options"]["include_usage"], true);
        req.tools
            .push(ToolDef::new("grep", "search", json!({"type": "object"})));
        let body = p.body(&req, true);
        assert_eq!(
            body["tools"],
            json!([{"type": "function", "function":
                {"name": "grep", "description": "search", "parameters": {"type": "object"}}}])
        );
        assert_eq!(body["tool_choice"], "auto");
        // Unstreamed: no stream_options (a server that cannot stream may reject them).
        let plain = p.body(&req, false);
        assert_eq!(plain["stream"], false);
        assert!(plain.get("stream_options").is_none(), "{plain}");
        settings.max_tokens = Some(256);
        settings.reasoning_effort = Some("high".into());
        let p = OpenAi::new(settings).unwrap();
        assert_eq!(p.body(&req, true)["max_tokens"], 256);
        assert_eq!(p.body(&req, true)["reasoning_effort"], "high");
    }
}
