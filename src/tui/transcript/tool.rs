//! A tool call and its output as lines: the arguments' summary and rows, the collapsed cap,
//! and SGR-coloured output.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::marks::COLLAPSED_LINES;
use crate::sanitize;
use crate::tui::markdown;
use crate::tui::theme::Theme;

/// Fields that best say what a tool call does, in order of preference.
const TELLING: [&str; 7] = ["command", "cmd", "path", "file", "pattern", "query", "url"];

/// A one-line summary of a tool call's JSON arguments: the first line of the most telling
/// field, else the compact JSON (` …` marks that there is more).
#[cfg(test)]
pub(crate) fn args_summary(arguments: &str) -> String {
    summary(arguments).0
}

/// The summary, and the field it shows in full (single-line) so the rows can leave it out.
fn summary(arguments: &str) -> (String, Option<&'static str>) {
    let first_line = |s: &str| -> (String, bool) {
        let mut it = s.trim_end().split('\n');
        let first = sanitize::line(it.next().unwrap_or("")).into_owned();
        (first, it.next().is_some())
    };
    let v: serde_json::Value = match serde_json::from_str(arguments) {
        Ok(v) => v,
        Err(_) => {
            let (mut s, more) = first_line(arguments);
            if more {
                s.push_str(" …");
            }
            return (s, None);
        }
    };
    if let Some(obj) = v.as_object() {
        for k in TELLING {
            if let Some(s) = obj.get(k).and_then(|x| x.as_str()) {
                let (mut out, more) = first_line(s);
                if more || obj.len() > 1 {
                    out.push_str(" …");
                }
                return (out, (!more).then_some(k));
            }
        }
    }
    let compact: String = first_line(&v.to_string()).0.chars().take(120).collect();
    (compact, None)
}

/// A tool call's arguments as text lines, one field after another; string values keep their
/// line breaks (a file being written reads as the file). `skip` leaves out a field the
/// summary already shows.
fn args_rows(arguments: &str, skip: Option<&str>) -> Vec<String> {
    let mut rows = Vec::new();
    let block = |rows: &mut Vec<String>, head: String, body: &str| {
        let body = body.trim_end_matches('\n');
        if body.contains('\n') {
            rows.push(head);
            rows.extend(body.split('\n').map(|l| format!("  {l}")));
        } else {
            rows.push(format!("{head} {body}"));
        }
    };
    match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(serde_json::Value::Object(obj)) => {
            for (k, v) in &obj {
                if Some(k.as_str()) == skip {
                    continue;
                }
                let body = match v {
                    serde_json::Value::String(s) => s.clone(),
                    v => serde_json::to_string_pretty(v).unwrap_or_default(),
                };
                block(&mut rows, format!("{k}:"), &body);
            }
        }
        Ok(v) => rows.extend(
            serde_json::to_string_pretty(&v)
                .unwrap_or_default()
                .split('\n')
                .map(str::to_string),
        ),
        Err(_) => rows.extend(arguments.trim_end().split('\n').map(str::to_string)),
    }
    rows
}

/// At most `COLLAPSED_LINES` rows unless expanded, then how many more lines there are.
/// `lines` holds each line of the text as the rows it wraps into: what is left is counted in
/// lines, not rows (a long line wraps into several).
pub(super) fn capped(
    lines: Vec<Vec<Line<'static>>>,
    expanded: bool,
    prefix: &str,
    theme: Theme,
) -> Vec<Line<'static>> {
    let rows: usize = lines.iter().map(Vec::len).sum();
    if expanded || rows <= COLLAPSED_LINES + 1 {
        return lines.into_iter().flatten().collect();
    }
    let total = lines.len();
    let mut out: Vec<Line<'static>> = Vec::new();
    let mut whole = 0;
    let mut cut = false;
    for l in lines {
        let room = COLLAPSED_LINES - out.len();
        if l.len() <= room {
            out.extend(l);
            whole += 1;
        } else {
            // A first line too long for the room shows its beginning.
            if out.is_empty() {
                out.extend(l.into_iter().take(room));
                cut = true;
            }
            break;
        }
    }
    let more = total - whole;
    let note = if cut && more == 1 {
        "… the line goes on".to_string()
    } else {
        format!("… {more} more line{}", if more == 1 { "" } else { "s" })
    };
    out.push(Line::from(Span::styled(
        format!("{prefix}{note}"),
        theme.dim(),
    )));
    out
}

/// Tool output laid out with its SGR colours as styles (every other escape neutralised).
pub(super) fn output_lines(
    text: &str,
    width: usize,
    prefix: &str,
    base: Style,
    theme: Theme,
) -> Vec<Vec<Line<'static>>> {
    let mut lines: Vec<Vec<(String, Style)>> = vec![Vec::new()];
    for (sgr, t) in sanitize::sgr_runs(text) {
        let st = theme.sgr(base, &sgr);
        for (i, piece) in t.split('\n').enumerate() {
            if i > 0 {
                lines.push(Vec::new());
            }
            if !piece.is_empty()
                && let Some(l) = lines.last_mut()
            {
                l.push((piece.to_string(), st));
            }
        }
    }
    while lines.len() > 1
        && lines
            .last()
            .is_some_and(|l| l.iter().all(|(t, _)| t.trim().is_empty()))
    {
        lines.pop();
    }
    lines
        .iter()
        .map(|l| markdown::wrap(l, width, prefix, prefix))
        .collect()
}

/// A tool call of a message: its name and summary, then its change (collapsed) or its
/// arguments.
pub(super) fn call_lines(
    call: &crate::session::ToolCall,
    width: usize,
    expanded: bool,
    theme: Theme,
) -> Vec<Line<'static>> {
    let (summary, shown) = summary(&call.arguments);
    let mut out = markdown::wrap(
        &[
            (sanitize::line(&call.name).into_owned(), theme.tool()),
            ("  ".into(), theme.text()),
            (summary, theme.code()),
        ],
        width,
        "  ⚙ ",
        "    ",
    );
    // Collapsed, an edit or a write shows its change as a coloured diff.
    let diff = if expanded {
        Vec::new()
    } else {
        crate::tui::diff::diff_lines(call, width, "    ", COLLAPSED_LINES, theme)
    };
    if !diff.is_empty() {
        out.extend(diff);
        return out;
    }
    let skip = if expanded { None } else { shown };
    let rows: Vec<Vec<Line<'static>>> = args_rows(&call.arguments, skip)
        .iter()
        .map(|r| markdown::plain(&sanitize::text(r), width, "    ", theme.code()))
        .collect();
    out.extend(capped(rows, expanded, "    ", theme));
    out
}
