//! The open session's transcript search as the detail pane holds it: the query asked of the
//! store's index, its answer, and which match comes next. Where the view goes and what the
//! status line says stay with the router (`app::find`), which needs the layout.

use crossterm::event::KeyEvent;

use crate::tui::input::Input;
use crate::tui::pane::{Detail, FIND_LIMIT, Find};
use crate::tui::seam::{Ask, Slot};
use crate::tui::worker::Request;

impl Detail {
    /// The query asked of the store's index for this session.
    fn find_request(&self, query: String) -> Ask {
        Ask::Load(
            Slot::Find,
            Request::Find {
                id: self.id.clone(),
                query,
                limit: FIND_LIMIT,
            },
        )
    }

    /// `/find TEXT`: the open search line takes TEXT as its query, asked at once (nothing
    /// when the search line is not open).
    pub(crate) fn find_text(&mut self, text: &str) -> Vec<Ask> {
        let Some(f) = self.find.as_mut() else {
            return Vec::new();
        };
        let query = text.trim().to_string();
        f.input = Input::with(&query);
        f.editing = false;
        f.matches.clear();
        f.answered.clear();
        f.current = None;
        f.searching = true;
        vec![self.find_request(query)]
    }

    /// A key for the query being typed: when it changed the text, the new query is asked (an
    /// empty one asks nothing, and an answer on its way is stale).
    pub(crate) fn find_typed(&mut self, key: &KeyEvent) -> Vec<Ask> {
        let Some(f) = self.find.as_mut() else {
            return Vec::new();
        };
        if f.input.key(key) != Some(true) {
            return Vec::new();
        }
        let query = f.input.text.trim().to_string();
        if query.is_empty() {
            f.matches.clear();
            f.answered.clear();
            f.current = None;
            f.searching = false;
            return vec![Ask::Forget(Slot::Find)];
        }
        f.searching = true;
        vec![self.find_request(query)]
    }

    /// Closes the search line; its highlights go with it, and an answer on its way is stale.
    pub(crate) fn close_find(&mut self) -> Ask {
        self.find = None;
        Ask::Forget(Slot::Find)
    }

    /// The store's matches for `query` (when it is still the query typed): true when there
    /// is one to move to.
    pub(crate) fn found(&mut self, query: String, seqs: Vec<i64>, more: bool) -> bool {
        let Some(f) = self.find.as_mut().filter(|f| f.input.text.trim() == query) else {
            return false;
        };
        f.matches = seqs;
        f.more = more;
        f.answered = query;
        f.searching = false;
        f.current = None;
        !f.matches.is_empty()
    }

    /// n / N: the next or previous match after the current one (else after the selected or
    /// first shown message), round the ends; it becomes the current one. Its seq, or `None`
    /// when nothing matches.
    pub(crate) fn next_match(&mut self, forward: bool) -> Option<i64> {
        let t = self.transcript.as_ref();
        let from = match t {
            Some(t) if t.follow_end => t.last_seq + 1,
            Some(t) => t.selected.unwrap_or(t.top.0),
            None => 1,
        };
        let f: &mut Find = self.find.as_mut()?;
        let n = f.matches.len();
        if n == 0 {
            return None;
        }
        let next = match f.current {
            Some(i) if forward => (i + 1) % n,
            Some(i) => (i + n - 1) % n,
            None if forward => f.matches.iter().position(|s| *s >= from).unwrap_or(0),
            None => f.matches.iter().rposition(|s| *s <= from).unwrap_or(n - 1),
        };
        let seq = *f.matches.get(next)?;
        f.current = Some(next);
        Some(seq)
    }
}
