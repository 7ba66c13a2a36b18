//! The key kept out of messages.

/// Replaces `key` and `sk-...` tokens in `s` with `***`.
pub(crate) fn redact(s: &str, key: Option<&str>) -> String {
    let mut out = match key {
        Some(k) if k.len() >= 4 => s.replace(k, "***"),
        _ => s.to_string(),
    };
    let mut from = 0;
    while let Some(at) = out[from..].find("sk-") {
        let i = from + at;
        from = i + 3;
        // Inside a word (`task-1`, `disk-usage`) it is no key's start.
        if out[..i].ends_with(|c: char| c.is_ascii_alphanumeric()) {
            continue;
        }
        let end = out[i..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '*'))
            .map_or(out.len(), |e| i + e);
        if end - i <= 3 {
            continue;
        }
        out.replace_range(i..end, "***");
    }
    out
}
