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
use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, params};

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
    /// How the last word was searched as a prefix.
    pub prefix: PrefixSearch,
}

/// How the last word was completed (search as you type).
#[derive(Debug, Clone, PartialEq, Default)]
pub enum PrefixSearch {
    /// Every word starting with it was searched, or completing it could add nothing: the words
    /// as typed already matched more than [`SEARCH_CANDIDATES`] messages, or the last word
    /// ends in a CJK character or symbol (a word of its own).
    #[default]
    Complete,
    /// Too much of the index holds words starting with `prefix` to search them all in time:
    /// only `prefix` itself and `words`, the ones that start with it in the newest messages
    /// (most frequent first), were searched.
    RecentWords { prefix: String, words: Vec<String> },
    /// A single character that starts too much of the index: searched as a whole word only.
    NotExpanded { prefix: String },
}

/// Leaf pages of the index (4 KB each by default) a prefix may cover and still be searched in
/// full: FTS5 answers a prefix by merging the posting lists of every word that starts with
/// it, all of them, before it returns the first row. Measured on a 10M-message workspace, a
/// merge costs ~50 µs a page warm and ~100 µs cold, so this keeps it near 25 / 50 ms.
pub const PREFIX_BUDGET_PAGES: u64 = 500;

/// The newest messages read, at most, for the words a costly prefix completes to…
const RECENT_MESSAGES: i64 = 2000;
/// …and at most this much of their text.
const RECENT_BYTES: usize = 256 * 1024;
/// Completions searched for a costly prefix: each is one more posting list to open.
const COMPLETIONS: usize = 8;

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

/// The words of free text as they are indexed ([`index_text`]). Control characters (NUL ends
/// the query string inside FTS5's parser) become spaces.
fn query_words(q: &str) -> Vec<String> {
    let q: String = q
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    q.split_whitespace()
        .map(|w| index_text(w).into_owned())
        .collect()
}

/// A word as an FTS5 string (a phrase when it holds several tokens).
fn quoted(w: &str) -> String {
    format!("\"{}\"", w.replace('"', "\"\""))
}

/// Turns free text into a safe FTS5 query: every word quoted (a CJK word becomes a phrase of
/// its characters), the last one a prefix when `prefix`.
pub(crate) fn fts_query(q: &str, prefix: bool) -> Option<String> {
    let words = query_words(q);
    if words.is_empty() {
        return None;
    }
    let mut s = words.iter().map(|w| quoted(w)).collect::<Vec<_>>().join(" ");
    if prefix {
        s.push('*');
    }
    Some(s)
}

/// Lower case without the diacritics `remove_diacritics` folds in Latin-1 letters, for
/// matching words against a typed prefix. Only for comparing: FTS5 folds the words it is
/// given itself, so a letter folded differently here still searches correctly.
fn fold_char(c: char) -> impl Iterator<Item = char> {
    c.to_lowercase().map(|c| match c {
        'à'..='å' => 'a',
        'ç' => 'c',
        'è'..='ë' => 'e',
        'ì'..='ï' => 'i',
        'ñ' => 'n',
        'ò'..='ö' => 'o',
        'ù'..='ü' => 'u',
        'ý' | 'ÿ' => 'y',
        c => c,
    })
}

fn fold(s: &str) -> String {
    s.chars().flat_map(fold_char).collect()
}

/// A character of a word that can be completed: a letter or digit that is not CJK (those are
/// tokens of one character each in the index).
fn word_char(c: char) -> bool {
    c.is_alphanumeric() && !splits(c)
}

/// The last word's final token, the one a prefix query completes: where it starts in the
/// indexed last word, and its folded text. None when there is none, or when the word ends in
/// a CJK character or a symbol: those are tokens of one character, so completing adds nothing.
fn last_token(last_word: &str) -> Option<(usize, String)> {
    let (at, last) = last_word
        .char_indices()
        .rev()
        .find(|&(_, c)| word_char(c) || splits(c))?;
    if !word_char(last) {
        return None;
    }
    let end = at + last.len_utf8();
    let start = last_word[..end]
        .char_indices()
        .rev()
        .take_while(|&(_, c)| word_char(c))
        .last()
        .map(|(i, _)| i)?;
    Some((start, fold(&last_word[start..end])))
}

/// About how many leaf pages of posting lists FTS5 merges to answer `prefix`: the pages the
/// words starting with it span, summed over the index's segments. Read from FTS5's own b-tree
/// of page separators (`message_fts_idx`: per segment, a prefix of the first word that starts
/// on a leaf page, after a '0' byte that marks the main index, and the page number shifted
/// left by one), so it costs a few lookups per segment. Only the ASCII start of the prefix is
/// used (the index holds folded text): a shorter prefix's range holds the longer one's, so
/// the estimate does not fall short.
fn prefix_pages(c: &Connection, prefix: &str) -> rusqlite::Result<u64> {
    let ascii: String = prefix.chars().take_while(char::is_ascii).collect();
    let mut lo = vec![b'0'];
    lo.extend(ascii.bytes());
    // The first key past every word with the prefix (ASCII: the last byte never overflows).
    let mut hi = lo.clone();
    if let Some(b) = hi.last_mut() {
        *b += 1;
    }
    // Per segment (found by skipping from one segment id to the next): the page of the last
    // separator at or before the range, the first page inside it, and the first page past it
    // (or one past the segment's last page: a leaf's rowid in `message_fts_data` is
    // segid << 37 | page).
    let mut st = c.prepare_cached(
        "WITH RECURSIVE seg(id) AS (
             SELECT min(segid) FROM message_fts_idx
             UNION ALL
             SELECT (SELECT min(segid) FROM message_fts_idx WHERE segid > seg.id)
             FROM seg WHERE seg.id IS NOT NULL),
         bounds AS (
             SELECT id,
                 coalesce((SELECT pgno >> 1 FROM message_fts_idx
                           WHERE segid = seg.id AND term <= ?1 ORDER BY term DESC LIMIT 1), 1)
                     AS before,
                 coalesce((SELECT pgno >> 1 FROM message_fts_idx
                           WHERE segid = seg.id AND term >= ?2 ORDER BY term LIMIT 1),
                          (SELECT max(id) FROM message_fts_data
                           WHERE id BETWEEN seg.id << 37 AND (seg.id << 37) + 2147483647)
                              - (seg.id << 37) + 1) AS past
             FROM seg WHERE seg.id IS NOT NULL)
         SELECT id, before, past,
             coalesce((SELECT pgno >> 1 FROM message_fts_idx
                       WHERE segid = id AND term > ?1 AND term < ?2 ORDER BY term LIMIT 1), past)
         FROM bounds",
    )?;
    let segments = st
        .query_map(params![lo, hi], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut pages = 0u64;
    let mut first_leaf = c.prepare_cached(
        "SELECT id, block FROM message_fts_data WHERE id >= ?1 AND id < ?2 ORDER BY id LIMIT 1",
    )?;
    for (segid, before, past, inside) in segments {
        // Pages up to the first separator inside the range hold no word's start but the
        // first: they are the posting list of the last word that starts on page `before`. A
        // long one (a common word just before the prefix) is only walked past, not merged,
        // unless that word has the prefix; the page itself is read to tell. A merge in
        // progress may have dropped the segment's first pages: the walk starts at the first
        // page left.
        let mut lead = (inside - before).max(0);
        if lead > 1 {
            let base = segid << 37;
            let leaf = first_leaf
                .query_row([base + before, base + inside], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?))
                })
                .optional()?;
            lead = match leaf {
                None => 0,
                Some((id, _)) if inside - (id - base) <= 1 => inside - (id - base),
                Some((_, page)) if last_term(&page).is_some_and(|t| t < lo) => 1,
                Some((id, _)) => inside - (id - base),
            };
        }
        pages += (lead + (past - inside).max(0)) as u64;
    }
    Ok(pages)
}

/// The last word that starts on an FTS5 leaf page (after its index's byte, like a separator): a
/// page is a 4-byte header (offset of the first rowid, size of the data part), the data, then
/// the offsets of the words that start on it (varints, each from the previous). The first
/// word on a page is whole (length, bytes), each later one shares a prefix with the previous
/// (shared length, new length, new bytes). None when the page does not parse as that.
fn last_term(page: &[u8]) -> Option<Vec<u8>> {
    let size = usize::from(u16::from_be_bytes([*page.get(2)?, *page.get(3)?]));
    let data = page.get(..size)?;
    let mut index = page.get(size..)?;
    let mut at = 0usize;
    let mut term: Vec<u8> = Vec::new();
    let mut first = true;
    while !index.is_empty() {
        let (delta, n) = varint(index)?;
        index = &index[n..];
        at = at.checked_add(usize::try_from(delta).ok()?)?;
        let mut p = data.get(at..)?;
        let keep = if first {
            0
        } else {
            let (k, n) = varint(p)?;
            p = &p[n..];
            usize::try_from(k).ok()?
        };
        let (new, n) = varint(p)?;
        let bytes = p.get(n..n + usize::try_from(new).ok()?)?;
        term.truncate(keep);
        if term.len() != keep {
            return None;
        }
        term.extend_from_slice(bytes);
        first = false;
    }
    if first { None } else { Some(term) }
}

/// SQLite's varint (big-endian groups of 7 bits, a ninth byte of 8), and its length.
fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &byte) in b.iter().enumerate().take(9) {
        if i == 8 {
            return Some(((v << 8) | u64::from(byte), 9));
        }
        v = (v << 7) | u64::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// The words starting with `prefix` (folded) in the newest messages, the ones in most
/// messages first (then the newest): what a prefix too costly to search in full completes
/// to. Tokenised like the index (letters and digits; CJK is already split by [`SPLIT`]).
fn recent_words(c: &Connection, prefix: &str) -> Result<Vec<String>> {
    let mut st =
        c.prepare_cached("SELECT c0 FROM message_fts_content ORDER BY id DESC LIMIT ?1")?;
    let mut rows = st.query([RECENT_MESSAGES])?;
    // word -> (messages holding it, first seen, last message counted)
    let mut seen: HashMap<String, (usize, usize, usize)> = HashMap::new();
    let first = prefix.chars().next();
    let mut bytes = 0;
    let mut row = 0;
    while let Some(r) = rows.next()? {
        row += 1;
        let text = r.get_ref(0)?.as_str().unwrap_or_default();
        bytes += text.len();
        for w in text.split(|c: char| !word_char(c)) {
            // Cheap test before folding: most words do not start with the prefix's letter.
            let Some(c0) = w.chars().next() else {
                continue;
            };
            if w.len() > 64 || fold_char(c0).next() != first {
                continue;
            }
            let f = fold(w);
            if !f.starts_with(prefix) {
                continue;
            }
            let n = seen.len();
            let e = seen.entry(f).or_insert((0, n, 0));
            if e.2 != row {
                e.0 += 1;
                e.2 = row;
            }
        }
        if bytes >= RECENT_BYTES {
            break;
        }
    }
    let mut words: Vec<(String, (usize, usize, usize))> = seen.into_iter().collect();
    words.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.1.1.cmp(&b.1.1)));
    Ok(words
        .into_iter()
        .take(COMPLETIONS)
        .map(|(w, _)| w)
        .collect())
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
    search_within(c, query, limit, PREFIX_BUDGET_PAGES)
}

/// [`search`] with the number of index pages a prefix may cover and still be searched in full.
pub(crate) fn search_within(
    c: &Connection,
    query: &str,
    limit: usize,
    budget_pages: u64,
) -> Result<SearchResults> {
    let Some(exact) = fts_query(query, false) else {
        return Ok(SearchResults::default());
    };
    // The last word is also a prefix (search as you type), but FTS5 answers a prefix by
    // merging the posting lists of every word that starts with it before it can return the
    // newest, at a cost that grows with the history: only when the words as typed match fewer
    // than the candidates, and in full only when the index says the merge is small.
    let mut candidates = candidates(c, &exact)?;
    let mut prefix = PrefixSearch::Complete;
    let words = query_words(query);
    let last = words.last().and_then(|w| last_token(w));
    if candidates.len() <= SEARCH_CANDIDATES
        && let Some((start, token)) = last
    {
        // An estimate that cannot be made (an FTS5 that keeps its index differently) counts
        // as too costly: a bounded search is still a search.
        let pages = prefix_pages(c, &token).unwrap_or(u64::MAX);
        if pages <= budget_pages {
            if let Some(q) = fts_query(query, true) {
                candidates = self::candidates(c, &q)?;
            }
        } else if token.chars().count() < 2 {
            prefix = PrefixSearch::NotExpanded { prefix: token };
        } else {
            // The words it completes to in recent messages, OR-ed: FTS5 merges an OR lazily,
            // newest first, so the query stops at the candidates. The word as typed stays in.
            let found = recent_words(c, &token)?;
            let last_word = &words[words.len() - 1];
            let mut alternatives = vec![quoted(last_word)];
            for w in &found {
                if *w != token {
                    alternatives.push(quoted(&format!("{}{w}", &last_word[..start])));
                }
            }
            if alternatives.len() > 1 {
                let mut q: Vec<String> = words[..words.len() - 1]
                    .iter()
                    .map(|w| quoted(w))
                    .collect();
                q.push(format!("({})", alternatives.join(" OR ")));
                candidates = self::candidates(c, &q.join(" AND "))?;
            }
            prefix = PrefixSearch::RecentWords {
                prefix: token,
                words: found,
            };
        }
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
        prefix,
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
