//! The change an `edit_file` / `write_file` call makes, as coloured lines: the live cell's
//! cards and the transcript's tool calls both show it.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::sanitize;
use crate::session::ToolCall;
use crate::tui::theme::Theme;

/// The change an `edit_file` / `write_file` call makes, coloured: removed lines red, added
/// green, at most `max` of each (expanding the message shows all). Empty for other tools.
pub(crate) fn diff_lines(
    call: &ToolCall,
    width: usize,
    prefix: &str,
    max: usize,
    t: Theme,
) -> Vec<Line<'static>> {
    let Some(p) = crate::runtime::tools::preview(&call.name, &call.arguments) else {
        return Vec::new();
    };
    let (old, new) = (p.old.as_deref(), p.new.as_deref());
    let mut out = Vec::new();
    let push = |text: Option<&str>, sign: &str, style: Style, out: &mut Vec<Line<'static>>| {
        let Some(text) = text else { return };
        let clean = sanitize::text_without_sgr(text);
        let rows: Vec<&str> = clean.trim_end_matches('\n').split('\n').collect();
        let room = width.saturating_sub(prefix.chars().count());
        for r in rows.iter().take(max) {
            let mut s = format!("{sign} {r}");
            if s.chars().count() > room {
                s = s.chars().take(room.saturating_sub(1)).collect::<String>() + "…";
            }
            out.push(Line::from(vec![
                Span::styled(prefix.to_string(), t.dim()),
                Span::styled(s, style),
            ]));
        }
        if rows.len() > max {
            out.push(Line::from(Span::styled(
                format!("{prefix}{sign} … {} more lines", rows.len() - max),
                t.dim(),
            )));
        }
    };
    push(old, "-", t.error(), &mut out);
    push(new, "+", t.ok(), &mut out);
    out
}

/// Whether `name` is a tool whose result is a unified diff of the file it changed.
pub(crate) fn is_edit(name: &str) -> bool {
    matches!(name, "edit_file" | "write_file")
}

/// A done edit's result in a few lines: its first line (`edited a.py (+1 -1 lines):`), then
/// the changed lines coloured (the diff's `---`/`+++`/`@@` headers and context left out), at
/// most `max` of them and how many more there are. The full result shows when expanded.
pub(crate) fn result_lines(
    text: &str,
    width: usize,
    prefix: &str,
    max: usize,
    t: Theme,
) -> Vec<Line<'static>> {
    let clean = sanitize::text_without_sgr(text);
    let mut rows = clean.trim_end().split('\n');
    let mut out = Vec::new();
    if let Some(first) = rows.next() {
        out.extend(crate::tui::markdown::plain(first, width, prefix, t.dim()));
    }
    let changed: Vec<&str> = rows
        .filter(|r| {
            (r.starts_with('+') && !r.starts_with("+++ "))
                || (r.starts_with('-') && !r.starts_with("--- "))
        })
        .collect();
    let room = width.saturating_sub(prefix.chars().count());
    for r in changed.iter().take(max) {
        let style = if r.starts_with('+') {
            t.ok()
        } else {
            t.error()
        };
        let mut s = (*r).to_string();
        if s.chars().count() > room {
            s = s.chars().take(room.saturating_sub(1)).collect::<String>() + "…";
        }
        out.push(Line::from(vec![
            Span::styled(prefix.to_string(), t.dim()),
            Span::styled(s, style),
        ]));
    }
    if changed.len() > max {
        let more = changed.len() - max;
        out.push(Line::from(Span::styled(
            format!(
                "{prefix}… {more} more changed line{}",
                if more == 1 { "" } else { "s" }
            ),
            t.dim(),
        )));
    }
    out
}
