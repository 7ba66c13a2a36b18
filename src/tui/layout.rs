//! Where everything goes for a terminal size. Computed once per change (the app keeps it) and
//! shared by drawing and mouse hit-testing, so a click lands on what was drawn there.

use ratatui::layout::{Constraint, Layout as Split, Rect};
use ratatui::widgets::Block;

use crate::tui::screen::{Screen, Tab};

/// Rows the status line grows to, at most, for a message too long for one.
pub(crate) const STATUS_MAX_ROWS: u16 = 3;

/// The smallest terminal the TUI draws into.
pub(crate) const MIN_SIZE: (u16, u16) = (40, 10);

/// Lists at least this wide have a column beside the title (the age first), and so a row of
/// column heads.
pub(crate) const LIST_WIDE: u16 = 30;

/// A browse screen narrower than this gets a key bar of two rows: the list's keys need about
/// 103 columns, and none of them may go missing (Tab, `[ ]`, `d` ...).
pub(crate) const BAR_ONE_ROW: u16 = 104;

/// How the detail tabs are labelled: the first form that fits the tab row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TabForm {
    /// ` Transcript │ Plan │ ...`
    #[default]
    Padded,
    /// `Transcript│Plan│...` (80 columns).
    Tight,
    /// `Tr│Pl│Us│As│In` (narrower still).
    Short,
}

impl TabForm {
    /// The label of `tab` in this form, without the separator after it.
    pub(crate) fn label(self, tab: Tab) -> String {
        match self {
            TabForm::Padded => format!(" {} ", tab.title()),
            TabForm::Tight => tab.title().to_string(),
            TabForm::Short => tab.title().chars().take(2).collect(),
        }
    }

    /// The columns all tabs take, each with its separator.
    fn width(self) -> u16 {
        Tab::ALL
            .iter()
            .map(|t| self.label(*t).chars().count() as u16 + 1)
            .sum()
    }
}

/// The rectangles of one frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Layout {
    /// The whole terminal this was computed for.
    pub size: Rect,
    pub title: Rect,
    /// Session list block (browse).
    pub list: Rect,
    /// Inside the list block, below the filter line: where "no sessions" notes go.
    pub list_body: Rect,
    /// The filter line, while a filter is active.
    pub list_filter: Option<Rect>,
    /// Column headings (wide lists only).
    pub list_header: Option<Rect>,
    /// Where session rows are drawn, one per line.
    pub list_rows: Rect,
    /// Detail block (browse).
    pub detail: Rect,
    /// Detail tab row.
    pub tabs: Rect,
    /// Each tab's title, in [`Tab::ALL`] order, clipped to the tab row.
    pub tab_rects: [Rect; Tab::ALL.len()],
    /// How the tab titles are written to fit.
    pub tab_form: TabForm,
    pub body: Rect,
    /// Transcript lines (browse: the detail body; conversation: inside its block).
    pub transcript: Rect,
    /// Conversation transcript block.
    pub conversation: Rect,
    /// Conversation input block.
    pub input: Rect,
    pub status: Rect,
    pub bar: Rect,
}

impl Layout {
    /// The layout of `screen` in `size`; `filtering` reserves the list's filter line,
    /// `composer_rows` is how many lines the message being written has.
    #[cfg(test)]
    pub(crate) fn compute(
        screen: Screen,
        filtering: bool,
        composer_rows: u16,
        size: Rect,
    ) -> Layout {
        Layout::compute_with_status(screen, filtering, composer_rows, 1, size)
    }

    /// The layout with a status line of `status_rows` rows (a long message wraps
    /// onto up to [`STATUS_MAX_ROWS`], taken from the main area).
    pub(crate) fn compute_with_status(
        screen: Screen,
        filtering: bool,
        composer_rows: u16,
        status_rows: u16,
        size: Rect,
    ) -> Layout {
        let mut a = Layout {
            size,
            ..Layout::default()
        };
        let bar_rows = if screen == Screen::Browse && size.width < BAR_ONE_ROW && size.height >= 16
        {
            2
        } else {
            1
        };
        // A wrapped status never leaves the main area less than half the terminal.
        let status_rows = status_rows
            .clamp(1, STATUS_MAX_ROWS)
            .min((size.height / 4).max(1));
        let [title, main, status, bar] = Split::vertical([
            Constraint::Length(1),
            Constraint::Min(1),
            Constraint::Length(status_rows),
            Constraint::Length(bar_rows),
        ])
        .areas(size);
        a.title = title;
        a.status = status;
        a.bar = bar;
        match screen {
            Screen::Browse => {
                // The list takes 55% of the width (titles are what people scan), at least 36
                // columns, and leaves the detail pane at least 20.
                let list_w = (main.width * 11 / 20)
                    .max(36)
                    .min(main.width.saturating_sub(20));
                let [list, detail] =
                    Split::horizontal([Constraint::Length(list_w), Constraint::Min(1)]).areas(main);
                a.list = list;
                a.detail = detail;
                a.list_areas(filtering);
                let inner = Block::bordered().inner(detail);
                let [tabs, body] =
                    Split::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(inner);
                a.tabs = tabs;
                a.tab_form = [TabForm::Padded, TabForm::Tight, TabForm::Short]
                    .into_iter()
                    .find(|f| f.width() <= tabs.width)
                    .unwrap_or(TabForm::Short);
                let mut x = tabs.x;
                for (i, t) in Tab::ALL.iter().enumerate() {
                    // The title and the "│" after it.
                    let w = a.tab_form.label(*t).chars().count() as u16 + 1;
                    a.tab_rects[i] = Rect::new(x, tabs.y, w, 1).intersection(tabs);
                    x = x.saturating_add(w);
                }
                // The line under the tabs is a rule.
                a.body = Rect {
                    y: body.y + 1,
                    height: body.height.saturating_sub(1),
                    ..body
                };
                a.transcript = a.body;
            }
            Screen::Conversation => {
                // The editor grows with its text, up to a limit and never past half the view.
                let rows = composer_rows
                    .clamp(1, crate::tui::composer::MAX_ROWS)
                    .min((main.height / 2).saturating_sub(2).max(1));
                let [conv, input] =
                    Split::vertical([Constraint::Min(1), Constraint::Length(rows + 2)]).areas(main);
                a.conversation = conv;
                a.input = input;
                a.transcript = Block::bordered().inner(conv);
            }
        }
        a
    }

    fn list_areas(&mut self, filtering: bool) {
        let mut inner = Block::bordered().inner(self.list);
        if filtering {
            self.list_filter = Some(Rect { height: 1, ..inner });
            inner.y += 1;
            inner.height = inner.height.saturating_sub(1);
        }
        self.list_body = inner;
        if inner.width >= LIST_WIDE && inner.height > 2 {
            self.list_header = Some(Rect { height: 1, ..inner });
            inner.y += 1;
            inner.height -= 1;
        }
        self.list_rows = inner;
    }

    /// The tab whose title is at a screen cell.
    pub fn tab_at(&self, column: u16, row: u16) -> Option<Tab> {
        let at = ratatui::layout::Position::new(column, row);
        self.tab_rects
            .iter()
            .position(|r| r.contains(at))
            .map(|i| Tab::ALL[i])
    }
}

/// The first list row to draw so that `selected` is visible in `height` rows, moving the
/// previous `offset` only as far as needed (the list does not jump under the cursor).
pub(crate) fn list_offset(selected: usize, offset: usize, height: usize, len: usize) -> usize {
    let mut offset = offset;
    if selected < offset {
        offset = selected;
    } else if height > 0 && selected >= offset + height {
        offset = selected + 1 - height;
    }
    offset.min(len.saturating_sub(height.max(1)))
}

/// A centred rectangle of at most `w` x `h`.
pub(crate) fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tabs_are_hit_where_they_are_drawn() {
        let a = Layout::compute(Screen::Browse, false, 1, Rect::new(0, 0, 120, 35));
        let first = a.tab_rects[0];
        assert_eq!(first.x, a.tabs.x);
        assert_eq!(a.tab_at(first.x, a.tabs.y), Some(Tab::Transcript));
        let plan = a.tab_rects[1];
        assert_eq!(plan.x, first.right());
        assert_eq!(a.tab_at(plan.right() - 1, a.tabs.y), Some(Tab::Plan));
        assert_eq!(a.tab_at(plan.x, a.tabs.y + 1), None);
    }

    #[test]
    fn a_filter_pushes_the_rows_down_one_line() {
        let size = Rect::new(0, 0, 120, 35);
        let plain = Layout::compute(Screen::Browse, false, 1, size);
        let filtered = Layout::compute(Screen::Browse, true, 1, size);
        assert_eq!(filtered.list_rows.y, plain.list_rows.y + 1);
        assert!(plain.list_header.is_some(), "a 120-column list is wide");
    }

    #[test]
    fn tiny_terminals_lay_out_without_panicking() {
        for w in 0..12 {
            for h in 0..12 {
                for screen in [Screen::Browse, Screen::Conversation] {
                    Layout::compute(screen, true, 1, Rect::new(0, 0, w, h));
                }
            }
        }
    }

    #[test]
    fn the_offset_moves_only_as_far_as_the_selection_needs() {
        assert_eq!(list_offset(0, 0, 10, 100), 0);
        assert_eq!(list_offset(15, 0, 10, 100), 6);
        assert_eq!(list_offset(8, 6, 10, 100), 6, "still visible: no jump");
        assert_eq!(list_offset(3, 6, 10, 100), 3);
        assert_eq!(list_offset(5, 50, 10, 8), 0, "never past the end");
    }
}
