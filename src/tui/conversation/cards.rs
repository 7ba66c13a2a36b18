//! A card that waits for the user's answer (a tool call's approval, a proposed plan, calls a
//! stopped session left without a result) has the keyboard: the editor takes no keys while it
//! waits, keys that are none of the card's choices are ignored, and typing is never read as
//! an answer. A one-letter answer counts only when it is deliberate: the card has been on
//! screen a moment, no other printable key (or paste) came just before it, and none follows
//! it at once. So `hey` typed while a card appears neither approves (`y`) nor lands anywhere;
//! a paused `y` approves about [`ANSWER_AFTER_MS`] later. Chords (Ctrl-R, Ctrl-D) answer at
//! once: typing text cannot produce them.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::Conversation;
use super::turn_view::Held;
use super::turn_view::{ANSWER_AFTER_MS, ANSWER_BEFORE_MS};
use crate::tui::action::Action;
use crate::tui::browse::Detail;
use crate::tui::dialog::Overlay;
use crate::tui::keymap::{self, Context};
use crate::tui::screen::Screen;
use crate::tui::seam::{Ask, Ctx};

fn printable(key: &KeyEvent) -> bool {
    matches!(key.code, KeyCode::Char(_))
        && !key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
}

impl Conversation {
    /// The card that has the keyboard now, if one waits.
    pub(crate) fn card_focus(
        &self,
        screen: Screen,
        overlay: &Overlay,
        detail: Option<&Detail>,
    ) -> Option<Context> {
        if let Overlay::Plan(p) = overlay {
            return p.dropping.is_none().then_some(Context::Plan);
        }
        if screen != Screen::Conversation || !matches!(overlay, Overlay::None) {
            return None;
        }
        let c = self.turn_contexts(screen, detail);
        [Context::Approval, Context::Dangling]
            .into_iter()
            .find(|x| c.contains(x))
    }

    /// The call asked about now.
    fn asked_call(&self, screen: Screen, detail: Option<&Detail>) -> Option<String> {
        self.live_here(screen, detail)
            .and_then(|l| l.asking.front())
            .map(|a| a.call_id.clone())
    }

    /// Remembers a printable key or a paste in the conversation; whether it came in a burst
    /// (another one just before it).
    pub(crate) fn typed_now(&mut self, now: i64) -> bool {
        self.turn.typed_now(now)
    }

    fn card_keys(context: Context) -> String {
        let keys: Vec<String> = keymap::bar(context)
            .map(|(k, what)| format!("{k} {what}"))
            .collect();
        keys.join(", ")
    }

    fn typing_ignored(context: Context, ctx: &mut Ctx<'_>) {
        let what = match context {
            Context::Plan => "the plan",
            Context::Dangling => "the interrupted calls",
            _ => "the approval",
        };
        ctx.fail(format!(
            "Typing is not taken while {what} waits: pause, then press {}.",
            Conversation::card_keys(context)
        ));
    }

    /// A key while a card has the keyboard.
    pub(crate) fn card_key(
        &mut self,
        context: Context,
        key: KeyEvent,
        ctx: &mut Ctx<'_>,
    ) -> Vec<Ask> {
        let is_printable = printable(&key);
        let burst = is_printable && self.typed_now(ctx.now_ms);
        if let Some(action) = keymap::lookup(context, &key) {
            if !is_printable {
                return vec![Ask::Act(action)];
            }
            let fresh = ctx.now_ms.saturating_sub(self.turn.card_since_ms()) < ANSWER_BEFORE_MS;
            if self.turn.take_held().is_some() || burst || fresh {
                Conversation::typing_ignored(context, ctx);
                return Vec::new();
            }
            self.turn.hold(Held {
                action,
                context,
                call: self.asked_call(ctx.screen, ctx.detail()),
                at_ms: ctx.now_ms,
            });
            let label = keymap::bar_entry(context, action).map_or("", |(_, what)| what);
            ctx.say(format!("{label}…"));
            return Vec::new();
        }
        if is_printable && self.turn.take_held().is_some() {
            // The answer key was the start of a word.
            Conversation::typing_ignored(context, ctx);
            return Vec::new();
        }
        if context != Context::Plan {
            // The turn's keys (Esc cancels, Ctrl-B) and the view's (scroll, help, back) still
            // act; sending does not, and nothing reaches the editor.
            for c in self.turn_contexts(ctx.screen, ctx.detail()) {
                if let Some(a) = keymap::lookup(c, &key) {
                    return vec![Ask::Act(a)];
                }
            }
            if let Some(a) = keymap::lookup(Context::Conversation, &key)
                && a != Action::Submit
            {
                return vec![Ask::Act(a)];
            }
        }
        if is_printable
            || matches!(
                key.code,
                KeyCode::Enter | KeyCode::Backspace | KeyCode::Delete | KeyCode::Tab
            )
        {
            Conversation::typing_ignored(context, ctx);
        }
        Vec::new()
    }

    /// A paste while a card has the keyboard: it goes nowhere, and is typing.
    pub(crate) fn card_paste(&mut self, context: Context, ctx: &mut Ctx<'_>) {
        self.typed_now(ctx.now_ms);
        self.turn.take_held();
        Conversation::typing_ignored(context, ctx);
    }

    /// The clock moved: the held answer that stayed alone, if its card still waits (it is
    /// taken either way once due).
    pub(crate) fn due_answer(
        &mut self,
        now_ms: i64,
        screen: Screen,
        overlay: &Overlay,
        detail: Option<&Detail>,
    ) -> Option<Action> {
        let due = self
            .turn
            .held()
            .is_some_and(|h| now_ms.saturating_sub(h.at_ms) >= ANSWER_AFTER_MS);
        if !due {
            return None;
        }
        let h = self.turn.take_held()?;
        if self.card_focus(screen, overlay, detail) != Some(h.context)
            || (h.context == Context::Approval && self.asked_call(screen, detail) != h.call)
        {
            return None;
        }
        Some(h.action)
    }
}
