//! A small shell lexer for what the tree-sitter grammar gets wrong or cannot say: here-doc
//! bodies (every form: `<<`, `<<-`, quoted delimiters, several on one line, inside `$( … )`),
//! the command substitutions inside an unquoted body (`$( … )` and backticks, which the
//! grammar misses in bodies), and the syntax whose meaning differs between bash and a POSIX
//! `sh` such as dash (`&>`, `N&>`, `>&word`, `<<-`, …).
//!
//! [`prepare`] cuts every here-doc out of a command line, as bash reads it (the body starts
//! after the next unquoted newline, ends at the line equal to the delimiter, tabs stripped
//! for `<<-`, `\`-newline joined in unquoted bodies), and puts a marker input redirection
//! (`<__neocode_heredoc_0__`) where the operator was, so the grammar parses the rest and
//! the splitter can tell which command reads which body. What the lexer cannot follow
//! (an unterminated quote, a here-doc next to a `case`) is an error: the splitter then
//! asks about the line.

pub(crate) use super::dialect::Bashism;

/// Prefix of the marker words that stand for here-docs in a prepared line.
const MARKER: &str = "__neocode_heredoc_";

/// One here-doc of a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Doc {
    /// The word that stands for it in [`Prepared::text`] (after a `<`).
    pub marker: String,
    /// The operator and delimiter as written (`<<-'EOF'`), to put back in messages.
    pub original: String,
    /// The body as the command reads it before expansion: tabs stripped for `<<-`.
    pub body: String,
    /// The delimiter was not quoted: the body's `$( … )`, backticks and `$VAR` expand.
    pub expands: bool,
}

impl Doc {
    /// The body is the same text whatever the environment (nothing in it expands).
    pub(super) fn literal(&self) -> bool {
        !self.expands || !self.body.contains(['$', '`', '\\'])
    }
}

/// A command line with its here-docs cut out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Prepared {
    /// The line with each here-doc operator replaced by `<MARKER` and each body (with its
    /// delimiter line) removed.
    pub text: String,
    pub docs: Vec<Doc>,
}

impl Prepared {
    /// The here-doc a marker word stands for.
    pub(super) fn doc(&self, word: &str) -> Option<&Doc> {
        self.docs.iter().find(|d| d.marker == word)
    }

    /// `s` with every marker put back as the operator it stands for.
    pub(super) fn restore(&self, s: &str) -> String {
        let mut out = s.to_string();
        for d in &self.docs {
            out = out.replace(&format!("<{}", d.marker), &d.original);
        }
        out
    }
}

/// Why the lexer gave up (the line is then asked about).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum LexError {
    #[error("an unterminated quote, substitution or here-doc")]
    Unterminated,
    #[error("a here-doc without a delimiter word")]
    NoDelimiter,
    #[error("here-docs together with `case` (the splitter cannot follow them)")]
    Case,
    #[error("here-docs in a line that already holds the splitter's marker words")]
    Marker,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Close {
    Eof,
    Paren,
    Backtick,
}

/// What a quoted or bracketed stretch lets open inside it besides `\` escapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Nest {
    /// Nothing (`$'…'`).
    Escapes,
    /// Backtick and `$` constructs (`"…"`).
    Expansions,
    /// Those and quoted strings (`${…}`, `$((…))`, shell text).
    Quotes,
}

struct Pending {
    op_start: usize,
    op_end: usize,
    delim: String,
    quoted: bool,
    strip_tabs: bool,
}

struct Cut {
    op: (usize, usize),
    consumed: (usize, usize),
    doc: Doc,
}

struct Lexer<'a> {
    s: &'a [u8],
    i: usize,
    pending: Vec<Pending>,
    cuts: Vec<Cut>,
    bashisms: Vec<Bashism>,
    /// The word `case` was seen (its patterns' `)` would confuse the parenthesis count).
    case: bool,
    /// A here-doc operator had no delimiter word.
    no_delimiter: bool,
}

/// Cuts the here-docs out of `src` (see the module doc). A line without `<<` comes back as
/// it is.
pub(super) fn prepare(src: &str) -> Result<Prepared, LexError> {
    if !src.contains("<<") {
        return Ok(Prepared {
            text: src.to_string(),
            docs: Vec::new(),
        });
    }
    if src.contains(MARKER) {
        return Err(LexError::Marker);
    }
    let mut lx = Lexer::new(src);
    lx.shell(Close::Eof)?;
    if !lx.pending.is_empty() {
        // A here-doc on the last line, without a body: bash reads an empty one.
        lx.bodies();
    }
    if lx.no_delimiter {
        return Err(LexError::NoDelimiter);
    }
    if lx.case && !lx.cuts.is_empty() {
        return Err(LexError::Case);
    }
    let mut text = String::with_capacity(src.len());
    let mut at = 0;
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut docs = Vec::new();
    for c in lx.cuts {
        edits.push((c.op.0, c.op.1, format!("<{}", c.doc.marker)));
        edits.push((c.consumed.0, c.consumed.1, String::new()));
        docs.push(c.doc);
    }
    edits.sort_by_key(|e| e.0);
    for (start, end, with) in edits {
        if start < at {
            return Err(LexError::Unterminated);
        }
        text.push_str(&src[at..start]);
        text.push_str(&with);
        at = end;
    }
    text.push_str(&src[at..]);
    Ok(Prepared { text, docs })
}

/// The syntax of `src` that a POSIX `sh` reads differently from bash, in order of
/// appearance (each kind once). A line the lexer cannot follow reports nothing here: the
/// splitter asks about it anyway.
pub(super) fn bashisms(src: &str) -> Vec<Bashism> {
    let mut lx = Lexer::new(src);
    let _ = lx.shell(Close::Eof);
    let mut out: Vec<Bashism> = Vec::new();
    for b in lx.bashisms {
        if !out.contains(&b) {
            out.push(b);
        }
    }
    out
}

/// The command texts of the substitutions an unquoted here-doc body runs (`$( … )`,
/// backticks, also inside `${ … }` and `$(( … ))`), in order.
pub(super) fn body_substitutions(body: &str) -> Result<Vec<String>, LexError> {
    let s = body.as_bytes();
    let mut out = Vec::new();
    scan_expanding(body, s, 0, s.len(), &mut out)?;
    Ok(out)
}

/// Finds the substitutions of `src[from..to]`, text where only `\`, `$` and backticks are
/// special (a here-doc body, the inside of `$(( … ))`).
fn scan_expanding(
    src: &str,
    s: &[u8],
    from: usize,
    to: usize,
    out: &mut Vec<String>,
) -> Result<(), LexError> {
    let mut i = from;
    while i < to {
        match s[i] {
            b'\\' => i += 2,
            b'`' => {
                let start = i + 1;
                let end = backtick_end(s, start).ok_or(LexError::Unterminated)?;
                if end > to {
                    return Err(LexError::Unterminated);
                }
                out.push(unescape_backticks(&src[start..end]));
                i = end + 1;
            }
            b'$' if s.get(i + 1) == Some(&b'(') && s.get(i + 2) == Some(&b'(') => {
                // Arithmetic: its inside may hold substitutions of its own.
                let mut lx = Lexer::new(src);
                lx.i = i + 3;
                lx.arith()?;
                if lx.i > to {
                    return Err(LexError::Unterminated);
                }
                scan_expanding(src, s, i + 3, lx.i.saturating_sub(2), out)?;
                i = lx.i;
            }
            b'$' if s.get(i + 1) == Some(&b'(') => {
                let mut lx = Lexer::new(src);
                lx.i = i + 2;
                lx.shell(Close::Paren)?;
                if lx.i > to {
                    return Err(LexError::Unterminated);
                }
                out.push(src[i + 2..lx.i - 1].to_string());
                i = lx.i;
            }
            _ => i += 1,
        }
    }
    Ok(())
}

/// The index of the backtick closing the one before `from` (a `\` escapes the next byte).
fn backtick_end(s: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i < s.len() {
        match s[i] {
            b'\\' => i += 2,
            b'`' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// Inside backticks `\\`, `` \` `` and `\$` stand for the character.
fn unescape_backticks(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && matches!(chars.peek(), Some('\\' | '`' | '$')) {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn is_meta(b: u8) -> bool {
    matches!(
        b,
        b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'<' | b'>' | b'(' | b')'
    )
}

impl<'a> Lexer<'a> {
    fn new(src: &'a str) -> Lexer<'a> {
        Lexer {
            s: src.as_bytes(),
            i: 0,
            pending: Vec::new(),
            cuts: Vec::new(),
            bashisms: Vec::new(),
            case: false,
            no_delimiter: false,
        }
    }

    fn at(&self, k: usize) -> Option<u8> {
        self.s.get(self.i + k).copied()
    }

    fn word_start(&self) -> bool {
        self.i == 0
            || matches!(
                self.s[self.i - 1],
                b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'{' | b'}'
            )
    }

    /// Shell text up to `close` (not included for `Eof`; consumed otherwise).
    fn shell(&mut self, close: Close) -> Result<(), LexError> {
        while let Some(b) = self.at(0) {
            match b {
                b'`' if close == Close::Backtick => {
                    self.i += 1;
                    return Ok(());
                }
                b'\\' | b'\'' | b'"' | b'`' | b'$' => self.nested(b, Nest::Quotes)?,
                b'(' if self.at(1) == Some(b'(') => {
                    self.bashisms.push(Bashism::Keyword);
                    self.i += 2;
                    self.arith()?;
                }
                b'(' => {
                    self.i += 1;
                    self.shell(Close::Paren)?;
                }
                b')' if close == Close::Paren => {
                    self.i += 1;
                    return Ok(());
                }
                b'#' if self.word_start() => {
                    while self.at(0).is_some_and(|c| c != b'\n') {
                        self.i += 1;
                    }
                }
                b'\n' => {
                    self.i += 1;
                    if !self.pending.is_empty() {
                        self.bodies();
                    }
                }
                b'<' => self.less(),
                b'>' => self.greater(),
                b'&' if self.at(1) == Some(b'>') => {
                    self.bashisms.push(Bashism::AmpRedirect);
                    self.i += 2;
                }
                b'|' if self.at(1) == Some(b'&') => {
                    self.bashisms.push(Bashism::PipeBoth);
                    self.i += 2;
                }
                b'{' => {
                    if self.brace_expansion() {
                        self.bashisms.push(Bashism::BraceExpansion);
                    }
                    self.i += 1;
                }
                _ if self.word_start() => self.keyword(),
                _ => self.i += 1,
            }
        }
        match close {
            Close::Eof => Ok(()),
            _ => Err(LexError::Unterminated),
        }
    }

    /// A word at a word start: `case`, `[[` and `function` are noted.
    fn keyword(&mut self) {
        let rest = &self.s[self.i..];
        let word_is =
            |w: &[u8]| rest.starts_with(w) && rest.get(w.len()).is_none_or(|&c| is_meta(c));
        if word_is(b"case") {
            self.case = true;
        }
        if word_is(b"[[") || word_is(b"function") {
            self.bashisms.push(Bashism::Keyword);
        }
        self.i += 1;
    }

    /// `{` starts a brace expansion when, within the same word, a `,` or `..` comes before
    /// its `}`.
    fn brace_expansion(&self) -> bool {
        let rest = &self.s[self.i + 1..];
        let mut depth = 0usize;
        let mut sep = false;
        let mut k = 0;
        while k < rest.len() {
            let c = rest[k];
            if is_meta(c) || c == b'\'' || c == b'"' || c == b'$' || c == b'`' {
                return false;
            }
            match c {
                b'\\' => k += 1,
                b'{' => depth += 1,
                b'}' if depth == 0 => return sep,
                b'}' => depth -= 1,
                b',' => sep = true,
                b'.' if rest.get(k + 1) == Some(&b'.') => sep = true,
                _ => {}
            }
            k += 1;
        }
        false
    }

    fn single(&mut self) -> Result<(), LexError> {
        self.i += 1;
        while let Some(b) = self.at(0) {
            self.i += 1;
            if b == b'\'' {
                return Ok(());
            }
        }
        Err(LexError::Unterminated)
    }

    /// Inside `"…"`, after the opening quote; consumes the closing one.
    fn double(&mut self) -> Result<(), LexError> {
        self.until(b'"', Nest::Expansions)
    }

    /// Up to `close` (consumed), past what `nest` lets open on the way.
    fn until(&mut self, close: u8, nest: Nest) -> Result<(), LexError> {
        while let Some(b) = self.at(0) {
            if b == close {
                self.i += 1;
                return Ok(());
            }
            self.nested(b, nest)?;
        }
        Err(LexError::Unterminated)
    }

    /// Past one byte of a stretch, or past what it opens: a `\` escapes the next byte, and as
    /// `nest` allows a backtick or `$` opens its construct and a quote its string.
    fn nested(&mut self, b: u8, nest: Nest) -> Result<(), LexError> {
        match b {
            b'\\' => self.i += 2,
            b'`' if nest != Nest::Escapes => {
                self.i += 1;
                self.shell(Close::Backtick)?;
            }
            b'$' if nest != Nest::Escapes => self.dollar()?,
            b'\'' if nest == Nest::Quotes => self.single()?,
            b'"' if nest == Nest::Quotes => {
                self.i += 1;
                self.double()?;
            }
            _ => self.i += 1,
        }
        Ok(())
    }

    /// At a `$`: a substitution, arithmetic, a parameter expansion or a bash quote.
    fn dollar(&mut self) -> Result<(), LexError> {
        match (self.at(1), self.at(2)) {
            (Some(b'('), Some(b'(')) => {
                self.i += 3;
                self.arith()
            }
            (Some(b'('), _) => {
                self.i += 2;
                self.shell(Close::Paren)
            }
            (Some(b'{'), _) => {
                self.i += 2;
                self.braced()
            }
            (Some(b'\''), _) => {
                self.bashisms.push(Bashism::DollarQuote);
                self.i += 2;
                self.until(b'\'', Nest::Escapes)
            }
            (Some(b'"'), _) => {
                self.bashisms.push(Bashism::DollarQuote);
                self.i += 2;
                self.double()
            }
            _ => {
                self.i += 1;
                Ok(())
            }
        }
    }

    /// Inside `${ … }`, after the `{`; consumes the `}`.
    fn braced(&mut self) -> Result<(), LexError> {
        self.until(b'}', Nest::Quotes)
    }

    /// Inside `(( … ))` or `$(( … ))`, after the opening parentheses; consumes the closing
    /// ones. `<<` is a shift here, not a here-doc.
    fn arith(&mut self) -> Result<(), LexError> {
        let mut depth = 0usize;
        while let Some(b) = self.at(0) {
            match b {
                b'(' => {
                    depth += 1;
                    self.i += 1;
                }
                b')' if depth == 0 && self.at(1) == Some(b')') => {
                    self.i += 2;
                    return Ok(());
                }
                b')' => {
                    depth = depth.saturating_sub(1);
                    self.i += 1;
                }
                _ => self.nested(b, Nest::Quotes)?,
            }
        }
        Err(LexError::Unterminated)
    }

    /// At a `<`: a here-doc operator, a here-string, a process substitution or a plain
    /// redirection.
    fn less(&mut self) {
        match (self.at(1), self.at(2)) {
            (Some(b'<'), Some(b'<')) => {
                self.bashisms.push(Bashism::HereString);
                self.i += 3;
            }
            (Some(b'<'), _) => self.heredoc_op(),
            (Some(b'('), _) => {
                self.bashisms.push(Bashism::ProcessSubstitution);
                self.i += 1;
            }
            _ => self.i += 1,
        }
    }

    /// At a `>`: `>&word` where the word is not a descriptor, `>( … )`.
    fn greater(&mut self) {
        match self.at(1) {
            Some(b'(') => {
                self.bashisms.push(Bashism::ProcessSubstitution);
                self.i += 1;
            }
            Some(b'&') => {
                let mut k = self.i + 2;
                while matches!(self.s.get(k), Some(b' ' | b'\t')) {
                    k += 1;
                }
                let word_end = (k..self.s.len())
                    .find(|&j| is_meta(self.s[j]))
                    .unwrap_or(self.s.len());
                let word = &self.s[k..word_end];
                let fd = !word.is_empty()
                    && (word == b"-"
                        || word.iter().all(u8::is_ascii_digit)
                        || (word.len() > 1
                            && word.ends_with(b"-")
                            && word[..word.len() - 1].iter().all(u8::is_ascii_digit)));
                if !fd {
                    self.bashisms.push(Bashism::DupToFile);
                }
                self.i += 2;
            }
            _ => self.i += 1,
        }
    }

    /// At `<<`: reads the operator and its delimiter word and notes the here-doc, whose body
    /// starts after the next newline.
    fn heredoc_op(&mut self) {
        let op_start = self.i;
        self.i += 2;
        let strip_tabs = self.at(0) == Some(b'-');
        if strip_tabs {
            self.bashisms.push(Bashism::HeredocDash);
            self.i += 1;
        }
        while matches!(self.at(0), Some(b' ' | b'\t')) {
            self.i += 1;
        }
        let mut delim = Vec::new();
        let mut quoted = false;
        while let Some(b) = self.at(0) {
            match b {
                b'\'' => {
                    quoted = true;
                    self.i += 1;
                    while let Some(c) = self.at(0) {
                        self.i += 1;
                        if c == b'\'' {
                            break;
                        }
                        delim.push(c);
                    }
                }
                b'"' => {
                    quoted = true;
                    self.i += 1;
                    while let Some(c) = self.at(0) {
                        self.i += 1;
                        match c {
                            b'"' => break,
                            b'\\' if matches!(self.at(0), Some(b'"' | b'\\' | b'$' | b'`')) => {
                                delim.push(self.s[self.i]);
                                self.i += 1;
                            }
                            _ => delim.push(c),
                        }
                    }
                }
                b'\\' => {
                    quoted = true;
                    if let Some(c) = self.at(1) {
                        delim.push(c);
                    }
                    self.i += 2;
                }
                c if is_meta(c) => break,
                c => {
                    delim.push(c);
                    self.i += 1;
                }
            }
        }
        self.i = self.i.min(self.s.len());
        self.no_delimiter |= delim.is_empty() && !quoted;
        self.pending.push(Pending {
            op_start,
            op_end: self.i,
            delim: String::from_utf8_lossy(&delim).into_owned(),
            quoted,
            strip_tabs,
        });
    }

    /// Reads the bodies of the pending here-docs, from `self.i` (just after a newline).
    fn bodies(&mut self) {
        for p in std::mem::take(&mut self.pending) {
            let start = self.i;
            let mut body = String::new();
            let mut consumed = self.s.len();
            let mut i = start;
            while i < self.s.len() {
                let line_start = i;
                // A logical line: in an unquoted body `\`-newline joins the next line.
                let mut logical = Vec::new();
                loop {
                    let nl = (i..self.s.len()).find(|&j| self.s[j] == b'\n');
                    let line_end = nl.unwrap_or(self.s.len());
                    let mut line = &self.s[i..line_end];
                    if p.strip_tabs {
                        while line.first() == Some(&b'\t') {
                            line = &line[1..];
                        }
                    }
                    i = nl.map_or(self.s.len(), |n| n + 1);
                    let odd = line.iter().rev().take_while(|&&c| c == b'\\').count() % 2 == 1;
                    if !p.quoted && odd && nl.is_some() {
                        logical.extend_from_slice(&line[..line.len() - 1]);
                        continue;
                    }
                    logical.extend_from_slice(line);
                    break;
                }
                if logical == p.delim.as_bytes() {
                    consumed = i;
                    break;
                }
                body.push_str(&String::from_utf8_lossy(&logical));
                if i > line_start && self.s.get(i - 1) == Some(&b'\n') {
                    body.push('\n');
                }
            }
            self.i = consumed;
            let n = self.cuts.len();
            let src = String::from_utf8_lossy(&self.s[p.op_start..p.op_end]).into_owned();
            self.cuts.push(Cut {
                op: (p.op_start, p.op_end),
                consumed: (start, consumed),
                doc: Doc {
                    marker: format!("{MARKER}{n}__"),
                    original: src,
                    body,
                    expands: !p.quoted,
                },
            });
        }
    }
}

#[cfg(test)]
mod tests;
