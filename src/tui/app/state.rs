//! The router's state types: dialogs, the status line, the one pending selection and the
//! request slots (the screens' own state is in `tui::browse` and `tui::conversation`).

pub(crate) use crate::tui::browse::Load;
pub use crate::tui::browse::{Detail, Filter, Find, Row, SearchState, SessionList};
pub use crate::tui::dialog::{Confirm, Overlay, PlanAsk, Status};
pub use crate::tui::screen::{Focus, Screen, Tab};

/// "Select this when it arrives": what the user (or another process's write) asked to have
/// selected once an answer that may hold it comes back. One intent at a time; a newer one
/// replaces an older, and each is settled by the answer that can satisfy it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum PendingSelection {
    #[default]
    None,
    /// Select this session in the list once a page holding it arrives (the rest of the list
    /// is loaded if the first pages lack it), and with `message`, that message once the
    /// session's transcript exists. Resume, new session, fork, search jump.
    Session { id: String, message: Option<i64> },
    /// Select this message of the open session once its transcript exists (a search jump
    /// whose row is already selected).
    Message { id: String, seq: i64 },
    /// Select the last row once every page is loaded (`G` before the list was complete).
    LastRow,
    /// Another process wrote: the list reloads keeping the selection, then the open session
    /// refreshes if the list still holds it (a deleted one is not asked for).
    Reloaded,
}

/// Requests whose stale answers are dropped: only the latest token per slot counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Slot {
    List,
    Detail,
    Usage,
    Search,
    Filter,
    History,
    /// Transcript search in the open session.
    Find,
    /// The rewind dialog's preview (a newer one replaces it).
    Rewind,
    /// The Info tab's file changes.
    FileChanges,
}
