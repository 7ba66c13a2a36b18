//! Starting and stopping turns: Enter in the editor (a message or a slash command), a plan
//! run, the calls a stopped session left run again, and cancelling (the effects the
//! conversation asks of the agent), and what is left when the agent refuses one.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::Conversation;
use super::commands::PlanOpts;
use crate::runtime::agent::TurnCommand;
use crate::sanitize;
use crate::tui::composer::Outcome;
use crate::tui::effect::{Effect, TurnEffect};
use crate::tui::live::Live;
use crate::tui::seam::{Ask, Ctx};

impl Conversation {
    /// Enter in the editor: a slash command runs or the message is sent.
    pub(super) fn submit(&mut self, ctx: &mut Ctx<'_>) -> Vec<Ask> {
        if !self.draft && ctx.detail.is_none() {
            return Vec::new();
        }
        // `/word`: a command; `/etc/hosts is odd` (a second `/` in the first word): a message,
        // as `neocode run` decides.
        let typed = self.editor.composer().text();
        let slash = typed.trim() == "/"
            || crate::runtime::extensions::commands::invocation(&typed).is_some();
        if !slash && self.next_model(ctx.detail()).is_ok() && self.turn_active() {
            let Some(text) = self.take_draft() else {
                return Vec::new();
            };
            return self.queue_message(text, false, ctx);
        }
        if !slash && self.editor.composer().text().trim().is_empty() {
            // Enter on an empty editor retries a failed turn, else sends the next queued
            // message (a held queue goes on, after the retried turn).
            self.release_queue(ctx);
            if self.retry_offered(ctx.detail()) {
                if let Some(why) = self.send_blocked(ctx.detail()) {
                    return ctx.refuse(why);
                }
                let asks = self.start_turn(None, ctx);
                ctx.say("Retrying the turn that failed… Esc cancels.");
                return asks;
            }
            return self.deliver_next(ctx);
        }
        if !slash && let Some(why) = self.send_blocked(ctx.detail()) {
            return ctx.refuse(why);
        }
        let Some(text) = self.take_draft() else {
            return Vec::new();
        };
        if slash {
            return self.slash(text.trim(), ctx);
        }
        self.send(text, ctx)
    }

    /// The editor's text submitted (Enter, as the editor takes it): the message, or `None`
    /// when the editor keeps it.
    fn take_draft(&mut self) -> Option<String> {
        match self
            .editor
            .composer_mut()
            .key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE))
        {
            Outcome::Submit(text) => Some(text),
            _ => None,
        }
    }

    /// Whether Enter on the empty editor retries: the open session's last turn failed (a
    /// provider or tool failure, here or before a restart; not a budget stop or a cancel)
    /// and nothing runs.
    pub(crate) fn retry_offered(&self, detail: Option<&crate::tui::browse::Detail>) -> bool {
        !self.turn_active()
            && !self.draft
            && detail
                .and_then(|d| d.header.as_ref())
                .is_some_and(|h| h.status == crate::session::Status::Failed)
    }

    /// Why a message cannot be sent now, if it cannot (the editor keeps the text).
    pub(crate) fn send_blocked(
        &self,
        detail: Option<&crate::tui::browse::Detail>,
    ) -> Option<String> {
        if let Err(m) = &self.next_model(detail) {
            return Some(format!("Cannot send: {}", sanitize::line(m.as_str())));
        }
        if self.turn_active() {
            return Some("A turn is running: wait for it, or Esc to cancel it.".into());
        }
        // A session marked running elsewhere is not refused here: the agent's lease knows
        // whether that process still lives (a crash leaves the mark behind).
        None
    }

    /// Starts a turn in the open session (or the new one being written).
    pub(super) fn start_turn(&mut self, text: Option<String>, ctx: &mut Ctx<'_>) -> Vec<Ask> {
        self.start_turn_with(text, Vec::new(), ctx)
    }

    /// Starts a turn whose message carries images (stored with it by the runtime).
    fn start_turn_with(
        &mut self,
        text: Option<String>,
        images: Vec<std::path::PathBuf>,
        ctx: &mut Ctx<'_>,
    ) -> Vec<Ask> {
        let Some(session_id) = self.begin_live(text.clone(), ctx) else {
            return Vec::new();
        };
        // A turn the user starts lets a held queue go on after it.
        self.release_queue(ctx);
        ctx.say("Sending… Esc cancels.");
        vec![Ask::Effect(Effect::Turn(TurnEffect::Start {
            session_id,
            text,
            images,
            approval: self.approval(),
        }))]
    }

    /// Starts a plan run for `goal` in the open session (or the new one being written); with
    /// no goal, the open session's unfinished plan run goes on.
    pub(super) fn start_plan(
        &mut self,
        goal: Option<String>,
        opts: PlanOpts,
        ctx: &mut Ctx<'_>,
    ) -> Vec<Ask> {
        let resuming = goal.is_none();
        let Some(session_id) = self.begin_live(goal.clone(), ctx) else {
            return Vec::new();
        };
        if !resuming {
            ctx.say("Drafting a plan… Esc cancels.");
        }
        vec![Ask::Effect(Effect::Turn(TurnEffect::Plan {
            session_id,
            goal,
            approval: self.approval(),
            width: opts.width,
            retry_failed: opts.retry_failed,
        }))]
    }

    /// The live cell of a turn about to start in the open session (or the new one being
    /// written); `None` when there is no session to start it in, else the session (`None`:
    /// a new one).
    pub(super) fn begin_live(
        &mut self,
        text: Option<String>,
        ctx: &mut Ctx<'_>,
    ) -> Option<Option<String>> {
        let session_id = if self.draft {
            None
        } else {
            match ctx.detail() {
                Some(d) => Some(d.id.clone()),
                None => return None,
            }
        };
        let base_seq = ctx
            .detail()
            .and_then(|d| d.header.as_ref())
            .map_or(0, |h| h.last_seq);
        let cost_at_start = ctx
            .detail()
            .and_then(|d| d.header.as_ref())
            .and_then(|h| h.ledger.as_ref())
            .and_then(|l| l.usage.cost_usd);
        self.turn.begin(Live {
            session_id: session_id.clone(),
            started_ms: ctx.now_ms,
            prompt: text,
            base_seq,
            cost_at_start,
            ..Live::default()
        });
        if let Some(t) = ctx.detail.as_mut().and_then(|d| d.transcript.as_mut()) {
            t.follow_end = true;
            t.selected = None;
        }
        Some(session_id)
    }

    /// Sends a message: with images, the turn stores them (as assets of the session) with
    /// the message.
    pub(super) fn send(&mut self, text: String, ctx: &mut Ctx<'_>) -> Vec<Ask> {
        // `@path`s of workspace files carry the file's text.
        let text = self.editor.attach_files(text, ctx);
        if self.editor.attachments().is_empty() {
            return self.start_turn(Some(text), ctx);
        }
        if self.draft || ctx.detail.is_none() {
            self.editor.composer_mut().set_text(&text);
            return ctx
                .refuse("Images attach to a saved session: send a first message, then /attach.");
        }
        let images = self.editor.take_attachments();
        self.start_turn_with(Some(text), images, ctx)
    }

    /// Ctrl-R: the calls a stopped session left are run again.
    pub(super) fn rerun_interrupted(&mut self, ctx: &mut Ctx<'_>) -> Vec<Ask> {
        if let Err(m) = &self.next_model(ctx.detail()) {
            let m = sanitize::line(m.as_str()).into_owned();
            return ctx.refuse(format!("Cannot rerun: {m}"));
        }
        if let Some(d) = ctx.detail.as_mut() {
            d.interrupted.clear();
        }
        self.start_turn(None, ctx)
    }

    /// Cancels the running turn.
    pub(crate) fn cancel_turn(&mut self, ctx: &mut Ctx<'_>) -> Vec<Ask> {
        if let Some(child) = self.open_subagent(ctx.detail()) {
            // The open session is a sub-agent of the turn: it alone is cancelled.
            let session_id = child.to_string();
            ctx.say(format!(
                "Cancelling sub-agent {}… its parent goes on.",
                crate::format::short_id(&session_id, 8)
            ));
            return vec![Ask::Effect(Effect::Turn(TurnEffect::CommandTo {
                session_id,
                cmd: TurnCommand::Cancel,
            }))];
        }
        match self.turn.live_mut() {
            Some(l) if !l.finished && !l.cancelling => {
                l.cancelling = true;
                ctx.say("Cancelling… what arrived is kept. Ctrl-C again quits.");
                vec![Ask::Effect(Effect::Turn(TurnEffect::Command(
                    TurnCommand::Cancel,
                )))]
            }
            _ => Vec::new(),
        }
    }

    /// A turn effect could not be carried out (no provider, the session is busy); says why.
    pub(crate) fn turn_refused(&mut self, effect: &TurnEffect, why: &str, ctx: &mut Ctx<'_>) {
        let what = match effect {
            TurnEffect::Start { .. } => {
                // Nothing runs: the live cell goes, the message stays in the history (↑).
                self.turn.clear();
                "start a turn"
            }
            TurnEffect::StartQueued { .. } => {
                // The message stays queued (the row is claimed only once the turn starts).
                self.turn.clear();
                "send the queued message"
            }
            TurnEffect::Plan { .. } => {
                self.turn.clear();
                "start the plan run"
            }
            TurnEffect::Command(_) => "steer the turn",
            TurnEffect::CommandTo { .. } => "cancel the sub-agent",
            TurnEffect::Compact { .. } => "compact",
            TurnEffect::Model { .. } => "switch the model",
            TurnEffect::Models => "list the models",
            TurnEffect::Provider { name: None, .. } => "list the profiles",
            TurnEffect::Provider { name: Some(_), .. } => "switch the profile",
            TurnEffect::AllowNetwork { .. } => "allow the network",
            TurnEffect::Skill { name: None, .. } => "list the skills",
            TurnEffect::Skill { name: Some(_), .. } => "activate the skill",
            TurnEffect::Permissions { .. } => "list the permission rules",
            TurnEffect::RevokeGrant { .. } => "revoke the rule",
        };
        if matches!(effect, TurnEffect::Model { .. }) {
            self.agent.switch_refused();
        }
        ctx.fail(format!("Cannot {what}: {}", sanitize::line(why)));
    }
}
