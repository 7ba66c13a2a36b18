//! Snippets: one-line excerpts, and the ones cut in Rust for messages too long for FTS5 to
//! highlight.

use super::text::SPLIT;
use crate::session::model::{SNIPPET_CLOSE, SNIPPET_OPEN};

/// A snippet is a one-line excerpt: runs of whitespace (newlines, tabs) become one space, and
/// the index's separators go.
pub(crate) fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for word in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().filter(|&c| c != SPLIT));
    }
    out
}

/// One candidate: its index row, how many matches it holds, its length and its snippet.
pub(super) struct Candidate {
    pub(super) rowid: i64,
    pub(super) hits: f64,
    pub(super) len: f64,
    pub(super) snippet: String,
}

/// A long message's candidate from a window of its text: matches of the query's words
/// counted there (case-insensitive; at least one, FTS5 found it), and a snippet of about
/// twelve words around the first, marked like FTS5's (or the window's start when no word is
/// in it).
pub(super) fn long_candidate(rowid: i64, len: f64, head: &str, needles: &[String]) -> Candidate {
    let lower = head.to_lowercase();
    // Positions come from `lower`. Lower-casing ASCII keeps every byte where it was; other
    // text can move (`İ` grows, `ẞ` shrinks), so its snippet is cut from `lower` itself.
    let text = if head.is_ascii() { head } else { &lower };
    let mut hits = 0usize;
    let mut first: Option<(usize, usize)> = None;
    for n in needles.iter().filter(|n| !n.is_empty()) {
        for (at, _) in lower.match_indices(n.as_str()) {
            hits += 1;
            if first.is_none_or(|(f, _)| at < f) {
                first = Some((at, n.len()));
            }
        }
    }
    let snippet = match first {
        Some((at, n)) => {
            let before = text[..at]
                .char_indices()
                .rev()
                .filter(|(_, c)| c.is_whitespace())
                .nth(5)
                .map_or(0, |(i, _)| i + 1);
            let after = text[at + n..]
                .char_indices()
                .filter(|(_, c)| c.is_whitespace())
                .nth(6)
                .map_or(text.len(), |(i, _)| at + n + i);
            format!(
                "{}{}{SNIPPET_OPEN}{}{SNIPPET_CLOSE}{}{}",
                if before > 0 { "…" } else { "" },
                &text[before..at],
                &text[at..at + n],
                &text[at + n..after],
                if after < text.len() || (len as usize) > text.len() {
                    "…"
                } else {
                    ""
                },
            )
        }
        None => {
            let end = text
                .char_indices()
                .filter(|(_, c)| c.is_whitespace())
                .nth(12)
                .map_or(text.len(), |(i, _)| i);
            format!("{}…", &text[..end])
        }
    };
    Candidate {
        rowid,
        hits: hits.max(1) as f64,
        len,
        snippet,
    }
}
