//! The agent: real turns against an OpenAI-compatible model, with tools, approvals, the
//! runtime ledger, compaction and resume (seed 000 §3.3, §5; seed 003's append points).
//!
//! One event type, three consumers: the TUI, `neocode run` and `neocode bridge` only read
//! [`TurnEvent`]s and send [`TurnCommand`]s; none of them knows how a turn works.

use crate::session::{ToolCall, Usage};

use super::tools::ToolKind;

/// Something that happened in a running turn, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEvent {
    /// The turn runs in this session (sent first; a new session's id is known from here).
    Started {
        /// The session.
        session_id: String,
    },
    /// Answer text as it streams.
    TextDelta(String),
    /// Reasoning text as it streams (models that send it).
    ReasoningDelta(String),
    /// The assistant message of one model call was stored.
    AssistantStored {
        /// Its seq.
        seq: i64,
        /// Usage of that model call.
        usage: Usage,
    },
    /// The model asked for a tool call (it runs now, or waits for approval).
    ToolCall {
        /// The call as the model made it.
        call: ToolCall,
        /// Approval class.
        kind: ToolKind,
        /// One line: what it does (path, command, pattern).
        summary: String,
    },
    /// The call needs the user's yes/no; answer with [`TurnCommand::Approve`] or
    /// [`TurnCommand::Deny`].
    ApprovalNeeded {
        /// The call waiting.
        call: ToolCall,
        /// One line: what it does.
        summary: String,
        /// Why it asks (policy, sandbox off, replay of an interrupted call).
        reason: String,
    },
    /// A call finished and its result was stored.
    ToolResult {
        /// The call answered.
        call_id: String,
        /// Result text (as the model reads it).
        text: String,
        /// The call failed or was denied.
        is_error: bool,
        /// Seq of the stored result.
        seq: i64,
    },
    /// Something the user should know that does not stop the turn.
    Warning {
        /// Stable machine-readable code, e.g. `replaying_interrupted_calls`.
        code: String,
        /// What happened, in words.
        message: String,
    },
    /// The turn ended; nothing follows.
    Finished {
        /// Why.
        reason: FinishReason,
        /// Usage of all model calls of this turn.
        usage: Usage,
    },
}

/// Why a turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    /// The model answered without further tool calls. Status `completed`.
    Completed,
    /// The user cancelled. Status `cancelled`; the session can be continued.
    Cancelled,
    /// A ledger limit stopped the turn (which limit, in words). Status `paused`.
    LimitReached(String),
    /// The provider or the runtime failed. Status `failed`.
    Failed {
        /// Stable code, e.g. `auth`, `not_found`, `rate_limited`, `unreachable`, `timeout`,
        /// `stream_cut`, `busy`, `config`.
        code: String,
        /// What went wrong, in words a user can act on; never contains the key.
        message: String,
    },
}

/// What a front end tells a running turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnCommand {
    /// Run the waiting call; `always` allows this tool for the rest of the session (stored
    /// with the session, survives a restart).
    Approve {
        /// The call.
        call_id: String,
        /// Allow this tool from now on in this session.
        always: bool,
    },
    /// Do not run the call; the model is told, with the user's reason if given.
    Deny {
        /// The call.
        call_id: String,
        /// Passed to the model.
        reason: Option<String>,
    },
    /// Stop the turn: the stream stops, running commands are killed, what arrived is kept.
    Cancel,
}
