//! The session list.

use ratatui::Frame;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::text::{fit, fmt_tokens, input_cursor_width};
use crate::session::{SessionSummary, Status};
use crate::tui::app::{App, Focus, Row};
use crate::tui::layout::{LIST_WIDE, Layout};
use crate::tui::theme::Theme;

/// Status marker and its style.
pub fn marker(s: Status, t: &Theme) -> (&'static str, Style) {
    match s {
        Status::Created => ("○", t.dim()),
        Status::Running => ("●", t.warn()),
        Status::Paused => ("‖", t.warn()),
        Status::Completed => ("✔", t.ok()),
        Status::Failed => ("✗", t.error()),
        Status::Cancelled => ("⊘", t.dim()),
    }
}

pub(super) fn draw(frame: &mut Frame<'_>, app: &App, a: &Layout) {
    let area = a.list;
    let t = &app.theme;
    let l = &app.list;
    let focused = app.focus == Focus::List;
    let shown = match (l.total, l.rows.len()) {
        (Some(total), n) if l.base > 0 && n > 0 => {
            format!(" Sessions {}–{} of {total} ", l.base + 1, l.base + n)
        }
        (Some(total), n) if (n as u64) < total => format!(" Sessions {n} of {total} "),
        (_, n) => format!(" Sessions {n} "),
    };
    let block = Block::bordered()
        .border_style(if focused { t.accent() } else { t.border() })
        .title(Span::styled(shown, t.bold()));
    frame.render_widget(block, area);

    if let (Some(f), Some(line_area)) = (&l.filter, a.list_filter) {
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

    if let Some(header) = a.list_header {
        let head = format!(
            "{:<w$}{:>5}{:<2} {:>4} {:>6} {:>4}",
            "   session",
            "plan",
            "",
            "msgs",
            "tokens",
            "age",
            w = (header.width as usize).saturating_sub(24)
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
                inner.width as usize,
                i == l.selected,
            ))
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

fn row(
    app: &App,
    r: &Row,
    s: &SessionSummary,
    title: &str,
    width: usize,
    selected: bool,
) -> Line<'static> {
    let t = &app.theme;
    let (mark, mark_style) = marker(s.status, t);
    let wide = width >= LIST_WIDE as usize;
    let time = short_time(app.now_ms, s.updated_at_ms);
    let (plan, fail) = if s.plan.total > 0 {
        let f = if s.plan.failed > 0 {
            format!("✗{}", s.plan.failed)
        } else {
            String::new()
        };
        (format!("{}/{}", s.plan.done, s.plan.total), f)
    } else {
        (String::new(), String::new())
    };
    let right = if wide {
        format!(
            "{plan:>5}{fail:<2} {:>4} {:>6} {time:>4}",
            s.message_count,
            fmt_tokens(s.token_input_total + s.token_output_total)
        )
    } else {
        format!("{time:>4}")
    };
    let indent = if r.depth > 0 {
        format!(
            "{}└ ",
            "  ".repeat(r.depth.saturating_sub(1).min(3) as usize)
        )
    } else {
        String::new()
    };
    let left_fixed = 3 + indent.width();
    let title_w = width.saturating_sub(left_fixed + right.width() + 1);
    let shown = fit(title, title_w);
    let mut spans = vec![
        Span::raw(if selected { "▌" } else { " " }),
        Span::styled(mark, mark_style),
        Span::raw(" "),
        Span::styled(indent, t.dim()),
    ];
    // Title with matched characters highlighted.
    let mut used = 0;
    let mut run = String::new();
    let mut run_hl = false;
    for (i, c) in shown.chars().enumerate() {
        let hl = r.hl.binary_search(&(i as u32)).is_ok();
        if hl != run_hl && !run.is_empty() {
            spans.push(Span::styled(
                std::mem::take(&mut run),
                if run_hl { t.matched() } else { t.text() },
            ));
        }
        run_hl = hl;
        run.push(c);
        used += c.width().unwrap_or(0);
    }
    if !run.is_empty() {
        spans.push(Span::styled(
            run,
            if run_hl { t.matched() } else { t.text() },
        ));
    }
    let pad = title_w.saturating_sub(used) + 1;
    spans.push(Span::raw(" ".repeat(pad)));
    if wide {
        // Split the right part so the failure mark is red.
        let plan_part: String = right.chars().take(5).collect();
        let fail_part: String = right.chars().skip(5).take(2).collect();
        let rest: String = right.chars().skip(7).collect();
        spans.push(Span::styled(plan_part, t.accent()));
        spans.push(Span::styled(fail_part, t.error()));
        spans.push(Span::styled(rest, t.dim()));
    } else {
        spans.push(Span::styled(right, t.dim()));
    }
    let line = Line::from(spans);
    if selected {
        line.style(t.selected())
    } else {
        line
    }
}

/// Compact age: `now`, `5m`, `3h`, `2d`, `7w`, `1y`.
fn short_time(now_ms: i64, t_ms: i64) -> String {
    let s = (now_ms - t_ms).max(0) / 1000;
    match s {
        0..60 => "now".into(),
        60..3600 => format!("{}m", s / 60),
        3600..86_400 => format!("{}h", s / 3600),
        86_400..604_800 => format!("{}d", s / 86_400),
        604_800..31_536_000 => format!("{}w", s / 604_800),
        _ => format!("{}y", s / 31_536_000),
    }
}
