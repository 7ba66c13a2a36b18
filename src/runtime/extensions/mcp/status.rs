//! What the model and the views see of the MCP servers: their tools, where each server
//! stands, what a call returned, and the status lines built from them.

use std::collections::HashMap;

use serde_json::Value;

use crate::runtime::tools::ToolKind;

/// A tool of an MCP server as the model sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// `mcp__<server>__<tool>` (characters other than letters, digits, `_`, `-` become `_`;
    /// cut with a hash suffix past 64 characters).
    pub name: String,
    /// The server's name.
    pub server: String,
    /// The tool's name on the server.
    pub tool: String,
    /// What the model reads.
    pub description: String,
    /// JSON schema of the arguments.
    pub parameters: Value,
    /// [`ToolKind::Read`] only when the server annotates `readOnlyHint: true`; anything else
    /// may change the world outside the workspace, so it asks like a command does.
    pub kind: ToolKind,
}

/// Where a server stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    /// Configured, not started yet (servers start when their tools are first wanted).
    NotStarted,
    /// `enabled = false`.
    Disabled,
    /// The config table is wrong; the reason.
    Invalid(String),
    /// Running, tools listed.
    Ready,
    /// Could not start (spawn error, no answer within the startup timeout, refused the
    /// handshake); the reason. Not retried automatically.
    Failed(String),
    /// Died after starting; the reason. Started again on its next use.
    Crashed(String),
}

impl ServerState {
    /// One word for tables.
    pub fn label(&self) -> &'static str {
        match self {
            ServerState::NotStarted => "not started",
            ServerState::Disabled => "disabled",
            ServerState::Invalid(_) => "invalid",
            ServerState::Ready => "ready",
            ServerState::Failed(_) => "failed",
            ServerState::Crashed(_) => "crashed",
        }
    }

    /// The reason, for the states that have one.
    pub fn reason(&self) -> Option<&str> {
        match self {
            ServerState::Invalid(r) | ServerState::Failed(r) | ServerState::Crashed(r) => Some(r),
            ServerState::NotStarted | ServerState::Disabled | ServerState::Ready => None,
        }
    }

    /// Whether the status line should show the server as broken.
    pub(crate) fn is_problem(&self) -> bool {
        matches!(
            self,
            ServerState::Invalid(_) | ServerState::Failed(_) | ServerState::Crashed(_)
        )
    }
}

/// A server's state and tools, as the views show them.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerStatus {
    /// The config table's name.
    pub name: String,
    /// The command line, or an HTTP server's URL (its query hidden), for people.
    pub command: String,
    /// `stdio` or `streamable HTTP`.
    pub transport: &'static str,
    /// Current state.
    pub state: ServerState,
    /// Tools offered (the last list known, also while crashed).
    pub tools: Vec<McpTool>,
    /// `name version` the server reported.
    pub server_info: Option<String>,
    /// Instructions the server sent with its handshake.
    pub instructions: Option<String>,
    /// Times it was started again after a crash.
    pub restarts: u32,
}

/// An image a tool returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpImage {
    /// e.g. `image/png`.
    pub mime_type: String,
    /// Decoded bytes.
    pub data: Vec<u8>,
}

/// What a call returned.
#[derive(Debug, Clone, PartialEq)]
pub struct McpOutput {
    /// Text for the model (images appear as a `[image: ...]` line).
    pub text: String,
    /// Images, to be stored as assets.
    pub images: Vec<McpImage>,
    /// The server said the call failed, or the call could not be made.
    pub is_error: bool,
    /// Server, tool, duration, for the views.
    pub metadata: Value,
}

impl McpOutput {
    pub(super) fn error(text: impl Into<String>, metadata: Value) -> McpOutput {
        McpOutput {
            text: text.into(),
            images: Vec::new(),
            is_error: true,
            metadata,
        }
    }
}

/// Names of servers whose state is a problem, with the reason (for the status line).
pub fn problems(statuses: &[ServerStatus]) -> Vec<(String, String)> {
    statuses
        .iter()
        .filter(|s| s.state.is_problem())
        .map(|s| {
            (
                s.name.clone(),
                s.state.reason().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// One line per server for the views: `name: state (n tools)` or `name: failed — reason`.
pub fn status_lines(statuses: &[ServerStatus]) -> Vec<String> {
    statuses
        .iter()
        .map(|s| match s.state.reason() {
            Some(r) => format!("{}: {} — {r}", s.name, s.state.label()),
            None if s.state == ServerState::Ready => {
                format!("{}: ready ({} tools)", s.name, s.tools.len())
            }
            None => format!("{}: {}", s.name, s.state.label()),
        })
        .collect()
}

/// A map from tool name to server, for callers that route calls.
pub fn by_name(tools: &[McpTool]) -> HashMap<&str, &McpTool> {
    tools.iter().map(|t| (t.name.as_str(), t)).collect()
}
