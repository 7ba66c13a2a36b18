//! A running turn's events go to the conversation (`tui::conversation`, which owns their
//! handling); `turn_event` hands it a narrow view of the router and carries out what it asks
//! back (refreshing the open session, the list, opening a new session).
//! Starting, answering and cancelling turns: the effects the app asks of the agent.

use super::App;
use super::state::Overlay;
use crate::format::short_id;
use crate::runtime::agent::{TurnCommand, TurnEvent};
use crate::sanitize;
use crate::tui::conversation::commands::PlanOpts;
use crate::tui::conversation::{Ask, TurnCtx};
use crate::tui::effect::{Effect, TurnEffect};
use crate::tui::live::{CardState, Live};

impl App {
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
                self.conv.model_switch = None;
                self.fail(msg);
                Vec::new()
            }
            (Intent::Compact, true) => {
                // The transcript starts again at #1: a finished turn's cell (its prompt, text
                // and cards) must not be drawn again after the summary.
                if self.conv.live.as_ref().is_some_and(|l| l.finished) {
                    self.conv.live = None;
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

    /// Routes a turn's event to the conversation, then carries out what it asks, in order.
    pub(super) fn turn_event(&mut self, event: TurnEvent) -> Vec<Effect> {
        let mut ctx = TurnCtx {
            now_ms: self.now_ms,
            screen: self.screen,
            detail: self.browse.detail.as_ref(),
            overlay: &mut self.overlay,
            status: &mut self.status,
        };
        let asks = self.conv.on_turn(event, &mut ctx);
        let mut effects = Vec::new();
        for ask in asks {
            effects.extend(self.carry(ask));
        }
        effects
    }

    /// Carries out what the conversation asked of the router.
    pub(super) fn carry(&mut self, ask: Ask) -> Vec<Effect> {
        match ask {
            Ask::Effect(e) => vec![e],
            Ask::RefreshDetail => self.refresh_detail(),
            Ask::ReloadTop => self.reload_top(),
            Ask::OpenNew(id) => {
                let effects = self.resume(&id);
                self.say(format!("New session {}.", short_id(&id, 8)));
                effects
            }
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
        let session_id = if self.conv.draft {
            None
        } else {
            match self.browse.detail.as_ref() {
                Some(d) => Some(d.id.clone()),
                None => return None,
            }
        };
        let base_seq = self
            .browse
            .detail
            .as_ref()
            .and_then(|d| d.header.as_ref())
            .map_or(0, |h| h.last_seq);
        self.conv.live = Some(Live {
            session_id: session_id.clone(),
            started_ms: self.now_ms,
            prompt: text,
            base_seq,
            ..Live::default()
        });
        self.conv.turn_running = true;
        if let Some(t) = self
            .browse
            .detail
            .as_mut()
            .and_then(|d| d.transcript.as_mut())
        {
            t.follow_end = true;
            t.selected = None;
        }
        Some(session_id)
    }

    /// Sends a message: with images, the turn stores them (as assets of the session) with
    /// the message.
    pub(super) fn send(&mut self, text: String) -> Vec<Effect> {
        if self.conv.attachments.is_empty() {
            return self.start_turn(Some(text));
        }
        if self.conv.draft || self.browse.detail.is_none() {
            self.conv.composer.set_text(&text);
            self.fail("Images attach to a saved session: send a first message, then /attach.");
            return Vec::new();
        }
        let images = std::mem::take(&mut self.conv.attachments);
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
        if let Some(l) = self.conv.live.as_mut() {
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
        match self.conv.live.as_mut() {
            Some(l) if !l.finished && !l.cancelling => {
                l.cancelling = true;
                self.say("Cancelling… what arrived is kept. Ctrl-C again quits.");
                vec![Effect::Turn(TurnEffect::Command(TurnCommand::Cancel))]
            }
            _ => Vec::new(),
        }
    }
}
