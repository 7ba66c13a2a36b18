//! A turn's own stream: it started, text and reasoning arrive, the message is stored,
//! warnings and outcomes, and how it finished.

use super::Conversation;
use crate::format;
use crate::runtime::agent::FinishReason;
use crate::sanitize;
use crate::session::Usage;
use crate::tui::dialog::Overlay;
use crate::tui::live::{CardState, Live, elapsed};
use crate::tui::screen::Screen;
use crate::tui::seam::{Ask, Ctx};

impl Conversation {
    /// The turn opened its session (a new session exists now).
    pub(super) fn turn_started(&mut self, session_id: String, ctx: &Ctx<'_>) -> Vec<Ask> {
        let now = ctx.now_ms;
        let draft = self.draft;
        // A turn this app did not start here (a test, a future steering front end)
        // is shown all the same.
        let l = self.turn.started(|| Live {
            started_ms: now,
            ..Live::default()
        });
        l.session_id = Some(session_id.clone());
        if draft && ctx.screen == Screen::Conversation {
            // The new session exists now: show it like any other.
            self.draft = false;
            return vec![Ask::OpenNew(session_id)];
        }
        self.refresh_open_turn(ctx)
    }

    pub(super) fn text_delta(&mut self, t: String) -> Vec<Ask> {
        if let Some(l) = self.turn.live_mut() {
            l.text.push_str(&t);
            l.chunks += 1;
        }
        Vec::new()
    }

    pub(super) fn reasoning_delta(&mut self, t: String) -> Vec<Ask> {
        if let Some(l) = self.turn.live_mut() {
            l.reasoning.push_str(&t);
            l.chunks += 1;
        }
        Vec::new()
    }

    /// The streamed message is stored.
    pub(super) fn assistant_stored(&mut self, seq: i64, usage: Usage, ctx: &Ctx<'_>) -> Vec<Ask> {
        if let Some(l) = self.turn.live_mut() {
            // The stored message replaces the streamed text once the transcript has
            // it; until the refresh lands the text stays (no flicker to empty).
            l.stored_text = std::mem::take(&mut l.text);
            l.stored_seq = seq;
            l.reasoning.clear();
            l.usage.input_tokens += usage.input_tokens;
            l.usage.output_tokens += usage.output_tokens;
            if usage.input_tokens > 0 {
                l.context = usage.input_tokens + usage.output_tokens;
            }
        }
        self.refresh_open_turn(ctx)
    }

    /// A warning the turn reports (a failed MCP server, a skill, a replay).
    /// `code` is the warning's code as text (`as_str()` of the event's, whatever its type).
    pub(super) fn turn_warning(
        &mut self,
        code: &str,
        message: String,
        ctx: &mut Ctx<'_>,
    ) -> Vec<Ask> {
        let msg = sanitize::line(&message).into_owned();
        match code {
            code if code.ends_with("_failed") && code != "mcp_server_failed" => ctx.fail(msg),
            "mcp_server_failed" => {
                // "MCP server `name`: why": the status line keeps the name.
                let name = msg.split('`').nth(1).unwrap_or(&msg).to_string();
                self.agent.mcp_failed(name);
                ctx.fail(msg);
            }
            _ => ctx.say(msg),
        }
        Vec::new()
    }

    /// The turn ended: its cards settle and the status line says how.
    pub(super) fn turn_finished(
        &mut self,
        reason: FinishReason,
        usage: Usage,
        ctx: &mut Ctx<'_>,
    ) -> Vec<Ask> {
        let now = ctx.now_ms;
        self.turn.stop();
        // A plan nobody answered (the run was cancelled) is no longer asked about.
        if matches!(ctx.overlay, Overlay::Plan(_)) {
            *ctx.overlay = Overlay::None;
        }
        let Some(l) = self.turn.live_mut() else {
            return Vec::new();
        };
        l.finished = true;
        l.asking.clear();
        for c in l.cards.iter_mut() {
            if matches!(c.state, CardState::Running | CardState::Waiting(_)) {
                c.state = CardState::Interrupted;
                c.ended_ms = Some(now);
            }
        }
        let reason_word = match &reason {
            FinishReason::Completed => None,
            FinishReason::Cancelled => Some("the turn was cancelled"),
            FinishReason::LimitReached(_) => Some("a budget stopped the turn"),
            FinishReason::Failed { .. } => Some("the turn failed"),
        };
        let took = elapsed(now - l.started_ms);
        let tokens = format::compact(usage.input_tokens + usage.output_tokens);
        let (error, said) = match reason {
            FinishReason::Completed => (None, Ok(format!("Done in {took} · {tokens} tokens."))),
            FinishReason::Cancelled => (
                None,
                Ok("Cancelled; what arrived is kept. Type to go on.".to_string()),
            ),
            FinishReason::LimitReached(why) => {
                let why = sanitize::line(&why).into_owned();
                (
                    Some(format!("limit reached: {why}")),
                    Err(format!(
                        "Stopped: {why}. The session is paused; /limits shows the budgets."
                    )),
                )
            }
            FinishReason::Failed { code, message } => {
                let m = sanitize::line(&message).into_owned();
                let code = sanitize::line(code.as_str()).into_owned();
                (
                    Some(format!("{m} ({code})")),
                    Err(format!("The turn failed: {m} ({code}).")),
                )
            }
        };
        l.error = error;
        // The queue goes on after a turn that completed; after any other end it is held.
        let hold = match &reason_word {
            Some(w) => l.session_id.clone().map(|s| (s, (*w).to_string())),
            None => None,
        };
        self.delivery.turn_ended(hold);
        // The session's stored status says again whether its queue is held.
        match said {
            Ok(m) => ctx.say(m),
            Err(m) => ctx.fail(m),
        }
        let mut asks = self.refresh_open_turn(ctx);
        // The session is the newest now.
        asks.push(Ask::ReloadTop);
        asks
    }
}
