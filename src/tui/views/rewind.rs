//! The rewind dialog (issue 26): the message gone back to, the three choices (the chosen
//! one marked), what it does, and the preview of each file, scrolled; only the visible
//! lines are drawn.

use ratatui::Frame;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::popup::popup;
use super::text::fit;
use crate::tui::app::App;
use crate::tui::rewind::{
    CHOICES, HEAD_ROWS, LineKind, RewindDialog, choice_help, choice_name, dialog_area, preview_rows,
};

pub(super) fn draw(frame: &mut Frame<'_>, app: &App, d: &RewindDialog) {
    let t = app.theme;
    let area = dialog_area(app.size);
    let title = format!("Rewind to before message #{}", d.preview.seq);
    let inner = popup(frame, app, area, &title);
    let width = usize::from(inner.width);
    let mut choices = Vec::new();
    for (i, scope) in CHOICES.iter().enumerate() {
        let name = format!("{} {}", i + 1, choice_name(*scope));
        if i == d.choice {
            choices.push(Span::styled(format!("▶ {name}"), t.selected()));
        } else {
            choices.push(Span::raw(format!("  {name}")));
        }
        choices.push(Span::raw("  "));
    }
    let mut lines = vec![
        Line::from(vec![
            Span::styled("You: ", t.user()),
            Span::raw(fit(&d.preview.message, width.saturating_sub(5))),
        ]),
        Line::default(),
        Line::from(choices),
        Line::from(Span::styled(
            fit(&choice_help(d.scope(), d.preview.seq), width),
            t.dim(),
        )),
        Line::default(),
    ];
    debug_assert_eq!(lines.len(), usize::from(HEAD_ROWS));
    let rows = preview_rows(app.size);
    let all = d.lines();
    let first = d.scroll.min(all.len().saturating_sub(1));
    for (kind, text) in all.iter().skip(first).take(rows) {
        let style = match kind {
            LineKind::File => t.bold(),
            LineKind::Left => t.warn(),
            LineKind::Added => t.ok(),
            LineKind::Removed => t.error(),
            LineKind::Hunk => t.accent(),
            LineKind::Plain => t.text(),
        };
        lines.push(Line::from(Span::styled(fit(text, width), style)));
    }
    while lines.len() < usize::from(HEAD_ROWS) + rows {
        lines.push(Line::default());
    }
    let last = (first + rows).min(all.len());
    let position = if all.len() > rows {
        format!("lines {}-{last} of {} (↑↓ PgUp/PgDn)", first + 1, all.len())
    } else {
        String::new()
    };
    lines.push(Line::from(Span::styled(position, t.dim())));
    frame.render_widget(Paragraph::new(lines), inner);
}
