//! The two ends of a running turn: [`TurnSink`] (where its events go), [`Commands`] and
//! [`TurnHandle`] (what a front end holds), and [`Watched`] (a turn with a channel sink).

use super::events::{TurnCommand, TurnEvent};
use crate::runtime::cancel::CancelFlag;
use std::collections::HashMap;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Where a running turn's events go: the turn's (or plan run's) own thread calls it, in
/// order, ending with [`TurnEvent::Finished`]. A channel's sender is one; so is any
/// `FnMut(TurnEvent)`. A front end that went away does not stop the turn: the session is still
/// written.
pub trait TurnSink: Send + 'static {
    /// One event.
    fn event(&mut self, event: TurnEvent);
}

impl TurnSink for Sender<TurnEvent> {
    fn event(&mut self, event: TurnEvent) {
        let _ = self.send(event);
    }
}

impl TurnSink for Box<dyn TurnSink> {
    fn event(&mut self, event: TurnEvent) {
        (**self).event(event);
    }
}

impl<F: FnMut(TurnEvent) + Send + 'static> TurnSink for F {
    fn event(&mut self, event: TurnEvent) {
        self(event);
    }
}

/// The sender of a running turn's commands: [`TurnCommand::Cancel`] raises the turn's cancel
/// flag on the sender's side at once (the turn thread may be blocked in a stream or a
/// command), then reaches the turn like every other command. An answer about a call a
/// sub-agent of the turn asked about goes to that sub-agent ([`Routes`]), whichever front end
/// holds the commands.
#[derive(Debug, Clone)]
pub struct Commands {
    tx: Sender<TurnCommand>,
    cancel: CancelFlag,
    routes: Routes,
}

/// Where answers about calls of a turn's sub-agents go, by call id: filled when a child's
/// approval question passes to the parent's front end, taken by the answer.
#[derive(Debug, Clone, Default)]
pub(crate) struct Routes(Arc<Mutex<HashMap<String, Commands>>>);

impl Routes {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Commands>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Answers about `call_id` go to `to` (the child that asked).
    pub(super) fn insert(&self, call_id: &str, to: Commands) {
        self.lock().insert(call_id.to_string(), to);
    }

    /// The child that asked about `call_id`, once.
    fn take(&self, call_id: &str) -> Option<Commands> {
        self.lock().remove(call_id)
    }
}

/// A turn's sink shared with its sub-agents' threads: a child's events reach the parent's
/// front end as they happen (in order per thread, one at a time).
#[derive(Clone)]
pub(crate) struct SharedSink(Arc<Mutex<Box<dyn TurnSink>>>);

impl SharedSink {
    pub(super) fn new(sink: Box<dyn TurnSink>) -> SharedSink {
        SharedSink(Arc::new(Mutex::new(sink)))
    }
}

impl SharedSink {
    /// One event (from whichever thread holds a clone).
    pub(crate) fn event(&self, event: TurnEvent) {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .event(event);
    }
}

impl TurnSink for SharedSink {
    fn event(&mut self, event: TurnEvent) {
        SharedSink::event(self, event);
    }
}

impl Commands {
    /// A sender, the turn's receiver and the flag a cancel raises (a front end's test
    /// double that runs turns of its own makes its handle from them).
    pub fn channel() -> (Commands, Receiver<TurnCommand>, CancelFlag) {
        let (tx, rx) = channel();
        let cancel = CancelFlag::default();
        (
            Commands {
                tx,
                cancel: cancel.clone(),
                routes: Routes::default(),
            },
            rx,
            cancel,
        )
    }

    /// Raises the turn's cancel flag without a command (a sink whose front end went away;
    /// a signal path).
    pub(crate) fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Sends a command; fails when the turn has ended. An answer about a call one of the
    /// turn's sub-agents asked about goes to that sub-agent.
    pub fn send(&self, cmd: TurnCommand) -> Result<(), std::sync::mpsc::SendError<TurnCommand>> {
        if cmd == TurnCommand::Cancel {
            self.cancel.cancel();
        }
        if let Some(child) = cmd.call_id().and_then(|id| self.routes.take(id)) {
            return child.send(cmd);
        }
        self.tx.send(cmd)
    }

    /// Where answers about the turn's sub-agents' calls go.
    pub(super) fn routes(&self) -> &Routes {
        &self.routes
    }
}

/// A running turn (or plan run): its events go to the sink it was started with; send
/// [`TurnCommand`]s here.
pub struct TurnHandle {
    /// The session the turn runs in.
    pub session_id: String,
    /// Commands (approve, deny, cancel).
    pub commands: Commands,
    /// The turn's cancel flag (raised by [`TurnHandle::cancel`] and a sent
    /// [`TurnCommand::Cancel`]).
    pub cancel: CancelFlag,
    pub(super) thread: Option<JoinHandle<()>>,
}

impl TurnHandle {
    /// The handle of a turn running on `thread` (a test double's own turn; the agent makes
    /// its handles itself).
    pub fn new(
        session_id: String,
        commands: Commands,
        cancel: CancelFlag,
        thread: JoinHandle<()>,
    ) -> TurnHandle {
        TurnHandle {
            session_id,
            commands,
            cancel,
            thread: Some(thread),
        }
    }

    /// Cancels the turn (same as sending [`TurnCommand::Cancel`], usable from a signal path).
    pub(crate) fn cancel(&self) {
        let _ = self.commands.send(TurnCommand::Cancel);
    }

    /// Whether the turn's thread has ended (its last event was sent).
    pub(crate) fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Waits for the turn's thread to end.
    pub fn join(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A turn started with a channel for its events ([`Agent::watch`](super::base::Agent::watch)): the
/// handle, and the events to read.
pub struct Watched {
    /// The running turn.
    pub handle: TurnHandle,
    /// Its events, in order; the last is [`TurnEvent::Finished`].
    pub events: Receiver<TurnEvent>,
}

impl std::ops::Deref for Watched {
    type Target = TurnHandle;
    fn deref(&self) -> &TurnHandle {
        &self.handle
    }
}

impl Watched {
    /// Waits for the turn's thread to end.
    pub fn join(self) {
        self.handle.join();
    }
}

/// The turns (and plan runs) this process runs, by session: where `Op::Command` goes. An
/// entry leaves when its turn's `Finished` passes.
#[derive(Clone, Default)]
pub(crate) struct Running(Arc<Mutex<HashMap<String, Commands>>>);

impl Running {
    pub(super) fn insert(&self, id: &str, commands: Commands) {
        if let Ok(mut m) = self.0.lock() {
            m.insert(id.to_string(), commands);
        }
    }

    pub(super) fn remove(&self, id: &str) {
        if let Ok(mut m) = self.0.lock() {
            m.remove(id);
        }
    }

    pub(super) fn get(&self, id: &str) -> Option<Commands> {
        self.0.lock().ok()?.get(id).cloned()
    }
}

/// Where a submitted turn's events go: built from the turn's own [`Commands`] when the turn
/// is built, so a sink that answers approvals or cancels holds them from its first event.
pub struct Sink(pub(super) MakeSink);

/// What a [`Sink`] holds: makes the turn's sink from its commands.
pub(super) type MakeSink = Box<dyn FnOnce(&Commands) -> Box<dyn TurnSink> + Send>;

impl Sink {
    /// A sink made with the turn's commands.
    pub fn new<S: TurnSink>(make: impl FnOnce(&Commands) -> S + Send + 'static) -> Sink {
        Sink(Box::new(move |c| Box::new(make(c))))
    }

    /// A sink that needs no commands.
    pub fn to(sink: impl TurnSink) -> Sink {
        Sink(Box::new(move |_| Box::new(sink)))
    }

    /// For ops that start no turn: events (there are none) are dropped.
    pub fn none() -> Sink {
        Sink::to(|_: TurnEvent| {})
    }

    /// The sink, made with the turn's commands (by whoever starts the turn).
    pub fn build(self, commands: &Commands) -> Box<dyn TurnSink> {
        (self.0)(commands)
    }
}
