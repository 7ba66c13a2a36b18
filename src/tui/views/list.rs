//! The session list.

use ratatui::Frame;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::text::{fit, input_cursor_width};
use crate::format;
use crate::session::SessionSummary;
use crate::tui::app::{App, Focus, Row, SessionList};
use crate::tui::layout::Layout;
use crate::tui::theme::Theme;
use chrono::Local;

/// The columns beside the title, in the order they are given room as the list widens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Col {
    Time,
    Id,
    Tokens,
    Plan,
    Msgs,
    /// The git branch it started on (only when some session shown has one).
    Branch,
}

impl Col {
    fn width(self) -> usize {
        match self {
            // "yesterday", "2025-05-20"
            Col::Time => 10,
            Col::Id => 8,
            Col::Tokens => 6,
            Col::Plan => 6,
            Col::Msgs => 4,
            Col::Branch => 14,
        }
    }

    fn head(self) -> &'static str {
        match self {
            Col::Time => "active",
            Col::Id => "id",
            Col::Tokens => "tokens",
            Col::Plan => "plan",
            Col::Msgs => "msgs",
            Col::Branch => "branch",
        }
    }
}

/// Columns for a list `width` wide: the title keeps at least about half the row. The branch
/// column comes last, and only when a session shown has a branch.
fn columns(width: usize, branches: bool) -> Vec<Col> {
    let min_title = (width * 2 / 5).max(16);
    let mut used = 3;
    let mut cols = Vec::new();
    let mut wanted = vec![Col::Time, Col::Id, Col::Plan, Col::Tokens, Col::Msgs];
    if branches {
        wanted.push(Col::Branch);
    }
    for c in wanted {
        if width.saturating_sub(used + c.width() + 1) < min_title {
            break;
        }
        used += c.width() + 1;
        cols.push(c);
    }
    // Shown left to right in reading order.
    let order = [
        Col::Plan,
        Col::Msgs,
        Col::Tokens,
        Col::Branch,
        Col::Time,
        Col::Id,
    ];
    order.into_iter().filter(|c| cols.contains(c)).collect()
}

pub(super) fn draw(frame: &mut Frame<'_>, app: &App, a: &Layout) {
    let area = a.list;
    let t = app.theme;
    let l = &app.browse.list;
    let focused = app.focus == Focus::List;
    let block = super::parts::pane_block(t, focused).title(Span::styled(
        format!("{}{}", super::parts::focus_mark(focused), pane_title(l)),
        t.bold(),
    ));
    frame.render_widget(block, area);
    draw_filter(frame, app, a);

    if l.visible.is_empty() {
        let msg = if !l.loaded {
            "Loading sessions…"
        } else if l.filtering {
            "Matching…"
        } else if l.filter.is_some() && !l.rows.is_empty() {
            "No session matches the filter."
        } else {
            "No sessions yet."
        };
        frame.render_widget(Paragraph::new(Span::styled(msg, t.dim())), a.list_body);
        return;
    }

    let width = a.list_rows.width as usize;
    let branches = l
        .visible
        .iter()
        .any(|r| l.summary(r).is_some_and(|s| s.branch.is_some()));
    let cols = columns(width, branches);
    if let Some(header) = a.list_header {
        let right: String = cols
            .iter()
            .map(|c| format!(" {:>w$}", c.head(), w = c.width()))
            .collect();
        let head = format!(
            "{:<w$}{right}",
            "   title",
            w = width.saturating_sub(right.width())
        );
        frame.render_widget(Paragraph::new(Span::styled(head, t.dim())), header);
    }
    let inner = a.list_rows;
    let h = inner.height as usize;
    let offset = l.offset;

    let lines: Vec<Line<'static>> = l
        .visible
        .iter()
        .enumerate()
        .skip(offset)
        .take(h)
        .filter_map(|(i, r)| {
            Some(row(
                app,
                r,
                l.summary(r)?,
                l.title(r),
                width,
                &cols,
                i == l.selected,
            ))
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

/// "Sessions 3/120 ": where the selection is among the sessions (the window's rows count
/// from the newest session; with a filter, among its matches).
fn pane_title(l: &SessionList) -> String {
    let pos = if l.visible.is_empty() {
        0
    } else if l.filter.is_some() {
        l.selected + 1
    } else {
        // The list holds a window of rows: the position counts from the newest session.
        l.base + l.selected + 1
    };
    match (l.total, l.visible.len(), l.filter.is_some()) {
        (total, 0, _) => format!("Sessions {} ", total.unwrap_or(0)),
        (Some(total), n, true) => format!("Sessions {pos}/{n} of {total} "),
        (Some(total), _, false) => format!("Sessions {pos}/{total} "),
        (None, n, _) => format!("Sessions {pos}/{n} "),
    }
}

/// The filter's line above the rows: its text, how many match, and the cursor while it is
/// edited.
fn draw_filter(frame: &mut Frame<'_>, app: &App, a: &Layout) {
    let t = app.theme;
    let l = &app.browse.list;
    let (Some(f), Some(line_area)) = (&l.filter, a.list_filter) else {
        return;
    };
    let prefix = "/ ";
    let n = if l.showing_matches {
        l.matched
    } else {
        l.visible.len()
    };
    let mut count = format!("  {n} match{}", if n == 1 { "" } else { "es" });
    if l.showing_matches && l.visible.len() < n {
        count.push_str(&format!(", best {} shown", l.visible.len()));
    }
    if l.filtering {
        count.push('…');
    }
    let line = Line::from(vec![
        Span::styled(prefix, t.accent().patch(t.bold())),
        Span::raw(crate::sanitize::line(&f.input.text).into_owned()),
        Span::styled(count, t.dim()),
    ]);
    frame.render_widget(Paragraph::new(line), line_area);
    if f.editing {
        let x = line_area.x + 2 + input_cursor_width(&f.input.text, f.input.cursor);
        frame.set_cursor_position((x.min(line_area.right().saturating_sub(1)), line_area.y));
    }
}

fn row(
    app: &App,
    r: &Row,
    s: &SessionSummary,
    title: &str,
    width: usize,
    cols: &[Col],
    selected: bool,
) -> Line<'static> {
    let t = app.theme;
    // The session whose turn runs in this process: a spinner and a token count that moves
    // (stored usage plus the chunks streaming now).
    let running = app
        .conv
        .live()
        .filter(|l| !l.finished && l.session_id.as_deref() == Some(s.id.as_str()));
    let (mark, mark_style) = match running {
        Some(_) => (crate::tui::live::spinner(app.now_ms), t.accent()),
        None => super::parts::marker(s.status, t),
    };
    let live_tokens = running.map_or(0, |l| {
        l.usage.input_tokens + l.usage.output_tokens + l.chunks
    });
    let cell = |c: Col| -> (String, Style) {
        let text = match c {
            Col::Time => format::relative_time(app.now_ms, s.updated_at_ms, &Local),
            Col::Id => crate::sanitize::line(crate::format::short_id(&s.id, 8)).into_owned(),
            Col::Tokens => {
                format::compact(s.token_input_total + s.token_output_total + live_tokens)
            }
            Col::Msgs => s.message_count.to_string(),
            Col::Branch => crate::sanitize::line(s.branch.as_deref().unwrap_or("")).into_owned(),
            Col::Plan if s.plan.total == 0 => String::new(),
            Col::Plan if s.plan.failed > 0 => {
                format!("{}/{}✗{}", s.plan.done, s.plan.total, s.plan.failed)
            }
            Col::Plan => format!("{}/{}", s.plan.done, s.plan.total),
        };
        let style = match c {
            Col::Plan if s.plan.failed > 0 => t.error(),
            Col::Plan => t.accent(),
            _ => t.dim(),
        };
        (
            format!(" {:>w$}", fit(&text, c.width()), w = c.width()),
            style,
        )
    };
    let right: Vec<(String, Style)> = cols.iter().map(|c| cell(*c)).collect();
    let right_w: usize = right.iter().map(|(s, _)| s.width()).sum();
    // A fork keeps its place in activity order; the mark says it came from another session.
    let indent = if r.depth > 0 { "↳ " } else { "" };
    // Imported sessions carry their source tool's initials.
    let source = match s.source.as_deref() {
        Some("claude-code") => "CC ",
        Some("codex") => "CX ",
        Some(_) => "⇣ ",
        None => "",
    };
    let left_fixed = 3 + indent.width() + source.width();
    let title_w = width.saturating_sub(left_fixed + right_w);
    let shown = fit(title, title_w);
    let mut spans = vec![
        Span::raw(if selected { "▌" } else { " " }),
        Span::styled(mark, mark_style),
        Span::raw(" "),
        Span::styled(indent, t.dim()),
        Span::styled(source, t.dim()),
    ];
    let used = title_spans(&shown, &r.hl, t, &mut spans);
    spans.push(Span::raw(" ".repeat(title_w.saturating_sub(used))));
    for (text, style) in right {
        spans.push(Span::styled(text, style));
    }
    let line = Line::from(spans);
    if selected {
        line.style(t.selected())
    } else {
        line
    }
}

/// The title with its matched characters (`hl`, character indices) highlighted, pushed onto
/// `spans`; the columns it takes.
fn title_spans(shown: &str, hl: &[u32], t: Theme, spans: &mut Vec<Span<'static>>) -> usize {
    let mut used = 0;
    let mut run = String::new();
    let mut run_hl = false;
    for (i, c) in shown.chars().enumerate() {
        let lit = hl.binary_search(&(i as u32)).is_ok();
        if lit != run_hl && !run.is_empty() {
            spans.push(Span::styled(
                std::mem::take(&mut run),
                if run_hl { t.matched() } else { t.text() },
            ));
        }
        run_hl = lit;
        run.push(c);
        used += c.width().unwrap_or(0);
    }
    if !run.is_empty() {
        spans.push(Span::styled(
            run,
            if run_hl { t.matched() } else { t.text() },
        ));
    }
    used
}
