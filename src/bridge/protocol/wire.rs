//! The request and event lines of the bridge protocol and what they carry.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::session::{RuntimeLimits, Step, Usage};

/// Version of the protocol this binary speaks. A request asking for a newer one is refused.
pub(crate) const PROTOCOL_VERSION: u32 = 1;

/// Name sent in `protocol_ack`, so a caller can tell it is talking to the right program.
pub(crate) const PROTOCOL_NAME: &str = "neocode-bridge";

/// One request line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Request {
    /// Run one turn.
    Chat(Box<ChatRequest>),
    /// Stop the running turn.
    Cancel(CancelRequest),
    /// Answer an `approval_request`.
    Approval(ApprovalAnswer),
    /// Queue a message for a session another process may be running.
    Queue(QueueRequest),
}

/// A `queue` request: `text` joins the queue of session `session_id`; the process running the
/// session sends it when its turn ends (with `steer`: at its turn's next tool boundary).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct QueueRequest {
    #[serde(default)]
    pub request_id: Option<String>,
    /// The session (a unique id prefix will do).
    pub session_id: String,
    /// The message.
    pub text: String,
    /// Steer the running turn instead of waiting for its end.
    #[serde(default)]
    pub steer: bool,
    /// The workspace directory (default: `--workdir` or the bridge's current directory).
    #[serde(default)]
    pub cwd: Option<String>,
}

/// A `cancel` request.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct CancelRequest {
    /// The chat to stop; any running one when absent.
    #[serde(default)]
    pub request_id: Option<String>,
}

/// A `chat` request: the caller's whole history (OpenAI shape) and what it knows about the
/// session.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub(crate) struct ChatRequest {
    /// Echoed on every event of this turn.
    #[serde(default)]
    pub request_id: Option<String>,
    /// Protocol version the caller speaks (default: this one).
    #[serde(default)]
    pub protocol_version: Option<u32>,
    /// The conversation so far, ending with the new user message.
    pub messages: Vec<ChatMessage>,
    /// The session the caller holds (from `session_init`), if any.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Start a new session whatever else the request says (`/new`).
    #[serde(default)]
    pub new_session: bool,
    /// Hex SHA-256 of the first user message's text; lets a caller that lost its id find
    /// the session again.
    #[serde(default)]
    pub conversation_key: Option<String>,
    /// The workspace directory (default: `--workdir` or the bridge's current directory).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Model override for this turn.
    #[serde(default)]
    pub model: Option<String>,
    /// Ledger limit overrides for this session.
    #[serde(default)]
    pub limits: Option<RuntimeLimits>,
}

/// One message in OpenAI chat shape.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, Serialize)]
pub(crate) struct ChatMessage {
    /// `system`, `developer`, `user`, `assistant` or `tool`.
    pub role: String,
    /// A string, an array of content parts, or null.
    #[serde(default)]
    pub content: Value,
    /// Calls an assistant message made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ChatToolCall>,
    /// The call a tool message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

/// An OpenAI tool call: `{"id", "type": "function", "function": {"name", "arguments"}}`.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, Serialize)]
pub(crate) struct ChatToolCall {
    /// Call id.
    pub id: String,
    /// Always `function`.
    #[serde(default = "function_type", rename = "type")]
    pub kind: String,
    /// Name and arguments.
    pub function: ChatFunction,
}

fn function_type() -> String {
    "function".to_string()
}

/// Name and JSON-string arguments of a call.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, Serialize)]
pub(crate) struct ChatFunction {
    /// Tool name.
    pub name: String,
    /// Arguments as a JSON string.
    #[serde(default)]
    pub arguments: String,
}

/// The caller's answer to an `approval_request`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct ApprovalAnswer {
    /// The call asked about.
    pub call_id: String,
    /// `approve`, `always` (approve, and keep the rules proposed from the call, such as
    /// `run_command(cargo test *)`, for the rest of the session) or `deny`.
    pub decision: ApprovalDecision,
    /// Passed to the model on `deny`.
    #[serde(default)]
    pub reason: Option<String>,
}

/// What the caller decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ApprovalDecision {
    /// Run it once.
    Approve,
    /// Run it and allow the tool from now on in this session.
    Always,
    /// Do not run it.
    Deny,
}

/// A session the caller may have meant, listed by the `*_starting_*` warnings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct RecentSession {
    /// Full id.
    pub id: String,
    /// Title (or first prompt).
    pub title: String,
}

/// An event line: the bridge's own (`protocol_ack`, `session_init`, `warning`, `error`) and a
/// turn's (`text_delta`, `tool_call`, `finish`, ...: [`turn_lines`](super::turn_lines), shared with
/// `neocode run --json`, with the chat's `request_id` added by the bridge).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Event {
    /// A `queue` request's message waits in the session's queue.
    Queued {
        #[serde(skip_serializing_if = "Option::is_none")]
        request_id: Option<String>,
        /// The full session id.
        session_id: String,
        /// The queued message's id.
        queue_id: i64,
        /// Whether it steers the running turn.
        steer: bool,
        /// Whether a process runs the session now (it sends the message); when false, the
        /// message is sent when the session is next opened in the TUI.
        running: bool,
    },
    /// First line of every bridge process.
    ProtocolAck {
        /// [`PROTOCOL_NAME`].
        protocol: &'static str,
        /// [`PROTOCOL_VERSION`].
        version: u32,
    },
    /// Which session the chat runs in; sent for the first chat of a process and whenever
    /// a later chat lands in a different session.
    SessionInit {
        #[serde(skip_serializing_if = "Option::is_none")]
        request_id: Option<String>,
        /// The session: write it down and send it back next time.
        session_id: String,
        /// The id was missing or unknown and the conversation key found this session.
        recovered: bool,
        /// `session_id_missing` or `session_not_found` when recovered, else null.
        recovery_reason: Option<&'static str>,
    },
    /// Something the caller should know that does not stop the turn.
    Warning {
        #[serde(skip_serializing_if = "Option::is_none")]
        request_id: Option<String>,
        /// Stable code.
        code: String,
        /// In words.
        message: String,
        /// Sessions the caller may have meant (the `*_starting_*` warnings).
        #[serde(skip_serializing_if = "Option::is_none")]
        recent_sessions: Option<Vec<RecentSession>>,
    },
    /// A request could not be carried out (or a turn failed: then `finish` follows).
    Error {
        #[serde(skip_serializing_if = "Option::is_none")]
        request_id: Option<String>,
        /// Stable code.
        code: String,
        /// In words.
        message: String,
    },
    /// A turn started in this session (`run --json`; the bridge sends its own
    /// [`Event::SessionInit`] instead).
    #[serde(rename = "session_init")]
    TurnStarted {
        /// The session.
        session_id: String,
    },
    /// Answer text as it streams.
    TextDelta {
        /// The text.
        text: String,
    },
    /// Reasoning text as it streams.
    ReasoningDelta {
        /// The text.
        text: String,
    },
    /// The assistant message of one model call was stored.
    MessageStored {
        /// Its seq.
        seq: i64,
        /// Usage of that model call.
        usage: Usage,
    },
    /// The model asked for a tool call.
    ToolCall {
        /// The call's id.
        call_id: String,
        /// The tool.
        name: String,
        /// Its arguments as the model sent them (a JSON text).
        arguments: String,
        /// `read`, `edit`, `command` or `plan`.
        kind: &'static str,
        /// One line: what it does.
        summary: String,
    },
    /// A call waits for the caller's yes/no.
    ApprovalRequest {
        /// The call's id.
        call_id: String,
        /// The tool.
        name: String,
        /// Its arguments (a JSON text).
        arguments: String,
        /// One line: what it does.
        summary: String,
        /// Why it asks.
        reason: String,
        /// The rules an `always` answer keeps for the session (one per part of a command
        /// that no rule allows yet, a folder or glob for a file tool); empty when no rule can
        /// allow the call, and then `always` runs it once.
        rules: Vec<String>,
    },
    /// A call finished and its result was stored.
    ToolResult {
        /// The call answered.
        call_id: String,
        /// Result text.
        text: String,
        /// The call failed or was denied.
        is_error: bool,
        /// Seq of the stored result.
        seq: i64,
        /// Who let it run or kept it from running: `{"decision": "allow", "by": "rule",
        /// "rule": "run_command(cargo test *)", "file": "…/permissions.toml", "line": 2}`
        /// (`by`: `rule`, `hook`, `policy`, `user`). Absent for calls never decided.
        #[serde(skip_serializing_if = "Option::is_none")]
        permission: Option<crate::runtime::agent::Permission>,
        /// The language servers' errors and warnings in the files the call changed:
        /// `{"errors": 1, "warnings": 0, "items": [{"path", "line", "column", "severity",
        /// "message", "server"}]}`. Absent when no server serves them.
        #[serde(skip_serializing_if = "Option::is_none")]
        diagnostics: Option<crate::runtime::extensions::lsp::DiagnosticReport>,
    },
    /// A plan run's plan.
    PlanProposed {
        /// The steps.
        steps: Vec<Step>,
        /// Step ids by layer.
        layers: Vec<Vec<String>>,
        /// The run goes on without asking.
        approved: bool,
    },
    /// A plan step started in its own child session.
    StepStarted {
        /// The step.
        step_id: String,
        /// Its title.
        title: String,
        /// The child session.
        session_id: String,
        /// Why it runs again, or null.
        retry: Option<String>,
    },
    /// A plan step ended.
    StepFinished {
        /// The step.
        step_id: String,
        /// Usage of its model calls.
        usage: Usage,
        /// Wall time.
        elapsed_ms: u64,
        /// `completed`, `failed` or `skipped`.
        status: &'static str,
        /// The final answer (completed).
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<String>,
        /// Why it did not complete.
        #[serde(skip_serializing_if = "Option::is_none")]
        error_type: Option<String>,
        /// In words.
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// A sub-agent (a `task` call's child session) started.
    SubagentStarted {
        /// The child session.
        session_id: String,
        /// The parent's `task` call.
        call_id: String,
        /// Its agent profile, or null.
        agent: Option<String>,
    },
    /// A sub-agent ended (its answer is the result of the `task` call, or of `task_wait`).
    SubagentFinished {
        /// The child session.
        session_id: String,
        /// The parent's `task` call.
        call_id: String,
        /// `completed`, `cancelled`, `limit_reached` or `failed`.
        reason: &'static str,
        /// Usage of its model calls.
        usage: Usage,
    },
    /// The turn ended; nothing follows.
    Finish {
        /// `completed`, `cancelled`, `limit_reached` or `failed`.
        reason: &'static str,
        /// Usage of all model calls of the turn.
        usage: Usage,
        /// Which limit stopped it.
        #[serde(skip_serializing_if = "Option::is_none")]
        limit: Option<String>,
    },
}

impl Event {
    /// An `error` event.
    pub(crate) fn error(
        request_id: Option<String>,
        code: &str,
        message: impl Into<String>,
    ) -> Event {
        Event::Error {
            request_id,
            code: code.to_string(),
            message: message.into(),
        }
    }

    /// A `warning` event without a session list.
    pub(crate) fn warning(
        request_id: Option<String>,
        code: &str,
        message: impl Into<String>,
    ) -> Event {
        Event::Warning {
            request_id,
            code: code.to_string(),
            message: message.into(),
            recent_sessions: None,
        }
    }

    /// The line to write (without the newline).
    pub(crate) fn to_line(&self) -> String {
        // Serialising these types cannot fail: every map key is a string.
        serde_json::to_string(self)
            .unwrap_or_else(|e| format!(r#"{{"type":"error","code":"internal","message":"{e}"}}"#))
    }
}

/// Parses one request line. The error is the `error` event to send back: malformed input
/// never reaches a session.
// The error is one line, written at once: its size does not matter.
#[allow(clippy::result_large_err)]
pub(crate) fn parse_request(line: &[u8]) -> Result<Request, Event> {
    let text = std::str::from_utf8(line)
        .map_err(|e| Event::error(None, "invalid_utf8", format!("the line is not UTF-8: {e}")))?;
    let value: Value = serde_json::from_str(text)
        .map_err(|e| Event::error(None, "invalid_json", format!("the line is not JSON: {e}")))?;
    let request_id = value
        .get("request_id")
        .and_then(Value::as_str)
        .map(str::to_string);
    let Some(obj) = value.as_object() else {
        return Err(Event::error(
            None,
            "invalid_request",
            "a request is a JSON object with a `type` field",
        ));
    };
    let kind = match obj.get("type").and_then(Value::as_str) {
        Some(k) => k.to_string(),
        None => {
            return Err(Event::error(
                request_id,
                "invalid_request",
                "the request has no `type` field (chat, cancel, approval or queue)",
            ));
        }
    };
    // Each type is read on its own (not as a tagged enum) so an error names its JSON path.
    let bad = |e: serde_path_to_error::Error<serde_json::Error>| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let message = if path == "." {
            format!("invalid {kind} request: {inner}")
        } else {
            format!("invalid {kind} request at {path}: {inner}")
        };
        Event::error(request_id.clone(), "invalid_request", message)
    };
    match kind.as_str() {
        "chat" => serde_path_to_error::deserialize(value)
            .map(|c| Request::Chat(Box::new(c)))
            .map_err(bad),
        "cancel" => serde_path_to_error::deserialize(value)
            .map(Request::Cancel)
            .map_err(bad),
        "approval" => serde_path_to_error::deserialize(value)
            .map(Request::Approval)
            .map_err(bad),
        "queue" => serde_path_to_error::deserialize(value)
            .map(Request::Queue)
            .map_err(bad),
        other => Err(Event::error(
            request_id.clone(),
            "unknown_type",
            format!(
                "unknown request type {:?} (chat, cancel, approval or queue)",
                crate::sanitize::line(other)
            ),
        )),
    }
}
