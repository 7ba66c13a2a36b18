//! Keys and actions the browse screen takes itself: moving in the list, the list filter's
//! keys (typing, Enter, Esc, moving) and those of the `/resume` picker over the same list.

use crossterm::event::{KeyCode, KeyEvent};

use super::state::{Browse, Filter};
use crate::tui::action::Action;
use crate::tui::screen::Screen;
use crate::tui::seam::Ask;

impl Browse {
    /// An action while the list has the focus: Up/Down a row, Page Up/Down `page` rows,
    /// Home/End the first or last session; any other does nothing here.
    pub(crate) fn act(&mut self, action: Action, page: usize) -> Vec<Ask> {
        let page = page.max(1) as i64;
        match action {
            Action::Up => self.move_list(-1),
            Action::Down => self.move_list(1),
            Action::PageUp => self.move_list(-page),
            Action::PageDown => self.move_list(page),
            Action::Top => self.list_end(true),
            Action::Bottom => self.list_end(false),
            _ => Vec::new(),
        }
    }

    /// A key while the list filter is being edited; `None` when it is not (the key is the
    /// keymap's).
    pub(crate) fn filter_key(&mut self, key: &KeyEvent, screen: Screen) -> Option<Vec<Ask>> {
        let f = self.list.filter.as_mut().filter(|f| f.editing)?;
        Some(match key.code {
            KeyCode::Enter => {
                f.editing = false;
                if f.input.text.is_empty() {
                    self.list.filter = None;
                }
                Vec::new()
            }
            KeyCode::Esc => {
                let mut asks = self.clear_filter();
                asks.extend(self.sync_detail());
                asks
            }
            KeyCode::Up => self.move_list(-1),
            KeyCode::Down => self.move_list(1),
            // The selection moves to the best match when the matches arrive, not now: the
            // rows shown until then are the old ones, and the detail pane must keep showing
            // the selected one.
            _ => self.type_filter(key, screen),
        })
    }

    /// A key for the filter's text: when it changed the text, its matches are asked for.
    pub(crate) fn type_filter(&mut self, key: &KeyEvent, screen: Screen) -> Vec<Ask> {
        let Some(f) = self.list.filter.as_mut() else {
            return Vec::new();
        };
        if f.input.key(key) != Some(true) {
            return Vec::new();
        }
        self.list.typed = true;
        self.filter_changed(screen)
    }

    /// `/resume`: the list selects the open session's row and its filter takes the keys.
    pub(crate) fn open_picker(&mut self) {
        let open = self.detail.as_ref().map(|d| d.id.clone());
        if let Some(pos) = open.and_then(|id| self.list.position(&id)) {
            self.list.selected = pos;
        }
        self.start_filter();
    }

    /// The filter takes the keys (one is made if there is none).
    pub(crate) fn start_filter(&mut self) {
        self.list.filter.get_or_insert_with(Filter::default).editing = true;
    }

    /// ↑ or ↓ over the `/resume` picker: the selection moves, the open session stays.
    pub(crate) fn picker_step(&mut self, up: bool) {
        let n = self.list.visible.len();
        let l = &mut self.list;
        l.selected = if up {
            l.selected.saturating_sub(1)
        } else {
            (l.selected + 1).min(n.saturating_sub(1))
        };
    }
}
