//! The Info tab's file changes (issue 26): the workspace files the session's tools changed,
//! turn by turn, as `neocode show` lists them. Only the lines in view are built.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::text::fit;
use crate::sanitize;
use crate::tui::app::Detail;
use crate::tui::theme::Theme;

/// The Info tab's lines in view (scrolled by `d.scroll`, as many as `area` holds): those of
/// `head` (already wrapped), then the file changes.
pub(super) fn with_changes(
    t: Theme,
    d: &Detail,
    head: Vec<Line<'static>>,
    area: Rect,
) -> Vec<Line<'static>> {
    let (scroll, rows) = (usize::from(d.scroll), usize::from(area.height));
    let head_len = head.len();
    let mut shown: Vec<Line<'static>> = head.into_iter().skip(scroll).take(rows).collect();
    let room = rows.saturating_sub(shown.len());
    let from = scroll.saturating_sub(head_len);
    shown.extend(lines(t, d, from, room, usize::from(area.width)));
    shown
}

/// Lines `from..from + n` of the file-changes part (a blank, the heading, then each turn's
/// heading and files), `width` wide at most.
fn lines(t: Theme, d: &Detail, from: usize, n: usize, width: usize) -> Vec<Line<'static>> {
    let mut all: Vec<Line<'static>> = Vec::new();
    let mut at = 0usize;
    // Pushes line `at` when it is in view; false once the view is full.
    let mut push = |at: &mut usize, make: &mut dyn FnMut() -> Line<'static>| {
        if *at >= from && all.len() < n {
            all.push(make());
        }
        *at += 1;
        all.len() < n
    };
    push(&mut at, &mut Line::default);
    let Some(turns) = &d.changes else {
        push(&mut at, &mut || {
            Line::from(Span::styled("file changes  reading…", t.dim()))
        });
        return all;
    };
    let count: usize = turns.iter().map(|c| c.files.len()).sum();
    let heading = if count == 0 {
        "file changes  none".to_string()
    } else {
        format!(
            "file changes  {count} in {} turn{}; Alt-R in the conversation rewinds",
            turns.len(),
            if turns.len() == 1 { "" } else { "s" }
        )
    };
    if !push(&mut at, &mut || {
        Line::from(Span::styled(fit(&heading, width), t.dim()))
    }) {
        return all;
    }
    for turn in turns {
        // A turn wholly above the view is skipped without building its lines.
        if at + 1 + turn.files.len() <= from {
            at += 1 + turn.files.len();
            continue;
        }
        if !push(&mut at, &mut || {
            Line::from(Span::styled(format!("  {}", turn.heading()), t.bold()))
        }) {
            return all;
        }
        for f in &turn.files {
            let text = format!(
                "    #{:<4} {:<9} {}{}",
                f.seq,
                f.change,
                sanitize::line(&f.path),
                f.note()
            );
            let style = if f.restorable { t.text() } else { t.warn() };
            if !push(&mut at, &mut || {
                Line::from(Span::styled(fit(&text, width), style))
            }) {
                return all;
            }
        }
    }
    all
}
