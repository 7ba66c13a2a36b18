//! The state of the panes the browse screen opens over a session: the detail pane (header,
//! transcript window, assets, plan, usage, info) with its transcript search, and the
//! full-text search dialog. Below the seam and the dialogs, which hold them; the browse
//! screen's transitions (`tui::browse`) act on them.

use crate::session::{
    AssetMeta, PlanProgress, SearchHit, SessionHeader, StepConversation, ToolCall, Usage,
};
use crate::tui::input::Input;
use crate::tui::transcript::Transcript;

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
