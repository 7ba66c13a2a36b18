//! One model call in neocode's terms: the system prompt, the conversation as the window
//! built it (every call paired with its result, images read from the assets) and the tool
//! definitions. Each provider encodes it in its own wire format; nothing here knows one.

use serde_json::Value;

use crate::session::ToolCall;

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
    pub fn unavailable_text(asset_id: &str, reason: &str) -> String {
        format!("[image {asset_id} unavailable: {reason}]")
    }
}

/// Reasoning stored with a reply. Sessions keep the summarised text only (no signature or
/// encrypted id), so a provider that needs one to send reasoning back leaves it out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reasoning {
    pub text: String,
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
