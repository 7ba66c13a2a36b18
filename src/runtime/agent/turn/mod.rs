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
mod warnings;

use std::sync::mpsc::Receiver;

use serde_json::Value;

use super::{FailCode, FinishReason, TurnCommand, TurnEvent, WarningCode, ledger};
use crate::runtime::Sessions;
use crate::runtime::cancel::CancelFlag;
use crate::runtime::config::{ApprovalPolicy, Settings};
use crate::runtime::lease::Lease;
use crate::runtime::provider::Provider;
use crate::runtime::provider::openai::redact;
use crate::runtime::tools;
use crate::session::{AppendMeta, NewMessage, RuntimeLedger, StateUpdate, Status, Usage, now_ms};

/// Everything a turn thread owns.
pub(super) struct Turn {
    pub sessions: Sessions,
    pub settings: Settings,
    pub session_id: String,
    pub provider: Box<dyn Provider>,
    /// Where the events go (called on this thread).
    pub sink: Box<dyn super::TurnSink>,
    pub commands: Receiver<TurnCommand>,
    pub cancel: CancelFlag,
    pub ledger: RuntimeLedger,
    /// The plan run's budget when turns run side by side: reserved before each model call and
    /// tool call, on top of this turn's own ledger.
    pub budget: Option<ledger::SharedBudget>,
    pub policy: ApprovalPolicy,
    pub usage: Usage,
    pub meta: AppendMeta,
    /// Held until the end is recorded; released before `Finished` is sent, so a front end
    /// may start the next turn as soon as it reads it.
    pub lease: Option<Lease>,
    /// Metadata stored with the prompt's user message.
    pub prompt_meta: Option<Value>,
    /// Images stored with the prompt's user message.
    pub images: Vec<super::images::Image>,
    /// Project context, `skill` and MCP tools.
    pub ext: std::sync::Arc<super::project::Extensions>,
    /// What this prompt may spend on its own, counted from `caps_start`.
    pub caps: ledger::PromptCaps,
    /// The ledger's usage when this prompt started.
    pub caps_start: crate::session::RuntimeUsage,
    /// Permission rules and hooks (read when the turn starts).
    pub gate: super::gate::Gate,
    /// Who decided the call now running: stored with its result.
    pub permission: Option<super::gate::Permission>,
    /// Whether the sandbox's status was looked at (before the turn's first command call).
    pub sandbox_told: bool,
}

/// How a step of the loop ended early.
type Flow = Result<(), FinishReason>;

fn store_failed(e: impl std::fmt::Display) -> FinishReason {
    FinishReason::Failed {
        code: FailCode::Store,
        message: format!("cannot write the session: {e}"),
    }
}

/// The title a first prompt gives a session: its first line, at most 60 characters.
pub fn title_from(prompt: &str) -> String {
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
        always: Option<(Vec<String>, super::gate::RuleScope)>,
    },
    Denied(Option<String>),
    Cancelled,
}

impl Turn {
    pub(super) fn emit(&mut self, e: TurnEvent) {
        self.sink.event(e);
    }

    /// Before the turn's first command call: says when commands are not confined. Knowing
    /// it takes the sandbox probe (a helper process, once per process), which a turn that
    /// runs no command never needs.
    pub(super) fn tell_sandbox(&mut self) {
        if std::mem::replace(&mut self.sandbox_told, true) {
            return;
        }
        if let Some(w) = tools::sandbox::status(&self.settings.sandbox).warning() {
            self.emit(TurnEvent::Warning {
                code: WarningCode::Sandbox,
                message: w,
            });
        }
    }

    fn key(&self) -> Option<&str> {
        self.settings.api_key()
    }

    /// Runs the turn and reports how it ended (always ends with `Finished`).
    pub fn run(mut self, prompt: Option<String>) {
        let started = std::time::Instant::now();
        let reason = match self.body(prompt) {
            Ok(()) => FinishReason::Completed,
            Err(r) => r,
        };
        self.ledger.usage.wall_ms += started.elapsed().as_millis() as u64;
        self.finish(reason);
    }

    pub(super) fn state(&self, status: Option<Status>) -> StateUpdate {
        StateUpdate {
            status,
            ledger: crate::session::Change::Set(self.ledger.clone()),
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
        let runs = std::mem::take(&mut self.gate.pending);
        msg.tool_metadata = super::gate::with_hook_runs(msg.tool_metadata.take(), runs);
        self.notices();
        if update.ledger.is_keep() {
            update.ledger = crate::session::Change::Set(self.ledger.clone());
        }
        let seqs = if files.is_empty() {
            self.sessions
                .append_with_state(&self.session_id, &[msg], &self.meta, &update)
        } else {
            self.sessions
                .append_with_files(&self.session_id, &[msg], &self.meta, &update, files)
        }?;
        Ok(seqs.first().copied().unwrap_or(0))
    }

    pub(super) fn set_status(&self, status: Status) -> Flow {
        self.sessions
            .update_state(&self.session_id, &self.state(Some(status)))
            .map_err(store_failed)
    }

    fn finish(&mut self, reason: FinishReason) {
        let (status, termination) = match &reason {
            FinishReason::Completed => (Status::Completed, "completed".to_string()),
            FinishReason::Cancelled => (Status::Cancelled, "cancelled by the user".to_string()),
            FinishReason::LimitReached(why) => (Status::Paused, format!("limit reached: {why}")),
            FinishReason::Failed { code, message } => {
                (Status::Failed, format!("failed ({code}): {message}"))
            }
        };
        if matches!(reason, FinishReason::Cancelled) {
            self.ledger.cancelled_at_ms = Some(now_ms());
        }
        self.ledger.termination = Some(redact(&termination, self.key()));
        let mut reason = reason;
        if let Err(e) = self
            .sessions
            .update_state(&self.session_id, &self.state(Some(status)))
            && !matches!(reason, FinishReason::Failed { .. })
        {
            reason = store_failed(e);
        }
        drop(self.lease.take());
        self.emit(TurnEvent::Finished {
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
