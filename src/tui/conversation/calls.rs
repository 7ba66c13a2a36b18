//! A turn's tool calls: the card each starts, the approval it waits for, the result it gets;
//! and the user's answers (approve, deny with or without a reason, mark a stopped session's
//! calls as never run).

use super::Conversation;
use crate::runtime::agent::TurnCommand;
use crate::runtime::tools::ToolKind;
use crate::session::ToolCall;
use crate::tui::dialog::Overlay;
use crate::tui::effect::{Effect, TurnEffect};
use crate::tui::input::Input;
use crate::tui::live::{Asked, Card, CardState};
use crate::tui::seam::{Ask, Ctx};
use crate::tui::transcript::CANCELLED_MARK;
use crate::tui::worker::Request;

/// How a stored tool result reads when the call never ran (the runtime's words).
fn result_state(text: &str, is_error: bool) -> CardState {
    if crate::tui::denial::is_denial(text) {
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
        ctx: &Ctx<'_>,
    ) -> Vec<Ask> {
        let now = ctx.now_ms;
        if let Some(l) = self.turn.live_mut() {
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
                decided: None,
                diagnostics: None,
            });
        }
        Vec::new()
    }

    /// A call waits for the user: its card asks.
    pub(super) fn approval_needed(
        &mut self,
        call: ToolCall,
        reason: String,
        rules: Vec<String>,
        ctx: &mut Ctx<'_>,
    ) -> Vec<Ask> {
        let now = ctx.now_ms;
        if self.turn.live().is_some_and(|l| l.asking.is_empty()) {
            self.card_shown(now);
        }
        if let Some(l) = self.turn.live_mut() {
            if let Some(c) = l.card_mut(&call.id) {
                c.state = CardState::Waiting(reason);
                c.since_ms = now;
            }
            l.asking.push_back(Asked {
                call_id: call.id,
                step: l.current_step.clone(),
                rules,
            });
        }
        if self.live_here(ctx.screen, ctx.detail()).is_none() {
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
        permission: Option<crate::runtime::agent::Permission>,
        ctx: &Ctx<'_>,
    ) -> Vec<Ask> {
        let now = ctx.now_ms;
        let decided = permission
            .filter(|p| p.by == "rule" || p.by == "hook")
            .filter(|p| !crate::tui::denial::decision_repeats(p))
            .map(|p| p.describe());
        if let Some(l) = self.turn.live_mut() {
            let step = l.current_step.clone();
            l.asking.retain(|a| a.call_id != call_id || a.step != step);
            if let Some(c) = l.card_mut(&call_id) {
                c.state = result_state(&text, is_error);
                c.ended_ms = Some(now);
                c.result = Some(text);
                c.result_seq = Some(seq);
                c.decided = decided;
            }
        }
        self.refresh_open_turn(ctx)
    }
}

impl Conversation {
    /// Answers the call asked about now.
    pub(crate) fn reply_to_call(
        &mut self,
        approve: bool,
        always: bool,
        reason: Option<String>,
        ctx: &mut Ctx<'_>,
    ) -> Vec<Ask> {
        let Some(asked) = self
            .live_here(ctx.screen, ctx.detail())
            .and_then(|l| l.asking.front().cloned())
        else {
            return Vec::new();
        };
        let id = asked.call_id.clone();
        let now = ctx.now_ms;
        // The next card (if one is queued) waits a moment before it takes an answer.
        self.card_shown(now);
        if let Some(l) = self.turn.live_mut() {
            l.asking.pop_front();
            if let Some(c) = l.cards.iter_mut().find(|c| asked.is(c)) {
                c.since_ms = now;
                c.state = if approve {
                    CardState::Running
                } else {
                    CardState::Denied
                };
            }
        }
        let cmd = if approve {
            ctx.say(match asked.rules.len() {
                _ if !always => "Allowed.",
                0 => "Allowed once: no rule can allow this call.",
                1 => "Allowed; the proposed rule is kept for this session.",
                _ => "Allowed; the proposed rules are kept for this session.",
            });
            TurnCommand::Approve {
                call_id: id,
                always,
            }
        } else {
            ctx.say("Denied; the model is told.");
            TurnCommand::Deny {
                call_id: id,
                reason,
            }
        };
        vec![Ask::Effect(Effect::Turn(TurnEffect::Command(cmd)))]
    }

    /// "Always" for the asked call: its proposed rules are shown to edit (the card lists
    /// them, the status line edits the selected one), and where to keep them is chosen (this
    /// session unless Tab changes it), before they are sent. When no rule can allow the call
    /// there is no "always": the status line says so and the card still asks.
    pub(super) fn ask_always_rule(&self, ctx: &mut Ctx<'_>) -> Vec<Ask> {
        let Some(a) = self
            .live_here(ctx.screen, ctx.detail())
            .and_then(|l| l.asking.front().cloned())
        else {
            return Vec::new();
        };
        if a.rules.is_empty() {
            return ctx.refuse(
                "No rule can allow this call (see the card), so there is no \"always\": y runs it once, n does not.",
            );
        }
        *ctx.overlay = Overlay::AlwaysRule {
            call_id: a.call_id,
            rules: a.rules.iter().map(|r| Input::with(r)).collect(),
            selected: 0,
            scope: crate::runtime::agent::RuleScope::Session,
        };
        Vec::new()
    }

    /// Runs the asked call and keeps `rules` at `scope`.
    pub(crate) fn reply_always(
        &mut self,
        rules: Vec<String>,
        scope: crate::runtime::agent::RuleScope,
        ctx: &mut Ctx<'_>,
    ) -> Vec<Ask> {
        let mut asks = self.reply_to_call(true, false, None, ctx);
        for a in &mut asks {
            if let Ask::Effect(Effect::Turn(TurnEffect::Command(cmd))) = a
                && let TurnCommand::Approve { call_id, .. } = cmd
            {
                *cmd = TurnCommand::AlwaysAllow {
                    call_id: call_id.clone(),
                    rules: rules.clone(),
                    scope,
                };
            }
        }
        if !asks.is_empty() {
            ctx.say(match rules.as_slice() {
                [one] => format!(
                    "Allowed; `{}` is kept for {}.",
                    crate::sanitize::line(one),
                    scope.label()
                ),
                many => format!(
                    "Allowed; {} rules are kept for {} (/permissions lists them).",
                    many.len(),
                    scope.label()
                ),
            });
        }
        asks
    }

    /// The reason for denying the asked call is typed next.
    pub(super) fn ask_deny_reason(&self, ctx: &mut Ctx<'_>) -> Vec<Ask> {
        if let Some(id) = self
            .live_here(ctx.screen, ctx.detail())
            .and_then(|l| l.asking.front().map(|a| a.call_id.clone()))
        {
            *ctx.overlay = Overlay::DenyReason {
                call_id: id,
                input: Input::default(),
            };
        }
        Vec::new()
    }

    /// The calls a stopped session left are marked as never run (the model is told).
    pub(super) fn mark_interrupted(ctx: &mut Ctx<'_>) -> Vec<Ask> {
        let Some(d) = ctx.detail.as_mut() else {
            return Vec::new();
        };
        let calls: Vec<String> = d.interrupted.drain(..).map(|c| c.id).collect();
        let id = d.id.clone();
        ctx.say("Marked interrupted: the model will be told they did not run.");
        vec![Ask::Request(Request::MarkInterrupted { id, calls })]
    }
}
