//! Dialogs: help, delete confirmation, search.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::popup::{centered, popup};
use super::text::{fit, input_cursor_width};
use crate::format::short_id;
use crate::sanitize;
use crate::session::{SNIPPET_CLOSE, SNIPPET_OPEN};
use crate::tui::app::{App, Confirm, Overlay, PlanAsk, SearchState};
use crate::tui::help::{help_area, help_lines, help_max_scroll};
use crate::tui::keymap::{self, Context};

pub(super) fn draw(frame: &mut Frame<'_>, app: &App, size: Rect) {
    match &app.overlay {
        Overlay::None
        | Overlay::Rename { .. }
        | Overlay::DenyReason { .. }
        | Overlay::AlwaysRule { .. } => {}
        Overlay::Confirm(what) => {
            let t = app.theme;
            let (title, text) = match what {
                Confirm::Quit => (
                    "Quit",
                    "A turn is running. Quit anyway? It is cancelled; what arrived is kept.",
                ),
                Confirm::Leave => (
                    "Leave",
                    "Go back to the list? The turn keeps running; its row shows it, Enter comes back.",
                ),
            };
            let area = centered(size, 56, 7);
            let inner = popup(frame, app, area, title);
            let lines = vec![
                Line::from(text),
                Line::default(),
                Line::from(vec![
                    Span::styled("y", t.accent().patch(t.bold())),
                    Span::raw(" yes    "),
                    Span::styled("n", t.accent()),
                    Span::raw(" / Esc no"),
                ]),
            ];
            frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
        }
        Overlay::Help(scroll) => help(frame, app, size, *scroll),
        Overlay::ConfirmDelete { title, id } => {
            let t = app.theme;
            let area = centered(size, 56, 7);
            let inner = popup(frame, app, area, "Delete session");
            let lines = vec![
                Line::from(vec![
                    Span::raw("Delete "),
                    Span::styled(format!("\"{}\"", fit(title, 36)), t.bold()),
                    Span::styled(format!(" ({})", short_id(id, 8)), t.dim()),
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
        Overlay::Plan(p) => plan(frame, app, size, p),
        Overlay::Models { names, selected } => models(frame, app, size, names, *selected),
        Overlay::Resume => super::resume::draw(frame, app, size),
        Overlay::Rewind(d) => super::rewind::draw(frame, app, d),
        Overlay::Permissions(d) => super::permissions::draw(frame, app, size, d),
        Overlay::Subagents(d) => super::subagents::draw(frame, app, size, d),
    }
}

/// The server's models, the selected one marked; scrolled to keep it in view.
fn models(frame: &mut Frame<'_>, app: &App, size: Rect, names: &[String], selected: usize) {
    let t = app.theme;
    let rows = size.height.saturating_sub(6).clamp(1, 20) as usize;
    let first = selected.saturating_sub(rows.saturating_sub(1));
    let lines: Vec<Line<'static>> = names
        .iter()
        .enumerate()
        .skip(first)
        .take(rows)
        .map(|(i, n)| {
            if i == selected {
                Line::from(Span::styled(format!("▶ {n}"), t.selected()))
            } else {
                Line::from(format!("  {n}"))
            }
        })
        .collect();
    let h = (lines.len() as u16).saturating_add(2);
    let area = centered(size, 60, h);
    let title = format!("Models · {}", names.len());
    let inner = popup(frame, app, area, &title);
    frame.render_widget(Paragraph::new(lines), inner);
}

/// The proposed plan: its steps layer by layer (a layer runs after every earlier one), and
/// the keys that answer it.
fn plan(frame: &mut Frame<'_>, app: &App, size: Rect, p: &PlanAsk) {
    let t = app.theme;
    let mut lines = Vec::new();
    for (i, layer) in p.layers.iter().enumerate() {
        lines.push(Line::from(Span::styled(
            format!("Layer {}", i + 1),
            t.bold(),
        )));
        for id in layer {
            let title = p
                .steps
                .iter()
                .find(|(s, _)| s == id)
                .map_or("", |(_, title)| title.as_str());
            lines.push(Line::from(vec![
                Span::styled(format!("  {id}"), t.accent()),
                Span::raw(format!("  {title}")),
            ]));
        }
    }
    lines.push(Line::default());
    let mut keys = Vec::new();
    for (k, what) in keymap::bar(Context::Plan) {
        keys.push(Span::styled(k, t.accent().patch(t.bold())));
        keys.push(Span::raw(format!(" {what}   ")));
    }
    lines.push(Line::from(keys));
    let h = (lines.len() as u16).saturating_add(2);
    let area = centered(size, 72, h);
    let title = format!("Plan · {} steps", p.steps.len());
    let inner = popup(frame, app, area, &title);
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
}

fn help(frame: &mut Frame<'_>, app: &App, size: Rect, scroll: u16) {
    let area = help_area(size);
    let inner = popup(frame, app, area, "Help");
    let lines = help_lines(app.theme, inner.width as usize);
    let scroll = scroll.min(help_max_scroll(app.theme, size));
    frame.render_widget(Paragraph::new(lines).scroll((scroll, 0)), inner);
}

/// A snippet with its marked terms highlighted; the markers themselves are never drawn.
pub(super) fn snippet_spans(snippet: &str, app: &App) -> Vec<Span<'static>> {
    let t = app.theme;
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
    let t = app.theme;
    // The whole width between the title and the status line: a narrower box left a strip of
    // the transcript beside it that read as part of the results.
    let area = Rect {
        x: size.x,
        y: size.y + 1,
        width: size.width,
        height: size.height.saturating_sub(3),
    };
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
        let mut none = format!("No message matches \"{}\".", sanitize::line(&s.answered));
        if !s.summary.is_empty() {
            none.push(' ');
            none.push_str(&s.summary);
        }
        none
    } else {
        s.summary.clone()
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
                format!(
                    "  #{} {}  {}",
                    hit.seq,
                    hit.role,
                    short_id(&hit.session_id, 8)
                ),
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
