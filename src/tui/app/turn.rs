//! A running turn's events go to the conversation (`tui::conversation`, which owns their
//! handling); `turn_event` hands it a narrow view of the router and carries out what it asks
//! back (refreshing the open session, the list, opening a new session); `with_conv` does the
//! same for the conversation's actions.

use super::App;
use crate::format::short_id;
use crate::runtime::agent::TurnEvent;
use crate::tui::conversation::{Ask, Conversation, Ctx};
use crate::tui::effect::Effect;

impl App {
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
            Ask::Load(slot, r) => vec![self.ask(Some(slot), r)],
            Ask::Forget(slot) => {
                self.requests.tokens.remove(&slot);
                Vec::new()
            }
            Ask::Act(a) => self.act(a),
            Ask::Find(text) => self.find_text(&text),
            Ask::RefreshDetail => self.refresh_detail(),
            Ask::ReloadTop => self.reload_top(),
            Ask::ReloadList => self.reload_list(),
            Ask::OpenNew(id) => {
                let effects = self.resume(&id);
                self.say(format!("New session {}.", short_id(&id, 8)));
                effects
            }
        }
    }
}
