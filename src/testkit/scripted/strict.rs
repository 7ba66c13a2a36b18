//! What DeepSeek's thinking mode and Gemini 3 refuse on their Chat Completions endpoints, for a
//! server told to ([`super::ScriptedServer::require_reasoning_back`],
//! [`super::ScriptedServer::require_thought_signatures`]): a request whose history lacks what
//! they made is a 400 with their message, before the script is consulted.

use super::replies::Reply;
use super::request::RecordedRequest;

/// Which refusals a server makes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Strict {
    /// DeepSeek: an assistant message with `tool_calls` must carry its `reasoning_content`.
    pub(super) reasoning_back: bool,
    /// Gemini 3: the first call of an assistant message must carry its thought signature.
    pub(super) thought_signatures: bool,
}

/// The 400 the request gets, if it breaks a rule `strict` keeps.
pub(super) fn refusal(req: &RecordedRequest, strict: Strict) -> Option<Reply> {
    if strict == Strict::default() {
        return None;
    }
    let body = req.json();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    for (i, m) in messages.iter().enumerate() {
        let Some(calls) = m["tool_calls"].as_array().filter(|c| !c.is_empty()) else {
            continue;
        };
        if strict.reasoning_back && !m["reasoning_content"].is_string() {
            return Some(Reply::error(
                400,
                &format!(
                    "Missing `reasoning_content` field in the assistant message at message index {i}. For more information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls"
                ),
            ));
        }
        let signed = calls[0]["extra_content"]["google"]["thought_signature"].is_string();
        if strict.thought_signatures && !signed {
            let name = calls[0]["function"]["name"].as_str().unwrap_or_default();
            return Some(Reply::error(
                400,
                &format!(
                    "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:{name}` , position {i}."
                ),
            ));
        }
    }
    None
}
