//! What the TUI's loop receives: every message arrives on one channel.

use crossterm::event::Event;

use crate::runtime::agent::TurnEvent;
use crate::tui::effect::Outcome;
use crate::tui::worker::Done;

/// What the loop waits for: all of it arrives on one channel.
#[derive(Debug)]
pub enum Msg {
    /// A terminal event (from the input thread).
    Input(Event),
    /// A storage answer (from the worker thread).
    Storage(Done),
    /// An event of a running turn (from the agent).
    Turn(TurnEvent),
    /// What a one-call intent of the agent came to (from its own thread).
    Outcome(Outcome),
    /// The permission rules in force for a session (`/permissions`), or why they cannot be
    /// read (from the agent's thread).
    Rules {
        session_id: Option<String>,
        rules: Result<crate::runtime::agent::RulesInForce, crate::tui::error::Failure>,
    },
    /// The settings thread is done: its result is ready to be joined.
    Connected,
}
