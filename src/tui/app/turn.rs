//! Events of a running agent turn become the live cell (streamed text, tool cards, the
//! approval being asked) and the status line; what a turn stored is this process's own write,
//! which the `data_version` poll does not report, so the open session is refreshed here.
//! Starting, answering and cancelling turns: the effects the app asks of the agent.

use super::slash::PlanOpts;
use super::state::{Overlay, PlanAsk, Screen};
use super::{App, short};
use crate::runtime::agent::{FinishReason, TurnCommand, TurnEvent};
use crate::sanitize;
use crate::tui::effect::{Effect, TurnEffect};
use crate::tui::live::{Asked, Card, CardState, Live, elapsed};

/// What the runtime appends to the output of a command the user's cancel killed.
pub const CANCELLED_MARK: &str = "[cancelled by the user;";

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

impl App {
    /// Whether the open session is the live turn's.
    fn turn_is_open(&self) -> bool {
        match (
            self.live.as_ref().and_then(|l| l.session_id.as_ref()),
            &self.detail,
        ) {
            (Some(s), Some(d)) => *s == d.id,
            _ => false,
        }
    }

    /// What a one-call intent of the agent came to (`/compact`, `/model NAME`,
    /// `/approve network`, `/skill`).
    pub(super) fn outcome(&mut self, o: crate::tui::Outcome) -> Vec<Effect> {
        use crate::tui::Intent;
        let ok = o.result.is_ok();
        let msg = sanitize::line(o.result.as_ref().unwrap_or_else(|e| e)).into_owned();
        match (o.intent, ok) {
            (Intent::Model, true) => {
                self.say(msg);
                let mut effects = self.refresh_detail();
                effects.extend(self.reload_list());
                effects
            }
            (Intent::Model, false) => {
                self.model_switch = None;
                self.fail(msg);
                Vec::new()
            }
            (Intent::Compact, true) => {
                // The transcript starts again at #1: a finished turn's cell (its prompt, text
                // and cards) must not be drawn again after the summary.
                if self.live.as_ref().is_some_and(|l| l.finished) {
                    self.live = None;
                }
                self.say(msg);
                let mut effects = self.refresh_detail();
                effects.extend(self.reload_list());
                effects
            }
            (Intent::Compact | Intent::Network | Intent::Skill, false) => {
                self.fail(msg);
                Vec::new()
            }
            (Intent::Network | Intent::Skill, true) => {
                self.say(msg);
                Vec::new()
            }
        }
    }

    pub(super) fn turn_event(&mut self, event: TurnEvent) -> Vec<Effect> {
        let now = self.now_ms;
        match event {
            TurnEvent::Started { session_id } => {
                self.turn_running = true;
                let draft = self.draft;
                // A turn this app did not start here (a test, a future steering front end)
                // is shown all the same.
                let l = self.live.get_or_insert_with(|| Live {
                    started_ms: now,
                    ..Live::default()
                });
                l.session_id = Some(session_id.clone());
                if draft && self.screen == Screen::Conversation {
                    // The new session exists now: show it like any other.
                    self.draft = false;
                    let effects = self.resume(&session_id);
                    self.say(format!("New session {}.", short(&session_id)));
                    return effects;
                }
                if self.turn_is_open() {
                    return self.refresh_detail();
                }
                Vec::new()
            }
            TurnEvent::TextDelta(t) => {
                if let Some(l) = self.live.as_mut() {
                    l.text.push_str(&t);
                    l.chunks += 1;
                }
                Vec::new()
            }
            TurnEvent::ReasoningDelta(t) => {
                if let Some(l) = self.live.as_mut() {
                    l.reasoning.push_str(&t);
                    l.chunks += 1;
                }
                Vec::new()
            }
            TurnEvent::AssistantStored { seq, usage } => {
                if let Some(l) = self.live.as_mut() {
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
                self.refresh_open_turn()
            }
            TurnEvent::ToolCall {
                call,
                kind,
                summary,
            } => {
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
            TurnEvent::ApprovalNeeded { call, reason, .. } => {
                if self.live.as_ref().is_some_and(|l| l.asking.is_empty()) {
                    self.card_shown();
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
                if self.live_here().is_none() {
                    self.say("A tool call waits for your approval: open its session to answer.");
                }
                Vec::new()
            }
            TurnEvent::ToolResult {
                call_id,
                text,
                is_error,
                seq,
            } => {
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
                self.refresh_open_turn()
            }
            TurnEvent::PlanProposed {
                plan,
                layers,
                approved,
            } => {
                let n = plan.steps.len();
                if approved {
                    self.say(format!("Running the plan ({n} steps)…"));
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
                    self.overlay = Overlay::Plan(PlanAsk {
                        layers,
                        steps,
                        dropping: None,
                    });
                    self.card_shown();
                    self.say(format!(
                        "The model proposes a plan of {n} steps: y runs it, n rejects it, d drops steps."
                    ));
                }
                Vec::new()
            }
            // A plan step's state changed in the store: the Plan tab shows it, the live cell
            // says where the run is.
            TurnEvent::StepStarted {
                step_id,
                title,
                retry,
                ..
            } => {
                let id = sanitize::line(&step_id).into_owned();
                let title = sanitize::line(&title).into_owned();
                let again = retry.map_or(String::new(), |r| {
                    format!(" (again: {})", sanitize::line(&r))
                });
                if let Some(l) = self.live.as_mut() {
                    l.steps.push(format!("▸ {id} · {title}{again}"));
                }
                self.say(format!("Step {id}: {title}{again}"));
                self.refresh_detail()
            }
            TurnEvent::StepFinished {
                step_id,
                outcome,
                elapsed_ms,
                ..
            } => {
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
                if let Some(l) = self.live.as_mut() {
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
                        l.asking.iter().any(|a| a.is(c))
                            || c.step.as_ref().is_some_and(|s| *s != step_id)
                    });
                    l.steps.push(line.clone());
                }
                self.say(line);
                self.refresh_detail()
            }
            // A step's sub-turn: its text, calls and approvals show like a turn's own.
            TurnEvent::Step { step_id, event } => {
                let streamed = matches!(
                    event.as_ref(),
                    TurnEvent::TextDelta(_)
                        | TurnEvent::ReasoningDelta(_)
                        | TurnEvent::AssistantStored { .. }
                );
                if let Some(l) = self.live.as_mut()
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
                if let Some(l) = self.live.as_mut() {
                    l.current_step = Some(step_id.clone());
                }
                let effects = self.turn_event(*event);
                // The step's messages are stored in its own session, never in the open
                // transcript: they stay in the live cell until the step ends.
                if let Some(l) = self.live.as_mut() {
                    if stored {
                        l.stored_seq = i64::MAX;
                    }
                    if let Some(c) = result_of.and_then(|id| l.card_mut(&id)) {
                        c.result_seq = None;
                    }
                    l.current_step = None;
                }
                effects
            }
            TurnEvent::Compacting { message } => {
                self.say(sanitize::line(&message).into_owned());
                Vec::new()
            }
            TurnEvent::CompactionFailed { message } => {
                self.fail(sanitize::line(&message).into_owned());
                Vec::new()
            }
            TurnEvent::Warning { code, message } => {
                let msg = sanitize::line(&message).into_owned();
                match code.as_str() {
                    code if code.ends_with("_failed") && code != "mcp_server_failed" => {
                        self.fail(msg)
                    }
                    "mcp_server_failed" => {
                        // "MCP server `name`: why": the status line keeps the name.
                        let name = msg.split('`').nth(1).unwrap_or(&msg).to_string();
                        if !self.agent.mcp_failed.contains(&name) {
                            self.agent.mcp_failed.push(name);
                        }
                        self.fail(msg);
                    }
                    _ => self.say(msg),
                }
                Vec::new()
            }
            TurnEvent::Finished { reason, usage } => {
                self.turn_running = false;
                // A plan nobody answered (the run was cancelled) is no longer asked about.
                if matches!(self.overlay, Overlay::Plan(_)) {
                    self.overlay = Overlay::None;
                }
                let Some(l) = self.live.as_mut() else {
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
                let took = elapsed(now - l.started_ms);
                let tokens =
                    crate::tui::views::fmt_tokens(usage.input_tokens + usage.output_tokens);
                let (error, said) = match reason {
                    FinishReason::Completed => {
                        (None, Ok(format!("Done in {took} · {tokens} tokens.")))
                    }
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
                        let code = sanitize::line(&code).into_owned();
                        (
                            Some(format!("{m} ({code})")),
                            Err(format!("The turn failed: {m} ({code}).")),
                        )
                    }
                };
                l.error = error;
                match said {
                    Ok(m) => self.say(m),
                    Err(m) => self.fail(m),
                }
                let mut effects = self.refresh_open_turn();
                // The session is the newest now.
                effects.extend(self.reload_top());
                effects
            }
        }
    }

    fn refresh_open_turn(&mut self) -> Vec<Effect> {
        if self.turn_is_open() {
            self.refresh_detail()
        } else {
            Vec::new()
        }
    }

    /// Starts a turn in the open session (or the new one being written).
    pub(super) fn start_turn(&mut self, text: Option<String>) -> Vec<Effect> {
        self.start_turn_with(text, Vec::new())
    }

    /// Starts a turn whose message carries images (stored with it by the runtime).
    fn start_turn_with(
        &mut self,
        text: Option<String>,
        images: Vec<std::path::PathBuf>,
    ) -> Vec<Effect> {
        let Some(session_id) = self.begin_live(text.clone()) else {
            return Vec::new();
        };
        self.say("Sending… Esc cancels.");
        vec![Effect::Turn(TurnEffect::Start {
            session_id,
            text,
            images,
            approval: self.approval(),
        })]
    }

    /// Starts a plan run for `goal` in the open session (or the new one being written); with
    /// no goal, the open session's unfinished plan run goes on.
    pub(super) fn start_plan(&mut self, goal: Option<String>, opts: PlanOpts) -> Vec<Effect> {
        let resuming = goal.is_none();
        let Some(session_id) = self.begin_live(goal.clone()) else {
            return Vec::new();
        };
        if !resuming {
            self.say("Drafting a plan… Esc cancels.");
        }
        vec![Effect::Turn(TurnEffect::Plan {
            session_id,
            goal,
            approval: self.approval(),
            width: opts.width,
            retry_failed: opts.retry_failed,
        })]
    }

    /// Answers the proposed plan.
    pub(super) fn answer_plan(&mut self, cmd: TurnCommand) -> Vec<Effect> {
        self.overlay = Overlay::None;
        self.say(match &cmd {
            TurnCommand::ApprovePlan => "Running the plan…".to_string(),
            TurnCommand::RejectPlan => "Plan rejected; nothing runs.".to_string(),
            TurnCommand::EditPlan { drop } => format!(
                "Dropping {}; the plan is proposed again.",
                sanitize::line(&drop.join(", "))
            ),
            _ => String::new(),
        });
        vec![Effect::Turn(TurnEffect::Command(cmd))]
    }

    /// The live cell of a turn about to start in the open session (or the new one being
    /// written); `None` when there is no session to start it in, else the session (`None`:
    /// a new one).
    fn begin_live(&mut self, text: Option<String>) -> Option<Option<String>> {
        let session_id = if self.draft {
            None
        } else {
            match self.detail.as_ref() {
                Some(d) => Some(d.id.clone()),
                None => return None,
            }
        };
        let base_seq = self
            .detail
            .as_ref()
            .and_then(|d| d.header.as_ref())
            .map_or(0, |h| h.last_seq);
        self.live = Some(Live {
            session_id: session_id.clone(),
            started_ms: self.now_ms,
            prompt: text,
            base_seq,
            ..Live::default()
        });
        self.turn_running = true;
        if let Some(t) = self.detail.as_mut().and_then(|d| d.transcript.as_mut()) {
            t.follow_end = true;
            t.selected = None;
        }
        Some(session_id)
    }

    /// Sends a message: with images, the turn stores them (as assets of the session) with
    /// the message.
    pub(super) fn send(&mut self, text: String) -> Vec<Effect> {
        if self.attachments.is_empty() {
            return self.start_turn(Some(text));
        }
        if self.draft || self.detail.is_none() {
            self.composer.set_text(&text);
            self.fail("Images attach to a saved session: send a first message, then /attach.");
            return Vec::new();
        }
        let images = std::mem::take(&mut self.attachments);
        self.start_turn_with(Some(text), images)
    }

    /// Answers the call asked about now.
    pub(super) fn reply_to_call(
        &mut self,
        approve: bool,
        always: bool,
        reason: Option<String>,
    ) -> Vec<Effect> {
        let Some(asked) = self.live_here().and_then(|l| l.asking.front().cloned()) else {
            return Vec::new();
        };
        let id = asked.call_id.clone();
        // The next card (if one is queued) waits a moment before it takes an answer.
        self.card_shown();
        if let Some(l) = self.live.as_mut() {
            l.asking.pop_front();
            if let Some(c) = l.cards.iter_mut().find(|c| asked.is(c)) {
                c.since_ms = self.now_ms;
                c.state = if approve {
                    CardState::Running
                } else {
                    CardState::Denied
                };
            }
        }
        let cmd = if approve {
            self.say(if always {
                "Allowed for the rest of this session."
            } else {
                "Allowed."
            });
            TurnCommand::Approve {
                call_id: id,
                always,
            }
        } else {
            self.say("Denied; the model is told.");
            TurnCommand::Deny {
                call_id: id,
                reason,
            }
        };
        vec![Effect::Turn(TurnEffect::Command(cmd))]
    }

    /// Cancels the running turn.
    pub(super) fn cancel_turn(&mut self) -> Vec<Effect> {
        match self.live.as_mut() {
            Some(l) if !l.finished && !l.cancelling => {
                l.cancelling = true;
                self.say("Cancelling… what arrived is kept. Ctrl-C again quits.");
                vec![Effect::Turn(TurnEffect::Command(TurnCommand::Cancel))]
            }
            _ => Vec::new(),
        }
    }
}
