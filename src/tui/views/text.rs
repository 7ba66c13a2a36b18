//! Text helpers the views share: widths and truncation.

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
