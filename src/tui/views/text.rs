//! Text helpers the views share: widths, truncation, token counts and times.

use crate::sanitize;

/// Display width of the first `cursor` characters of `text` (sanitised as drawn).
pub fn input_cursor_width(text: &str, cursor: usize) -> u16 {
    let before: String = text.chars().take(cursor).collect();
    unicode_width::UnicodeWidthStr::width(sanitize::line(&before).as_ref()) as u16
}

/// Token counts, as `--list` prints them (`950`, `12.3k`, `4.1M`).
pub fn fmt_tokens(n: u64) -> String {
    crate::format::compact(n)
}

/// A time relative to `now`, as `--list` prints it (`3h ago`, `yesterday`, then the local date).
pub fn rel_time(now_ms: i64, t_ms: i64) -> String {
    crate::format::relative_time(now_ms, t_ms, &chrono::Local)
}

/// A timestamp in the local time zone with its offset.
pub fn abs_time(t_ms: i64) -> String {
    crate::format::timestamp(t_ms)
}

/// Truncates to `w` display columns with an ellipsis.
pub fn fit(s: &str, w: usize) -> String {
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
