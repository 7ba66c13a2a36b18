//! The durable queue as the conversation sees it. Enter while a turn runs queues the message
//! (a row in the store, so Ctrl-B, a quit or a crash keeps it); Alt-Enter queues it to steer
//! the running turn (the runtime sends it at the next tool boundary); Ctrl-E takes the last
//! waiting message back into the editor (when the editor is empty: it is its end-of-line key
//! otherwise). The next waiting message goes as a turn of its own
//! once the open session is idle: one turn at a time, never while an approval waits (its turn
//! has not ended), and not after a budget stop, a failure or a cancel (the queue is held, and
//! the panel says why, until the user sends something or presses Enter on an empty editor).
//! The hold is read from the session's stored status, so it holds after a restart too; a
//! message leaves the panel as soon as it is sent.

use super::Conversation;
use crate::session::{QueuedMessage, Status};
use crate::tui::effect::{Effect, TurnEffect};
use crate::tui::screen::Screen;
use crate::tui::seam::{Ask, Ctx};
use crate::tui::worker::Request;

impl Conversation {
    /// Queues `text` for the open session (Enter, or Alt-Enter with `steer`, while a turn runs).
    pub(super) fn queue_message(
        &mut self,
        text: String,
        steer: bool,
        ctx: &mut Ctx<'_>,
    ) -> Vec<Ask> {
        let Some(id) = ctx.open_id().filter(|_| !self.draft) else {
            self.editor.composer_mut().set_text(&text);
            ctx.fail("A turn is running: a message queues in a saved session; wait for the turn, or Esc cancels it.");
            return Vec::new();
        };
        // Steering goes to the turn running in this session; elsewhere it waits its turn.
        let steer = steer
            && (self.turn_is_open(ctx.detail()) || self.open_subagent(ctx.detail()).is_some());
        ctx.say(if steer {
            "Queued to steer: it goes in at the turn's next tool boundary."
        } else {
            "Queued: it is sent when the turn ends (Ctrl-E takes it back)."
        });
        vec![Ask::Request(Request::Enqueue { id, text, steer })]
    }

    /// Alt-Enter while a turn runs: the editor's text queued to steer it.
    pub(super) fn steer(&mut self, ctx: &mut Ctx<'_>) -> Vec<Ask> {
        let text = self.editor.composer().message();
        if text.trim().is_empty() {
            return ctx.refuse("Nothing to steer with: type a message, then Alt-Enter.");
        }
        if text.trim_start().starts_with('/') {
            ctx.fail("A slash command cannot steer a turn; Enter runs it.");
            return Vec::new();
        }
        self.editor.composer_mut().set_text("");
        self.queue_message(text, true, ctx)
    }

    /// Ctrl-E: the last waiting message comes back into the editor (it leaves the queue).
    pub(super) fn edit_queued(&self, ctx: &mut Ctx<'_>) -> Vec<Ask> {
        let Some((id, qid)) = ctx
            .detail()
            .and_then(|d| d.queued.last().map(|q| (d.id.clone(), q.id)))
        else {
            return ctx.refuse("Nothing is queued in this session.");
        };
        vec![Ask::Request(Request::Unqueue { id, qid })]
    }

    /// The queue of session `id` as read (with the session, or after a change); `taken` is a
    /// message Ctrl-E took out. The next message may go now.
    pub(crate) fn queue_read(
        &mut self,
        id: &str,
        queued: Vec<QueuedMessage>,
        taken: Option<QueuedMessage>,
        unqueue: bool,
        ctx: &mut Ctx<'_>,
    ) -> Vec<Ask> {
        if let Some(d) = ctx.detail.as_deref_mut()
            && d.id == id
        {
            d.queued = queued;
            // The message being sent may still read as waiting until its turn stores it.
            if self.turn_active()
                && let Some(sent) = self.delivery.delivering()
            {
                d.queued.retain(|w| w.id != sent);
            }
        }
        match taken {
            Some(q) if self.editor.composer().is_empty() => {
                self.editor.composer_mut().set_text(&q.text);
                ctx.say("Back in the editor, out of the queue: Enter queues it again.");
            }
            Some(q) => {
                // Typed meanwhile: the message goes after it.
                let text = format!("{}\n{}", self.editor.composer().text(), q.text);
                self.editor.composer_mut().set_text(&text);
                ctx.say("Back in the editor (after what you typed), out of the queue.");
            }
            None if unqueue => ctx.fail("That message was sent already."),
            None => {}
        }
        self.deliver_next(ctx)
    }

    /// Why the open session's queue does not go on by itself now, if it is held. The hold is
    /// the session's stored state: its last turn failed, was cancelled or hit a budget (in
    /// this process or another, before a restart too), until the user sends something or
    /// presses Enter on the empty editor here.
    pub(crate) fn queue_held(&self, detail: Option<&crate::tui::browse::Detail>) -> Option<String> {
        let d = detail?;
        if let Some(why) = self.delivery.hold_of(&d.id) {
            return Some(why.to_string());
        }
        if self.delivery.released(&d.id) || self.turn_active() {
            return None;
        }
        let h = d.header.as_ref()?;
        let budget_stop = h.status == Status::Paused
            && h.ledger
                .as_ref()
                .and_then(|l| l.termination.as_deref())
                .is_some_and(|t| t.starts_with("limit reached"));
        match h.status {
            Status::Failed => Some("the last turn failed".to_string()),
            Status::Cancelled => Some("the last turn was cancelled".to_string()),
            _ if budget_stop => Some("a budget stopped the session (/limits)".to_string()),
            _ => None,
        }
    }

    /// The user let the open session's queue go on (they sent something, or pressed Enter on
    /// the empty editor): its stored hold no longer counts here.
    pub(super) fn release_queue(&mut self, ctx: &Ctx<'_>) {
        self.delivery.release(ctx.open_id());
    }

    /// Sends the open session's next waiting message when nothing runs here and the queue is
    /// not held; the runtime claims the row under the session's lease.
    pub(super) fn deliver_next(&mut self, ctx: &mut Ctx<'_>) -> Vec<Ask> {
        if ctx.screen != Screen::Conversation
            || self.draft
            || self.turn_active()
            || self.turn.running()
            || self.next_model(ctx.detail()).is_err()
            || self.queue_held(ctx.detail()).is_some()
        {
            return Vec::new();
        }
        let Some((session_id, q)) = ctx
            .detail()
            .and_then(|d| d.queued.first().map(|q| (d.id.clone(), q.clone())))
        else {
            return Vec::new();
        };
        // One try per message: a refusal (the session runs elsewhere) is not retried in a loop.
        if !self.delivery.deliver(q.id) {
            return Vec::new();
        }
        // Sent: the panel lists it no more (a read racing the append that marks it delivered
        // is filtered too, see `queue_read`).
        if let Some(d) = ctx.detail.as_deref_mut() {
            d.queued.retain(|w| w.id != q.id);
        }
        if self.begin_live(Some(q.text.clone()), ctx).is_none() {
            return Vec::new();
        }
        ctx.say("Sending the next queued message… Esc cancels.");
        vec![Ask::Effect(Effect::Turn(TurnEffect::StartQueued {
            session_id,
            qid: q.id,
            text: q.text,
            approval: self.approval(),
        }))]
    }
}
