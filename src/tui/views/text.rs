//! Text helpers the views share: widths, truncation, and the live lines under a followed end.

use crate::sanitize;

/// Display width of the first `cursor` characters of `text` (sanitised as drawn).
pub(crate) fn input_cursor_width(text: &str, cursor: usize) -> u16 {
    let before: String = text.chars().take(cursor).collect();
    unicode_width::UnicodeWidthStr::width(sanitize::line(&before).as_ref()) as u16
}

/// Truncates to `w` display columns with an ellipsis.
pub(crate) fn fit(s: &str, w: usize) -> String {
    use unicode_width::UnicodeWidthChar;
    if unicode_width::UnicodeWidthStr::width(s) <= w {
        return s.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let cw = c.width().unwrap_or(0);
        if used + cw + 1 > w {
            break;
        }
        out.push(c);
        used += cw;
    }
    out.push('…');
    out
}

/// Puts the live cell's `extra` lines (indented one column, past the selection bar) under
/// `lines` and keeps the last `h`: the view follows the end.
pub(super) fn follow_end(
    lines: &mut Vec<ratatui::text::Line<'static>>,
    extra: Vec<ratatui::text::Line<'static>>,
    h: usize,
) {
    lines.extend(extra.into_iter().map(|l| {
        let mut spans = vec![ratatui::text::Span::raw(" ")];
        spans.extend(l.spans);
        ratatui::text::Line::from(spans)
    }));
    let skip = lines.len().saturating_sub(h);
    lines.drain(..skip);
}
