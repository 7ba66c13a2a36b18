//! The Ctrl-T dialog: the running turn's sub-agents, a line each (who, what it does now,
//! calls, tokens, time), the chosen one marked; scrolled to keep it in view.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::popup::{centered, popup};
use super::text::fit;
use crate::tui::app::App;
use crate::tui::subagents::{SubState, SubagentsDialog};

pub(super) fn draw(frame: &mut Frame<'_>, app: &App, size: Rect, d: &SubagentsDialog) {
    let t = app.theme;
    let rows = app.subagent_rows();
    let width = size.width.saturating_sub(4).min(90);
    let inner_w = usize::from(width.saturating_sub(2));
    let room = usize::from(size.height.saturating_sub(6)).max(1);
    let first = d.selected.saturating_sub(room.saturating_sub(1));
    let now = app.now_ms;
    let lines: Vec<Line<'static>> = rows
        .iter()
        .enumerate()
        .skip(first)
        .take(room)
        .map(|(i, r)| {
            let chosen = i == d.selected;
            let mark = if chosen { " ▶ " } else { "   " };
            let style = match (&r.state, chosen) {
                (_, true) => t.selected(),
                (SubState::Asking, _) => t.warn(),
                (SubState::Ended(how), _) if how == "completed" => t.ok(),
                (SubState::Ended(_), _) => t.dim(),
                (SubState::Running, _) => t.text(),
            };
            Line::from(vec![
                Span::styled(mark.to_string(), style),
                Span::styled(fit(&r.describe(now), inner_w.saturating_sub(3)), style),
            ])
        })
        .collect();
    let h = u16::try_from(lines.len())
        .unwrap_or(u16::MAX)
        .saturating_add(2);
    let area = centered(size, width, h);
    let running = rows.iter().filter(|r| r.running()).count();
    let title = format!("Sub-agents · {running} of {} running", rows.len());
    let inner = popup(frame, app, area, &title);
    frame.render_widget(Paragraph::new(lines), inner);
}
