//! The help screen's text and how far it scrolls: a function of the theme and the width,
//! so the key handling clamps the scroll with the same lines the view draws (it lives beside
//! the views, not in them, so the router needs nothing of the views).

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::session::{Status, StepStatus};
use crate::tui::keymap::{self, Context};
use crate::tui::layout::centered;
use crate::tui::theme::{Theme, marker, step_icon};

/// What the help says about configuring a model.
pub(crate) const NO_MODEL: &str = "With no model configured nothing can be sent. Set NEOCODE_BASE_URL, NEOCODE_MODEL and NEOCODE_API_KEY, or write config.toml in neocode's home ($NEOCODE_HOME, else ~/.neocode).";

/// The help text laid out for `width` columns: every line wraps, so nothing is cut mid-word.
pub(crate) fn help_lines(t: Theme, width: usize) -> Vec<Line<'static>> {
    use crate::tui::markdown::wrap;
    let mut lines = Vec::new();
    let heading = |lines: &mut Vec<Line<'static>>, s: &str| {
        lines.push(Line::from(Span::styled(s.to_string(), t.bold())));
    };
    let para = |lines: &mut Vec<Line<'static>>, s: &str| {
        lines.extend(wrap(&[(s.to_string(), t.text())], width, "  ", "  "));
    };
    lines.extend(key_lines(t, width));
    lines.extend(legend_lines(t, width));
    lines.push(Line::default());
    heading(
        &mut lines,
        "Slash commands (type in the message, Tab completes)",
    );
    for (name, args, what) in crate::tui::conversation::commands::COMMANDS {
        lines.extend(wrap(
            &[
                (format!("{name} {args}  "), t.accent()),
                (what.to_string(), t.text()),
            ],
            width,
            "  ",
            "      ",
        ));
    }
    lines.push(Line::default());
    heading(&mut lines, "Model");
    para(&mut lines, NO_MODEL);
    lines.push(Line::default());
    heading(&mut lines, "Filter (/)");
    para(
        &mut lines,
        "Type to narrow the list (fuzzy over titles and first prompts; an id prefix of 4 characters or more finds that session). Enter keeps the filter, Esc clears it.",
    );
    heading(&mut lines, "Search (s)");
    para(
        &mut lines,
        "Full-text search of every message; Enter opens the match in the transcript.",
    );
    heading(&mut lines, "Mouse");
    para(
        &mut lines,
        "The wheel scrolls what is under it; a click selects a row or a tab.",
    );
    lines
}

/// Every key context's bindings, from the keymap (the same table the keys and the key bar
/// use).
fn key_lines(t: Theme, width: usize) -> Vec<Line<'static>> {
    use crate::tui::markdown::wrap;
    let mut lines = Vec::new();
    for ctx in [
        Context::Browse,
        Context::Conversation,
        Context::Turn,
        Context::Approval,
        Context::Dangling,
        Context::Plan,
        Context::Queue,
        Context::Find,
    ] {
        lines.push(Line::from(Span::styled(ctx.title().to_string(), t.bold())));
        for b in keymap::BINDINGS.iter().filter(|b| b.context == ctx) {
            lines.extend(wrap(
                &[
                    (format!("{:<12}", b.label), t.accent()),
                    (b.help.to_string(), t.text()),
                ],
                width,
                "  ",
                "              ",
            ));
        }
        lines.push(Line::default());
    }
    lines
}

/// What the list's status marks and the plan's step icons mean.
fn legend_lines(t: Theme, width: usize) -> Vec<Line<'static>> {
    use crate::tui::markdown::wrap;
    let mut lines = Vec::new();
    let heading = |lines: &mut Vec<Line<'static>>, s: &str| {
        lines.push(Line::from(Span::styled(s.to_string(), t.bold())));
    };
    let para = |lines: &mut Vec<Line<'static>>, s: &str| {
        lines.extend(wrap(&[(s.to_string(), t.text())], width, "  ", "  "));
    };
    heading(&mut lines, "Session status (list)");
    let statuses = legend(&Status::ALL, t, marker, Status::as_str);
    lines.extend(wrap(&statuses, width, "  ", "  "));
    para(
        &mut lines,
        "↳ marks a fork (or a plan step's session): it came from another session. Rows are in order of activity, so a fork active now sits above its parent.",
    );
    heading(&mut lines, "Plan steps");
    let steps = [
        StepStatus::Pending,
        StepStatus::Running,
        StepStatus::Completed,
        StepStatus::Failed,
    ];
    let steps = legend(&steps, t, step_icon, StepStatus::as_str);
    lines.extend(wrap(&steps, width, "  ", "  "));
    lines
}

/// A legend's spans: each state's mark in its style, then its name.
fn legend<S: Copy>(
    states: &[S],
    t: Theme,
    icon: fn(S, Theme) -> (&'static str, Style),
    name: fn(S) -> &'static str,
) -> Vec<(String, Style)> {
    let mut spans = Vec::new();
    for &s in states {
        let (m, st) = icon(s, t);
        spans.push((m.to_string(), st));
        spans.push((format!(" {}   ", name(s)), t.text()));
    }
    spans
}

/// The scroll that puts the help's Model section at the top (F1 with no model configured).
pub(crate) fn help_model_scroll(t: Theme, size: Rect) -> u16 {
    help_section_scroll(t, size, "Model")
}

/// The scroll that puts the section headed `heading` at the top (F1 opens at the keys of
/// where it was pressed).
pub(crate) fn help_section_scroll(t: Theme, size: Rect, heading: &str) -> u16 {
    let inner = ratatui::widgets::Block::bordered().inner(help_area(size));
    let at = help_lines(t, inner.width as usize)
        .iter()
        .position(|l| l.to_string() == heading)
        .unwrap_or(0);
    (at as u16).min(help_max_scroll(t, size))
}

/// The help popup's area for a terminal size.
pub(crate) fn help_area(size: Rect) -> Rect {
    centered(size, 76, size.height.saturating_sub(2))
}

/// The furthest the help can scroll: its last line at the bottom, never blank space.
pub(crate) fn help_max_scroll(t: Theme, size: Rect) -> u16 {
    let inner = ratatui::widgets::Block::bordered().inner(help_area(size));
    let n = help_lines(t, inner.width as usize).len();
    n.saturating_sub(inner.height as usize) as u16
}
