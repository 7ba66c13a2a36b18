//! The session list: a window of pages moved from either edge, rows in tree order or the
//! filter's matches from the storage thread, moving the selection, and the detail pane
//! following it.

use super::state::{Browse, Load, PendingSelection, Row};
use crate::sanitize;
use crate::session::{ListPage, ListQuery, SessionSummary};
use crate::tui::filter::FilterResult;
use crate::tui::pane::Detail;
use crate::tui::screen::Screen;
use crate::tui::seam::{Ask, Slot};
use crate::tui::worker::Request;

/// Sessions per list page.
pub const PAGE: usize = 200;
/// The most rows the list holds at once: a window over the sessions.
pub const WINDOW: usize = 5 * PAGE;
/// Fetch the next page when the selection is this close to the end of what is loaded.
const PREFETCH: usize = 50;

impl Browse {
    fn list_job(&mut self, load: Load, query: ListQuery, count: bool) -> Vec<Ask> {
        self.list.loading = true;
        self.list.load = load;
        vec![Ask::Load(Slot::List, Request::List { query, count })]
    }

    /// Reads the window again (something changed), from its first row, with the total.
    pub(crate) fn reload_list(&mut self) -> Vec<Ask> {
        let query = ListQuery {
            limit: self.list.rows.len().clamp(PAGE, WINDOW),
            after: self.list.above.clone(),
            ..ListQuery::default()
        };
        self.list_job(Load::Reload, query, true)
    }

    /// The first page: after this app wrote a session (it is the newest now) or resumed one.
    pub(crate) fn reload_top(&mut self) -> Vec<Ask> {
        self.first_page(Load::Top)
    }

    /// The first page, landing on its first row.
    fn home(&mut self) -> Vec<Ask> {
        self.first_page(Load::Home)
    }

    fn first_page(&mut self, load: Load) -> Vec<Ask> {
        let query = ListQuery {
            limit: PAGE,
            ..ListQuery::default()
        };
        self.list_job(load, query, true)
    }

    fn next_page(&mut self) -> Vec<Ask> {
        if self.list.loading {
            return Vec::new();
        }
        let Some(after) = self.list.next.clone() else {
            return Vec::new();
        };
        let query = ListQuery {
            limit: PAGE,
            after: Some(after),
            ..ListQuery::default()
        };
        self.list_job(Load::Down, query, false)
    }

    fn prev_page(&mut self) -> Vec<Ask> {
        if self.list.loading || self.list.above.is_none() {
            return Vec::new();
        }
        let Some(before) = self.list.keys.first().cloned() else {
            return Vec::new();
        };
        let query = ListQuery {
            limit: PAGE,
            before: Some(before),
            ..ListQuery::default()
        };
        self.list_job(Load::Up, query, false)
    }

    /// The oldest page, read upwards from the end: End costs one page at any list size.
    fn last_page(&mut self) -> Vec<Ask> {
        let query = ListQuery {
            limit: PAGE,
            from_end: true,
            ..ListQuery::default()
        };
        self.list_job(Load::End, query, true)
    }

    /// A window starting at a session outside the loaded one.
    pub(super) fn window_at(&mut self, id: &str) -> Vec<Ask> {
        self.list.loading = true;
        self.list.load = Load::At;
        vec![Ask::Load(
            Slot::List,
            Request::ListAt {
                id: id.to_string(),
                limit: PAGE,
            },
        )]
    }

    /// Puts an answered page into the window as its load asked; keeps at most [`WINDOW`]
    /// rows, dropping from the far edge.
    pub(super) fn place_page(&mut self, mut page: ListPage, base: Option<u64>) {
        let l = &mut self.list;
        let read = page.items.len();
        if matches!(l.load, Load::Down | Load::Up) {
            // Another process's write the window has not reloaded for yet can move a session
            // it holds into the page beside it (activity moves it to the top): the window's
            // copy stays until that reload, which the next poll asks for.
            let held: std::collections::HashSet<&str> =
                l.rows.iter().map(|s| s.id.as_str()).collect();
            let mut keys = std::mem::take(&mut page.keys).into_iter();
            let mut kept_keys = Vec::with_capacity(page.items.len());
            page.items.retain(|s| {
                let key = keys.next();
                let new = !held.contains(s.id.as_str());
                if new {
                    kept_keys.extend(key);
                }
                new
            });
            page.keys = kept_keys;
        }
        let titles: Vec<String> = page
            .items
            .iter()
            .map(|s| sanitize::line(s.display_title()).into_owned())
            .collect();
        let n = page.items.len();
        match l.load {
            Load::Reload | Load::Top | Load::Home | Load::End | Load::At => {
                l.rows = page.items;
                l.titles = titles;
                l.keys = page.keys;
                l.next = page.next;
                match l.load {
                    Load::Top | Load::Home => l.above = None,
                    Load::End | Load::At => l.above = page.above,
                    _ => {}
                }
                l.base = match l.load {
                    _ if l.above.is_none() => 0,
                    Load::End => l.total.map_or(0, |t| (t as usize).saturating_sub(n)),
                    Load::At => base.unwrap_or(0) as usize,
                    _ => l.base,
                };
            }
            Load::Down => {
                l.rows.extend(page.items);
                l.titles.extend(titles);
                l.keys.extend(page.keys);
                l.next = page.next;
                if l.rows.len() > WINDOW {
                    let d = l.rows.len() - WINDOW;
                    l.above = Some(l.keys[d - 1].clone());
                    l.rows.drain(..d);
                    l.titles.drain(..d);
                    l.keys.drain(..d);
                    l.base += d;
                    l.offset = l.offset.saturating_sub(d);
                }
            }
            Load::Up => {
                l.rows.splice(0..0, page.items);
                l.titles.splice(0..0, titles);
                l.keys.splice(0..0, page.keys);
                l.above = page.above;
                l.base = if l.above.is_none() {
                    0
                } else {
                    l.base.saturating_sub(read)
                };
                l.offset += n;
                if l.rows.len() > WINDOW {
                    l.rows.truncate(WINDOW);
                    l.titles.truncate(WINDOW);
                    l.keys.truncate(WINDOW);
                    l.next = l.keys.last().cloned();
                }
            }
        }
    }

    pub(super) fn maybe_prefetch(&mut self) -> Vec<Ask> {
        // Filter matches come whole from the storage thread: no paging for them.
        if self.list.showing_matches || !self.list.filter_text().is_empty() {
            return Vec::new();
        }
        if self.list.selected + PREFETCH >= self.list.visible.len() {
            self.next_page()
        } else if self.list.selected < PREFETCH {
            self.prev_page()
        } else {
            Vec::new()
        }
    }

    /// The filter text changed: ask the storage thread for its matches (the newest text
    /// wins there and here), or go back to the whole list when it is empty.
    pub(super) fn filter_changed(&mut self, screen: Screen) -> Vec<Ask> {
        let text = self.list.filter_text().to_string();
        if text.is_empty() {
            let current = self.list.current().map(|s| s.id.clone());
            let forget = self.stop_matching();
            self.rebuild_keeping(current);
            // Over a conversation (`/resume`) the open session stays until Enter.
            if screen != Screen::Browse {
                return vec![forget];
            }
            let mut asks = vec![forget];
            asks.extend(self.sync_detail());
            return asks;
        }
        self.list.filtering = true;
        vec![Ask::Load(Slot::Filter, Request::Filter { text })]
    }

    /// Leaves the filter's matches for the whole list (the caller rebuilds); a match in
    /// flight is stale from now on (the ask says so).
    fn stop_matching(&mut self) -> Ask {
        let l = &mut self.list;
        l.filtering = false;
        l.typed = false;
        if l.showing_matches {
            l.showing_matches = false;
            l.visible.clear();
        }
        l.matches = Vec::new();
        l.match_titles = Vec::new();
        l.matched = 0;
        Ask::Forget(Slot::Filter)
    }

    /// Removes the filter and its matches; the storage thread lets go of the text it kept.
    pub(crate) fn clear_filter(&mut self) -> Vec<Ask> {
        // Taken before the matches go: `visible` indexes them until the rebuild.
        let current = self.list.current().map(|s| s.id.clone());
        self.list.filter = None;
        let forget = self.stop_matching();
        self.rebuild_keeping(current);
        vec![forget, Ask::Request(Request::FilterClosed)]
    }

    /// The filter's matches arrived.
    pub(super) fn show_matches(&mut self, result: FilterResult, screen: Screen) -> Vec<Ask> {
        let current = self.list.current().map(|s| s.id.clone());
        let l = &mut self.list;
        l.filtering = false;
        l.showing_matches = true;
        l.matched = result.matched;
        l.match_titles = result
            .rows
            .iter()
            .map(|s| sanitize::line(s.display_title()).into_owned())
            .collect();
        l.matches = result.rows;
        let matches = &l.matches;
        l.visible = result
            .hl
            .into_iter()
            .enumerate()
            .map(|(idx, hl)| Row {
                idx,
                // A fork keeps its mark among the matches.
                depth: matches.get(idx).map_or(0, lineage),
                hl,
            })
            .collect();
        // Typing starts from the best match; a re-match keeps the selection.
        let keep = current.filter(|_| !std::mem::take(&mut l.typed));
        l.selected = 0;
        self.rebuild_keeping(keep);
        if screen == Screen::Browse {
            self.sync_detail()
        } else {
            Vec::new()
        }
    }

    /// Rebuilds the visible rows (tree order) after the rows or matches changed: `current` is
    /// the id selected before (taken before they changed, as `visible` indexes them). A
    /// pending session selection wins over it, and is settled once its row is there. The
    /// filter's matches are not rebuilt here: they come from the storage thread.
    pub(super) fn rebuild_keeping(&mut self, current: Option<String>) {
        let wanted = match &self.pending {
            PendingSelection::Session { id, .. } => Some(id.clone()),
            _ => None,
        };
        let keep = wanted.clone().or(current);
        if !self.list.showing_matches {
            self.list.visible = tree(&self.list.rows);
        }
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

    pub(crate) fn move_list(&mut self, delta: i64) -> Vec<Ask> {
        let n = self.list.visible.len();
        if n == 0 {
            return Vec::new();
        }
        let sel = (self.list.selected as i64 + delta).clamp(0, n as i64 - 1) as usize;
        self.list.selected = sel;
        let mut asks = self.sync_detail();
        asks.extend(self.maybe_prefetch());
        asks
    }

    /// Makes the detail pane follow the list selection.
    pub(crate) fn sync_detail(&mut self) -> Vec<Ask> {
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
    pub(crate) fn open_detail(&mut self, id: &str) -> Vec<Ask> {
        match &mut self.pending {
            PendingSelection::Message { id: other, .. } if other != id => {
                self.pending = PendingSelection::None;
            }
            PendingSelection::Session { id: other, message } if other != id => *message = None,
            _ => {}
        }
        self.detail = Some(Detail::new(id));
        vec![Ask::Load(
            Slot::Detail,
            Request::Detail { id: id.to_string() },
        )]
    }

    pub(crate) fn refresh_detail(&self) -> Vec<Ask> {
        match self.detail.as_ref().map(|d| d.id.clone()) {
            Some(id) => vec![Ask::Load(Slot::Detail, Request::Detail { id })],
            None => Vec::new(),
        }
    }

    /// Home or End on the list: the first or the last session, the pages between read when
    /// the window does not reach that end.
    pub(super) fn list_end(&mut self, top: bool) -> Vec<Ask> {
        if !top && self.list.next.is_some() {
            // Read the last page upwards, then land on the true last session.
            self.pending = PendingSelection::LastRow;
            return self.last_page();
        }
        if top && self.list.above.is_some() {
            return self.home();
        }
        // Far enough to clamp at either end, and halved so adding it to the selection cannot
        // overflow.
        self.move_list(if top { i64::MIN / 2 } else { i64::MAX / 2 })
    }

    /// A click on the list's `drawn`th row (from the first drawn): it is selected and the
    /// detail pane follows; nothing below the last row.
    pub(crate) fn click_row(&mut self, drawn: usize) -> Vec<Ask> {
        let row = self.list.offset + drawn;
        if row >= self.list.visible.len() {
            return Vec::new();
        }
        self.list.selected = row;
        let mut asks = self.sync_detail();
        asks.extend(self.maybe_prefetch());
        asks
    }

    /// A search hit: session `id` is selected (a filter hiding it goes, the window moves to
    /// it) and message `seq` is selected in its transcript once it is there. The asks, and
    /// whether the transcript is there to select `seq` in now.
    pub(crate) fn jump(&mut self, id: &str, seq: i64) -> (Vec<Ask>, bool) {
        let mut asks = Vec::new();
        // Search is global: a filter that hides the session goes, so the list can show it.
        if self.list.filter.is_some() && self.list.position(id).is_none() {
            asks.extend(self.clear_filter());
        }
        let row = self.list.position(id);
        if let Some(pos) = row {
            self.list.selected = pos;
        }
        if row.is_none() {
            // Outside the loaded window (or new since it was read: another process wrote):
            // move the window to it, then select it; the detail pane follows the selection
            // when it lands (the list and the detail pane must never show two different
            // sessions, also while the window is on its way).
            asks.extend(self.sync_detail());
            let has_transcript = self
                .detail
                .as_ref()
                .is_some_and(|d| d.id == id && d.transcript.is_some());
            self.pending = PendingSelection::Session {
                id: id.to_string(),
                message: (!has_transcript).then_some(seq),
            };
            asks.extend(self.window_at(id));
            return (asks, has_transcript);
        }
        if self.detail.as_ref().is_none_or(|d| d.id != id) {
            asks.extend(self.open_detail(id));
        }
        let has_transcript = self.detail.as_ref().is_some_and(|d| d.transcript.is_some());
        if !has_transcript {
            self.pending = PendingSelection::Message {
                id: id.to_string(),
                seq,
            };
        }
        (asks, has_transcript)
    }

    /// Session `id` was deleted: it leaves the detail pane and the list (the selection stays
    /// where it was), and the window is read again.
    pub(crate) fn session_deleted(&mut self, id: &str) -> Vec<Ask> {
        if self.detail.as_ref().is_some_and(|d| d.id == id) {
            self.detail = None;
        }
        // `visible` indexes `rows` (or `matches`): take the selection before they shift.
        let l = &mut self.list;
        let current = l.current().map(|s| s.id.clone());
        if let Some(pos) = l.rows.iter().position(|s| s.id == id) {
            l.rows.remove(pos);
            l.titles.remove(pos);
            l.keys.remove(pos);
        }
        if let Some(pos) = l.matches.iter().position(|s| s.id == id) {
            l.matches.remove(pos);
            l.match_titles.remove(pos);
            l.matched = l.matched.saturating_sub(1);
            l.visible.retain(|r| r.idx != pos);
            for r in &mut l.visible {
                if r.idx > pos {
                    r.idx -= 1;
                }
            }
        }
        self.rebuild_keeping(current);
        let mut asks = self.sync_detail();
        asks.extend(self.reload_list());
        asks
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
            depth: lineage(s),
            hl: Vec::new(),
        })
        .collect()
}

/// 1 for a session that came from another (a fork, a plan step's session), else 0.
fn lineage(s: &SessionSummary) -> u8 {
    u8::from(s.parent_id.is_some() || s.subagent_of.is_some())
}

#[cfg(test)]
mod tests {
    use super::PAGE;
    use crate::session::{ListQuery, PageKey, SessionSummary};
    use crate::tui::browse::{Browse, Filter, PendingSelection, Row};
    use crate::tui::seam::{Ask, Slot};
    use crate::tui::worker::Request;

    /// A browse screen whose window holds `n` sessions (`s0` newest), more below it.
    fn browse(n: usize) -> Browse {
        let mut b = Browse::default();
        let l = &mut b.list;
        for i in 0..n {
            l.rows.push(SessionSummary {
                id: format!("s{i}"),
                ..SessionSummary::default()
            });
            l.titles.push(format!("session {i}"));
            l.keys.push(PageKey {
                updated_at_ms: 1_000 - i as i64,
                rowid: i as i64,
            });
            l.visible.push(Row {
                idx: i,
                depth: 0,
                hl: Vec::new(),
            });
        }
        l.next = l.keys.last().cloned();
        l.loaded = true;
        b
    }

    #[test]
    fn end_reads_the_last_page_and_waits_to_land_on_its_last_row() {
        let mut b = browse(3);
        let asks = b.act(crate::tui::action::Action::Bottom, 1);
        let query = ListQuery {
            limit: PAGE,
            from_end: true,
            ..ListQuery::default()
        };
        assert_eq!(
            asks,
            vec![Ask::Load(Slot::List, Request::List { query, count: true })]
        );
        assert_eq!(b.pending, PendingSelection::LastRow);
        assert!(b.list.loading, "the page is on its way");
    }

    #[test]
    fn clearing_the_filter_makes_a_match_in_flight_stale_and_the_worker_lets_go() {
        let mut b = browse(2);
        b.list.filter = Some(Filter::default());
        b.list.filtering = true;
        let asks = b.clear_filter();
        assert_eq!(
            asks,
            vec![
                Ask::Forget(Slot::Filter),
                Ask::Request(Request::FilterClosed)
            ]
        );
        assert!(b.list.filter.is_none() && !b.list.filtering);
    }

    #[test]
    fn a_click_selects_the_row_drawn_there_and_the_detail_follows_it() {
        let mut b = browse(3);
        assert_eq!(b.click_row(7), Vec::new(), "below the last row: nothing");
        let asks = b.click_row(1);
        assert_eq!(b.list.selected, 1);
        assert_eq!(
            asks.first(),
            Some(&Ask::Load(
                Slot::Detail,
                Request::Detail { id: "s1".into() }
            ))
        );
        assert_eq!(b.detail.as_ref().map(|d| d.id.as_str()), Some("s1"));
    }

    #[test]
    fn a_deleted_session_leaves_the_list_and_the_selection_stays_on_its_session() {
        let mut b = browse(3);
        b.list.selected = 2;
        let asks = b.session_deleted("s0");
        assert_eq!(b.list.rows.len(), 2);
        assert_eq!(b.list.current().map(|s| s.id.as_str()), Some("s2"));
        assert!(
            asks.iter()
                .any(|a| matches!(a, Ask::Load(Slot::List, Request::List { .. }))),
            "the window is read again: {asks:?}"
        );
    }
}
