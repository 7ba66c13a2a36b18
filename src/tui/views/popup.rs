//! Dialog frames shared by the overlays.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Span;
use ratatui::widgets::{Block, Borders, Clear};

use crate::tui::app::App;

/// A centred rectangle of at most `w` x `h`.
pub fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

/// Clears an area and draws a bordered block with a title there; returns the inner area.
pub fn popup(frame: &mut Frame<'_>, app: &App, area: Rect, title: &str) -> Rect {
    let t = &app.theme;
    frame.render_widget(Clear, area);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.accent())
        .title(Span::styled(format!(" {title} "), t.bold()));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    inner
}
