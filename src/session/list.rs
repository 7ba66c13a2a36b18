//! The session list's types: a row ([`SessionSummary`], borrowed as [`ListLine`]), what its
//! column widths depend on ([`ListBounds`]), and a page's filters and key ([`ListQuery`]).

use super::model::Status;
use super::plan::PlanCounts;

/// One row of a session list: read from the header table alone.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SessionSummary {
    /// UUID.
    pub id: String,
    /// Human title.
    pub title: String,
    /// First user prompt (truncated), for filtering and for untitled sessions.
    pub first_prompt: String,
    /// Creation time, ms since the epoch.
    pub created_at_ms: i64,
    /// Last activity, ms since the epoch.
    pub updated_at_ms: i64,
    pub provider: String,
    pub model: String,
    /// Workdir of the last run.
    pub workdir: String,
    pub status: Status,
    /// Parent for forks.
    pub parent_id: Option<String>,
    /// Fork point in the parent.
    pub fork_seq: Option<i64>,
    pub message_count: u64,
    pub token_input_total: u64,
    pub token_output_total: u64,
    pub plan: PlanCounts,
    pub asset_count: u64,
    /// The session this one runs as a sub-agent of.
    pub subagent_of: Option<String>,
    /// The tool an imported session came from (`claude-code`, `codex`); `None` for native.
    pub source: Option<String>,
    /// The git branch it started on.
    pub branch: Option<String>,
    /// Dollars of its priced model calls; `None` while no call had a price.
    pub cost_usd: Option<f64>,
    /// The `[providers.NAME]` profile its last turn ran with.
    pub profile: Option<String>,
}

impl SessionSummary {
    /// The title, or the first prompt when untitled, or a placeholder.
    pub(crate) fn display_title(&self) -> &str {
        display_title(&self.title, &self.first_prompt)
    }

    /// This summary as a list row.
    pub(crate) fn list_line(&self) -> ListLine<'_> {
        ListLine {
            id: &self.id,
            title: &self.title,
            first_prompt: &self.first_prompt,
            created_at_ms: self.created_at_ms,
            updated_at_ms: self.updated_at_ms,
            provider: &self.provider,
            model: &self.model,
            workdir: &self.workdir,
            status: self.status,
            parent_id: self.parent_id.as_deref(),
            subagent_of: self.subagent_of.as_deref(),
            asset_count: self.asset_count,
            message_count: self.message_count,
            token_input_total: self.token_input_total,
            token_output_total: self.token_output_total,
            plan: self.plan,
            source: self.source.as_deref(),
            branch: self.branch.as_deref(),
            cost_usd: self.cost_usd,
            profile: self.profile.as_deref(),
        }
    }
}

/// One row of the session list, borrowed from the database row
/// ([`crate::session::Store::for_each_list_line`]): a [`SessionSummary`] without a copy of
/// any text, for printing a whole list.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ListLine<'a> {
    pub id: &'a str,
    /// Title (may be empty).
    pub title: &'a str,
    /// Start of the first user prompt (may be empty).
    pub first_prompt: &'a str,
    /// Creation time, ms since the epoch.
    pub created_at_ms: i64,
    /// Last activity, ms since the epoch.
    pub updated_at_ms: i64,
    pub provider: &'a str,
    pub model: &'a str,
    /// Working directory.
    pub workdir: &'a str,
    /// Lifecycle status.
    pub status: Status,
    /// The session this one was forked from.
    pub parent_id: Option<&'a str>,
    /// The session whose sub-agent this one is.
    pub subagent_of: Option<&'a str>,
    pub asset_count: u64,
    pub message_count: u64,
    pub token_input_total: u64,
    pub token_output_total: u64,
    pub plan: PlanCounts,
    /// The tool an imported session came from.
    pub source: Option<&'a str>,
    /// The git branch it started on.
    pub branch: Option<&'a str>,
    /// Dollars of its priced model calls; `None` while no call had a price.
    pub cost_usd: Option<f64>,
    /// The `[providers.NAME]` profile its last turn ran with.
    pub profile: Option<&'a str>,
}

impl ListLine<'_> {
    /// The title, or the first prompt when untitled, or a placeholder.
    pub(crate) fn display_title(&self) -> &str {
        display_title(self.title, self.first_prompt)
    }

    /// A fork or a sub-agent's session.
    pub(crate) fn child(&self) -> bool {
        self.parent_id.is_some() || self.subagent_of.is_some()
    }
}

/// What the widths of a whole list's columns depend on. The store reads it from indexes
/// without touching a row ([`crate::session::Store::list_bounds`]), so a streamed table can
/// be laid out before its first line.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct ListBounds {
    /// The oldest last activity (None: no session).
    pub oldest_updated_at_ms: Option<i64>,
    /// The most messages in one session.
    pub max_message_count: u64,
    /// The most plan steps in one session.
    pub max_plan_total: u64,
    /// The most failed plan steps in one session.
    pub max_plan_failed: u64,
    /// Every distinct model name.
    pub models: Vec<String>,
    /// Some session has a cost in dollars (the list then has a COST column).
    pub any_cost: bool,
}

impl ListBounds {
    /// The bounds of the given rows (for a list already in memory).
    pub(crate) fn of<'a>(rows: impl IntoIterator<Item = &'a SessionSummary>) -> ListBounds {
        let mut b = ListBounds::default();
        for s in rows {
            b.oldest_updated_at_ms = Some(
                b.oldest_updated_at_ms
                    .map_or(s.updated_at_ms, |o| o.min(s.updated_at_ms)),
            );
            b.max_message_count = b.max_message_count.max(s.message_count);
            b.max_plan_total = b.max_plan_total.max(s.plan.total);
            b.max_plan_failed = b.max_plan_failed.max(s.plan.failed);
            b.any_cost |= s.cost_usd.is_some();
            if !b.models.contains(&s.model) {
                b.models.push(s.model.clone());
            }
        }
        b
    }
}

/// The title, or the first prompt when the title is blank, or a placeholder.
pub(crate) fn display_title<'a>(title: &'a str, first_prompt: &'a str) -> &'a str {
    if !title.trim().is_empty() {
        title
    } else if !first_prompt.trim().is_empty() {
        first_prompt
    } else {
        "(untitled)"
    }
}

/// Filters and page key of a session list.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ListQuery {
    /// Case-insensitive substring of title or first prompt.
    pub text: Option<String>,
    /// Only these statuses (empty = all).
    pub statuses: Vec<Status>,
    /// Rows per page (0 = all).
    pub limit: usize,
    /// Continue after this key (from [`ListPage::next`], a key in [`ListPage::keys`], or
    /// [`ListPage::above`] to read again from a page's first row).
    pub after: Option<PageKey>,
    /// The rows just before this key instead (newer activity), still returned newest first:
    /// scrolling a window of the list upwards.
    pub before: Option<PageKey>,
    /// The last rows of the list (the oldest), returned newest first.
    pub from_end: bool,
    /// Only sessions started on this git branch (exactly).
    pub branch: Option<String>,
}

/// Where a list page ended: activity time and insertion position of its last row. Opaque to
/// callers: pass it back in [`ListQuery::after`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageKey {
    pub(crate) updated_at_ms: i64,
    pub(crate) rowid: i64,
}

/// One page of session summaries, newest activity first.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ListPage {
    /// Rows.
    pub items: Vec<SessionSummary>,
    /// Key for the next page, if there is one.
    pub next: Option<PageKey>,
    /// Key of every row, parallel to `items` (a window over the list keeps them to move on
    /// from either end).
    pub keys: Vec<PageKey>,
    /// Pages read upwards ([`ListQuery::before`], [`ListQuery::from_end`]): the key of the
    /// row just above the page (`after` it re-reads from the page's first row); `None` when
    /// the page starts the list.
    pub above: Option<PageKey>,
}
