//! A card that waits for the user's answer (a tool call's approval, a proposed plan, calls a
//! stopped session left without a result) has the keyboard: the editor takes no keys while it
//! waits, keys that are none of the card's choices are ignored, and typing is never read as
//! an answer. A one-letter answer counts only when it is deliberate: the card has been on
//! screen a moment, no other printable key (or paste) came just before it, and none follows
//! it at once. So `hey` typed while a card appears neither approves (`y`) nor lands anywhere;
//! a paused `y` approves about [`ANSWER_AFTER_MS`] later. Chords (Ctrl-R, Ctrl-D) answer at
//! once: typing text cannot produce them.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::App;
use super::state::{Overlay, Screen};
use crate::tui::action::Action;
use crate::tui::conversation::{ANSWER_AFTER_MS, ANSWER_BEFORE_MS, Held};
use crate::tui::effect::Effect;
use crate::tui::keymap::{self, Context};

fn printable(key: &KeyEvent) -> bool {
    matches!(key.code, KeyCode::Char(_))
        && !key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
}

impl App {
    /// The card that has the keyboard now, if one waits.
    pub fn card_focus(&self) -> Option<Context> {
        if let Overlay::Plan(p) = &self.overlay {
            return p.dropping.is_none().then_some(Context::Plan);
        }
        if self.screen != Screen::Conversation || !matches!(self.overlay, Overlay::None) {
            return None;
        }
        let c = self.turn_contexts();
        [Context::Approval, Context::Dangling]
            .into_iter()
            .find(|x| c.contains(x))
    }

    /// The call asked about now.
    fn asked_call(&self) -> Option<String> {
        self.live_here()
            .and_then(|l| l.asking.front())
            .map(|a| a.call_id.clone())
    }

    /// A card appeared (or another one took its place): answers wait a moment again.
    pub(super) fn card_shown(&mut self) {
        self.conv.card_shown(self.now_ms);
    }

    /// Remembers a printable key or a paste in the conversation; whether it came in a burst
    /// (another one just before it).
    pub(super) fn typed_now(&mut self) -> bool {
        let now = self.now_ms;
        let burst = self
            .conv
            .last_typed_ms
            .is_some_and(|t| now.saturating_sub(t) < ANSWER_BEFORE_MS);
        self.conv.last_typed_ms = Some(now);
        burst
    }

    fn card_keys(context: Context) -> String {
        let keys: Vec<String> = keymap::bar(context)
            .map(|(k, what)| format!("{k} {what}"))
            .collect();
        keys.join(", ")
    }

    fn typing_ignored(&mut self, context: Context) {
        let what = match context {
            Context::Plan => "the plan",
            Context::Dangling => "the interrupted calls",
            _ => "the approval",
        };
        self.fail(format!(
            "Typing is not taken while {what} waits: pause, then press {}.",
            App::card_keys(context)
        ));
    }

    /// A key while a card has the keyboard.
    pub(super) fn card_key(&mut self, context: Context, key: KeyEvent) -> Vec<Effect> {
        let is_printable = printable(&key);
        let burst = is_printable && self.typed_now();
        if let Some(action) = keymap::lookup(context, &key) {
            if !is_printable {
                return self.act(action);
            }
            let fresh = self.now_ms.saturating_sub(self.conv.card_since_ms) < ANSWER_BEFORE_MS;
            if self.conv.held.take().is_some() || burst || fresh {
                self.typing_ignored(context);
                return Vec::new();
            }
            self.conv.held = Some(Held {
                action,
                context,
                call: self.asked_call(),
                at_ms: self.now_ms,
            });
            let label = keymap::bar_entry(context, action).map_or("", |(_, what)| what);
            self.say(format!("{label}…"));
            return Vec::new();
        }
        if is_printable && self.conv.held.take().is_some() {
            // The answer key was the start of a word.
            self.typing_ignored(context);
            return Vec::new();
        }
        if context != Context::Plan {
            // The turn's keys (Esc cancels, Ctrl-B) and the view's (scroll, help, back) still
            // act; sending does not, and nothing reaches the editor.
            for ctx in self.turn_contexts() {
                if let Some(a) = keymap::lookup(ctx, &key) {
                    return self.act(a);
                }
            }
            if let Some(a) = keymap::lookup(Context::Conversation, &key)
                && a != Action::Submit
            {
                return self.act(a);
            }
        }
        if is_printable
            || matches!(
                key.code,
                KeyCode::Enter | KeyCode::Backspace | KeyCode::Delete | KeyCode::Tab
            )
        {
            self.typing_ignored(context);
        }
        Vec::new()
    }

    /// A paste while a card has the keyboard: it goes nowhere, and is typing.
    pub(super) fn card_paste(&mut self, context: Context) {
        self.typed_now();
        self.conv.held = None;
        self.typing_ignored(context);
    }

    /// Whether an answer waits for the quiet after it (the loop wakes for it).
    pub fn answer_pending(&self) -> bool {
        self.conv.held.is_some()
    }

    /// The clock moved: a held answer that stayed alone takes effect (if its card still
    /// waits).
    pub fn on_clock(&mut self, now_ms: i64) -> Vec<Effect> {
        self.now_ms = now_ms;
        let due = self
            .conv
            .held
            .as_ref()
            .is_some_and(|h| now_ms.saturating_sub(h.at_ms) >= ANSWER_AFTER_MS);
        if !due {
            return Vec::new();
        }
        let Some(h) = self.conv.held.take() else {
            return Vec::new();
        };
        if self.card_focus() != Some(h.context)
            || (h.context == Context::Approval && self.asked_call() != h.call)
        {
            return Vec::new();
        }
        let effects = self.act(h.action);
        self.settle();
        effects
    }
}
