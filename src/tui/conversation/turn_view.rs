//! The turn part of the conversation: the running (or last) turn as far as it has arrived,
//! whether frames are paced for it, and the approval cards' clock and held answer. Its fields
//! are its own: `stream`, `calls`, `plan_events`, `send` and `cards` reach them through these
//! methods.

use crate::tui::action::Action;
use crate::tui::keymap::Context;
use crate::tui::live::Live;

/// Quiet before a one-letter answer: since the last printable key or paste, and since the
/// card appeared (a key typed as it appears was meant for the editor).
pub const ANSWER_BEFORE_MS: i64 = 500;
/// Quiet after it: a printable key this soon after makes it part of a burst of typing.
pub const ANSWER_AFTER_MS: i64 = 300;

/// What the conversation knows of the running (or last) turn.
pub(super) struct TurnView {
    /// The running (or last) turn, as far as it has arrived.
    live: Option<Live>,
    /// A turn is running: frames are paced for streaming.
    running: bool,
    /// A card's one-letter answer waiting for the quiet after it (see `cards`).
    held: Option<Held>,
    /// When the last printable key or paste came in the conversation, ms.
    last_typed_ms: Option<i64>,
    /// When the card waiting for an answer appeared, ms.
    card_since_ms: i64,
}

impl TurnView {
    /// No turn yet; `now_ms` starts the card clock.
    pub(super) fn new(now_ms: i64) -> TurnView {
        TurnView {
            live: None,
            running: false,
            held: None,
            last_typed_ms: None,
            card_since_ms: now_ms,
        }
    }

    /// The running (or last) turn.
    pub(super) fn live(&self) -> Option<&Live> {
        self.live.as_ref()
    }

    /// The running (or last) turn, to change as its events arrive.
    pub(super) fn live_mut(&mut self) -> Option<&mut Live> {
        self.live.as_mut()
    }

    /// A turn this app starts (or one that started elsewhere and is shown all the same):
    /// frames are paced for it.
    pub(super) fn begin(&mut self, live: Live) {
        self.live = Some(live);
        self.running = true;
    }

    /// The live turn, made when a turn not started here reports (`make` builds it).
    pub(super) fn started(&mut self, make: impl FnOnce() -> Live) -> &mut Live {
        self.running = true;
        self.live.get_or_insert_with(make)
    }

    /// The turn is over (or never started): nothing is shown of it any more.
    pub(super) fn clear(&mut self) {
        self.live = None;
        self.running = false;
    }

    /// A finished turn's cell goes (its messages are stored and drawn from the transcript).
    pub(super) fn drop_finished(&mut self) {
        if self.live.as_ref().is_some_and(|l| l.finished) {
            self.live = None;
        }
    }

    /// The turn finished: frames are no longer paced for it.
    pub(super) fn stop(&mut self) {
        self.running = false;
    }

    /// Whether frames are paced for a streaming turn.
    pub(super) fn running(&self) -> bool {
        self.running
    }

    /// Remembers a printable key or a paste in the conversation; whether it came in a burst
    /// (another one just before it).
    pub(super) fn typed_now(&mut self, now: i64) -> bool {
        let burst = self
            .last_typed_ms
            .is_some_and(|t| now.saturating_sub(t) < ANSWER_BEFORE_MS);
        self.last_typed_ms = Some(now);
        burst
    }

    /// When the card waiting for an answer appeared, ms.
    pub(super) fn card_since_ms(&self) -> i64 {
        self.card_since_ms
    }

    /// A card appeared (or another one took its place): answers wait a moment again.
    pub(super) fn card_shown(&mut self, now_ms: i64) {
        self.card_since_ms = now_ms;
        self.held = None;
    }

    /// The answer key held for the quiet after it.
    pub(super) fn held(&self) -> Option<&Held> {
        self.held.as_ref()
    }

    /// Holds an answer key until the quiet after it.
    pub(super) fn hold(&mut self, held: Held) {
        self.held = Some(held);
    }

    /// Takes the held answer key.
    pub(super) fn take_held(&mut self) -> Option<Held> {
        self.held.take()
    }
}

/// An answer key waiting to be confirmed by the quiet after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Held {
    pub(crate) action: Action,
    pub(crate) context: Context,
    /// The approval it answers (the call asked about when the key came).
    pub(crate) call: Option<String>,
    pub(crate) at_ms: i64,
}
