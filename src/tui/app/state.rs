//! The types the router names: dialogs, the status line, the screens, the request slots, and
//! the browse screen's (its own state is in `tui::browse` and `tui::conversation`).

pub use crate::tui::browse::{
    Detail, Filter, Find, PendingSelection, Row, SearchState, SessionList,
};
pub use crate::tui::dialog::{Confirm, Overlay, PlanAsk, Status};
pub use crate::tui::screen::{Focus, Screen, Tab};
pub(crate) use crate::tui::seam::Slot;

/// A second Esc this soon (ms) after the one that left the conversation opens the rewind
/// dialog (Esc alone still goes back at once).
pub const ESC_ESC_MS: i64 = 500;

/// The Esc that left a conversation with its editor empty and nothing over it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct EscBack {
    pub(super) id: String,
    /// The message selected then.
    pub(super) at: Option<i64>,
    pub(super) at_ms: i64,
}
