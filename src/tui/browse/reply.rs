//! The storage worker's answers the browse screen takes: the database's change counter, a
//! page of the list, the filter's matches and the open session's usage. The router hands
//! over only the answers still current for their slot (a stale one never arrives here).

use super::state::{Browse, Load, PendingSelection};
use crate::session::{ListPage, Usage};
use crate::tui::filter::FilterResult;
use crate::tui::screen::Screen;
use crate::tui::seam::{Ask, Slot};

/// An answer for the browse screen.
#[derive(Debug)]
pub(crate) enum BrowseReply {
    /// The database's change counter.
    Version(i64),
    /// A page of the list, with the total when it was counted and the sessions above a page
    /// read at a session.
    List {
        page: ListPage,
        count: Option<u64>,
        base: Option<u64>,
    },
    /// The filter's matches for `text` (`None`: a newer text stopped it).
    Filter {
        text: String,
        result: Option<FilterResult>,
    },
    /// Session `id`'s usage by turn.
    Usage {
        id: String,
        turns: Vec<(i64, Usage)>,
    },
}

impl Browse {
    /// Takes an answer; `screen` is the one shown (the detail pane follows the list only on
    /// the browse screen).
    pub(crate) fn on_reply(&mut self, reply: BrowseReply, screen: Screen) -> Vec<Ask> {
        match reply {
            BrowseReply::Version(v) => self.on_version(v),
            BrowseReply::List { page, count, base } => self.on_list(page, count, base, screen),
            // `None`: a newer text stopped it; that one's answer follows.
            BrowseReply::Filter {
                text,
                result: Some(r),
            } if self.list.filter_text() == text => self.show_matches(r, screen),
            BrowseReply::Filter { .. } => Vec::new(),
            BrowseReply::Usage { id, turns } => {
                if let Some(d) = self.detail.as_mut()
                    && d.id == id
                {
                    d.usage = Some(turns);
                }
                Vec::new()
            }
        }
    }

    /// The latest request of `slot` failed: what waited for it stops waiting.
    pub(crate) fn request_failed(&mut self, slot: Slot) {
        match slot {
            Slot::List => self.list.loading = false,
            Slot::Filter => self.list.filtering = false,
            Slot::Find => {
                if let Some(f) = self.detail.as_mut().and_then(|d| d.find.as_mut()) {
                    f.searching = false;
                }
            }
            // The message cannot be selected in a session that did not load.
            Slot::Detail => match &mut self.pending {
                PendingSelection::Message { .. } => self.pending = PendingSelection::None,
                PendingSelection::Session { message, .. } => *message = None,
                PendingSelection::None | PendingSelection::LastRow | PendingSelection::Reloaded => {
                }
            },
            Slot::Usage | Slot::Search | Slot::History | Slot::Rewind | Slot::FileChanges => {}
        }
    }

    /// Selects `what` when the answer holding it arrives (it replaces an older wish).
    pub(crate) fn select_when_loaded(&mut self, what: PendingSelection) {
        self.pending = what;
    }

    /// Session `id` loaded: the message waiting to be selected in it, if one does (the wish
    /// is settled).
    pub(crate) fn message_to_select(&mut self, id: &str) -> Option<i64> {
        match &mut self.pending {
            PendingSelection::Session { id: want, message } if *want == id => message.take(),
            PendingSelection::Message { id: want, seq } if *want == id => {
                let seq = *seq;
                self.pending = PendingSelection::None;
                Some(seq)
            }
            _ => None,
        }
    }

    /// The database's change counter. It moves only when another process wrote (this
    /// process's own writes are applied where they are made).
    fn on_version(&mut self, v: i64) -> Vec<Ask> {
        if self.list.loading && self.data_version.is_some() {
            // Keep the old baseline: the next poll compares against it again, so a write the
            // loading list may have missed is not lost.
            return Vec::new();
        }
        let changed = self.data_version.is_some_and(|old| old != v);
        self.data_version = Some(v);
        if !changed {
            return Vec::new();
        }
        // Reload what is shown, keeping the selection; the open session refreshes once the
        // list says it still exists. A selection the user is waiting for keeps precedence.
        if matches!(
            self.pending,
            PendingSelection::None | PendingSelection::Reloaded
        ) {
            self.pending = PendingSelection::Reloaded;
        }
        self.reload_list()
    }

    fn on_list(
        &mut self,
        page: ListPage,
        count: Option<u64>,
        base: Option<u64>,
        screen: Screen,
    ) -> Vec<Ask> {
        self.list.loading = false;
        self.list.loaded = true;
        if let Some(c) = count {
            self.list.total = Some(c);
        }
        let load = self.list.load;
        let current = if load == Load::Home {
            // Home lands on the first session.
            self.list.selected = 0;
            None
        } else {
            self.list.current().map(|s| s.id.clone())
        };
        self.place_page(page, base);
        self.rebuild_keeping(current);
        let mut asks = Vec::new();
        match std::mem::take(&mut self.pending) {
            PendingSelection::LastRow if self.list.next.is_none() => {
                self.list.selected = self.list.visible.len().saturating_sub(1);
            }
            // Still not there (the rebuild settles it when it is).
            PendingSelection::Session { id, message } => {
                if load != Load::At && (self.list.next.is_some() || self.list.above.is_some()) {
                    // Outside this window: move the window to it (once).
                    self.pending = PendingSelection::Session {
                        id: id.clone(),
                        message,
                    };
                    asks.extend(self.window_at(&id));
                } else if let Some(seq) = message {
                    self.pending = PendingSelection::Message { id, seq };
                }
            }
            PendingSelection::Reloaded => {
                if let Some(d) = &self.detail
                    && self.list.rows.iter().any(|s| s.id == d.id)
                {
                    asks.extend(self.refresh_detail());
                }
            }
            other => self.pending = other,
        }
        if screen == Screen::Browse {
            asks.extend(self.sync_detail());
        }
        if !matches!(load, Load::Down | Load::Up) && !self.list.filter_text().is_empty() {
            // The sessions changed: match the filter again.
            asks.extend(self.filter_changed(screen));
        }
        asks.extend(self.maybe_prefetch());
        asks
    }
}
