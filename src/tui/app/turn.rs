//! A running turn's events go to the conversation (`tui::conversation`, which owns their
//! handling); `turn_event` hands it a narrow view of the router and carries out what it asks
//! back (refreshing the open session, the list, opening a new session); `with_conv` does the
//! same for the conversation's actions.

use super::App;
use crate::format::short_id;
use crate::runtime::agent::TurnEvent;
use crate::sanitize;
use crate::tui::conversation::{Ask, Conversation, Ctx};
use crate::tui::effect::Effect;

impl App {
    /// What a one-call intent of the agent came to (`/compact`, `/model NAME`,
    /// `/approve network`, `/skill`).
    pub(super) fn outcome(&mut self, o: crate::tui::effect::Outcome) -> Vec<Effect> {
        use crate::tui::effect::Intent;
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
        self.with_conv(|c, ctx| c.on_turn(event, ctx))
    }

    /// The conversation and the narrow view of the router its transitions see.
    pub(super) fn split(&mut self) -> (&mut Conversation, Ctx<'_>) {
        let ctx = Ctx {
            now_ms: self.now_ms,
            screen: self.screen,
            detail: self.browse.detail.as_mut(),
            overlay: &mut self.overlay,
            status: &mut self.status,
            cwd: &self.paths.export_dir,
        };
        (&mut self.conv, ctx)
    }

    /// Runs a conversation transition and carries out what it asks.
    pub(super) fn with_conv(
        &mut self,
        f: impl FnOnce(&mut Conversation, &mut Ctx<'_>) -> Vec<Ask>,
    ) -> Vec<Effect> {
        let (conv, mut ctx) = self.split();
        let asks = f(conv, &mut ctx);
        self.carry_all(asks)
    }

    /// Carries out what the conversation asked of the router, in order.
    pub(super) fn carry_all(&mut self, asks: Vec<Ask>) -> Vec<Effect> {
        let mut effects = Vec::new();
        for ask in asks {
            effects.extend(self.carry(ask));
        }
        effects
    }

    /// Carries out one thing the conversation asked of the router.
    fn carry(&mut self, ask: Ask) -> Vec<Effect> {
        match ask {
            Ask::Effect(e) => vec![e],
            Ask::Request(r) => vec![self.ask(None, r)],
            Ask::Act(a) => self.act(a),
            Ask::RefreshDetail => self.refresh_detail(),
            Ask::ReloadTop => self.reload_top(),
            Ask::OpenNew(id) => {
                let effects = self.resume(&id);
                self.say(format!("New session {}.", short_id(&id, 8)));
                effects
            }
        }
    }
}
