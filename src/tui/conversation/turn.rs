//! Events of a running agent turn become the live cell (streamed text, tool cards, the
//! approval being asked) and the status line. [`Conversation::on_turn`] routes each event to
//! its concern: `stream` (text, stored messages, warnings, the end), `calls` (cards and
//! approvals), `plan_events` (a plan run's steps). What a turn stored is this process's own
//! write, which the `data_version` poll does not report, so the open session's refresh is
//! asked of the router ([`Ask`]), which owns the storage requests and the open session.
//! Also the questions about the turn the router and the views ask (is one running, is it
//! shown here, which policy and model the next one uses).

use super::Conversation;
use crate::runtime::agent::TurnEvent;
use crate::runtime::config::ApprovalPolicy;
use crate::sanitize;
use crate::tui::browse::Detail;
use crate::tui::effect::{Intent, Outcome};
use crate::tui::keymap::Context;
use crate::tui::live::Live;
use crate::tui::screen::Screen;
use crate::tui::seam::{Ask, Ctx};

impl Conversation {
    /// What a one-call intent of the agent came to (`/compact`, `/model NAME`,
    /// `/approve network`, `/skill`).
    pub(crate) fn on_outcome(&mut self, o: Outcome, ctx: &mut Ctx<'_>) -> Vec<Ask> {
        if let (Intent::Models, Ok(names)) = (o.intent, &o.result) {
            self.models_listed(names, ctx);
            return Vec::new();
        }
        let ok = o.result.is_ok();
        let msg = match &o.result {
            Ok(said) => sanitize::line(said),
            Err(e) => sanitize::line(e.as_str()),
        }
        .into_owned();
        match (o.intent, ok) {
            (Intent::Model | Intent::Provider, true) => {
                ctx.say(msg);
                vec![Ask::RefreshDetail, Ask::ReloadList]
            }
            (Intent::Provider, false) => {
                ctx.fail(msg);
                Vec::new()
            }
            (Intent::Model, false) => {
                self.agent.switch_answered();
                ctx.fail(msg);
                Vec::new()
            }
            (Intent::Compact, true) => {
                // The summary is stored after the finished turn's messages: that turn's cell
                // (its prompt, text and cards) must not be drawn again after it.
                self.turn.drop_finished();
                ctx.say(msg);
                vec![Ask::RefreshDetail, Ask::ReloadList]
            }
            (Intent::Compact | Intent::Network | Intent::Skill | Intent::Models, false) => {
                ctx.fail(msg);
                Vec::new()
            }
            (Intent::Network | Intent::Skill | Intent::Models, true) => {
                ctx.say(msg);
                Vec::new()
            }
            (Intent::Revoke, ok) => {
                if ok {
                    ctx.say(msg);
                } else {
                    ctx.fail(msg);
                }
                // The open `/permissions` list is read again.
                let mut asks = vec![Ask::RefreshDetail];
                if let crate::tui::dialog::Overlay::Permissions(d) = &*ctx.overlay {
                    asks.push(Ask::Effect(crate::tui::effect::Effect::Turn(
                        crate::tui::effect::TurnEffect::Permissions {
                            session_id: d.session_id.clone(),
                        },
                    )));
                }
                asks
            }
        }
    }

    /// Takes an event of a running turn; what is left to do comes back in order.
    pub(crate) fn on_turn(&mut self, event: TurnEvent, ctx: &mut Ctx<'_>) -> Vec<Ask> {
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
            TurnEvent::ApprovalNeeded {
                call,
                reason,
                rules,
                ..
            } => self.approval_needed(call, reason, rules, ctx),
            TurnEvent::ToolResult {
                call_id,
                text,
                is_error,
                seq,
                permission,
                diagnostics,
            } => {
                if let Some(c) = self.turn.live_mut().and_then(|l| l.card_mut(&call_id)) {
                    c.diagnostics = diagnostics.map(|d| *d);
                }
                self.tool_result(call_id, text, is_error, seq, permission, ctx)
            }
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
            TurnEvent::Subagent {
                session_id,
                call_id,
                agent,
                event,
            } => self.subagent_event(&session_id, &call_id, agent.as_deref(), *event, ctx),
            TurnEvent::Compacting { message } => {
                ctx.say(sanitize::line(&message).into_owned());
                Vec::new()
            }
            TurnEvent::CompactionFailed { message } => {
                ctx.fail(sanitize::line(&message).into_owned());
                Vec::new()
            }
            TurnEvent::Warning { code, message } => self.turn_warning(code.as_str(), message, ctx),
            TurnEvent::Finished { reason, usage } => self.turn_finished(reason, usage, ctx),
        }
    }

    /// Whether `detail` (the open session) is the live turn's.
    pub(crate) fn turn_is_open(&self, detail: Option<&Detail>) -> bool {
        match (self.turn.live().and_then(|l| l.session_id.as_ref()), detail) {
            (Some(s), Some(d)) => *s == d.id,
            _ => false,
        }
    }

    /// The open session, when it is a sub-agent of the running turn that still runs.
    pub(crate) fn open_subagent<'a>(&self, detail: Option<&'a Detail>) -> Option<&'a str> {
        let d = detail?;
        let l = self.turn.live().filter(|l| !l.finished)?;
        l.subagents
            .iter()
            .any(|r| r.id == d.id && r.running())
            .then_some(d.id.as_str())
    }

    /// The live turn, when it belongs to the session shown in the conversation view (the
    /// screen and the open session are the router's).
    pub(crate) fn live_here(&self, screen: Screen, detail: Option<&Detail>) -> Option<&Live> {
        let l = self.turn.live()?;
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
    pub(crate) fn card_shown(&mut self, now_ms: i64) {
        self.turn.card_shown(now_ms);
    }

    /// The open session is read again when the live turn is its own.
    pub(super) fn refresh_open_turn(&self, ctx: &Ctx<'_>) -> Vec<Ask> {
        if self.turn_is_open(ctx.detail.as_deref()) {
            vec![Ask::RefreshDetail]
        } else {
            Vec::new()
        }
    }

    /// A turn runs (here or in the background) and has not finished.
    pub(crate) fn turn_active(&self) -> bool {
        self.turn.live().is_some_and(|l| !l.finished)
    }

    /// The approval policy of the next turn.
    pub(crate) fn approval(&self) -> ApprovalPolicy {
        self.agent.approval()
    }

    /// The model the next request of the open conversation (`detail`) uses: the session's
    /// own (kept in its header, `/model`), else the configured one. A session that keeps a
    /// `[providers.NAME]` profile (`/provider`) has its model even when nothing else is
    /// configured: the runtime runs it on that profile (and says so if it cannot).
    pub(crate) fn next_model(
        &self,
        detail: Option<&Detail>,
    ) -> Result<String, crate::tui::error::Failure> {
        let d = detail.filter(|_| !self.draft);
        let switched = d.and_then(|d| self.agent.switched_model(&d.id));
        let header = d.and_then(|d| d.header.as_ref());
        let own = switched.or_else(|| header.and_then(crate::runtime::agent::session_model));
        let profiled = header.is_some_and(|h| h.profile.is_some());
        match (self.agent.provider(), own) {
            (Ok(_), Some(m)) => Ok(m.to_string()),
            (Err(_), Some(m)) if profiled => Ok(m.to_string()),
            (p, _) => p.clone(),
        }
    }

    /// The key contexts that come before the editor's, most specific first.
    pub(crate) fn turn_contexts(&self, screen: Screen, detail: Option<&Detail>) -> Vec<Context> {
        let mut v = Vec::new();
        if let Some(l) = self.live_here(screen, detail)
            && !l.finished
        {
            if !l.asking.is_empty() {
                v.push(Context::Approval);
            }
            v.push(Context::Turn);
        } else if screen == Screen::Conversation && self.open_subagent(detail).is_some() {
            // A running sub-agent opened from Ctrl-T: Alt-Enter steers it, Esc cancels it.
            v.push(Context::Turn);
        } else if screen == Screen::Conversation
            && !self.turn_active()
            && detail.is_some_and(|d| !d.interrupted.is_empty())
        {
            v.push(Context::Dangling);
        }
        if screen == Screen::Conversation
            && !self.draft
            && self.editor.composer().is_empty()
            && detail.is_some_and(|d| !d.queued.is_empty())
        {
            v.push(Context::Queue);
        }
        v
    }
}
