//! One model call in neocode's terms: the system prompt, the conversation as the window
//! built it (every call paired with its result, images read from the assets) and the tool
//! definitions. Each provider encodes it in its own wire format; nothing here knows one.

use serde_json::Value;

use crate::session::{ReasoningReplay, ToolCall};

/// What a tool result says for a call that has none (the turn stopped before it finished).
pub const INTERRUPTED_RESULT: &str = "No result: the call was interrupted before it finished.";

/// One model call.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatRequest {
    /// The system prompt (base rules, project context, task state, plan progress); empty:
    /// none is sent.
    pub system: String,
    /// The conversation, oldest first.
    pub messages: Vec<ChatMessage>,
    /// The tools the model may call (built-ins first, then `skill` and MCP tools).
    pub tools: Vec<ToolDef>,
    /// A key stable across the requests of one session (its id), for a provider's prompt
    /// cache routing (`prompt_cache_key`); empty: none is sent.
    pub cache_key: String,
    /// A JSON Schema the final answer must be valid against (`run --output-schema`), sent as
    /// the API's structured-output option: Chat Completions' `response_format`, Responses'
    /// `text.format`, Messages' `output_config.format`. `None`: free text.
    pub output_schema: Option<serde_json::Value>,
    /// The model must call one of `tools` in this reply (`tool_choice: "required"`, Messages'
    /// `{"type": "any"}`); false: it may (`auto`).
    pub require_tool: bool,
}

impl ChatRequest {
    /// Reasoning parts carrying replay data that a request to `provider` / `model` leaves
    /// out, because they came from another provider or model family ([`replays_to`]).
    pub(crate) fn foreign_reasoning(&self, provider: &str, model: &str) -> usize {
        self.messages
            .iter()
            .filter_map(|m| match m {
                ChatMessage::Assistant { reasoning, .. } => Some(reasoning),
                _ => None,
            })
            .flatten()
            .filter(|r| r.replay.is_some() && !replays_to(r, provider, model))
            .count()
    }
}

/// Whether `r` may be sent back to `provider` / `model`: it carries replay data from the same
/// provider and the same model family ([`model_family`]). Signatures and encrypted reasoning
/// are only valid where they were made; sent elsewhere they break the call.
pub fn replays_to(r: &Reasoning, provider: &str, model: &str) -> bool {
    r.replay
        .as_ref()
        .is_some_and(|p| p.provider == provider && model_family(&p.model) == model_family(model))
}

/// A model name without its snapshot suffix: `claude-sonnet-4-5-20250929` and
/// `claude-sonnet-4-5` are one family, `gpt-5-2025-08-07` and `gpt-5` too, `-latest` as well.
pub fn model_family(model: &str) -> &str {
    let m = model.trim();
    if let Some(base) = m.strip_suffix("-latest") {
        return base;
    }
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    // `-YYYYMMDD`
    if let Some((base, tail)) = m.rsplit_once('-')
        && tail.len() == 8
        && digits(tail)
    {
        return base;
    }
    // `-YYYY-MM-DD`
    let parts: Vec<&str> = m.rsplitn(4, '-').collect();
    if parts.len() == 4
        && parts[0].len() == 2
        && parts[1].len() == 2
        && parts[2].len() == 4
        && parts[..3].iter().all(|p| digits(p))
    {
        return parts[3];
    }
    m
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatMessage {
    /// A system message inside the conversation (a plan step's context, the draft
    /// instructions), where it was stored.
    System(String),
    /// What the user sent: text and images in their order.
    User(Vec<UserPart>),
    /// A reply of the model.
    Assistant {
        /// The text parts joined by blank lines (may be empty).
        text: String,
        /// The reasoning the reply carried, in order (stored as the model summarised it).
        reasoning: Vec<Reasoning>,
        /// The calls it asked for; each has a [`ChatMessage::ToolResult`] before the next
        /// message that is not one.
        tool_calls: Vec<ToolCall>,
    },
    /// The answer to one call.
    ToolResult {
        /// The [`ToolCall::id`] answered.
        call_id: String,
        /// What the tool returned (or [`INTERRUPTED_RESULT`]).
        text: String,
        /// The tool failed, or never finished.
        is_error: bool,
    },
}

impl ChatMessage {
    /// A user message of one text part.
    pub fn user_text(text: impl Into<String>) -> ChatMessage {
        ChatMessage::User(vec![UserPart::Text(text.into())])
    }
}

/// A part of a user message.
#[derive(Debug, Clone, PartialEq)]
pub enum UserPart {
    /// Text.
    Text(String),
    /// An image, its bytes as stored (not encoded).
    Image {
        /// MIME type, e.g. `image/png`.
        mime: String,
        bytes: Vec<u8>,
    },
    /// An image the session names whose asset could not be read; sent as
    /// [`UserPart::unavailable_text`] so the model knows one was there.
    Unavailable {
        asset_id: String,
        /// Why it could not be read, in words.
        reason: String,
    },
}

impl UserPart {
    /// The text an [`UserPart::Unavailable`] image is sent as.
    pub(crate) fn unavailable_text(asset_id: &str, reason: &str) -> String {
        format!("[image {asset_id} unavailable: {reason}]")
    }

    /// An image's bytes in standard base64.
    pub(crate) fn base64(bytes: &[u8]) -> String {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// An image inlined as a `data:` URL.
    pub(crate) fn data_url(mime: &str, bytes: &[u8]) -> String {
        format!("data:{mime};base64,{}", UserPart::base64(bytes))
    }
}

/// Reasoning stored with a reply: its text, and what the provider that made it needs to have
/// it back (signature, encrypted content) with its provenance. A provider replays only parts
/// that [`replays_to`] it. Chat Completions keeps the `reasoning_content` of a tool turn (replay
/// data of no fields) and a call's thought signature (`id`: the call, `signature`; no text).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reasoning {
    pub text: String,
    pub replay: Option<Box<ReasoningReplay>>,
}

impl Reasoning {
    /// Reasoning of text only.
    pub(crate) fn text(text: impl Into<String>) -> Reasoning {
        Reasoning {
            text: text.into(),
            replay: None,
        }
    }
}

/// Why a reply stopped short of a normal end, for the user and the stored message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopNote {
    /// The output limit or another server limit cut the reply (`max_tokens`,
    /// `response.incomplete`); the reason as the server named it. The reply is kept, marked
    /// incomplete, and not asked for again.
    Truncated(String),
    /// The model declined to answer (`refusal`).
    Refused,
}

impl StopNote {
    /// The note in words.
    pub(crate) fn message(&self) -> String {
        match self {
            StopNote::Truncated(why) => format!(
                "the reply is incomplete: the server stopped it ({why}); ask to continue, or raise the output limit"
            ),
            StopNote::Refused => "the model refused to answer this request".to_string(),
        }
    }

    /// The stored stop reason: `max_tokens`, the incomplete reason, or `refusal`.
    pub(crate) fn code(&self) -> &str {
        match self {
            StopNote::Truncated(why) => why,
            StopNote::Refused => "refusal",
        }
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDef {
    /// The name the model calls it by.
    pub name: String,
    /// What the model reads to decide when to use it.
    pub description: String,
    /// JSON schema of the arguments.
    pub parameters: Value,
}

impl ToolDef {
    /// A definition from its three parts.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        ToolDef {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_families_drop_snapshot_suffixes_only() {
        assert_eq!(
            model_family("claude-sonnet-4-5-20250929"),
            "claude-sonnet-4-5"
        );
        assert_eq!(model_family("gpt-5-2025-08-07"), "gpt-5");
        assert_eq!(
            model_family("claude-3-7-sonnet-latest"),
            "claude-3-7-sonnet"
        );
        assert_eq!(model_family("gpt-5-mini"), "gpt-5-mini");
        assert_eq!(model_family("o4-mini"), "o4-mini");
        assert_ne!(
            model_family("claude-opus-4-1"),
            model_family("claude-sonnet-4-5")
        );
    }
}
