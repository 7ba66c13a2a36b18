//! The browse screen: its state (`state`: the session list, the detail pane, the selection
//! waiting for an answer) and its transitions, which are its own. `list` moves the window of
//! pages, the filter's matches and the selection, and makes the detail pane follow it;
//! `detail` takes what was read of the open session and steps through its tabs, `find`
//! its transcript search's query and answer;
//! `reply` takes the storage worker's answers for the list, the filter, the change counter
//! and the usage; `keys` the list's actions (`Browse::act`), the filter's keys and the
//! `/resume` picker's. Like the conversation's, they see the router through the [`Ask`]s they
//! return (storage reads whose stale answers are dropped, in their [`Slot`]) and the screen
//! shown, passed in; nothing here imports the router (`tui::app`).
//!
//! [`Ask`]: crate::tui::seam::Ask
//! [`Slot`]: crate::tui::seam::Slot

mod detail;
mod find;
mod keys;
mod list;
mod reply;
mod state;

pub use crate::tui::pane::{Detail, FIND_LIMIT, Find, SearchState};
pub(crate) use detail::DetailRead;
pub use list::{PAGE, WINDOW};
pub(crate) use reply::BrowseReply;
pub use state::{Browse, Filter, PendingSelection, Row, SessionList};
