//! What the words of a command line mean to the splitter ([`crate::runtime::shell`]): quote removal
//! (`\\x`, `"…"`, `$'…'`), whether unquoted text globs or brace-expands, which kinds of node
//! are values, and which assignments change what runs.

/// Environment variables whose assignment before a command changes which program runs or
/// what a shell executes: such a prefix makes the command unknown.
pub(super) fn dangerous_assignment(name: &str) -> bool {
    const NAMES: &[&str] = &[
        "PATH",
        "BASH_ENV",
        "ENV",
        "IFS",
        "SHELLOPTS",
        "BASHOPTS",
        "PS4",
        "PROMPT_COMMAND",
        "CDPATH",
        "PYTHONPATH",
        "PYTHONSTARTUP",
        "NODE_OPTIONS",
        "PERL5OPT",
        "RUSTC_WRAPPER",
        "CARGO_BUILD_RUSTC_WRAPPER",
    ];
    NAMES.contains(&name)
        || name.starts_with("LD_")
        || name.starts_with("DYLD_")
        || name.starts_with("GIT_")
        || name.ends_with("_COMMAND")
        || name.ends_with("_EDITOR")
        || name == "EDITOR"
        || name == "VISUAL"
        || name == "PAGER"
}

pub(super) fn is_value(kind: &str) -> bool {
    matches!(
        kind,
        "word"
            | "string"
            | "raw_string"
            | "ansi_c_string"
            | "concatenation"
            | "simple_expansion"
            | "expansion"
    )
}

/// Whether unquoted word text globs (`*`, `?`, `[`) or brace-expands (`{a,b}`, `{1..3}`).
pub(super) fn expands_unquoted(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    let mut open: Option<usize> = None;
    let mut sep = false;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'*' | b'?' | b'[' => return true,
            b'{' => {
                open = Some(i);
                sep = false;
            }
            b',' if open.is_some() => sep = true,
            b'.' if open.is_some() && b.get(i + 1) == Some(&b'.') => sep = true,
            b'}' if open.is_some() && sep => return true,
            _ => {}
        }
        i += 1;
    }
    false
}

/// The text of `$'…'`, or `None` for an escape this does not decode.
pub(super) fn ansi_c(s: &str) -> Option<String> {
    let inner = s.strip_prefix("$'")?.strip_suffix('\'')?;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let e = chars.next()?;
        let simple = match e {
            'a' => Some('\u{7}'),
            'b' => Some('\u{8}'),
            'e' | 'E' => Some('\u{1b}'),
            'f' => Some('\u{c}'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\u{b}'),
            '\\' | '\'' | '"' | '?' => Some(e),
            _ => None,
        };
        if let Some(ch) = simple {
            out.push(ch);
            continue;
        }
        let (radix, max) = match e {
            '0'..='7' => (8, 2),
            'x' => (16, 2),
            'u' => (16, 4),
            'U' => (16, 8),
            _ => return None,
        };
        let mut digits = String::new();
        if radix == 8 {
            digits.push(e);
        }
        while digits.len() < max + usize::from(radix == 8)
            && chars.peek().is_some_and(|d| d.is_digit(radix))
        {
            digits.extend(chars.next());
        }
        let v = u32::from_str_radix(&digits, radix).ok()?;
        out.push(char::from_u32(v)?);
    }
    Some(out)
}

/// Backslash escapes of an unquoted word.
pub(super) fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Backslash escapes inside double quotes (only `\"`, `\\`, `\$`, `` \` `` are escapes).
pub(super) fn unescape_dq(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && matches!(chars.peek(), Some('"' | '\\' | '$' | '`')) {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}
