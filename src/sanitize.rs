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

/// Characters terminals and our width tables disagree about. The half-width katakana sound
/// marks U+FF9E/U+FF9F are grapheme extenders with a width of one: a terminal that clusters
/// graphemes draws `ﾊﾟ` in one cell while a cell-by-cell one (and ratatui) takes two, and the
/// difference leaves stray glyphs when the screen scrolls. Their spacing full-width forms are
/// two columns everywhere.
fn respelled(c: char) -> Option<char> {
    match c {
        '\u{FF9E}' => Some('\u{309B}'),
        '\u{FF9F}' => Some('\u{309C}'),
        _ => None,
    }
}

fn needs_work(c: char) -> bool {
    is_dangerous(c) || respelled(c).is_some()
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

/// Whether every byte is printable ASCII (0x20..0x7f), 16 bytes at a time: no early exit
/// inside a block, so the compiler checks a block in a few vector instructions (`--list`
/// checks three cells a row).
fn printable_ascii(b: &[u8]) -> bool {
    let ok = |b: u8| b.wrapping_sub(0x20) < 0x5f;
    let mut blocks = b.chunks_exact(16);
    for block in &mut blocks {
        if !block.iter().fold(true, |all, &b| all & ok(b)) {
            return false;
        }
    }
    blocks.remainder().iter().all(|&b| ok(b))
}

/// One line of untrusted text: every control character (including newlines and tabs) and
/// bidi override is shown as visible text.
pub fn line(s: &str) -> Cow<'_, str> {
    // Printable ASCII (most text) needs nothing: checked bytewise, far cheaper than chars.
    if printable_ascii(s.as_bytes()) || !s.chars().any(needs_work) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c == '\t' {
            out.push(' ');
        } else if let Some(r) = respelled(c) {
            out.push(r);
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
    if s.bytes().all(|b| b == b'\n' || (0x20..0x7f).contains(&b))
        || !s.chars().any(|c| c != '\n' && needs_work(c))
    {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push('\n'),
            '\t' => out.push_str("    "),
            '\r' => {}
            c if respelled(c).is_some() => out.push(respelled(c).unwrap_or(c)),
            c if is_dangerous(c) => visible(c, &mut out),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A colour named by an SGR sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SgrColor {
    /// One of the 256 indexed colours (0-15 are the classic ones).
    Indexed(u8),
    /// A 24-bit colour.
    Rgb(u8, u8, u8),
}

/// The text attributes SGR sequences (`ESC [ … m`) set; the only escape sequences whose meaning
/// is kept (tool output is full of them), and only as attributes of the text that follows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Sgr {
    pub fg: Option<SgrColor>,
    pub bg: Option<SgrColor>,
    pub bold: bool,
    pub dim: bool,
    pub italic: bool,
    pub underline: bool,
    pub reverse: bool,
}

impl Sgr {
    fn apply(&mut self, params: &str) {
        let nums: Vec<u16> = params
            .split([';', ':'])
            .map(|p| p.parse().unwrap_or(0))
            .collect();
        let mut i = 0;
        while i < nums.len() {
            let n = nums[i];
            match n {
                0 => *self = Sgr::default(),
                1 => self.bold = true,
                2 => self.dim = true,
                3 => self.italic = true,
                4 => self.underline = true,
                7 => self.reverse = true,
                22 => (self.bold, self.dim) = (false, false),
                23 => self.italic = false,
                24 => self.underline = false,
                27 => self.reverse = false,
                30..=37 => self.fg = Some(SgrColor::Indexed((n - 30) as u8)),
                39 => self.fg = None,
                40..=47 => self.bg = Some(SgrColor::Indexed((n - 40) as u8)),
                49 => self.bg = None,
                90..=97 => self.fg = Some(SgrColor::Indexed((n - 90 + 8) as u8)),
                100..=107 => self.bg = Some(SgrColor::Indexed((n - 100 + 8) as u8)),
                38 | 48 => {
                    let c = match nums.get(i + 1) {
                        Some(5) => {
                            let c = nums.get(i + 2).map(|v| SgrColor::Indexed(*v as u8));
                            i += 2;
                            c
                        }
                        Some(2) => {
                            let g = |k: usize| nums.get(i + k).copied().unwrap_or(0) as u8;
                            let c = Some(SgrColor::Rgb(g(2), g(3), g(4)));
                            i += 4;
                            c
                        }
                        _ => None,
                    };
                    if n == 38 {
                        self.fg = c;
                    } else {
                        self.bg = c;
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
}

/// The length of an SGR sequence at the start of `s` (`ESC [` digits `;` `:` then `m`), if
/// one is there, and its parameters.
fn sgr_at(s: &str) -> Option<(usize, &str)> {
    let rest = s.strip_prefix("\x1b[")?;
    let end = rest.find(|c: char| !(c.is_ascii_digit() || c == ';' || c == ':'))?;
    (rest.as_bytes()[end] == b'm' && end <= 64).then(|| (2 + end + 1, &rest[..end]))
}

/// Multi-line untrusted text split into runs by the SGR sequences in it: each run's text is
/// neutralised like `text` (so every other escape sequence stays visible), the sequences
/// themselves become the run's attributes.
pub(crate) fn sgr_runs(s: &str) -> Vec<(Sgr, String)> {
    let mut out = Vec::new();
    let mut cur = Sgr::default();
    let mut start = 0;
    let mut i = 0;
    while let Some(off) = s[i..].find('\x1b') {
        let at = i + off;
        match sgr_at(&s[at..]) {
            Some((len, params)) => {
                if at > start {
                    out.push((cur, text(&s[start..at]).into_owned()));
                }
                cur.apply(params);
                i = at + len;
                start = i;
            }
            None => i = at + 1,
        }
    }
    if start < s.len() {
        out.push((cur, text(&s[start..]).into_owned()));
    }
    out
}

/// Multi-line untrusted text without its SGR colour sequences, otherwise neutralised like
/// `text` (for plain-text destinations such as the markdown export).
pub(crate) fn text_without_sgr(s: &str) -> String {
    sgr_runs(s).into_iter().map(|(_, t)| t).collect()
}

/// Serialised JSON made safe for a terminal, losslessly: the dangerous characters serde_json
/// leaves raw (DEL, C1 controls, bidi overrides; it escapes C0 itself) become `\uXXXX`
/// escapes, which any JSON reader turns back. They can only occur inside strings.
pub(crate) fn json(s: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| c != '\n' && is_dangerous(c);
    // Fast path (a 100,000-row `--list --json` goes through here): serde_json escapes C0
    // itself, so plain ASCII is unsafe only with DEL.
    if (s.is_ascii() && !s.as_bytes().contains(&0x7f)) || !s.chars().any(unsafe_char) {
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
    fn the_block_check_is_the_byte_check() {
        for len in 0..40 {
            for bad in [0x00u8, 0x1f, 0x7f, 0x80, 0xff] {
                for at in 0..len {
                    let mut v = vec![b'a'; len];
                    assert!(printable_ascii(&v));
                    v[at] = bad;
                    assert!(!printable_ascii(&v), "{len} {bad:#x} at {at}");
                    v[at] = b' ';
                    assert!(printable_ascii(&v));
                    v[at] = b'~';
                    assert!(printable_ascii(&v));
                }
            }
        }
    }

    #[test]
    fn escapes_become_visible() {
        let hostile = "a\x1b]0;pwned\x07b\x1b[2Jc\u{9b}31m\u{202e}evil";
        let l = line(hostile);
        assert!(!l.chars().any(is_dangerous), "{l}");
        assert_eq!(l, "a^[]0;pwned^Gb^[[2Jc<U+009B>31m<U+202E>evil");
    }

    #[test]
    fn sgr_becomes_attributes_and_nothing_else_passes() {
        let runs = sgr_runs("a\x1b[36mcyan\x1b[1;38;5;200mpink\x1b[0m\x1b[2Jz\x1b[31");
        let texts: Vec<&str> = runs.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(texts, ["a", "cyan", "pink", "^[[2Jz^[[31"]);
        assert_eq!(runs[1].0.fg, Some(SgrColor::Indexed(6)));
        assert_eq!(runs[2].0.fg, Some(SgrColor::Indexed(200)));
        assert!(runs[2].0.bold);
        assert_eq!(runs[3].0, Sgr::default());
        assert_eq!(
            text_without_sgr("\x1b[32mok\x1b[0m \x1b]0;x\x07"),
            "ok ^[]0;x^G"
        );
    }

    #[test]
    fn sound_marks_take_the_width_terminals_agree_on() {
        assert_eq!(line("ﾊﾟﾝﾀﾞ"), "ﾊ\u{309C}ﾝﾀ\u{309B}");
        assert_eq!(text("ﾟ\n"), "\u{309C}\n");
    }

    #[test]
    fn text_keeps_newlines_only() {
        assert_eq!(text("x\ny\tz\r\n\x1b[1m"), "x\ny    z\n^[[1m");
        assert!(matches!(text("plain\ntext"), Cow::Borrowed(_)));
    }
}
