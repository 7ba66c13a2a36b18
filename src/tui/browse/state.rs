//! The browse screen's state: the session list (a window over the sessions, with its filter
//! and the filter's matches), which session's detail is open (its state is
//! [`crate::tui::pane`]'s) and the selection waiting for an answer. The views read it.

use crate::session::{PageKey, SessionSummary};
use crate::tui::input::Input;
use crate::tui::pane::Detail;
use crate::tui::transcript::Transcript;

/// What the browse screen holds.
#[derive(Debug, Default)]
pub struct Browse {
    pub list: SessionList,
    /// Detail of the selected (or opened) session.
    pub detail: Option<Detail>,
    /// The database change counter last seen (see [`crate::tui::app::App::tick`]).
    pub(crate) data_version: Option<i64>,
    /// What to select when the answer holding it arrives.
    pub(crate) pending: PendingSelection,
}

impl Browse {
    /// The open session's transcript window, once its header arrived.
    pub(crate) fn transcript(&self) -> Option<&Transcript> {
        self.detail.as_ref().and_then(|d| d.transcript.as_ref())
    }

    /// [`Browse::transcript`], to change.
    pub(crate) fn transcript_mut(&mut self) -> Option<&mut Transcript> {
        self.detail.as_mut().and_then(|d| d.transcript.as_mut())
    }
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

/// The list filter.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub input: Input,
    /// Keys go to the filter input.
    pub editing: bool,
}

/// One visible row of the list.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Index into [`SessionList::rows`] (or [`SessionList::matches`] while they are shown).
    pub idx: usize,
    /// 1 for a fork (marked `↳` in the list), else 0.
    pub depth: u8,
    /// Matched character indices of the sanitised title.
    pub hl: Vec<u32>,
}

/// Which list load is in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Load {
    /// The same window again (something changed).
    #[default]
    Reload,
    /// The first page (a session this app just wrote or resumed, or `--resume`).
    Top,
    /// The first page, landing on its first row (Home).
    Home,
    /// The page below the window.
    Down,
    /// The page above the window.
    Up,
    /// The last page (End).
    End,
    /// A page starting at a session outside the window (a search jump, a resume).
    At,
}

/// The session list: a window of at most [`crate::tui::app::WINDOW`] rows of it, moved a page at a
/// time as the selection nears either edge, so memory stays flat at any number of sessions.
#[derive(Debug, Default)]
pub struct SessionList {
    /// The window's rows, newest activity first.
    pub rows: Vec<SessionSummary>,
    /// Sanitised display titles, parallel to `rows`.
    pub titles: Vec<String>,
    /// Keys of `rows`, to move the window from either edge.
    pub(crate) keys: Vec<PageKey>,
    /// Sessions above the window.
    pub base: usize,
    /// Key of the row just above the window (`None`: the window starts the list).
    pub(crate) above: Option<PageKey>,
    /// Key of the next page, if any.
    pub next: Option<PageKey>,
    /// A page is being loaded.
    pub loading: bool,
    /// What that page is for.
    pub(crate) load: Load,
    /// The first answer has arrived.
    pub loaded: bool,
    /// All sessions in the workspace.
    pub total: Option<u64>,
    /// The filter, when one is active.
    pub filter: Option<Filter>,
    /// The filter's best matches, from the storage thread; `visible` indexes these instead
    /// of `rows` while `showing_matches`.
    pub matches: Vec<SessionSummary>,
    /// Sanitised display titles, parallel to `matches`.
    pub match_titles: Vec<String>,
    /// Sessions matching the filter, all of them (at most
    /// [`crate::tui::filter::FILTER_ROWS`] are in `matches`).
    pub matched: usize,
    /// `visible` shows the filter's matches.
    pub showing_matches: bool,
    /// A filter text is on its way: the matches shown answer an earlier one.
    pub filtering: bool,
    /// The filter text was typed since matches were last shown: their answer selects the
    /// best match. Until it arrives the selection (and the detail pane) stay where they were;
    /// a re-match of the same text (the sessions changed) keeps the selection.
    pub(crate) typed: bool,
    /// Rows as shown (tree order, or filter matches).
    pub visible: Vec<Row>,
    /// Selected index into `visible`.
    pub selected: usize,
    /// First row drawn: kept between frames so the list does not jump, moved only as far as
    /// the selection needs (see [`crate::tui::layout::list_offset`]).
    pub offset: usize,
}

impl SessionList {
    /// The selected session.
    pub fn current(&self) -> Option<&SessionSummary> {
        self.visible
            .get(self.selected)
            .and_then(|r| self.summary(r))
    }

    /// The session a visible row shows.
    pub(crate) fn summary(&self, r: &Row) -> Option<&SessionSummary> {
        if self.showing_matches {
            self.matches.get(r.idx)
        } else {
            self.rows.get(r.idx)
        }
    }

    /// The sanitised title of a visible row.
    pub fn title(&self, r: &Row) -> &str {
        let titles = if self.showing_matches {
            &self.match_titles
        } else {
            &self.titles
        };
        titles.get(r.idx).map_or("", String::as_str)
    }

    /// Position of a session among the visible rows.
    pub(crate) fn position(&self, id: &str) -> Option<usize> {
        self.visible
            .iter()
            .position(|r| self.summary(r).is_some_and(|s| s.id == id))
    }

    /// Moves the first drawn row just enough to show the selection in `rows` rows.
    pub(crate) fn keep_in_view(&mut self, rows: usize) {
        if !self.visible.is_empty() {
            self.offset = crate::tui::layout::list_offset(
                self.selected,
                self.offset,
                rows,
                self.visible.len(),
            );
        }
    }

    /// The filter's text, trimmed ("" without a filter).
    pub(crate) fn filter_text(&self) -> &str {
        self.filter.as_ref().map_or("", |f| f.input.text.trim())
    }
}
