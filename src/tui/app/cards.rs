//! The answer cards' keys are the conversation's (`tui::conversation`, its `cards`); here the
//! router hands them over and wakes a held answer when the clock moves.

use crossterm::event::KeyEvent;

use super::App;
use crate::tui::effect::Effect;
use crate::tui::keymap::Context;

impl App {
    /// The card that has the keyboard now, if one waits.
    pub(crate) fn card_focus(&self) -> Option<Context> {
        self.conv
            .card_focus(self.screen, &self.overlay, self.browse.detail.as_ref())
    }

    /// Remembers a printable key or a paste in the conversation.
    pub(super) fn typed_now(&mut self) -> bool {
        self.conv.typed_now(self.now_ms)
    }

    /// A card appeared (or another one took its place): answers wait a moment again.
    pub(super) fn card_shown(&mut self) {
        self.conv.card_shown(self.now_ms);
    }

    /// A key while a card has the keyboard.
    pub(super) fn card_key(&mut self, context: Context, key: KeyEvent) -> Vec<Effect> {
        self.with_conv(|c, ctx| c.card_key(context, key, ctx))
    }

    /// A paste while a card has the keyboard: it goes nowhere, and is typing.
    pub(super) fn card_paste(&mut self, context: Context) {
        self.with_conv(|c, ctx| {
            c.card_paste(context, ctx);
            Vec::new()
        });
    }

    /// Whether an answer waits for the quiet after it (the loop wakes for it).
    pub(crate) fn answer_pending(&self) -> bool {
        self.conv.holds_answer()
    }

    /// The clock moved: a held answer that stayed alone takes effect (if its card still
    /// waits).
    pub fn on_clock(&mut self, now_ms: i64) -> Vec<Effect> {
        self.now_ms = now_ms;
        let Some(action) = self.conv.due_answer(
            now_ms,
            self.screen,
            &self.overlay,
            self.browse.detail.as_ref(),
        ) else {
            return Vec::new();
        };
        let effects = self.act(action);
        self.settle();
        effects
    }
}
