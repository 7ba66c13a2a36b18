//! The turn loop, on its own thread: model call, tool calls (with approvals), model call ...
//! until the model answers without calls, the user cancels, a budget stops it, or something
//! fails. Persisted at seed 003's append points: the user message when submitted, the
//! assistant message when its stream ends, each tool result as it completes, each together
//! with the header state (status, ledger) in one transaction.

mod body;
mod calls;
mod compaction;
mod completion;
mod steer;
mod structured;
mod subagents;
mod warnings;

use super::events::{FailCode, FinishReason, TurnCommand, TurnEvent, WarningCode};
use super::ledger;
use crate::runtime::cancel::CancelFlag;
use crate::runtime::config::{ApprovalPolicy, Settings};
use crate::runtime::lease::Lease;
use crate::runtime::provider::Provider;
use crate::runtime::provider::openai::redact;
use crate::runtime::sessions::Sessions;
use crate::runtime::tools;
use crate::session::{AppendMeta, NewMessage, RuntimeLedger, StateUpdate, Status, Usage, now_ms};
use serde_json::Value;
use std::sync::mpsc::Receiver;

/// Everything a turn thread owns, in three parts: what it knows ([`TurnContext`]), what it
/// counts as it goes ([`TurnState`]) and what it talks to ([`TurnIo`]).
pub(super) struct Turn {
    pub ctx: TurnContext,
    pub state: TurnState,
    pub io: TurnIo,
}

/// What a turn knows: its session, its settings and what it may do.
pub(super) struct TurnContext {
    pub settings: Settings,
    pub session_id: String,
    pub policy: ApprovalPolicy,
    /// Stored with every message the turn appends (the provider that answered, ...).
    pub meta: AppendMeta,
    /// Project context, `skill` and MCP tools.
    pub ext: std::sync::Arc<crate::runtime::extensions::project::Extensions>,
    /// What this prompt may spend on its own, counted from [`TurnState::caps_start`].
    pub caps: ledger::PromptCaps,
    /// The schema the final answer must follow, sent as the API's structured-output option.
    pub output_schema: Option<serde_json::Value>,
    /// Permission rules and hooks (read when the turn starts).
    pub gate: crate::runtime::policy::gate::Gate,
    /// The agent the turn runs with: starts its sub-agents (`task`).
    pub agent: super::base::Agent,
    /// The only tools the model may call (a sub-agent's profile; set when the turn starts);
    /// `None`: every tool.
    pub tools_allowed: Option<Vec<String>>,
}

/// What a turn counts and carries as it goes.
pub(super) struct TurnState {
    pub ledger: RuntimeLedger,
    /// The plan run's budget when turns run side by side: reserved before each model call and
    /// tool call, on top of this turn's own ledger.
    pub budget: Option<ledger::SharedBudget>,
    /// This turn's tokens (sent with `Finished`).
    pub usage: Usage,
    /// The ledger's usage when this prompt started.
    pub caps_start: crate::session::RuntimeUsage,
    /// Metadata stored with the prompt's user message (taken when it is stored).
    pub prompt_meta: Option<Value>,
    /// Images stored with the prompt's user message (taken when it is stored).
    pub images: Vec<super::images::Image>,
    /// Who decided the call now running: stored with its result.
    pub permission: Option<crate::runtime::policy::gate::Permission>,
    /// Whether the sandbox's status was looked at (before the turn's first command call).
    pub sandbox_told: bool,
}

impl TurnState {
    /// The state of a turn that has done nothing yet.
    pub(super) fn new(
        ledger: RuntimeLedger,
        budget: Option<ledger::SharedBudget>,
        prompt_meta: Option<Value>,
        images: Vec<super::images::Image>,
    ) -> TurnState {
        TurnState {
            ledger,
            budget,
            usage: Usage::default(),
            caps_start: Default::default(),
            prompt_meta,
            images,
            permission: None,
            sandbox_told: false,
        }
    }
}

/// What a turn talks to: the store, the model, the front end.
pub(super) struct TurnIo {
    pub sessions: Sessions,
    pub provider: Box<dyn Provider>,
    /// Where the events go (called on this thread, and on its sub-agents' threads).
    pub sink: super::handle::SharedSink,
    /// Where answers about its sub-agents' calls go (filled by their sinks).
    pub routes: super::handle::Routes,
    pub commands: Receiver<TurnCommand>,
    pub cancel: CancelFlag,
    /// Held until the end is recorded; released before `Finished` is sent, so a front end
    /// may start the next turn as soon as it reads it.
    pub lease: Option<Lease>,
}

/// How a step of the loop ended early.
type Flow = Result<(), FinishReason>;

/// A store write that failed, as the reason a turn or plan run ends.
pub(super) fn store_failed(e: impl std::fmt::Display) -> FinishReason {
    FinishReason::Failed {
        code: FailCode::Store,
        message: format!("cannot write the session: {e}"),
    }
}

/// The title a first prompt gives a session: its first line, at most 60 characters.
pub(crate) fn title_from(prompt: &str) -> String {
    let first = prompt.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let t: String = first.trim().chars().take(60).collect();
    if first.trim().chars().count() > 60 {
        format!("{}…", t.trim_end())
    } else {
        t
    }
}

pub(super) enum Answer {
    /// Run it; with "always", the rules to keep and where.
    Run {
        always: Option<(Vec<String>, crate::runtime::policy::gate::RuleScope)>,
    },
    Denied(Option<String>),
    Cancelled,
}

impl Turn {
    pub(super) fn emit(&self, e: TurnEvent) {
        self.io.sink.event(e);
    }

    /// Before the turn's first command call: says when commands are not confined. Knowing
    /// it takes the sandbox probe (a helper process, once per process), which a turn that
    /// runs no command never needs.
    pub(super) fn tell_sandbox(&mut self) {
        if std::mem::replace(&mut self.state.sandbox_told, true) {
            return;
        }
        if let Some(w) = tools::sandbox::status(&self.ctx.settings.sandbox).warning() {
            self.emit(TurnEvent::Warning {
                code: WarningCode::Sandbox,
                message: w,
            });
        }
    }

    fn key(&self) -> Option<&str> {
        self.ctx.settings.api_key()
    }

    /// Runs the turn and reports how it ended (always ends with `Finished`).
    pub(super) fn run(mut self, prompt: Option<String>) {
        let started = std::time::Instant::now();
        let reason = match self.body(prompt) {
            Ok(()) => FinishReason::Completed,
            Err(r) => r,
        };
        if matches!(reason, FinishReason::Cancelled) {
            self.ctx.agent.children.cancel_of(&self.ctx.session_id);
        }
        let reason = self.settle_background(reason);
        self.state.ledger.usage.wall_ms += started.elapsed().as_millis() as u64;
        self.finish(reason);
    }

    pub(super) fn update(&self, status: Option<Status>) -> StateUpdate {
        StateUpdate {
            status,
            ledger: crate::session::Change::Set(self.state.ledger.clone()),
            touch: true,
            ..StateUpdate::default()
        }
    }

    pub(super) fn append(
        &mut self,
        msg: NewMessage,
        update: StateUpdate,
    ) -> Result<i64, FinishReason> {
        self.append_files(msg, update, &[])
    }

    /// [`Self::append`] with the workspace files a tool changed, stored in the same
    /// transaction (their before-images make the turn rewindable).
    pub(super) fn append_files(
        &mut self,
        msg: NewMessage,
        update: StateUpdate,
        files: &[crate::session::FileChange],
    ) -> Result<i64, FinishReason> {
        self.try_append(msg, update, files).map_err(store_failed)
    }

    /// [`Self::append_files`] with the store's own error (a delivery checks for
    /// [`crate::session::StoreError::NotQueued`]).
    fn try_append(
        &mut self,
        mut msg: NewMessage,
        mut update: StateUpdate,
        files: &[crate::session::FileChange],
    ) -> crate::session::Result<i64> {
        let runs = std::mem::take(&mut self.ctx.gate.pending);
        msg.tool_metadata =
            crate::runtime::policy::gate::with_hook_runs(msg.tool_metadata.take(), runs);
        self.notices();
        if update.ledger.is_keep() {
            update.ledger = crate::session::Change::Set(self.state.ledger.clone());
        }
        let seqs = if files.is_empty() {
            self.io.sessions.append_with_state(
                &self.ctx.session_id,
                &[msg],
                &self.ctx.meta,
                &update,
            )
        } else {
            self.io.sessions.append_with_files(
                &self.ctx.session_id,
                &[msg],
                &self.ctx.meta,
                &update,
                files,
            )
        }?;
        Ok(seqs.first().copied().unwrap_or(0))
    }

    pub(super) fn set_status(&self, status: Status) -> Flow {
        self.io
            .sessions
            .update_state(&self.ctx.session_id, &self.update(Some(status)))
            .map_err(store_failed)
    }

    fn finish(&mut self, reason: FinishReason) {
        let (status, word) = ending(&reason, "limit reached");
        let word = redact(&word, self.key());
        let sessions = &self.io.sessions;
        let id = &self.ctx.session_id;
        Closing {
            ledger: &mut self.state.ledger,
            lease: &mut self.io.lease,
            sink: &mut self.io.sink,
            usage: self.state.usage,
        }
        .close(reason, status, word, |update| {
            sessions.update_state(id, update)
        });
    }
}

/// The status a turn or plan run ends in, and the words its ledger keeps for why
/// (`limit` names a reached limit: "limit reached" for a turn, "paused" for a plan run).
pub(super) fn ending(reason: &FinishReason, limit: &str) -> (Status, String) {
    match reason {
        FinishReason::Completed => (Status::Completed, "completed".to_string()),
        FinishReason::Cancelled => (Status::Cancelled, "cancelled by the user".to_string()),
        FinishReason::LimitReached(why) => (Status::Paused, format!("{limit}: {why}")),
        FinishReason::Failed { code, message } => {
            (Status::Failed, format!("failed ({code}): {message}"))
        }
    }
}

/// What the end of a turn or plan run touches: its ledger, its lease, its front end.
pub(super) struct Closing<'a> {
    pub ledger: &'a mut RuntimeLedger,
    pub lease: &'a mut Option<Lease>,
    pub sink: &'a mut dyn super::handle::TurnSink,
    pub usage: Usage,
}

impl Closing<'_> {
    /// The one end of a turn or plan run: the ledger takes the termination (`word`, already
    /// redacted) and, for a cancel, its time; `write` stores it with `status` (a store
    /// failure becomes the reason unless the run already failed); the lease is released,
    /// then `Finished` is sent.
    pub(super) fn close(
        self,
        reason: FinishReason,
        status: Status,
        word: String,
        write: impl FnOnce(&StateUpdate) -> crate::session::Result<()>,
    ) {
        if matches!(reason, FinishReason::Cancelled) {
            self.ledger.cancelled_at_ms = Some(now_ms());
        }
        self.ledger.termination = Some(word);
        let update = StateUpdate {
            status: Some(status),
            ledger: crate::session::Change::Set(self.ledger.clone()),
            touch: true,
            ..StateUpdate::default()
        };
        let mut reason = reason;
        if let Err(e) = write(&update)
            && !matches!(reason, FinishReason::Failed { .. })
        {
            reason = store_failed(e);
        }
        drop(self.lease.take());
        self.sink.event(TurnEvent::Finished {
            reason,
            usage: self.usage,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_come_from_the_first_line() {
        assert_eq!(title_from("\n  Fix the build\nplease"), "Fix the build");
        let long = "x".repeat(80);
        assert_eq!(title_from(&long).chars().count(), 61);
    }
}
