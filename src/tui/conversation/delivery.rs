//! The queue part of the conversation: whether the open session's queue goes on by itself,
//! and the message last handed to the agent. Its fields are its own: `queue` and `stream`
//! reach them through these methods.

/// Whether (and what) the conversation delivers from the session's queue.
#[derive(Debug, Default)]
pub(super) struct Delivery {
    /// The queue of this session does not go on by itself, and why (a budget stop, a failure
    /// or a cancel), until the user sends something: (session, why).
    hold: Option<(String, String)>,
    /// The session whose stored hold (its last turn failed, was cancelled or hit a budget) the
    /// user lifted here (see `queue::queue_held`).
    released: Option<String>,
    /// The queued message last handed to the agent (tried once).
    delivering: Option<i64>,
}

impl Delivery {
    /// Why session `id`'s queue is held here, when a turn of this app stopped it.
    pub(super) fn hold_of(&self, id: &str) -> Option<&str> {
        match &self.hold {
            Some((sid, why)) if sid == id => Some(why),
            _ => None,
        }
    }

    /// Whether the user lifted session `id`'s stored hold here.
    pub(super) fn released(&self, id: &str) -> bool {
        self.released.as_deref() == Some(id)
    }

    /// The user let the open session (`open`) go on: its holds no longer count here.
    pub(super) fn release(&mut self, open: Option<String>) {
        self.hold = None;
        self.released = open;
    }

    /// A turn ended: its session's queue is held for `hold` (none after a completed turn),
    /// and the session's stored status counts again.
    pub(super) fn turn_ended(&mut self, hold: Option<(String, String)>) {
        self.hold = hold;
        self.released = None;
        self.delivering = None;
    }

    /// The queued message last handed to the agent.
    pub(super) fn delivering(&self) -> Option<i64> {
        self.delivering
    }

    /// Hands queued message `id` to the agent; false when it was tried already (a refusal is
    /// not retried in a loop).
    pub(super) fn deliver(&mut self, id: i64) -> bool {
        if self.delivering == Some(id) {
            return false;
        }
        self.delivering = Some(id);
        true
    }
}
