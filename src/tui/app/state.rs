//! The app's state types: screens, tabs, dialogs, the session list, the detail pane, and the
//! one pending selection.

use nucleo_matcher::{Config, Matcher};

use crate::session::{
    AssetMeta, PageKey, PlanProgress, SearchHit, SessionHeader, SessionSummary, StepConversation,
    ToolCall, Usage,
};
use crate::tui::input::Input;
use crate::tui::transcript::Transcript;

/// Which screen is showing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    /// Session list + detail.
    Browse,
    /// One session's conversation: transcript, input box, status line.
    Conversation,
}

/// Which pane of the browse screen has the keyboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    List,
    Detail,
}

/// Detail tabs, in the order they are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    Transcript,
    /// The plan DAG.
    Plan,
    /// Token usage and budgets.
    Usage,
    Assets,
    /// Ids, paths, model.
    Info,
}

impl Tab {
    pub const ALL: [Tab; 5] = [
        Tab::Transcript,
        Tab::Plan,
        Tab::Usage,
        Tab::Assets,
        Tab::Info,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Tab::Transcript => "Transcript",
            Tab::Plan => "Plan",
            Tab::Usage => "Usage",
            Tab::Assets => "Assets",
            Tab::Info => "Info",
        }
    }

    pub(super) fn index(self) -> usize {
        Tab::ALL.iter().position(|t| *t == self).unwrap_or(0)
    }
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
}

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
    /// Index into [`SessionList::rows`].
    pub idx: usize,
    /// 1 for a fork (marked `↳` in the list), else 0.
    pub depth: u8,
    /// Matched character indices of the sanitised title.
    pub hl: Vec<u32>,
}

/// The session list as loaded so far.
#[derive(Debug, Default)]
pub struct SessionList {
    /// Loaded rows, newest activity first.
    pub rows: Vec<SessionSummary>,
    /// Sanitised display titles, parallel to `rows`.
    pub titles: Vec<String>,
    /// Key of the next page, if any.
    pub next: Option<PageKey>,
    /// A page is being loaded.
    pub loading: bool,
    /// The first answer has arrived.
    pub loaded: bool,
    /// All sessions in the workspace.
    pub total: Option<u64>,
    /// The filter, when one is active.
    pub filter: Option<Filter>,
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
            .and_then(|r| self.rows.get(r.idx))
    }

    /// Position of a session among the visible rows.
    pub fn position(&self, id: &str) -> Option<usize> {
        self.visible.iter().position(|r| self.rows[r.idx].id == id)
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
}

impl Detail {
    pub(super) fn new(id: &str) -> Detail {
        Detail {
            id: id.to_string(),
            header: None,
            progress: PlanProgress::default(),
            assets: Vec::new(),
            asset_sel: 0,
            interrupted: Vec::new(),
            usage: None,
            usage_requested: false,
            transcript: None,
            scroll: 0,
            steps: Vec::new(),
            plan_sel: 0,
        }
    }

    /// Step ids of the plan in the order the Plan tab lists them (layer by layer).
    pub fn plan_order(&self) -> Vec<String> {
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
    pub fn step_conversation(&self, step_id: &str) -> Option<(&StepConversation, usize)> {
        let mut it = self.steps.iter().filter(|c| c.step_id == step_id);
        let n = it.clone().count();
        it.next_back().map(|c| (c, n))
    }
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
}

/// Boxed: the fuzzy matcher's scratch space is large.
pub(super) fn matcher() -> Box<Matcher> {
    Box::new(Matcher::new(Config::DEFAULT))
}
