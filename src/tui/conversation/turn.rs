//! Events of a running agent turn become the live cell (streamed text, tool cards, the
//! approval being asked) and the status line. [`Conversation::on_turn`] routes each event to
//! its concern: `stream` (text, stored messages, warnings, the end), `calls` (cards and
//! approvals), `plan_events` (a plan run's steps). What a turn stored is this process's own
//! write, which the `data_version` poll does not report, so the open session's refresh is
//! asked of the router ([`Ask`]), which owns the storage requests and the open session.

use super::Conversation;
use crate::runtime::agent::TurnEvent;
use crate::sanitize;
use crate::tui::browse::Detail;
use crate::tui::dialog::{Overlay, Status};
use crate::tui::effect::Effect;
use crate::tui::live::Live;
use crate::tui::screen::Screen;

/// What a conversation transition leaves to the router, in order: work for the outside
/// world, or a request only the router can make (it holds the request tokens, the list and
/// the open session).
#[derive(Debug, Clone, PartialEq)]
pub enum Ask {
    /// Carry this out as it is.
    Effect(Effect),
    /// Read the open session again.
    RefreshDetail,
    /// Read the list's first page again (the turn's session is the newest now).
    ReloadTop,
    /// The new session a turn started exists now: open it like any other, and say so.
    OpenNew(String),
}

/// The part of the router a conversation transition sees: the clock, the screen and the
/// open session (read), the dialog and the status line (set).
pub struct TurnCtx<'a> {
    /// The clock, ms since the epoch.
    pub now_ms: i64,
    pub screen: Screen,
    /// The session open in the detail pane or the conversation.
    pub detail: Option<&'a Detail>,
    pub overlay: &'a mut Overlay,
    pub status: &'a mut Option<Status>,
}

impl TurnCtx<'_> {
    /// A status-line message.
    pub fn say(&mut self, text: impl Into<String>) {
        *self.status = Some(Status {
            text: text.into(),
            error: false,
            at_ms: self.now_ms,
        });
    }

    /// A status-line error.
    pub fn fail(&mut self, text: impl Into<String>) {
        *self.status = Some(Status {
            text: text.into(),
            error: true,
            at_ms: self.now_ms,
        });
    }
}

impl Conversation {
    /// Takes an event of a running turn; what is left to do comes back in order.
    pub fn on_turn(&mut self, event: TurnEvent, ctx: &mut TurnCtx<'_>) -> Vec<Ask> {
        match event {
            TurnEvent::Started { session_id } => self.turn_started(session_id, ctx),
            TurnEvent::TextDelta(t) => self.text_delta(t),
            TurnEvent::ReasoningDelta(t) => self.reasoning_delta(t),
            TurnEvent::AssistantStored { seq, usage } => self.assistant_stored(seq, usage, ctx),
            TurnEvent::ToolCall {
                call,
                kind,
                summary,
            } => self.tool_call(call, kind, summary, ctx),
            TurnEvent::ApprovalNeeded { call, reason, .. } => {
                self.approval_needed(call, reason, ctx)
            }
            TurnEvent::ToolResult {
                call_id,
                text,
                is_error,
                seq,
            } => self.tool_result(call_id, text, is_error, seq, ctx),
            TurnEvent::PlanProposed {
                plan,
                layers,
                approved,
            } => self.plan_proposed(plan, layers, approved, ctx),
            TurnEvent::StepStarted {
                step_id,
                title,
                retry,
                ..
            } => self.step_started(step_id, title, retry, ctx),
            TurnEvent::StepFinished {
                step_id,
                outcome,
                elapsed_ms,
                ..
            } => self.step_finished(step_id, outcome, elapsed_ms, ctx),
            TurnEvent::Step { step_id, event } => self.step_event(step_id, event, ctx),
            TurnEvent::Compacting { message } => {
                ctx.say(sanitize::line(&message).into_owned());
                Vec::new()
            }
            TurnEvent::CompactionFailed { message } => {
                ctx.fail(sanitize::line(&message).into_owned());
                Vec::new()
            }
            TurnEvent::Warning { code, message } => self.turn_warning(code, message, ctx),
            TurnEvent::Finished { reason, usage } => self.turn_finished(reason, usage, ctx),
        }
    }

    /// Whether `detail` (the open session) is the live turn's.
    pub fn turn_is_open(&self, detail: Option<&Detail>) -> bool {
        match (
            self.live.as_ref().and_then(|l| l.session_id.as_ref()),
            detail,
        ) {
            (Some(s), Some(d)) => *s == d.id,
            _ => false,
        }
    }

    /// The live turn, when it belongs to the session shown in the conversation view (the
    /// screen and the open session are the router's).
    pub fn live_here(&self, screen: Screen, detail: Option<&Detail>) -> Option<&Live> {
        let l = self.live.as_ref()?;
        if screen != Screen::Conversation {
            return None;
        }
        match (&l.session_id, detail) {
            (Some(s), Some(d)) => (s == &d.id).then_some(l),
            // A new session's turn before `Started` named it.
            (None, _) => self.draft.then_some(l),
            _ => None,
        }
    }

    /// A card appeared (or another one took its place): answers wait a moment again.
    pub fn card_shown(&mut self, now_ms: i64) {
        self.card_since_ms = now_ms;
        self.held = None;
    }

    /// The open session is read again when the live turn is its own.
    pub(super) fn refresh_open_turn(&self, ctx: &TurnCtx<'_>) -> Vec<Ask> {
        if self.turn_is_open(ctx.detail) {
            vec![Ask::RefreshDetail]
        } else {
            Vec::new()
        }
    }
}
