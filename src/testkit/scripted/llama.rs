//! The llama-cpp-python quirks a [`super::ScriptedServer::start_llama_like`] server adds on
//! its own before it answers from the script.

use serde_json::json;

use super::replies::{Piece, Reply, Stream, completion_json};
use super::request::RecordedRequest;

/// How a server like llama-cpp-python's (0.3, `--chat_format chatml-function-calling`)
/// treats a request before it answers from the script; see
/// [`ScriptedServer::start_llama_like`](super::ScriptedServer::start_llama_like).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LlamaLike {
    /// The context window in tokens (a prompt's tokens are counted as its body's bytes / 4).
    pub window: u64,
}

/// What a request whose answer a [`LlamaLike`] server decides itself gets.
pub(super) fn llama_like(req: &RecordedRequest, like: LlamaLike) -> Option<Reply> {
    let body = req.json();
    let streamed = body["stream"] == json!(true);
    let assistant_content_not_a_string = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|m| m["role"] == "assistant" && !m["content"].is_string());
    if assistant_content_not_a_string {
        return Some(Reply::error(
            500,
            "3 validation errors:\n  {'type': 'literal_error', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestSystemMessage', 'role'), 'msg': \"Input should be 'system'\", 'input': 'assistant'}\n  {'type': 'string_type', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestAssistantMessage', 'content'), 'msg': 'Input should be a valid string', 'input': None}\n  {'type': 'literal_error', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestToolMessage', 'role'), 'msg': \"Input should be 'tool'\", 'input': 'assistant'}",
        ));
    }
    let tokens = req.body.len() as u64 / 4;
    if tokens > like.window {
        // Streaming, the overflow is an empty 200; unstreamed, a 400 with the numbers.
        return Some(if streamed {
            Stream::new().no_done().reply()
        } else {
            Reply::error(
                400,
                &format!(
                    "This model's maximum context length is {} tokens. However, you requested {tokens} tokens ({tokens} in the messages, None in the completion). Please reduce the length of the messages or completion.",
                    like.window
                ),
            )
        });
    }
    if streamed && body["tool_choice"] == "auto" && body.get("tools").is_some() {
        // "Automatic streaming tool choice is not supported", after the 200 head.
        return Some(Stream::new().no_done().reply());
    }
    None
}

/// A scripted reply as `like` sends it: streamed without usage, or whole (as JSON with usage)
/// when the request did not ask for a stream.
pub(super) fn as_llama_sends(reply: Reply, streamed: bool) -> Reply {
    let Reply::Stream(s) = reply else {
        return reply;
    };
    if !streamed {
        return Reply::Json(completion_json(&s));
    }
    let pieces = s
        .pieces
        .iter()
        .filter(|p| !matches!(p, Piece::Data(v) if v.get("usage").is_some()))
        .cloned()
        .collect();
    Reply::Stream(Stream { pieces, ..s })
}
