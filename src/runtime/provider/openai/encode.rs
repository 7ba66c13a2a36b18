//! The Chat Completions request body: messages, user content with inlined images, tools.

use base64::Engine;
use serde_json::{Value, json};

use super::super::{ChatMessage, ChatRequest, ToolDef, UserPart};
use super::OpenAi;

impl OpenAi {
    /// The request body; `stream: false` for a server that cannot stream this request.
    /// Tools go with `tool_choice: "auto"` (llama-cpp-python ignores tools without it).
    pub(super) fn body(&self, req: &ChatRequest, stream: bool) -> Value {
        let mut body = json!({
            "model": self.settings.model,
            "messages": chat_messages(req),
            "stream": stream,
        });
        if stream {
            body["stream_options"] = json!({"include_usage": true});
        }
        if let Some(n) = self.settings.max_tokens {
            body["max_tokens"] = n.into();
        }
        if !req.tools.is_empty() {
            body["tools"] = Value::Array(tool_definitions(&req.tools));
            body["tool_choice"] = "auto".into();
        }
        body
    }
}

/// The Chat Completions `messages` of `req`: the system prompt first, then one object per
/// message. Reasoning is not sent back (Chat Completions has no field for it) and a result's
/// `is_error` is not either (its text says so).
pub fn chat_messages(req: &ChatRequest) -> Vec<Value> {
    let mut out = Vec::with_capacity(req.messages.len() + 1);
    if !req.system.is_empty() {
        out.push(json!({"role": "system", "content": req.system}));
    }
    out.extend(req.messages.iter().map(chat_message));
    out
}

fn chat_message(m: &ChatMessage) -> Value {
    match m {
        ChatMessage::System(text) => json!({"role": "system", "content": text}),
        ChatMessage::User(parts) => json!({"role": "user", "content": user_content(parts)}),
        ChatMessage::Assistant {
            text, tool_calls, ..
        } => {
            // Always a string, "" for a reply made of calls alone: llama-cpp-python answers
            // `content: null` (and a missing content) with a 500 on every later request.
            let mut v = json!({"role": "assistant", "content": text});
            if !tool_calls.is_empty() {
                v["tool_calls"] = tool_calls
                    .iter()
                    .map(|c| {
                        json!({"id": c.id, "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments}})
                    })
                    .collect();
            }
            v
        }
        ChatMessage::ToolResult { call_id, text, .. } => {
            json!({"role": "tool", "tool_call_id": call_id, "content": text})
        }
    }
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
                let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
                json!({"type": "image_url",
                    "image_url": {"url": format!("data:{mime};base64,{b64}")}})
            }
            UserPart::Unavailable { asset_id, reason } => {
                json!({"type": "text", "text": UserPart::unavailable_text(asset_id, reason)})
            }
        })
        .collect()
}

/// The Chat Completions `tools`: one `function` object per definition.
pub fn tool_definitions(tools: &[ToolDef]) -> Vec<Value> {
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
    use crate::runtime::provider::{INTERRUPTED_RESULT, OpenAiSettings};
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
                    reasoning: vec![crate::runtime::provider::Reasoning::text("not sent")],
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
        assert_eq!(Value::Array(chat_messages(&req)), expected);
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
        let p = OpenAi::new(settings).unwrap();
        assert_eq!(p.body(&req, true)["max_tokens"], 256);
    }
}
