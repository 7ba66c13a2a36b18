//! Neutralising untrusted text (from models, tools, session files) before it reaches a
//! terminal: control characters, escape sequences and bidi overrides become visible text.

use std::borrow::Cow;

/// True for characters that must never reach a terminal raw.
fn is_dangerous(c: char) -> bool {
    c.is_control()   // C0, DEL, C1 (includes ESC, BEL, CSI U+009B, OSC U+009D)
        || matches!(c,
            '\u{200E}' | '\u{200F}'           // LRM, RLM
            | '\u{202A}'..='\u{202E}'         // LRE RLE PDF LRO RLO
            | '\u{2066}'..='\u{2069}'         // LRI RLI FSI PDI
            | '\u{061C}'                      // ALM
            | '\u{FEFF}'                      // BOM / ZWNBSP
            | '\u{FFF9}'..='\u{FFFB}'         // interlinear annotations
        )
}

/// A visible stand-in for a dangerous character: `^[` style for C0, `<U+XXXX>` otherwise.
fn visible(c: char, out: &mut String) {
    let n = c as u32;
    if n < 0x20 {
        out.push('^');
        out.push(char::from_u32(n + 0x40).unwrap_or('?'));
    } else if n == 0x7f {
        out.push_str("^?");
    } else {
        out.push_str(&format!("<U+{n:04X}>"));
    }
}

/// One line of untrusted text: every control character (including newlines and tabs) and
/// bidi override is shown as visible text.
pub fn line(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_dangerous) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c == '\t' {
            out.push(' ');
        } else if is_dangerous(c) {
            visible(c, &mut out);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Multi-line untrusted text: newlines are kept, tabs become four spaces, every other control
/// character or bidi override is shown as visible text.
pub fn text(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c != '\n' && is_dangerous(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push('\n'),
            '\t' => out.push_str("    "),
            '\r' => {}
            c if is_dangerous(c) => visible(c, &mut out),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Serialised JSON made safe for a terminal, losslessly: the dangerous characters serde_json
/// leaves raw (DEL, C1 controls, bidi overrides; it escapes C0 itself) become `\uXXXX`
/// escapes, which any JSON reader turns back. They can only occur inside strings.
pub fn json(s: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| c != '\n' && is_dangerous(c);
    if !s.chars().any(unsafe_char) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_stays_lossless_and_harmless() {
        let v = serde_json::json!({"text": "a\u{1b}[2Jb\u{9b}31m\u{202e}c\u{7f}"});
        let raw = serde_json::to_string(&v).unwrap();
        let safe = json(&raw);
        assert!(!safe.chars().any(is_dangerous), "{safe}");
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn escapes_become_visible() {
        let hostile = "a\x1b]0;pwned\x07b\x1b[2Jc\u{9b}31m\u{202e}evil";
        let l = line(hostile);
        assert!(!l.chars().any(is_dangerous), "{l}");
        assert_eq!(l, "a^[]0;pwned^Gb^[[2Jc<U+009B>31m<U+202E>evil");
    }

    #[test]
    fn text_keeps_newlines_only() {
        assert_eq!(text("x\ny\tz\r\n\x1b[1m"), "x\ny    z\n^[[1m");
        assert!(matches!(text("plain\ntext"), Cow::Borrowed(_)));
    }
}
