//! The `/resume` picker: the session list (or the filter's matches) over the conversation,
//! its filter text on top.

use chrono::Local;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::popup::{centered, popup};
use super::text::{fit, input_cursor_width};
use crate::format;
use crate::sanitize;
use crate::tui::app::App;

pub(super) fn draw(frame: &mut Frame<'_>, app: &App, size: Rect) {
    let t = app.theme;
    let l = &app.browse.list;
    let w = size.width.saturating_sub(4).min(100);
    let h = size.height.saturating_sub(4).max(5);
    let area = centered(size, w, h);
    let inner = popup(frame, app, area, "Resume a session");
    let text = l.filter.as_ref().map_or("", |f| f.input.text.as_str());
    let count = if l.filtering {
        "matching…".to_string()
    } else if l.showing_matches {
        format!(
            "{} match{}",
            l.matched,
            if l.matched == 1 { "" } else { "es" }
        )
    } else {
        format!("{} sessions", l.total.unwrap_or(l.visible.len() as u64))
    };
    let mut lines = vec![Line::from(vec![
        Span::styled("Filter: ", t.accent().patch(t.bold())),
        Span::raw(sanitize::line(text).into_owned()),
        Span::styled(format!("  {count}"), t.dim()),
    ])];
    let rows = inner.height.saturating_sub(1) as usize;
    let first = l.selected.saturating_sub(rows.saturating_sub(1));
    let open = app.browse.detail.as_ref().map(|d| d.id.as_str());
    let width = inner.width as usize;
    for (i, r) in l.visible.iter().enumerate().skip(first).take(rows) {
        let Some(s) = l.summary(r) else { continue };
        let age = format::relative_time(app.now_ms, s.updated_at_ms, &Local);
        // The selection shows without colour too; ● is the session open now.
        let mark = if i == l.selected {
            "▶"
        } else if Some(s.id.as_str()) == open {
            "●"
        } else {
            " "
        };
        let branch = s
            .branch
            .as_deref()
            .map(|b| format!("  {}", sanitize::line(b)))
            .unwrap_or_default();
        let tail = format!("{branch}  {age}  {}", format::short_id(&s.id, 8));
        let room = width.saturating_sub(tail.chars().count() + 4);
        let title = fit(l.title(r), room);
        let pad = room.saturating_sub(unicode_width::UnicodeWidthStr::width(title.as_str()));
        let line = format!("{mark} {title}{}{tail}", " ".repeat(pad));
        lines.push(if i == l.selected {
            Line::from(Span::styled(line, t.selected()))
        } else {
            Line::from(line)
        });
    }
    frame.render_widget(Paragraph::new(lines), inner);
    let x = inner.x + 8 + input_cursor_width(text, l.filter.as_ref().map_or(0, |f| f.input.cursor));
    frame.set_cursor_position((x.min(inner.right().saturating_sub(1)), inner.y));
}
