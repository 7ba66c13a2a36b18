//! Full-text search: what the index holds, how typed text becomes a query, and how a bounded
//! set of matches is ranked.
//!
//! The index is FTS5's `unicode61` tokenizer, which finds words by Unicode category. Chinese,
//! Japanese and Korean have no spaces between words, so a whole CJK run is one token to it and
//! `修正` inside `请修正状态` found nothing; emoji are symbols, which it skips. The text stored in
//! the index therefore gets an invisible separator ([`SPLIT`]) around every CJK character and
//! every non-alphanumeric symbol, and the tokenizer also keeps `So` (emoji, ©, °) as tokens:
//! each CJK character and each emoji is a token of its own, and a CJK word of any length is a
//! phrase of adjacent characters. Latin text is untouched (the separator only lands next to
//! characters that were separators already), so its tokens and ranking stay as they were.

use std::borrow::Cow;

use rusqlite::{Connection, params};

use super::error::Result;
use super::model::{Role, SearchHit};

/// Separator inserted into indexed text (ASCII unit separator: one byte, a separator to the
/// tokenizer, never shown).
pub(crate) const SPLIT: char = '\u{1f}';

/// At most this many matches are ranked (the newest); the count stops there too.
pub const SEARCH_CANDIDATES: usize = 1000;

/// What a search found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SearchResults {
    /// The best hits, best first.
    pub hits: Vec<SearchHit>,
    /// Matching messages, counted up to [`SEARCH_CANDIDATES`].
    pub matched: usize,
    /// More than [`SEARCH_CANDIDATES`] messages match: only the newest were ranked.
    pub more: bool,
}

/// CJK scripts written without spaces between words: Han, kana, Hangul, CJK punctuation and
/// full-width forms.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x2E80..=0x2FDF      // radicals
        | 0x3000..=0x30FF    // CJK symbols, hiragana, katakana
        | 0x3100..=0x31FF    // bopomofo, kanbun, katakana extensions
        | 0x3200..=0x9FFF    // enclosed CJK, compatibility, ext. A, unified ideographs
        | 0xA960..=0xA97F    // hangul jamo ext. A
        | 0xAC00..=0xD7FF    // hangul syllables, jamo ext. B
        | 0xF900..=0xFAFF    // compatibility ideographs
        | 0xFE30..=0xFE4F    // compatibility forms
        | 0xFF00..=0xFFEF    // half- and full-width forms
        | 0x1100..=0x11FF    // hangul jamo
        | 0x20000..=0x3FFFF  // ideograph extensions B–H
    )
}

/// Characters that become tokens of their own: CJK, and any other non-ASCII character that is
/// not a letter or digit (emoji and other symbols; punctuation stays a separator to FTS5).
fn splits(c: char) -> bool {
    !c.is_ascii() && (is_cjk(c) || !(c.is_alphanumeric() || c.is_whitespace()))
}

/// The text to index (and to query with): [`SPLIT`] between every pair of neighbours where one
/// of them [`splits`]. ASCII text is returned as it is.
pub(crate) fn index_text(s: &str) -> Cow<'_, str> {
    if s.is_ascii() {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + s.len() / 4);
    let mut prev: Option<char> = None;
    for c in s.chars() {
        if let Some(p) = prev
            && (splits(p) || splits(c))
            && !p.is_whitespace()
            && !c.is_whitespace()
        {
            out.push(SPLIT);
        }
        out.push(c);
        prev = Some(c);
    }
    Cow::Owned(out)
}

/// Registers `neocode_index_text(text)` ([`index_text`]) on a connection, for the migration
/// that rebuilds the index.
pub fn register_functions(c: &Connection) -> rusqlite::Result<()> {
    use rusqlite::functions::FunctionFlags;
    c.create_scalar_function(
        "neocode_index_text",
        1,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            let text = ctx.get_raw(0).as_str().unwrap_or_default();
            Ok(index_text(text).into_owned())
        },
    )
}

/// Turns free text into a safe FTS5 query: every word quoted (a CJK word becomes a phrase of
/// its characters), the last one a prefix when `prefix`. Control characters (NUL ends the
/// query string inside FTS5's parser) become spaces.
pub(crate) fn fts_query(q: &str, prefix: bool) -> Option<String> {
    let q: String = q
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let words: Vec<String> = q
        .split_whitespace()
        .map(|w| format!("\"{}\"", index_text(w).replace('"', "\"\"")))
        .collect();
    if words.is_empty() {
        return None;
    }
    let mut s = words.join(" ");
    if prefix {
        s.push('*');
    }
    Some(s)
}

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
struct Candidate {
    rowid: i64,
    hits: f64,
    len: f64,
    snippet: String,
}

/// The newest `SEARCH_CANDIDATES + 1` matches of an FTS5 query, newest first. The snippet is
/// made here, while FTS5 holds the match: asking for it later by rowid makes FTS5 run the
/// whole query again for each hit.
fn candidates(c: &Connection, fts: &str) -> Result<Vec<Candidate>> {
    // `highlight` marks each match with U+E000; the marks are counted, not returned.
    let mut st = c.prepare_cached(
        "SELECT rowid, length(h) - length(replace(h, char(57344), '')), length(body), snip
         FROM (SELECT rowid, body, highlight(message_fts, 0, char(57344), '') AS h,
                      snippet(message_fts, 0, char(57344), char(57345), '…', 12) AS snip
               FROM message_fts WHERE message_fts MATCH ?1
               ORDER BY rowid DESC LIMIT ?2)",
    )?;
    let rows = st.query_map(params![fts, SEARCH_CANDIDATES as i64 + 1], |r| {
        Ok(Candidate {
            rowid: r.get(0)?,
            hits: r.get::<_, i64>(1)?.max(1) as f64,
            len: r.get::<_, i64>(2)?.max(1) as f64,
            snippet: r.get(3)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

/// Searches the index. Ranking every match (FTS5's `ORDER BY rank`) costs time in proportion
/// to the number of matches, and bm25 also scans each term's whole posting list to weigh it:
/// hundreds of milliseconds for a common word in millions of messages. So the newest
/// [`SEARCH_CANDIDATES`] matches are the candidates (FTS5 reads its posting lists newest
/// first and stops there), and they are ranked by BM25's term-frequency part — matches in
/// the message against its length relative to the candidates' average — newer first on ties.
/// There is no IDF weight: every candidate holds every word of the query. Snippets are made
/// for the shown hits only.
pub(crate) fn search(c: &Connection, query: &str, limit: usize) -> Result<SearchResults> {
    let Some(exact) = fts_query(query, false) else {
        return Ok(SearchResults::default());
    };
    // The last word is also a prefix (search as you type), but FTS5 answers a prefix by
    // merging the posting lists of every word that starts with it before it can return the
    // newest: only when the words as typed match fewer than the candidates.
    let mut candidates = candidates(c, &exact)?;
    if candidates.len() <= SEARCH_CANDIDATES
        && let Some(prefix) = fts_query(query, true)
    {
        candidates = self::candidates(c, &prefix)?;
    }
    let more = candidates.len() > SEARCH_CANDIDATES;
    candidates.truncate(SEARCH_CANDIDATES);
    let matched = candidates.len();
    rank(&mut candidates);
    let mut hits = Vec::new();
    // A fork's copies share the source's index row: one hit per message holding the text.
    let mut messages_st = c.prepare_cached(
        "SELECT m.session_id, s.title, s.first_prompt, m.seq, m.role
         FROM messages m JOIN sessions s ON s.id = m.session_id
         WHERE m.fts_id = ?1 ORDER BY m.id DESC",
    )?;
    for cand in &candidates {
        if hits.len() >= limit {
            break;
        }
        let snippet = one_line(&cand.snippet);
        let rows = messages_st.query_map([cand.rowid], |r| {
            let title: String = r.get(1)?;
            let prompt: String = r.get(2)?;
            let role: String = r.get(4)?;
            Ok(SearchHit {
                session_id: r.get(0)?,
                session_title: if title.is_empty() { prompt } else { title },
                seq: r.get(3)?,
                role: Role::parse(&role).unwrap_or(Role::User),
                snippet: snippet.clone(),
            })
        })?;
        for h in rows {
            if hits.len() < limit {
                hits.push(h?);
            }
        }
    }
    Ok(SearchResults {
        hits,
        matched,
        more,
    })
}

/// Orders candidates (given newest first) best first: BM25's saturating term frequency with
/// length normalisation (k1 = 1.2, b = 0.75); the sort is stable, so ties stay newest first.
fn rank(candidates: &mut [Candidate]) {
    if candidates.is_empty() {
        return;
    }
    const K1: f64 = 1.2;
    const B: f64 = 0.75;
    let avg = candidates.iter().map(|c| c.len).sum::<f64>() / candidates.len() as f64;
    let score = |c: &Candidate| c.hits * (K1 + 1.0) / (c.hits + K1 * (1.0 - B + B * c.len / avg));
    candidates.sort_by(|a, b| score(b).total_cmp(&score(a)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_is_indexed_as_it_is() {
        assert!(matches!(index_text("fix the parser"), Cow::Borrowed(_)));
    }

    #[test]
    fn cjk_and_emoji_are_split_latin_words_are_not() {
        assert_eq!(
            index_text("请修正状态"),
            "请\u{1f}修\u{1f}正\u{1f}状\u{1f}态"
        );
        assert_eq!(index_text("done✅ ok"), "done\u{1f}✅ ok");
        assert_eq!(index_text("café naïve"), "café naïve");
        assert_eq!(index_text("20°C"), "20\u{1f}°\u{1f}C");
        assert_eq!(index_text("用Rust写"), "用\u{1f}Rust\u{1f}写");
    }

    #[test]
    fn queries_quote_words_and_drop_controls() {
        assert_eq!(fts_query("修正", true).unwrap(), "\"修\u{1f}正\"*");
        assert_eq!(
            fts_query("a \"b\"\0", true).unwrap(),
            "\"a\" \"\"\"b\"\"\"*"
        );
        assert_eq!(fts_query("two words", false).unwrap(), "\"two\" \"words\"");
        assert_eq!(fts_query(" \t\n", true), None);
    }

    #[test]
    fn snippets_lose_the_separators() {
        assert_eq!(
            one_line("请\u{1f}\u{e000}修\u{1f}正\u{e001}\n状"),
            "请\u{e000}修正\u{e001} 状"
        );
    }
}
