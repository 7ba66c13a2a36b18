//! The browse screen's state: the session list (a window over the sessions, with its filter
//! and the filter's matches), the detail of the selected or opened session, the selection
//! waiting for an answer, and the search dialog's. The views read it.

use crate::session::{
    AssetMeta, PageKey, PlanProgress, SearchHit, SessionHeader, SessionSummary, StepConversation,
    ToolCall, Usage,
};
use crate::tui::input::Input;
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

/// The full-text search dialog.
#[derive(Debug, Clone, Default)]
pub struct SearchState {
    /// The query being typed.
    pub input: Input,
    /// Hits of the last answered query.
    pub hits: Vec<SearchHit>,
    pub selected: usize,
    /// A query is in flight.
    pub searching: bool,
    /// The query `hits` answer.
    pub answered: String,
    /// How many matched, how they are ranked and how the last word was completed (empty
    /// before an answer; without hits, only how the last word was completed, if it matters).
    pub summary: String,
}

/// Search in the open session's transcript (`/` in the transcript pane, Ctrl-F): the query,
/// the seqs of the messages it matches (from the store's index, so a transcript of any
/// length is searched, not only the loaded window) and which one is current.
#[derive(Debug, Clone, Default)]
pub struct Find {
    /// The query being typed.
    pub input: Input,
    /// Keys go to the query (else n/N move between matches).
    pub editing: bool,
    /// Matching seqs of the last answered query, in order.
    pub matches: Vec<i64>,
    /// More messages matched than [`FIND_LIMIT`].
    pub more: bool,
    /// Index into `matches` of the current match (`None`: not moved to one yet).
    pub current: Option<usize>,
    /// The query `matches` answer ("" before the first answer).
    pub answered: String,
    /// A query is in flight.
    pub searching: bool,
}

/// The most matches a transcript search holds.
pub const FIND_LIMIT: usize = 10_000;

impl Find {
    /// "3/17", "0/17" before moving, "no match", or "searching…".
    pub(crate) fn count(&self) -> String {
        let q = self.input.text.trim();
        if q.is_empty() {
            return String::new();
        }
        if self.searching || self.answered != q {
            return "searching…".into();
        }
        if self.matches.is_empty() {
            return "no match".into();
        }
        let total = format!("{}{}", self.matches.len(), if self.more { "+" } else { "" });
        match self.current {
            Some(i) => format!("{}/{total}", i + 1),
            None => format!("0/{total}"),
        }
    }

    /// The words to highlight in what is drawn: the query's, lower case.
    pub(crate) fn needles(&self) -> Vec<String> {
        if self.answered.is_empty() {
            return Vec::new();
        }
        self.answered
            .split_whitespace()
            .map(str::to_lowercase)
            .collect()
    }
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

/// What the detail pane shows.
#[derive(Debug)]
pub struct Detail {
    pub id: String,
    /// Header, once loaded.
    pub header: Option<SessionHeader>,
    pub progress: PlanProgress,
    pub assets: Vec<AssetMeta>,
    pub asset_sel: usize,
    /// Per-turn usage, once loaded.
    pub usage: Option<Vec<(i64, Usage)>>,
    /// Usage was asked for.
    pub usage_requested: bool,
    /// The transcript window (after the header arrived).
    pub transcript: Option<Transcript>,
    /// Scroll of the plan/usage/info tabs.
    pub scroll: u16,
    /// Tool calls left without a result when the session stopped (replayed on resume).
    pub interrupted: Vec<ToolCall>,
    /// A plan run's step conversations, oldest attempt first.
    pub steps: Vec<StepConversation>,
    /// Selected step of the Plan tab (index into [`Detail::plan_order`]).
    pub plan_sel: usize,
    /// Instruction files, skills and MCP servers its turns take in (Info tab).
    pub context: Option<Box<crate::runtime::extensions::project_context::ContextReport>>,
    /// Messages waiting in its queue, oldest first (typed while a turn ran).
    pub queued: Vec<crate::session::QueuedMessage>,
    /// Search in its transcript, while open.
    pub find: Option<Find>,
    /// Its file changes by turn (Info tab), once loaded.
    pub changes: Option<Vec<crate::runtime::rewind::TurnChanges>>,
    /// The file changes were asked for.
    pub changes_requested: bool,
}

impl Detail {
    pub(crate) fn new(id: &str) -> Detail {
        Detail {
            id: id.to_string(),
            header: None,
            progress: PlanProgress::default(),
            assets: Vec::new(),
            asset_sel: 0,
            interrupted: Vec::new(),
            queued: Vec::new(),
            context: None,
            usage: None,
            usage_requested: false,
            transcript: None,
            scroll: 0,
            steps: Vec::new(),
            plan_sel: 0,
            find: None,
            changes: None,
            changes_requested: false,
        }
    }

    /// Step ids of the plan in the order the Plan tab lists them (layer by layer).
    pub(crate) fn plan_order(&self) -> Vec<String> {
        let Some(plan) = self.header.as_ref().and_then(|h| h.plan.as_ref()) else {
            return Vec::new();
        };
        match plan.layers() {
            Ok(layers) => layers
                .iter()
                .flat_map(|l| l.iter().map(|s| s.id.clone()))
                .collect(),
            Err(_) => plan.steps.iter().map(|s| s.id.clone()).collect(),
        }
    }

    /// The newest conversation of a step, with how many attempts it had.
    pub(crate) fn step_conversation(&self, step_id: &str) -> Option<(&StepConversation, usize)> {
        let mut it = self.steps.iter().filter(|c| c.step_id == step_id);
        let n = it.clone().count();
        it.next_back().map(|c| (c, n))
    }
}
