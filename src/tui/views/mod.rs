//! Pure views: functions of the app state that draw a frame. They read the state and the
//! layout it settled on; they write nothing back.

mod detail;
mod list;
mod overlay;
mod popup;
mod text;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

pub use text::{abs_time, fit, fmt_tokens, input_cursor_width, rel_time};

use super::app::{App, Overlay, Screen};
use super::keymap;
use super::layout::Layout;
use crate::sanitize;

/// The smallest terminal the TUI draws into.
pub const MIN_SIZE: (u16, u16) = (40, 10);

/// Draws the whole frame.
pub fn draw(frame: &mut Frame<'_>, app: &App) {
    let size = frame.area();
    if size.width < MIN_SIZE.0 || size.height < MIN_SIZE.1 {
        let msg = format!(
            "Terminal too small ({}x{}). neocode needs at least {}x{}.",
            size.width, size.height, MIN_SIZE.0, MIN_SIZE.1
        );
        frame.render_widget(Paragraph::new(msg).wrap(Wrap { trim: true }), size);
        return;
    }
    // The app settles its layout for its own idea of the terminal size; a frame of another
    // size (a resize not yet handled) is laid out afresh, never drawn out of bounds.
    let computed;
    let a = if app.layout.size == size {
        &app.layout
    } else {
        computed = Layout::compute(app.screen, app.list.filter.is_some(), size);
        &computed
    };
    title_bar(frame, app, a.title);
    match app.screen {
        Screen::Browse => {
            list::draw(frame, app, a);
            detail::draw(frame, app, a);
        }
        Screen::Conversation => detail::conversation(frame, app, a),
    }
    status_line(frame, app, a.status);
    key_bar(frame, app, a.bar);
    overlay::draw(frame, app, size);
}

fn title_bar(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let t = &app.theme;
    let count = match app.list.total {
        Some(1) => "1 session".to_string(),
        Some(n) => format!("{n} sessions"),
        None => "loading…".to_string(),
    };
    let root = sanitize::line(&app.root).into_owned();
    let line = Line::from(vec![
        Span::styled(" neocode ", t.bold().patch(t.accent())),
        Span::raw(" "),
        Span::raw(root),
        Span::styled(format!("  ·  {count}"), t.dim()),
    ]);
    frame.render_widget(Paragraph::new(line).style(t.title_bar()), area);
}

fn status_line(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let t = &app.theme;
    if let Overlay::Rename { input, .. } = &app.overlay {
        let prefix = "Rename to: ";
        let line = Line::from(vec![
            Span::styled(prefix, t.accent().patch(t.bold())),
            Span::raw(sanitize::line(&input.text).into_owned()),
        ]);
        frame.render_widget(Paragraph::new(line), area);
        let x = area.x + prefix.len() as u16 + input_cursor_width(&input.text, input.cursor);
        frame.set_cursor_position((x.min(area.right().saturating_sub(1)), area.y));
        return;
    }
    let line = match &app.status {
        Some(s) => Line::from(Span::styled(
            format!(" {}", s.text),
            if s.error { t.error() } else { t.text() },
        )),
        None => Line::default(),
    };
    frame.render_widget(Paragraph::new(line), area);
}

fn key_bar(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let t = &app.theme;
    let entries: Vec<(&str, &str)> = match &app.overlay {
        Overlay::Search(_) => vec![
            ("type", "to search"),
            ("↑↓", "select"),
            ("Enter", "open"),
            ("Esc", "close"),
        ],
        Overlay::ConfirmDelete { .. } => vec![("y", "delete"), ("n/Esc", "keep")],
        Overlay::Rename { .. } => vec![("Enter", "save"), ("Esc", "cancel")],
        Overlay::Help(_) => vec![("↑↓", "scroll"), ("any key", "close")],
        Overlay::None => {
            if app.screen == Screen::Browse && app.list.filter.as_ref().is_some_and(|f| f.editing) {
                vec![
                    ("type", "to filter"),
                    ("↑↓", "move"),
                    ("Enter", "keep"),
                    ("Esc", "clear"),
                ]
            } else {
                keymap::bar(app.context()).collect()
            }
        }
    };
    let mut spans = vec![Span::raw(" ")];
    for (k, text) in entries {
        spans.push(Span::styled(k.to_string(), t.accent().patch(t.bold())));
        spans.push(Span::styled(format!(" {text}  "), t.dim()));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}
