//! The types the router names: dialogs, the status line, the screens, the request slots, and
//! the browse screen's (its own state is in `tui::browse` and `tui::conversation`).

pub use crate::tui::browse::{
    Detail, Filter, Find, PendingSelection, Row, SearchState, SessionList,
};
pub use crate::tui::dialog::{Confirm, Overlay, PlanAsk, Status};
pub use crate::tui::screen::{Focus, Screen, Tab};
pub(crate) use crate::tui::seam::Slot;
