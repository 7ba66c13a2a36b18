//! What a running turn reports and what a front end tells it: [`TurnEvent`], [`FinishReason`],
//! [`TurnCommand`] and the runtime's stable failure and warning codes.

use crate::runtime::tools::ToolKind;
use crate::session::{Plan, StepFailure, ToolCall, Usage};

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
    /// The context window filled: the turn compacts the transcript before its next model
    /// call (the wire shows it as warning `compacting`).
    Compacting {
        /// What happens, in words.
        message: String,
    },
    /// The compaction failed; nothing changed and the turn goes on (warning
    /// `compaction_failed` on the wire).
    CompactionFailed {
        /// Why, in words.
        message: String,
    },
    /// A plan run: the model drafted this plan (or the user's edit changed it); it runs when
    /// the front end answers [`TurnCommand::ApprovePlan`], is changed by
    /// [`TurnCommand::EditPlan`] (proposed again) and dropped by [`TurnCommand::RejectPlan`].
    /// Sent already approved (no answer awaited) when `approved` is true.
    PlanProposed {
        /// The steps.
        plan: Plan,
        /// Step ids by layer: a layer runs after every earlier one.
        layers: Vec<Vec<String>>,
        /// The run goes on without asking (`--yes`, or a resumed run that already started).
        approved: bool,
    },
    /// A plan step's sub-turn started in its own child session.
    StepStarted {
        /// The step.
        step_id: String,
        /// Its title.
        title: String,
        /// The child session holding the step's conversation.
        session_id: String,
        /// Why it runs again, when it does (interrupted by a crash, retry of a failure).
        retry: Option<String>,
    },
    /// An event of a step's sub-turn (text, tool calls, approvals, warnings). Approvals are
    /// answered with the usual commands; the plan run routes them by call id.
    Step {
        /// The step.
        step_id: String,
        /// What happened in it.
        event: Box<TurnEvent>,
    },
    /// A plan step ended: its result or error is stored (a step whose dependency did not
    /// complete ends at once with error type `skipped`).
    StepFinished {
        /// The step.
        step_id: String,
        /// The final answer, or why it failed.
        outcome: Result<String, StepFailure>,
        /// Usage of the step's model calls.
        usage: Usage,
        /// Wall time of the step.
        elapsed_ms: u64,
    },
    /// The turn ended; nothing follows.
    Finished {
        /// Why.
        reason: FinishReason,
        /// Usage of all model calls of this turn.
        usage: Usage,
    },
}

/// The runtime's own failure codes of [`FinishReason::Failed`] (a provider failure carries
/// its [`crate::runtime::provider::ErrorKind::code`]). The strings are stable: the bridge,
/// `--json` and the exit messages show them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailCode {
    /// The session could not be written.
    Store,
    /// The provider could not be built.
    Config,
    /// A turn or plan run ended without saying why.
    Internal,
    /// The drafting turn stored no plan.
    NoPlan,
    /// The plan's dependencies do not form layers.
    BadPlan,
    /// The user rejected the plan.
    PlanRejected,
    /// Steps of a plan run failed.
    PlanFailed,
}

impl FailCode {
    /// The stable code.
    pub fn as_str(self) -> &'static str {
        match self {
            FailCode::Store => "store",
            FailCode::Config => "config",
            FailCode::Internal => "internal",
            FailCode::NoPlan => "no_plan",
            FailCode::BadPlan => "bad_plan",
            FailCode::PlanRejected => "plan_rejected",
            FailCode::PlanFailed => "plan_failed",
        }
    }
}

impl From<FailCode> for String {
    fn from(c: FailCode) -> String {
        c.as_str().to_string()
    }
}

/// The runtime's warning codes of [`TurnEvent::Warning`] (project context and MCP servers
/// report their own). Stable strings, as the wire shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarningCode {
    /// Commands are not confined.
    Sandbox,
    /// Calls interrupted by a crash are offered again.
    ReplayingInterruptedCalls,
    /// The provider is retried.
    Retrying,
    /// A command arrived that nothing waits for.
    UnexpectedCommand,
    /// An edit of the plan named steps it does not have.
    UnknownStep,
    /// An edit would leave the plan empty.
    EmptyPlan,
    /// A step left running by a dead process runs again.
    StepRerun,
}

impl WarningCode {
    /// The stable code.
    pub fn as_str(self) -> &'static str {
        match self {
            WarningCode::Sandbox => "sandbox",
            WarningCode::ReplayingInterruptedCalls => "replaying_interrupted_calls",
            WarningCode::Retrying => "retrying",
            WarningCode::UnexpectedCommand => "unexpected_command",
            WarningCode::UnknownStep => "unknown_step",
            WarningCode::EmptyPlan => "empty_plan",
            WarningCode::StepRerun => "step_rerun",
        }
    }
}

impl From<WarningCode> for String {
    fn from(c: WarningCode) -> String {
        c.as_str().to_string()
    }
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

impl FinishReason {
    /// `completed`, `cancelled`, `limit_reached` or `failed`.
    pub fn as_str(&self) -> &'static str {
        match self {
            FinishReason::Completed => "completed",
            FinishReason::Cancelled => "cancelled",
            FinishReason::LimitReached(_) => "limit_reached",
            FinishReason::Failed { .. } => "failed",
        }
    }
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
    /// Run the proposed plan.
    ApprovePlan,
    /// Drop these steps from the proposed plan (dependants no longer wait for them); the plan
    /// is proposed again.
    EditPlan {
        /// Step ids to drop.
        drop: Vec<String>,
    },
    /// Do not run the proposed plan; the run ends cancelled.
    RejectPlan,
}
