//! Dialogs: help, delete confirmation, search.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::popup::{centered, popup};
use super::text::{fit, input_cursor_width};
use crate::sanitize;
use crate::session::{SNIPPET_CLOSE, SNIPPET_OPEN};
use crate::tui::app::{App, Overlay, SearchState, short};
use crate::tui::keymap::{self, Context};

pub(super) fn draw(frame: &mut Frame<'_>, app: &App, size: Rect) {
    match &app.overlay {
        Overlay::None | Overlay::Rename { .. } => {}
        Overlay::Help(scroll) => help(frame, app, size, *scroll),
        Overlay::ConfirmDelete { title, id } => {
            let t = &app.theme;
            let area = centered(size, 56, 7);
            let inner = popup(frame, app, area, "Delete session");
            let lines = vec![
                Line::from(vec![
                    Span::raw("Delete "),
                    Span::styled(format!("\"{}\"", fit(title, 36)), t.bold()),
                    Span::styled(format!(" ({})", short(id)), t.dim()),
                    Span::raw("?"),
                ]),
                Line::from("Its messages and assets are removed for good."),
                Line::default(),
                Line::from(vec![
                    Span::styled("y", t.error()),
                    Span::raw(" delete    "),
                    Span::styled("n", t.accent()),
                    Span::raw(" / Esc keep"),
                ]),
            ];
            frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
        }
        Overlay::Search(s) => search(frame, app, size, s),
    }
}

fn help(frame: &mut Frame<'_>, app: &App, size: Rect, scroll: u16) {
    let t = &app.theme;
    let area = centered(size, 76, size.height.saturating_sub(2));
    let inner = popup(frame, app, area, "Help");
    let mut lines = Vec::new();
    for (ctx, name) in [
        (Context::Browse, "Session list and detail"),
        (Context::Conversation, "Conversation view"),
    ] {
        lines.push(Line::from(Span::styled(name, t.bold())));
        for b in keymap::BINDINGS.iter().filter(|b| b.context == ctx) {
            lines.push(Line::from(vec![
                Span::styled(format!("  {:<12}", b.label), t.accent()),
                Span::raw(b.help),
            ]));
        }
        lines.push(Line::default());
    }
    lines.push(Line::from(Span::styled("Filter (/)", t.bold())));
    lines.push(Line::from(
        "  Type to narrow the list (fuzzy over titles and first prompts). Enter keeps",
    ));
    lines.push(Line::from("  the filter, Esc clears it."));
    lines.push(Line::from(Span::styled("Search (s)", t.bold())));
    lines.push(Line::from(
        "  Full-text search of every message; Enter opens the match in the transcript.",
    ));
    lines.push(Line::from(Span::styled("Mouse", t.bold())));
    lines.push(Line::from(
        "  The wheel scrolls what is under it; a click selects a row or a tab.",
    ));
    frame.render_widget(Paragraph::new(lines).scroll((scroll, 0)), inner);
}

/// A snippet with its marked terms highlighted; the markers themselves are never drawn.
pub fn snippet_spans(snippet: &str, app: &App) -> Vec<Span<'static>> {
    let t = &app.theme;
    let clean = sanitize::line(snippet);
    let mut spans = Vec::new();
    let mut cur = String::new();
    let mut hl = false;
    for c in clean.chars() {
        match c {
            SNIPPET_OPEN | SNIPPET_CLOSE => {
                if !cur.is_empty() {
                    spans.push(Span::styled(
                        std::mem::take(&mut cur),
                        if hl { t.matched() } else { t.text() },
                    ));
                }
                hl = c == SNIPPET_OPEN;
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        spans.push(Span::styled(cur, if hl { t.matched() } else { t.text() }));
    }
    spans
}

fn search(frame: &mut Frame<'_>, app: &App, size: Rect, s: &SearchState) {
    let t = &app.theme;
    let area = centered(
        size,
        size.width.saturating_sub(8).max(30),
        size.height.saturating_sub(4),
    );
    let inner = popup(frame, app, area, "Search all sessions");
    let prefix = "Search: ";
    frame.render_widget(
        Paragraph::new(Line::from(vec![
            Span::styled(prefix, t.accent().patch(t.bold())),
            Span::raw(sanitize::line(&s.input.text).into_owned()),
        ])),
        Rect { height: 1, ..inner },
    );
    let x = inner.x + prefix.len() as u16 + input_cursor_width(&s.input.text, s.input.cursor);
    frame.set_cursor_position((x.min(inner.right().saturating_sub(1)), inner.y));
    let status = if s.searching {
        "searching…".to_string()
    } else if s.answered.is_empty() {
        "Type words to search every message of every session.".to_string()
    } else if s.hits.is_empty() {
        format!("No message matches \"{}\".", sanitize::line(&s.answered))
    } else {
        format!(
            "{} match{}",
            s.hits.len(),
            if s.hits.len() == 1 { "" } else { "es" }
        )
    };
    frame.render_widget(
        Paragraph::new(Span::styled(status, t.dim())),
        Rect {
            y: inner.y + 1,
            height: 1,
            ..inner
        },
    );
    let list = Rect {
        y: inner.y + 3,
        height: inner.height.saturating_sub(3),
        ..inner
    };
    let per = 3usize;
    let fit_n = (list.height as usize / per).max(1);
    let first = s.selected.saturating_sub(fit_n.saturating_sub(1));
    let mut lines = Vec::new();
    for (i, hit) in s.hits.iter().enumerate().skip(first).take(fit_n) {
        let sel = i == s.selected;
        let title = sanitize::line(&hit.session_title).into_owned();
        let head = Line::from(vec![
            Span::styled(if sel { "▌ " } else { "  " }, t.accent()),
            Span::styled(
                fit(&title, list.width.saturating_sub(24) as usize),
                t.bold(),
            ),
            Span::styled(
                format!("  #{} {}  {}", hit.seq, hit.role, short(&hit.session_id)),
                t.dim(),
            ),
        ]);
        lines.push(if sel { head.style(t.selected()) } else { head });
        let mut body = vec![Span::raw("    ")];
        body.extend(snippet_spans(&hit.snippet, app));
        lines.push(Line::from(body));
        lines.push(Line::default());
    }
    frame.render_widget(Paragraph::new(lines), list);
}
