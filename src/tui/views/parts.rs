//! Pieces the panes share: borders, the focus mark, wrapped key/value lines, step icons.

use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::{Block, BorderType};

use crate::tui::theme::Theme;
pub(super) use crate::tui::theme::{marker, step_icon};

/// A pane's border: focus shows as a thick border in its accent colour, so it stays visible
/// without colour (`NO_COLOR`).
pub(super) fn pane_block(t: Theme, focused: bool) -> Block<'static> {
    if focused {
        Block::bordered()
            .border_type(BorderType::Thick)
            .border_style(t.accent())
    } else {
        Block::bordered().border_style(t.border())
    }
}

/// The start of a pane title: a marker on the focused pane.
pub(super) fn focus_mark(focused: bool) -> &'static str {
    if focused { "▶ " } else { " " }
}

/// Lines wrapped to `width`, continuation lines indented by `indent` columns (key/value
/// panes whose values can be long: ids, paths).
pub(super) fn wrap_lines(
    lines: Vec<Line<'static>>,
    width: usize,
    indent: usize,
) -> Vec<Line<'static>> {
    let pad = " ".repeat(indent);
    lines
        .into_iter()
        .flat_map(|l| {
            let pieces: Vec<(String, Style)> = l
                .spans
                .iter()
                .map(|s| (s.content.to_string(), s.style))
                .collect();
            crate::tui::markdown::wrap(&pieces, width, "", &pad)
        })
        .collect()
}
