//! Pure formatting helpers of the one-shot commands: relative times, compact numbers, short
//! ids, plan progress, width-aware cutting, table layout and JSON output that is safe to print.

use std::io::{self, Write};

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use crate::session::{PlanCounts, SNIPPET_CLOSE, SNIPPET_OPEN};

pub(crate) use crate::format::{compact, relative_time};

/// Plan progress: `3/7`, `3/7 ✗1` with failures, `-` without a plan.
pub(crate) fn plan_progress(p: &PlanCounts) -> String {
    let mut s = String::new();
    push_plan_progress(&mut s, p);
    s
}

/// [`plan_progress`] appended to `out`.
pub(crate) fn push_plan_progress(out: &mut String, p: &PlanCounts) {
    if p.total == 0 {
        out.push('-');
        return;
    }
    crate::format::push_u64(out, p.done);
    out.push('/');
    crate::format::push_u64(out, p.total);
    if p.failed > 0 {
        out.push_str(" ✗");
        crate::format::push_u64(out, p.failed);
    }
}

/// The shortest prefix length (at least 8) that keeps every id of `ids` distinct.
pub(crate) fn short_id_len<'a>(ids: impl IntoIterator<Item = &'a str>) -> usize {
    let mut v: Vec<&str> = ids.into_iter().collect();
    v.sort_unstable();
    v.dedup();
    let mut len = 8;
    for w in v.windows(2) {
        let common = w[0]
            .bytes()
            .zip(w[1].bytes())
            .take_while(|(a, b)| a == b)
            .count();
        len = len.max(common + 1);
    }
    len
}

pub(crate) use crate::format::short_id;

/// Display width of a (sanitised) string.
pub(crate) fn width(s: &str) -> usize {
    if s.is_ascii() {
        // Sanitised text has no control characters, so ASCII is one column per byte.
        s.len()
    } else {
        UnicodeWidthStr::width(s)
    }
}

/// The widest cell of each column.
pub(crate) fn column_widths<S: AsRef<str>>(rows: &[Vec<S>]) -> Vec<usize> {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0; cols];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(width(c.as_ref()));
        }
    }
    widths
}

/// Appends `cell` padded to `w` columns.
pub(crate) fn push_padded(out: &mut String, cell: &str, w: usize, align: Align) {
    let pad = w.saturating_sub(width(cell));
    if align == Align::Right {
        push_spaces(out, pad);
    }
    out.push_str(cell);
    if align == Align::Left {
        push_spaces(out, pad);
    }
}

/// `n` spaces appended to `out`, a slice at a time (not a character at a time).
pub(crate) fn push_spaces(out: &mut String, mut n: usize) {
    const SPACES: &str = "                                ";
    while n > 0 {
        let k = n.min(SPACES.len());
        out.push_str(&SPACES[..k]);
        n -= k;
    }
}

/// Cuts `s` to at most `max` columns, ending with `…` when something was cut.
pub(crate) fn cut(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut w = 0;
    for c in s.chars() {
        let cw = c.width().unwrap_or(0);
        if w + cw > max - 1 {
            break;
        }
        out.push(c);
        w += cw;
    }
    out.push('…');
    out
}

/// Column alignment in [`layout`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Align {
    /// Pad on the right.
    Left,
    /// Pad on the left.
    Right,
}

/// Lays out rows of cells into columns two spaces apart; the last column is not padded.
/// Returns, for each row, each cell already padded (so colour can be added per cell without
/// disturbing the alignment).
pub(crate) fn layout(rows: &[Vec<String>], align: &[Align]) -> Vec<Vec<String>> {
    let widths = column_widths(rows);
    let cols = widths.len();
    rows.iter()
        .map(|r| {
            r.iter()
                .enumerate()
                .map(|(i, c)| {
                    if i + 1 == cols {
                        return c.clone();
                    }
                    let pad = " ".repeat(widths[i] - width(c));
                    match align.get(i).copied().unwrap_or(Align::Left) {
                        Align::Left => format!("{c}{pad}"),
                        Align::Right => format!("{pad}{c}"),
                    }
                })
                .collect()
        })
        .collect()
}

/// Width taken by every column but the last of a laid-out row, separators included.
pub(crate) fn prefix_width(cells: &[String]) -> usize {
    cells
        .iter()
        .take(cells.len().saturating_sub(1))
        .map(|c| width(c) + 2)
        .sum()
}

/// A search snippet (already sanitised) with its match markers turned into `open`/`close`.
pub(crate) fn mark_snippet(snippet: &str, open: &str, close: &str) -> String {
    let mut out = String::with_capacity(snippet.len() + 16);
    for c in snippet.chars() {
        match c {
            SNIPPET_OPEN => out.push_str(open),
            SNIPPET_CLOSE => out.push_str(close),
            c => out.push(c),
        }
    }
    out
}

/// Pretty JSON of `v`, safe to print.
pub(crate) fn to_json<T: serde::Serialize + ?Sized>(v: &T) -> String {
    let s = serde_json::to_string_pretty(v).unwrap_or_else(|_| "null".to_string());
    crate::sanitize::json(&s).into_owned()
}

/// Writes `rows` as a JSON array, one compact object per line, then a newline — streamed
/// row by row through one reused buffer (a 10,000-session list never sits in memory twice),
/// each row made safe to print before it is written.
pub(crate) fn write_json_array<W: Write, T: serde::Serialize>(
    w: &mut W,
    rows: impl IntoIterator<Item = T>,
) -> io::Result<()> {
    let mut buf = Vec::with_capacity(1024);
    let mut first = true;
    w.write_all(b"[")?;
    for row in rows {
        buf.clear();
        serde_json::to_writer(&mut buf, &row).map_err(io::Error::other)?;
        let text = std::str::from_utf8(&buf).map_err(io::Error::other)?;
        w.write_all(if first { b"\n" } else { b",\n" })?;
        w.write_all(crate::sanitize::json(text).as_bytes())?;
        first = false;
    }
    w.write_all(if first { b"]\n" } else { b"\n]\n" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_cells() {
        let p = |done, failed, total| {
            plan_progress(&PlanCounts {
                done,
                failed,
                total,
            })
        };
        assert_eq!(p(0, 0, 0), "-");
        assert_eq!(p(3, 0, 7), "3/7");
        assert_eq!(p(3, 1, 7), "3/7 ✗1");
    }

    #[test]
    fn short_ids_grow_until_unique() {
        assert_eq!(short_id_len(["0192aaaa-1111", "0192bbbb-2222"]), 8);
        assert_eq!(short_id_len(["0192aaaa-1111", "0192aaaa-1122"]), 12);
        assert_eq!(short_id_len(["same", "same"]), 8);
        assert_eq!(short_id("0192aaaa-1111", 8), "0192aaaa");
        assert_eq!(short_id("abc", 8), "abc");
    }

    #[test]
    fn cutting_respects_display_width() {
        assert_eq!(cut("hello", 5), "hello");
        assert_eq!(cut("hello world", 6), "hello…");
        assert_eq!(cut("日本語テキスト", 7), "日本語…");
        assert_eq!(width(&cut("日本語テキスト", 7)), 7);
        assert_eq!(cut("abc", 0), "");
    }

    #[test]
    fn layout_pads_all_but_the_last_column() {
        let rows = vec![
            vec!["ID".into(), "N".into(), "TITLE".into()],
            vec!["abc".into(), "12".into(), "x".into()],
        ];
        let out = layout(&rows, &[Align::Left, Align::Right, Align::Left]);
        assert_eq!(out[0], vec!["ID ", " N", "TITLE"]);
        assert_eq!(out[1], vec!["abc", "12", "x"]);
        assert_eq!(prefix_width(&out[1]), 3 + 2 + 2 + 2);
    }

    #[test]
    fn snippets_and_json_never_carry_raw_markers_or_controls() {
        let s = format!("a {SNIPPET_OPEN}hit{SNIPPET_CLOSE} b");
        assert_eq!(mark_snippet(&s, "[", "]"), "a [hit] b");
        let j = to_json(&serde_json::json!({"t": "x\u{9b}y\u{202e}z\u{1b}"}));
        assert!(
            !j.chars()
                .any(|c| (c.is_control() && c != '\n') || matches!(c, '\u{202e}' | '\u{9b}')),
            "{j}"
        );
        let back: serde_json::Value = serde_json::from_str(&j).unwrap();
        assert_eq!(back["t"], "x\u{9b}y\u{202e}z\u{1b}");
        assert_eq!(to_json("del\u{7f}"), "\"del\\u007f\"");
        assert_eq!(to_json("plain"), "\"plain\"");
    }

    #[test]
    fn streamed_arrays_are_one_safe_object_per_line() {
        let rows = [
            serde_json::json!({"a": 1, "b": ["x", {"c": "\u{202e}"}]}),
            serde_json::json!({"a": 2, "b": []}),
        ];
        let mut buf = Vec::new();
        write_json_array(&mut buf, &rows[..0]).unwrap();
        assert_eq!(String::from_utf8(buf).unwrap(), "[]\n");
        let mut buf = Vec::new();
        write_json_array(&mut buf, &rows).unwrap();
        let text = String::from_utf8(buf).unwrap();
        assert_eq!(
            text,
            "[\n{\"a\":1,\"b\":[\"x\",{\"c\":\"\\u202e\"}]},\n{\"a\":2,\"b\":[]}\n]\n"
        );
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, serde_json::Value::from(rows.to_vec()));
    }
}
