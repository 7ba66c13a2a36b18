//! The router's state types: dialogs, the status line, the one pending selection and the
//! request slots (the screens' own state is in `tui::browse` and `tui::conversation`).

pub(crate) use crate::tui::browse::Load;
pub use crate::tui::browse::{Detail, Filter, Row, SearchState, SessionList};
use crate::tui::input::Input;
pub use crate::tui::screen::{Focus, Screen, Tab};

/// A dialog over the screen.
#[derive(Debug, Clone, Default)]
pub enum Overlay {
    #[default]
    None,
    /// The help screen, scrolled.
    Help(u16),
    /// "Delete this session?"
    ConfirmDelete {
        id: String,
        /// Its title (sanitised).
        title: String,
    },
    /// Renaming inline.
    Rename {
        id: String,
        /// The new title being typed.
        input: Input,
    },
    Search(SearchState),
    /// The reason for denying a tool call, being typed (sent to the model).
    DenyReason {
        call_id: String,
        input: Input,
    },
    /// "Really?" before leaving a running turn behind.
    Confirm(Confirm),
    /// A plan run's proposed plan, waiting for run / reject / drop steps.
    Plan(PlanAsk),
}

/// The plan a `/plan` run proposes.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanAsk {
    /// Step ids by layer: a layer runs after every earlier one.
    pub layers: Vec<Vec<String>>,
    /// (id, title) of each step, in the plan's order.
    pub steps: Vec<(String, String)>,
    /// The ids of the steps to drop, being typed (after `d`).
    pub dropping: Option<Input>,
}

/// What a yes/no question is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirm {
    /// Quit while a turn runs (it is cancelled, what arrived is kept).
    Quit,
    /// Leave the conversation while its turn keeps running.
    Leave,
}

/// A status-line message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub text: String,
    /// Shown as an error.
    pub error: bool,
    /// When it was said (it expires, see [`super::App::expire_status`]).
    pub at_ms: i64,
}

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
}
