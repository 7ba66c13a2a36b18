//! A sub-agent's events in the parent's live cell: a progress line when it starts and ends,
//! its calls as cards named after it (its approvals asked like the turn's own), gone from the
//! cell when it ends (they are stored in its own session).

use super::{Ask, Conversation, Ctx};
use crate::runtime::agent::TurnEvent;
use crate::sanitize;

/// How the view names a sub-agent: `sub-agent 1a2b3c4d` (and its profile).
fn label(session_id: &str, agent: Option<&str>) -> String {
    let short: String = session_id.chars().take(8).collect();
    match agent {
        Some(a) => format!(
            "sub-agent {} ({})",
            sanitize::line(&short),
            sanitize::line(a)
        ),
        None => format!("sub-agent {}", sanitize::line(&short)),
    }
}

impl Conversation {
    pub(super) fn subagent_event(
        &mut self,
        session_id: &str,
        call_id: &str,
        agent: Option<&str>,
        event: TurnEvent,
        ctx: &mut Ctx<'_>,
    ) -> Vec<Ask> {
        let who = label(session_id, agent);
        if let Some(l) = self.turn.live_mut() {
            crate::tui::subagents::track(&mut l.subagents, session_id, agent, &event, ctx.now_ms);
            // Named after the task its parent's call gave it (the call's card says it).
            let task = l
                .cards
                .iter()
                .find(|c| c.call.id == call_id && c.step.is_none());
            if let (Some(card), Some(row)) =
                (task, l.subagents.iter_mut().find(|r| r.id == session_id))
                && row.task.is_empty()
            {
                let summary = card.summary.strip_prefix("task ").unwrap_or(&card.summary);
                row.task = sanitize::line(summary).into_owned();
            }
        }
        match event {
            TurnEvent::Started { .. } => {
                if let Some(l) = self.turn.live_mut() {
                    l.steps.push(format!(
                        "▸ {who} started (Ctrl-T: watch, steer or cancel it)"
                    ));
                }
                vec![Ask::RefreshDetail]
            }
            TurnEvent::Finished { reason, usage } => {
                let line = format!(
                    "■ {who} {} · {} tokens",
                    reason.as_str(),
                    usage.input_tokens + usage.output_tokens
                );
                if let Some(l) = self.turn.live_mut() {
                    l.cards.retain(|c| {
                        l.asking.iter().any(|a| a.is(c)) || c.step.as_deref() != Some(&who)
                    });
                    l.steps.push(line.clone());
                }
                ctx.say(line);
                vec![Ask::RefreshDetail]
            }
            TurnEvent::ToolCall {
                call,
                kind,
                summary,
            } => self.in_child(
                &who,
                TurnEvent::ToolCall {
                    call,
                    kind,
                    summary: format!("{who}: {summary}"),
                },
                ctx,
            ),
            e @ (TurnEvent::ToolResult { .. } | TurnEvent::ApprovalNeeded { .. }) => {
                self.in_child(&who, e, ctx)
            }
            _ => Vec::new(),
        }
    }

    /// Applies a child's call event with the child as the card's owner.
    fn in_child(&mut self, who: &str, event: TurnEvent, ctx: &mut Ctx<'_>) -> Vec<Ask> {
        if let Some(l) = self.turn.live_mut() {
            l.current_step = Some(who.to_string());
        }
        let result_of = match &event {
            TurnEvent::ToolResult { call_id, .. } => Some(call_id.clone()),
            _ => None,
        };
        let asks = self.on_turn(event, ctx);
        if let Some(l) = self.turn.live_mut() {
            // Its result is stored in the child's session, not in the open transcript: the
            // card stays in the live cell until the child ends.
            if let Some(c) = result_of.and_then(|id| l.card_mut(&id)) {
                c.result_seq = None;
            }
            l.current_step = None;
        }
        asks
    }
}
