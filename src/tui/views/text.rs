//! Text helpers the views share: widths, truncation, token counts and times.

use crate::sanitize;

/// Display width of the first `cursor` characters of `text` (sanitised as drawn).
pub fn input_cursor_width(text: &str, cursor: usize) -> u16 {
    let before: String = text.chars().take(cursor).collect();
    unicode_width::UnicodeWidthStr::width(sanitize::line(&before).as_ref()) as u16
}

/// Token counts: `950`, `12.3k`, `4.1M`.
pub fn fmt_tokens(n: u64) -> String {
    if n < 1000 {
        n.to_string()
    } else if n < 1_000_000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else {
        format!("{:.1}M", n as f64 / 1_000_000.0)
    }
}

/// A time relative to `now`: `just now`, `5m ago`, `3h ago`, `2d ago`, else the date.
pub fn rel_time(now_ms: i64, t_ms: i64) -> String {
    let s = (now_ms - t_ms) / 1000;
    if s < 60 {
        "just now".into()
    } else if s < 3600 {
        format!("{}m ago", s / 60)
    } else if s < 86_400 {
        format!("{}h ago", s / 3600)
    } else if s < 30 * 86_400 {
        format!("{}d ago", s / 86_400)
    } else {
        chrono::DateTime::from_timestamp_millis(t_ms)
            .map(|d| d.format("%Y-%m-%d").to_string())
            .unwrap_or_default()
    }
}

/// A timestamp as `YYYY-MM-DD HH:MM:SS UTC`.
pub fn abs_time(t_ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(t_ms)
        .map(|d| d.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_default()
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
