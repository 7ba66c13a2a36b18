//! The `/permissions` dialog: the rules in force grouped by where they come from, each with
//! its list and line, the selected one marked; scrolled to keep it in view.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::popup::{centered, popup};
use super::text::fit;
use crate::tui::app::App;
use crate::tui::permissions::{PermissionsDialog, Row};

pub(super) fn draw(frame: &mut Frame<'_>, app: &App, size: Rect, d: &PermissionsDialog) {
    let t = app.theme;
    let width = size.width.saturating_sub(4).min(110);
    let inner_w = usize::from(width.saturating_sub(2));
    let room = usize::from(size.height.saturating_sub(6)).max(1);
    let first = d.selected.saturating_sub(room.saturating_sub(2));
    let mut lines: Vec<Line<'static>> = Vec::new();
    for (i, row) in d.rows.iter().enumerate().skip(first).take(room) {
        lines.push(match row {
            Row::Heading(h) => Line::from(Span::styled(fit(&format!(" {h}"), inner_w), t.bold())),
            Row::Note(n) => Line::from(Span::styled(fit(&format!("   {n}"), inner_w), t.dim())),
            Row::Rule {
                list, text, line, ..
            } => {
                let chosen = i == d.selected;
                let mark = if chosen { " ▶ " } else { "   " };
                let list_style = match *list {
                    "deny" => t.error(),
                    "ask" => t.warn(),
                    _ => t.ok(),
                };
                let text_w = inner_w.saturating_sub(3 + 8 + line.chars().count() + 1);
                let body = if chosen { t.selected() } else { t.code() };
                Line::from(vec![
                    Span::styled(mark.to_string(), body),
                    Span::styled(format!("{list:<8}"), list_style),
                    Span::styled(fit(text, text_w), body),
                    Span::styled(format!(" {line}"), t.dim()),
                ])
            }
        });
    }
    let h = u16::try_from(lines.len())
        .unwrap_or(u16::MAX)
        .saturating_add(2);
    let area = centered(size, width, h);
    let n = d.count();
    let title = format!("Permissions · {n} rule{}", if n == 1 { "" } else { "s" });
    let inner = popup(frame, app, area, &title);
    frame.render_widget(Paragraph::new(lines), inner);
}
