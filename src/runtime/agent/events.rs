//! What a running turn reports and what a front end tells it: [`TurnEvent`], [`FinishReason`],
//! [`TurnCommand`] and the runtime's stable failure and warning codes.

use super::error::StartCode;
use crate::runtime::provider::ErrorKind;
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
        /// Why it asks (policy, sandbox off, replay of an interrupted call, a rule).
        reason: String,
        /// The rules an "always" answer would keep, for the user to edit before they are
        /// saved ([`TurnCommand::AlwaysAllow`]): one per part of a command that no rule
        /// allows yet (`run_command(cargo test *)`), a folder or glob for a file tool
        /// (`edit_file(src/**)`). Empty when no rule can allow the call (an `ask` rule or a
        /// hook asks, or a part the shell grammar cannot account for): "always" is not
        /// offered.
        rules: Vec<String>,
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
        /// Who let it run or kept it from running (a rule and its file, a hook, the policy,
        /// the user); `None` for calls the turn stopped before deciding.
        permission: Option<crate::runtime::policy::gate::Permission>,
        /// The language servers' errors and warnings in the files the call changed; `None`
        /// when no server serves them (or none answered in time).
        /// (Boxed: the event stays small.)
        diagnostics: Option<Box<crate::runtime::extensions::lsp::DiagnosticReport>>,
    },
    /// Something the user should know that does not stop the turn.
    Warning {
        /// Stable machine-readable code, e.g. `replaying_interrupted_calls`.
        code: WarningCode,
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
    /// Something a sub-agent (a `task` call's child session) did: it started (`Started`),
    /// called a tool (`ToolCall`, `ToolResult`), asks about a call (`ApprovalNeeded`, its
    /// summary naming the child; answered with the usual commands by call id, which the
    /// parent relays to the child), stored a reply (`AssistantStored`, with its usage) or
    /// ended (`Finished`). Its text is not relayed (it is stored in its session); its
    /// warnings are the parent's, naming the child.
    Subagent {
        /// The child session.
        session_id: String,
        /// The `task` call that started it.
        call_id: String,
        /// Its agent profile, when the call named one.
        agent: Option<String>,
        /// What happened in it.
        event: Box<TurnEvent>,
    },
    /// The turn ended; nothing follows.
    Finished {
        /// Why.
        reason: FinishReason,
        /// Usage of all model calls of this turn.
        usage: Usage,
    },
}

pub(crate) use crate::runtime::codes::UnknownCode;
pub(crate) use crate::runtime::codes::WarningCode;
use crate::runtime::codes::stable_codes;

stable_codes! {
    /// Why a turn failed ([`FinishReason::Failed`]): a provider failure (from its
    /// [`ErrorKind`]), a turn that could not start (from its [`StartCode`]) or the runtime's
    /// own. The strings are stable: the bridge, `--json` and the exit messages show them.
    FailCode ("failure") {
        /// 401 / 403: the key was rejected.
        Auth => "auth",
        /// 404: the model or the URL is wrong; or no such session.
        NotFound => "not_found",
        /// 429 after the retries.
        RateLimited => "rate_limited",
        /// 5xx after the retries.
        ServerError => "server_error",
        /// Another 4xx.
        BadRequest => "bad_request",
        /// Connection refused, DNS failure, TLS failure.
        Unreachable => "unreachable",
        /// No answer for longer than the timeout.
        Timeout => "timeout",
        /// The connection broke mid-reply.
        StreamCut => "stream_cut",
        /// The user cancelled (the provider said so).
        Cancelled => "cancelled",
        /// A `UserPromptSubmit` hook refused the prompt (exit 2); the message is its reason.
        PromptRefused => "prompt_refused",
        /// The server sent something that is not a Chat Completions stream.
        Protocol => "protocol",
        /// The prompt does not fit the model's context window.
        ContextOverflow => "context_overflow",
        /// Another process runs the session.
        Busy => "busy",
        /// The request is wrong (ambiguous id, empty goal ...).
        Usage => "usage",
        /// The provider failed before the turn started (a compaction's summary).
        Provider => "provider",
        /// The session could not be written.
        Store => "store",
        /// The provider could not be built.
        Config => "config",
        /// A turn or plan run ended without saying why.
        Internal => "internal",
        /// The drafting turn stored no plan.
        NoPlan => "no_plan",
        /// The plan's dependencies do not form layers.
        BadPlan => "bad_plan",
        /// The user rejected the plan.
        PlanRejected => "plan_rejected",
        /// Steps of a plan run failed.
        PlanFailed => "plan_failed",
        /// A plan step's changes conflict with those of a step merged before it.
        PlanConflict => "plan_conflict",
    }
}

impl From<ErrorKind> for FailCode {
    fn from(k: ErrorKind) -> FailCode {
        match k {
            ErrorKind::Auth => FailCode::Auth,
            ErrorKind::NotFound => FailCode::NotFound,
            ErrorKind::RateLimited => FailCode::RateLimited,
            ErrorKind::Server => FailCode::ServerError,
            ErrorKind::BadRequest => FailCode::BadRequest,
            ErrorKind::Unreachable => FailCode::Unreachable,
            ErrorKind::Timeout => FailCode::Timeout,
            ErrorKind::StreamCut => FailCode::StreamCut,
            ErrorKind::Cancelled => FailCode::Cancelled,
            ErrorKind::Protocol => FailCode::Protocol,
            ErrorKind::ContextOverflow => FailCode::ContextOverflow,
        }
    }
}

impl From<StartCode> for FailCode {
    fn from(c: StartCode) -> FailCode {
        match c {
            StartCode::Config => FailCode::Config,
            StartCode::Busy => FailCode::Busy,
            StartCode::NotFound => FailCode::NotFound,
            StartCode::Usage => FailCode::Usage,
            StartCode::Store => FailCode::Store,
            StartCode::Provider => FailCode::Provider,
        }
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
        code: FailCode,
        /// What went wrong, in words a user can act on; never contains the key.
        message: String,
    },
}

impl FinishReason {
    /// `completed`, `cancelled`, `limit_reached` or `failed`.
    pub(crate) fn as_str(&self) -> &'static str {
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
    /// Run the waiting call; `always` keeps the rules [`TurnEvent::ApprovalNeeded`]
    /// proposed for the rest of the session (stored with the session, survives a restart;
    /// none when it proposed none: the call runs once).
    Approve {
        /// The call.
        call_id: String,
        /// Keep the proposed rules for this session.
        always: bool,
    },
    /// Run the waiting call and keep `rules` (allow rules, as proposed by
    /// [`TurnEvent::ApprovalNeeded`] or edited by the user) at `scope`.
    AlwaysAllow {
        /// The call.
        call_id: String,
        /// The rules' texts.
        rules: Vec<String>,
        /// Where it is kept.
        scope: crate::runtime::policy::gate::RuleScope,
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

impl TurnCommand {
    /// The call an approval answer is about.
    pub(crate) fn call_id(&self) -> Option<&str> {
        match self {
            TurnCommand::Approve { call_id, .. }
            | TurnCommand::AlwaysAllow { call_id, .. }
            | TurnCommand::Deny { call_id, .. } => Some(call_id),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code of `all` parses back from its string, shows and serialises as it, and no
    /// two share one.
    fn assert_codes_round_trip<C>(all: &[C], as_str: fn(C) -> &'static str, shared: &str)
    where
        C: Copy
            + std::fmt::Debug
            + std::fmt::Display
            + PartialEq
            + std::str::FromStr
            + serde::Serialize
            + serde::de::DeserializeOwned,
        C::Err: std::fmt::Debug + PartialEq,
    {
        for &c in all {
            let s = as_str(c);
            assert_eq!(s.parse::<C>(), Ok(c), "{s}");
            assert_eq!(c.to_string(), s);
            assert_eq!(serde_json::to_string(&c).ok(), Some(format!("\"{s}\"")));
            let back: Result<C, _> = serde_json::from_str(&format!("\"{s}\""));
            assert_eq!(back.ok(), Some(c), "{s}");
        }
        let mut seen: Vec<&str> = all.iter().map(|&c| as_str(c)).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), all.len(), "{shared}");
    }

    #[test]
    fn every_fail_code_parses_back_and_serialises_as_its_string() {
        assert_codes_round_trip(
            FailCode::ALL,
            FailCode::as_str,
            "two failure codes share a string",
        );
    }

    #[test]
    fn every_warning_code_parses_back_and_serialises_as_its_string() {
        assert_codes_round_trip(
            WarningCode::ALL,
            WarningCode::as_str,
            "two warning codes share a string",
        );
    }

    #[test]
    fn an_unknown_code_is_an_error_naming_it() {
        let e = "nope".parse::<FailCode>().err().map(|e| e.to_string());
        assert_eq!(e.as_deref(), Some("unknown failure code `nope`"));
        let e = "".parse::<WarningCode>().err().map(|e| e.to_string());
        assert_eq!(e.as_deref(), Some("unknown warning code ``"));
        assert!(serde_json::from_str::<FailCode>("\"Auth\"").is_err());
    }

    #[test]
    fn provider_and_start_codes_keep_their_strings_as_failure_codes() {
        use ErrorKind::*;
        for k in [
            Auth,
            NotFound,
            RateLimited,
            Server,
            BadRequest,
            Unreachable,
            Timeout,
            StreamCut,
            Cancelled,
            Protocol,
            ContextOverflow,
        ] {
            assert_eq!(FailCode::from(k).as_str(), k.code());
        }
        for c in [
            StartCode::Config,
            StartCode::Busy,
            StartCode::NotFound,
            StartCode::Usage,
            StartCode::Store,
            StartCode::Provider,
        ] {
            assert_eq!(FailCode::from(c).as_str(), c.as_str());
        }
    }
}
