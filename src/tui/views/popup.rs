//! Dialog frames shared by the overlays.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Span;
use ratatui::widgets::{Block, Borders, Clear};

use crate::tui::app::App;
pub(super) use crate::tui::layout::centered;

/// Clears an area and draws a bordered block with a title there; returns the inner area.
pub(super) fn popup(frame: &mut Frame<'_>, app: &App, area: Rect, title: &str) -> Rect {
    let t = app.theme;
    frame.render_widget(Clear, area);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.accent())
        .title(Span::styled(format!(" {title} "), t.bold()));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    inner
}
