//! A plan run's events: the proposed plan, each step starting and finishing, and a step's
//! own turn shown like the turn's; and the user's answer to a proposed plan.

use super::Conversation;
use crate::runtime::agent::{TurnCommand, TurnEvent};
use crate::sanitize;
use crate::session::{Plan, StepFailure};
use crate::tui::dialog::{Overlay, PlanAsk};
use crate::tui::effect::{Effect, TurnEffect};
use crate::tui::input::Input;
use crate::tui::live::elapsed;
use crate::tui::seam::{Ask, Ctx};

impl Conversation {
    /// A plan run proposes its plan (or runs an approved one).
    pub(super) fn plan_proposed(
        &mut self,
        plan: Plan,
        layers: Vec<Vec<String>>,
        approved: bool,
        ctx: &mut Ctx<'_>,
    ) -> Vec<Ask> {
        let n = plan.steps.len();
        if approved {
            ctx.say(format!("Running the plan ({n} steps)…"));
        } else {
            let steps = plan
                .steps
                .iter()
                .map(|s| {
                    (
                        sanitize::line(&s.id).into_owned(),
                        sanitize::line(&s.title).into_owned(),
                    )
                })
                .collect();
            let layers = layers
                .iter()
                .map(|l| l.iter().map(|id| sanitize::line(id).into_owned()).collect())
                .collect();
            *ctx.overlay = Overlay::Plan(PlanAsk {
                layers,
                steps,
                dropping: None,
            });
            self.card_shown(ctx.now_ms);
            ctx.say(format!(
                "The model proposes a plan of {n} steps: y runs it, n rejects it, d drops steps."
            ));
        }
        Vec::new()
    }

    /// A plan step's state changed in the store: the Plan tab shows it, the live cell
    /// says where the run is.
    pub(super) fn step_started(
        &mut self,
        step_id: String,
        title: String,
        retry: Option<String>,
        ctx: &mut Ctx<'_>,
    ) -> Vec<Ask> {
        let id = sanitize::line(&step_id).into_owned();
        let title = sanitize::line(&title).into_owned();
        let again = retry.map_or(String::new(), |r| {
            format!(" (again: {})", sanitize::line(&r))
        });
        if let Some(l) = self.turn.live_mut() {
            l.steps.push(format!("▸ {id} · {title}{again}"));
        }
        ctx.say(format!("Step {id}: {title}{again}"));
        vec![Ask::RefreshDetail]
    }

    pub(super) fn step_finished(
        &mut self,
        step_id: String,
        outcome: Result<String, StepFailure>,
        elapsed_ms: u64,
        ctx: &mut Ctx<'_>,
    ) -> Vec<Ask> {
        let id = sanitize::line(&step_id).into_owned();
        let took = elapsed(elapsed_ms as i64);
        let line = match &outcome {
            Ok(_) => format!("✓ {id} done in {took}"),
            Err(f) => format!(
                "✗ {id} {}: {}",
                sanitize::line(&f.error_type),
                sanitize::line(&f.message)
            ),
        };
        if let Some(l) = self.turn.live_mut() {
            // The step's text and calls are in its own session now (the Plan tab
            // opens it); the progress line stays, and so do the calls of steps
            // still running beside it.
            if l.following.as_ref().is_none_or(|f| *f == step_id) {
                l.following = None;
                l.text.clear();
                l.reasoning.clear();
                l.stored_text.clear();
                l.stored_seq = 0;
            }
            l.cards.retain(|c| {
                l.asking.iter().any(|a| a.is(c)) || c.step.as_ref().is_some_and(|s| *s != step_id)
            });
            l.steps.push(line.clone());
        }
        ctx.say(line);
        vec![Ask::RefreshDetail]
    }

    /// A step's sub-turn: its text, calls and approvals show like a turn's own.
    pub(super) fn step_event(
        &mut self,
        step_id: String,
        event: Box<TurnEvent>,
        ctx: &mut Ctx<'_>,
    ) -> Vec<Ask> {
        let streamed = matches!(
            event.as_ref(),
            TurnEvent::TextDelta(_)
                | TurnEvent::ReasoningDelta(_)
                | TurnEvent::AssistantStored { .. }
        );
        if let Some(l) = self.turn.live_mut()
            && streamed
            && *l.following.get_or_insert_with(|| step_id.clone()) != step_id
        {
            // Another step streams beside the followed one: its text is stored in
            // its own session; only what it spent shows here.
            if let TurnEvent::AssistantStored { usage, .. } = event.as_ref() {
                l.usage.input_tokens += usage.input_tokens;
                l.usage.output_tokens += usage.output_tokens;
            }
            return Vec::new();
        }
        let result_of = match event.as_ref() {
            TurnEvent::ToolResult { call_id, .. } => Some(call_id.clone()),
            _ => None,
        };
        let stored = matches!(event.as_ref(), TurnEvent::AssistantStored { .. });
        if let Some(l) = self.turn.live_mut() {
            l.current_step = Some(step_id);
        }
        let asks = self.on_turn(*event, ctx);
        // The step's messages are stored in its own session, never in the open
        // transcript: they stay in the live cell until the step ends.
        if let Some(l) = self.turn.live_mut() {
            if stored {
                l.stored_seq = i64::MAX;
            }
            if let Some(c) = result_of.and_then(|id| l.card_mut(&id)) {
                c.result_seq = None;
            }
            l.current_step = None;
        }
        asks
    }
}

impl Conversation {
    /// Answers the proposed plan.
    pub(crate) fn answer_plan(cmd: TurnCommand, ctx: &mut Ctx<'_>) -> Vec<Ask> {
        *ctx.overlay = Overlay::None;
        ctx.say(match &cmd {
            TurnCommand::ApprovePlan => "Running the plan…".to_string(),
            TurnCommand::RejectPlan => "Plan rejected; nothing runs.".to_string(),
            TurnCommand::EditPlan { drop } => format!(
                "Dropping {}; the plan is proposed again.",
                sanitize::line(&drop.join(", "))
            ),
            _ => String::new(),
        });
        vec![Ask::Effect(Effect::Turn(TurnEffect::Command(cmd)))]
    }

    /// `d` over a proposed plan: the ids of the steps to drop are typed next.
    pub(super) fn plan_drop(ctx: &mut Ctx<'_>) -> Vec<Ask> {
        if let Overlay::Plan(p) = ctx.overlay {
            p.dropping = Some(Input::default());
        }
        Vec::new()
    }
}
