//! A turn's tool calls: the card each starts, the approval it waits for, the result it gets.

use super::Conversation;
use super::turn::{Ask, TurnCtx};
use crate::runtime::tools::ToolKind;
use crate::session::ToolCall;
use crate::tui::live::{Asked, Card, CardState};
use crate::tui::transcript::CANCELLED_MARK;

/// How a stored tool result reads when the call never ran (the runtime's words).
fn result_state(text: &str, is_error: bool) -> CardState {
    if text.starts_with("The user denied this call") {
        CardState::Denied
    } else if text.starts_with("Not run:") {
        CardState::Interrupted
    } else if text.contains(CANCELLED_MARK) {
        // Killed by the cancel: never "done".
        CardState::Cancelled
    } else if is_error {
        CardState::Failed
    } else {
        CardState::Done
    }
}

impl Conversation {
    /// A tool call starts: its card.
    pub(super) fn tool_call(
        &mut self,
        call: ToolCall,
        kind: ToolKind,
        summary: String,
        ctx: &TurnCtx<'_>,
    ) -> Vec<Ask> {
        let now = ctx.now_ms;
        if let Some(l) = self.live.as_mut() {
            l.cards.push(Card {
                call,
                kind,
                summary,
                state: CardState::Running,
                since_ms: now,
                ended_ms: None,
                result: None,
                result_seq: None,
                step: l.current_step.clone(),
            });
        }
        Vec::new()
    }

    /// A call waits for the user: its card asks.
    pub(super) fn approval_needed(
        &mut self,
        call: ToolCall,
        reason: String,
        ctx: &mut TurnCtx<'_>,
    ) -> Vec<Ask> {
        let now = ctx.now_ms;
        if self.live.as_ref().is_some_and(|l| l.asking.is_empty()) {
            self.card_shown(now);
        }
        if let Some(l) = self.live.as_mut() {
            if let Some(c) = l.card_mut(&call.id) {
                c.state = CardState::Waiting(reason);
                c.since_ms = now;
            }
            l.asking.push_back(Asked {
                call_id: call.id,
                step: l.current_step.clone(),
            });
        }
        if self.live_here(ctx.screen, ctx.detail).is_none() {
            ctx.say("A tool call waits for your approval: open its session to answer.");
        }
        Vec::new()
    }

    /// A call has its result.
    pub(super) fn tool_result(
        &mut self,
        call_id: String,
        text: String,
        is_error: bool,
        seq: i64,
        ctx: &TurnCtx<'_>,
    ) -> Vec<Ask> {
        let now = ctx.now_ms;
        if let Some(l) = self.live.as_mut() {
            let step = l.current_step.clone();
            l.asking.retain(|a| a.call_id != call_id || a.step != step);
            if let Some(c) = l.card_mut(&call_id) {
                c.state = result_state(&text, is_error);
                c.ended_ms = Some(now);
                c.result = Some(text);
                c.result_seq = Some(seq);
            }
        }
        self.refresh_open_turn(ctx)
    }
}
