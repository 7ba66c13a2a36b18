//! The session list: loading pages, ordering rows (tree or fuzzy matches), moving the
//! selection, and the detail pane following it.

use nucleo_matcher::Utf32Str;
use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};

use super::state::{Detail, PendingSelection, Row, Slot};
use super::{App, PAGE, PREFETCH};
use crate::session::{ListQuery, SessionSummary};
use crate::tui::effect::Effect;
use crate::tui::worker::Request;

impl App {
    /// Reloads what is loaded (at least a page) from the top, with the total count.
    pub(super) fn reload_list(&mut self) -> Vec<Effect> {
        self.list.loading = true;
        let limit = self.list.rows.len().max(PAGE);
        vec![self.ask(
            Some(Slot::List),
            Request::List {
                query: ListQuery {
                    limit,
                    ..ListQuery::default()
                },
                count: true,
            },
        )]
    }

    fn next_page(&mut self) -> Vec<Effect> {
        if self.list.loading {
            return Vec::new();
        }
        self.load_after(PAGE)
    }

    /// Every page not loaded yet, as one request (header rows only: ~1 ms per thousand).
    pub(super) fn rest_of_list(&mut self) -> Vec<Effect> {
        self.load_after(0)
    }

    /// Loads `limit` rows (0 = all) after the last loaded one.
    fn load_after(&mut self, limit: usize) -> Vec<Effect> {
        let Some(after) = self.list.next.clone() else {
            return Vec::new();
        };
        self.list.loading = true;
        vec![self.ask(
            Some(Slot::List),
            Request::List {
                query: ListQuery {
                    limit,
                    after: Some(after),
                    ..ListQuery::default()
                },
                count: false,
            },
        )]
    }

    pub(super) fn maybe_prefetch(&mut self) -> Vec<Effect> {
        let filtering = self
            .list
            .filter
            .as_ref()
            .is_some_and(|f| !f.input.text.is_empty());
        if filtering || self.list.selected + PREFETCH >= self.list.visible.len() {
            self.next_page()
        } else {
            Vec::new()
        }
    }

    /// Rebuilds the visible rows (tree order, or fuzzy matches), keeping the selected session.
    pub(super) fn rebuild(&mut self) {
        let current = self.list.current().map(|s| s.id.clone());
        self.rebuild_keeping(current);
    }

    /// [`App::rebuild`] when the rows were replaced: `current` is the id selected before. A
    /// pending session selection wins over it, and is settled once its row is there.
    pub(super) fn rebuild_keeping(&mut self, current: Option<String>) {
        let wanted = match &self.pending {
            PendingSelection::Session { id, .. } => Some(id.clone()),
            _ => None,
        };
        let keep = wanted.clone().or(current);
        let text = self
            .list
            .filter
            .as_ref()
            .map(|f| f.input.text.trim().to_string())
            .unwrap_or_default();
        self.list.visible = if text.is_empty() {
            tree(&self.list.rows)
        } else {
            let pattern = Pattern::parse(&text, CaseMatching::Ignore, Normalization::Smart);
            let mut buf = Vec::new();
            let mut scored: Vec<(u32, Row)> = Vec::new();
            for (idx, s) in self.list.rows.iter().enumerate() {
                let mut hl = Vec::new();
                let title = &self.list.titles[idx];
                let t = pattern.indices(Utf32Str::new(title, &mut buf), &mut self.matcher, &mut hl);
                let p = pattern.score(Utf32Str::new(&s.first_prompt, &mut buf), &mut self.matcher);
                let score = match (t, p) {
                    (Some(a), Some(b)) => a.max(b),
                    (Some(a), None) => a,
                    (None, Some(b)) => b,
                    (None, None) => continue,
                };
                if t.is_none() {
                    hl.clear();
                }
                hl.sort_unstable();
                hl.dedup();
                let depth = u8::from(s.parent_id.is_some() || s.subagent_of.is_some());
                scored.push((score, Row { idx, depth, hl }));
            }
            // Stable: equal scores keep activity order.
            scored.sort_by_key(|(s, _)| std::cmp::Reverse(*s));
            scored.into_iter().map(|(_, r)| r).collect()
        };
        if let Some(id) = keep
            && let Some(pos) = self.list.position(&id)
        {
            self.list.selected = pos;
            if wanted.as_deref() == Some(id.as_str())
                && let PendingSelection::Session { message, .. } = &self.pending
            {
                self.pending = match *message {
                    Some(seq) => PendingSelection::Message { id, seq },
                    None => PendingSelection::None,
                };
            }
        }
        self.list.selected = self
            .list
            .selected
            .min(self.list.visible.len().saturating_sub(1));
    }

    pub(super) fn move_list(&mut self, delta: i64) -> Vec<Effect> {
        let n = self.list.visible.len();
        if n == 0 {
            return Vec::new();
        }
        let sel = (self.list.selected as i64 + delta).clamp(0, n as i64 - 1) as usize;
        self.list.selected = sel;
        let mut effects = self.sync_detail();
        effects.extend(self.maybe_prefetch());
        effects
    }

    /// Makes the detail pane follow the list selection.
    pub(super) fn sync_detail(&mut self) -> Vec<Effect> {
        let Some(id) = self.list.current().map(|s| s.id.clone()) else {
            self.detail = None;
            return Vec::new();
        };
        if self.detail.as_ref().is_some_and(|d| d.id == id) {
            return Vec::new();
        }
        self.open_detail(&id)
    }

    /// Shows another session in the detail pane; a message selection pending for the one it
    /// replaces is dropped with it.
    pub(super) fn open_detail(&mut self, id: &str) -> Vec<Effect> {
        match &mut self.pending {
            PendingSelection::Message { id: other, .. } if other != id => {
                self.pending = PendingSelection::None;
            }
            PendingSelection::Session { id: other, message } if other != id => *message = None,
            _ => {}
        }
        self.detail = Some(Detail::new(id));
        vec![self.ask(Some(Slot::Detail), Request::Detail { id: id.to_string() })]
    }

    pub(super) fn refresh_detail(&mut self) -> Vec<Effect> {
        match self.detail.as_ref().map(|d| d.id.clone()) {
            Some(id) => vec![self.ask(Some(Slot::Detail), Request::Detail { id })],
            None => Vec::new(),
        }
    }
}

/// Rows in tree order: each fork right under its parent when the parent is loaded.
fn tree(rows: &[SessionSummary]) -> Vec<Row> {
    // Rows stay in activity order (the order `--list` and `--continue` use): a fork active now
    // is at the top, not nested far down under an old parent. Lineage shows as a mark.
    rows.iter()
        .enumerate()
        .map(|(i, s)| Row {
            idx: i,
            depth: u8::from(s.parent_id.is_some() || s.subagent_of.is_some()),
            hl: Vec::new(),
        })
        .collect()
}
