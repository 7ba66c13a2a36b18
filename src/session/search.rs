//! Full-text search: what the index holds, how typed text becomes a query, and how a bounded
//! set of matches is ranked.
//!
//! The index is FTS5's `unicode61` tokenizer, which finds words by Unicode category. Chinese,
//! Japanese and Korean have no spaces between words, so a whole CJK run is one token to it and
//! `修正` inside `请修正状态` found nothing; emoji are symbols, which it skips. The text stored in
//! the index therefore gets an invisible separator (`SPLIT`) around every CJK character and
//! every non-alphanumeric symbol, and the tokenizer also keeps `So` (emoji, ©, °) as tokens:
//! each CJK character and each emoji is a token of its own, and a CJK word of any length is a
//! phrase of adjacent characters. Latin text is untouched (the separator only lands next to
//! characters that were separators already), so its tokens and ranking stay as they were.

use std::borrow::Cow;
use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, params};

use super::error::Result;
use super::model::{Role, SNIPPET_CLOSE, SNIPPET_OPEN, SearchHit};

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

/// How far the last word is completed before a cheaper completion is used.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PrefixLimits {
    /// Leaf pages of the index (4 KB each by default) FTS5's own prefix query may cost (see
    /// `PrefixRange::cost`): FTS5 answers a prefix by merging the posting lists of every word
    /// that starts with it, all of them, before it returns the first row.
    pub pages: u64,
    /// Words a costlier prefix may complete to and still be searched as all of them, OR-ed
    /// (which FTS5 merges lazily, newest first): each is one more posting list to open.
    pub words: usize,
}

/// Measured on a 10M-message workspace, a merged page costs ~60 µs warm and ~150 µs cold.
pub const PREFIX_LIMITS: PrefixLimits = PrefixLimits {
    pages: 500,
    words: 16,
};

/// Leaf pages read, at most, for the words of a range (pages where its words start).
const WORD_PAGES: usize = 64;
/// The newest messages read, at most, for the words a costly prefix completes to…
const RECENT_MESSAGES: i64 = 2000;
/// …and at most this much of their text.
const RECENT_BYTES: usize = 256 * 1024;
/// Completions from recent messages searched for a costly prefix.
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

/// Registers `neocode_index_text(text)` (`index_text`) on a connection, for the migration
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
    let mut s = words
        .iter()
        .map(|w| quoted(w))
        .collect::<Vec<_>>()
        .join(" ");
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

/// The keys of the main index that start with an ASCII prefix: `[lo, hi)`, after the '0' byte
/// FTS5 puts before each word of the main index.
fn key_range(ascii: &str) -> (Vec<u8>, Vec<u8>) {
    let mut lo = vec![b'0'];
    lo.extend(ascii.bytes());
    // The first key past every word with the prefix (ASCII: the last byte never overflows).
    let mut hi = lo.clone();
    if let Some(b) = hi.last_mut() {
        *b += 1;
    }
    (lo, hi)
}

/// Where the words of a key range lie in the index, from FTS5's own b-tree of page separators
/// (`message_fts_idx`: per segment, a prefix of the first word that starts on a leaf page,
/// after the index's byte, and the page number shifted left by one) and its leaf pages
/// (`message_fts_data`, rowid segid << 37 | page), so it costs a few lookups per segment.
#[derive(Debug, Default, PartialEq)]
struct PrefixRange {
    /// Leaf pages of posting lists of words in the range: what FTS5 merges to answer it.
    merged: u64,
    /// Leaf pages of a word just before the range, which FTS5 reads past to reach it.
    walked: u64,
    /// The leaf pages (rowids) on which the words of the range start.
    starts: Vec<i64>,
}

impl PrefixRange {
    /// About what FTS5's prefix query costs, in merged pages: a page read past costs about a
    /// quarter of a page merged (measured cold on a 10M-message workspace).
    fn cost(&self) -> u64 {
        self.merged + self.walked / 4
    }
}

/// None when a page does not read as FTS5's leaf format (a format this code does not know).
fn prefix_range(c: &Connection, lo: &[u8], hi: &[u8]) -> rusqlite::Result<Option<PrefixRange>> {
    // Per segment (found by skipping from one segment id to the next): the page of the last
    // separator at or before the range, the first page inside it, and the first page past it
    // (or one past the segment's last page).
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
    let mut first_leaf = c.prepare_cached(
        "SELECT id, block FROM message_fts_data WHERE id >= ?1 AND id < ?2 ORDER BY id LIMIT 1",
    )?;
    let mut range = PrefixRange::default();
    for (segid, before, past, inside) in segments {
        let base = segid << 37;
        // Pages from `before` up to the first separator inside the range hold no word's
        // start but on the first: past it, they are the posting list of the last word that
        // starts there. The page itself tells whether that word is in the range (merged) or
        // before it (only read past). A merge in progress may have dropped the segment's
        // first pages: the reading starts at the first page left.
        let leaf = first_leaf
            .query_row([base + before, base + inside.max(before + 1)], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?))
            })
            .optional()?;
        if let Some((id, page)) = leaf {
            let lead = (inside - (id - base)).max(0) as u64;
            match page_terms(&page) {
                Some(terms) if terms.last().is_some_and(|t| t.as_slice() < lo) => {
                    range.walked += lead;
                }
                Some(terms) => {
                    range.merged += lead;
                    if terms
                        .iter()
                        .any(|t| t.as_slice() >= lo && t.as_slice() < hi)
                    {
                        range.starts.push(id);
                    }
                }
                None => return Ok(None),
            }
        }
        range.merged += (past - inside).max(0) as u64;
    }
    Ok(Some(range))
}

/// Every word in `[lo, hi)`, from the pages where words of the range start (the separators
/// inside the range, and the pages [`prefix_range`] found a word of it on), when they are at
/// most `max_pages` pages and hold at most `max_words` words. Without the index's byte.
fn range_words(
    c: &Connection,
    range: &PrefixRange,
    lo: &[u8],
    hi: &[u8],
    max_pages: usize,
    max_words: usize,
) -> rusqlite::Result<Option<Vec<String>>> {
    let mut pages = range.starts.clone();
    let mut st = c.prepare_cached(
        "SELECT (segid << 37) + (pgno >> 1) FROM message_fts_idx
         WHERE term > ?1 AND term < ?2 LIMIT ?3",
    )?;
    for id in st.query_map(params![lo, hi, max_pages as i64 + 1], |r| r.get(0))? {
        pages.push(id?);
    }
    if pages.len() > max_pages {
        return Ok(None);
    }
    // A merge in progress drops the pages of its input segments it has copied but leaves
    // their separators: a separator's page, or else the first one left after it (which the
    // merge rewrote to start with the word it stopped at), is read.
    let mut leaf = c.prepare_cached(
        "SELECT id, block FROM message_fts_data WHERE id >= ?1 AND id < ?2 ORDER BY id LIMIT 1",
    )?;
    let mut read = std::collections::HashSet::new();
    let mut words = std::collections::BTreeSet::new();
    for id in pages {
        let segment_end = ((id >> 37) << 37) + (1 << 31);
        let Some((id, page)) = leaf
            .query_row([id, segment_end], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?))
            })
            .optional()?
        else {
            continue;
        };
        if !read.insert(id) {
            continue;
        }
        let Some(terms) = page_terms(&page) else {
            return Ok(None);
        };
        for t in terms {
            if t.as_slice() >= lo && t.as_slice() < hi {
                let Ok(w) = String::from_utf8(t[1..].to_vec()) else {
                    return Ok(None);
                };
                words.insert(w);
                if words.len() > max_words {
                    return Ok(None);
                }
            }
        }
    }
    Ok(Some(words.into_iter().collect()))
}

/// The words that start on an FTS5 leaf page, in order (each after its index's byte): a page
/// is a 4-byte header (offset of the first rowid, size of the data part), the data, then the
/// offsets of the words that start on it (varints, each from the previous). The first word on
/// a page is whole (length, bytes), each later one shares a prefix with the previous (shared
/// length, new length, new bytes). None when the page does not parse as that.
fn page_terms(page: &[u8]) -> Option<Vec<Vec<u8>>> {
    let size = usize::from(u16::from_be_bytes([*page.get(2)?, *page.get(3)?]));
    let data = page.get(..size)?;
    let mut index = page.get(size..)?;
    let mut at = 0usize;
    let mut terms: Vec<Vec<u8>> = Vec::new();
    while !index.is_empty() {
        let (delta, n) = varint(index)?;
        index = &index[n..];
        at = at.checked_add(usize::try_from(delta).ok()?)?;
        let mut p = data.get(at..)?;
        let keep = match terms.last() {
            None => 0,
            Some(_) => {
                let (k, n) = varint(p)?;
                p = &p[n..];
                usize::try_from(k).ok()?
            }
        };
        let (new, n) = varint(p)?;
        let bytes = p.get(n..n.checked_add(usize::try_from(new).ok()?)?)?;
        let mut term = terms
            .last()
            .map_or(&[][..], Vec::as_slice)
            .get(..keep)?
            .to_vec();
        term.extend_from_slice(bytes);
        terms.push(term);
    }
    Some(terms)
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

/// The query that completes the last word (`None`: the words as typed, already searched),
/// and how it was completed. FTS5 answers a prefix by merging the posting lists of every word
/// that starts with it before it can return the newest, at a cost that grows with the
/// history; so its prefix query runs only when the index says it is cheap. Otherwise, when
/// the index lists few words with the prefix, they are searched OR-ed, which FTS5 merges
/// lazily and stops at the candidates; otherwise, within the budget, the prefix query;
/// otherwise the words that start with it in recent messages, OR-ed. One letter is then not
/// completed at all.
fn complete(
    c: &Connection,
    words: &[String],
    start: usize,
    token: String,
    limits: PrefixLimits,
) -> Result<(Option<String>, PrefixSearch)> {
    let last = &words[words.len() - 1];
    // Only the ASCII start of the word is looked up (the index holds folded text): a shorter
    // prefix's range holds the longer one's, so the cost is not underestimated.
    let ascii: String = token.chars().take_while(char::is_ascii).collect();
    let (lo, hi) = key_range(&ascii);
    // A range that cannot be read (an FTS5 that keeps its index differently) is costly.
    let range = prefix_range(c, &lo, &hi).ok().flatten();
    let cost = range.as_ref().map_or(u64::MAX, PrefixRange::cost);
    let prefix_query = || {
        let all = words.iter().map(|w| quoted(w)).collect::<Vec<_>>();
        Ok((Some(all.join(" ") + "*"), PrefixSearch::Complete))
    };
    // No dearer than listing its words would be: FTS5's own prefix query.
    if cost <= limits.pages.min(WORD_PAGES as u64) {
        return prefix_query();
    }
    let mut alternatives = vec![quoted(last)];
    let either = |alternatives: &[String]| {
        let mut q: Vec<String> = words[..words.len() - 1].iter().map(|w| quoted(w)).collect();
        q.push(format!("({})", alternatives.join(" OR ")));
        q.join(" AND ")
    };
    // Few words, listed from the pages where they start: all of them, OR-ed.
    if let Some(range) = &range
        && ascii.len() == token.len()
        && let Some(all) = range_words(c, range, &lo, &hi, WORD_PAGES, limits.words)
            .ok()
            .flatten()
    {
        alternatives.extend(
            all.iter()
                .filter(|w| **w != token)
                .map(|w| quoted(&format!("{}{w}", &last[..start]))),
        );
        let query = (alternatives.len() > 1).then(|| either(&alternatives));
        return Ok((query, PrefixSearch::Complete));
    }
    if cost <= limits.pages {
        return prefix_query();
    }
    if token.chars().count() < 2 {
        return Ok((None, PrefixSearch::NotExpanded { prefix: token }));
    }
    let found = recent_words(c, &token)?;
    alternatives.extend(
        found
            .iter()
            .filter(|w| **w != token)
            .map(|w| quoted(&format!("{}{w}", &last[..start]))),
    );
    let query = (alternatives.len() > 1).then(|| either(&alternatives));
    Ok((
        query,
        PrefixSearch::RecentWords {
            prefix: token,
            words: found,
        },
    ))
}

/// One candidate: its index row, how many matches it holds, its length and its snippet.
struct Candidate {
    rowid: i64,
    hits: f64,
    len: f64,
    snippet: String,
}

/// Messages longer than this (in characters) are not highlighted by FTS5: its snippet scores
/// a window at every match, and a 140 KB tool output holding a word 10,000 times took a
/// third of a second per message. Their matches are counted and their snippet is cut in
/// Rust, from this much of their text around the query's first place ([`long_candidate`]).
const HIGHLIGHT_MAX: i64 = 16 * 1024;

/// The newest `SEARCH_CANDIDATES + 1` matches of an FTS5 query, newest first. The snippet is
/// made here, while FTS5 holds the match: asking for it later by rowid makes FTS5 run the
/// whole query again for each hit. `needles` are the query's words, lower case, for the
/// messages too long to highlight.
fn candidates(c: &Connection, fts: &str, needles: &[String]) -> Result<Vec<Candidate>> {
    // A long message is read from a little before the first place of the query's longest
    // word (likely its rarest; SQLite's `lower` folds ASCII only, so a word it cannot find
    // reads the start).
    let anchor = needles
        .iter()
        .max_by_key(|n| n.len())
        .map_or("", String::as_str);
    // `highlight` marks each match with U+E000; the marks are counted, not returned. The
    // CASEs keep FTS5's highlight and snippet off the long messages (they are evaluated
    // only when chosen).
    let mut st = c.prepare_cached(
        "SELECT rowid, len, length(h) - length(replace(h, char(57344), '')), snip, head
         FROM (SELECT rowid, length(body) AS len,
                      CASE WHEN length(body) <= ?3
                           THEN highlight(message_fts, 0, char(57344), '') END AS h,
                      CASE WHEN length(body) <= ?3
                           THEN snippet(message_fts, 0, char(57344), char(57345), '…', 12)
                      END AS snip,
                      CASE WHEN length(body) > ?3
                           THEN substr(body, max(1, instr(lower(body), ?4) - 300), ?3)
                      END AS head
               FROM message_fts WHERE message_fts MATCH ?1
               ORDER BY rowid DESC LIMIT ?2)",
    )?;
    let rows = st.query_map(
        params![fts, SEARCH_CANDIDATES as i64 + 1, HIGHLIGHT_MAX, anchor],
        |r| {
            let rowid = r.get(0)?;
            let len = r.get::<_, i64>(1)?.max(1) as f64;
            Ok(match r.get::<_, Option<String>>(4)? {
                Some(head) => long_candidate(rowid, len, &head, needles),
                None => Candidate {
                    rowid,
                    hits: r.get::<_, Option<i64>>(2)?.unwrap_or(1).max(1) as f64,
                    len,
                    snippet: r.get::<_, Option<String>>(3)?.unwrap_or_default(),
                },
            })
        },
    )?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

/// A long message's candidate from a window of its text: matches of the query's words
/// counted there (case-insensitive; at least one, FTS5 found it), and a snippet of about
/// twelve words around the first, marked like FTS5's (or the window's start when no word is
/// in it).
fn long_candidate(rowid: i64, len: f64, head: &str, needles: &[String]) -> Candidate {
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

/// Searches the index. Ranking every match (FTS5's `ORDER BY rank`) costs time in proportion
/// to the number of matches, and bm25 also scans each term's whole posting list to weigh it:
/// hundreds of milliseconds for a common word in millions of messages. So the newest
/// [`SEARCH_CANDIDATES`] matches are the candidates (FTS5 reads its posting lists newest
/// first and stops there), and they are ranked by BM25's term-frequency part — matches in
/// the message against its length relative to the candidates' average — newer first on ties.
/// There is no IDF weight: every candidate holds every word of the query. Snippets are made
/// for the shown hits only.
pub(crate) fn search(c: &Connection, query: &str, limit: usize) -> Result<SearchResults> {
    search_within(c, query, limit, PREFIX_LIMITS)
}

/// [`search`] with other limits on completing the last word.
pub(crate) fn search_within(
    c: &Connection,
    query: &str,
    limit: usize,
    limits: PrefixLimits,
) -> Result<SearchResults> {
    let Some(exact) = fts_query(query, false) else {
        return Ok(SearchResults::default());
    };
    let words = query_words(query);
    let needles: Vec<String> = words
        .iter()
        .map(|w| {
            w.chars()
                .filter(|&c| c != SPLIT)
                .collect::<String>()
                .to_lowercase()
        })
        .collect();
    let mut candidates = candidates(c, &exact, &needles)?;
    let mut prefix = PrefixSearch::Complete;
    // The last word is also a prefix (search as you type), only when the words as typed
    // match fewer than the candidates.
    if candidates.len() <= SEARCH_CANDIDATES
        && let Some(last) = words.last()
        && let Some((start, token)) = last_token(last)
    {
        let (query, how) = complete(c, &words, start, token, limits)?;
        if let Some(q) = query {
            candidates = self::candidates(c, &q, &needles)?;
        }
        prefix = how;
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
    fn the_last_token_is_what_a_prefix_completes() {
        assert_eq!(last_token("Refac"), Some((0, "refac".into())));
        assert_eq!(last_token("module_par"), Some((7, "par".into())));
        assert_eq!(last_token("foo."), Some((0, "foo".into())));
        assert_eq!(last_token("ÉTÉ"), Some((0, "ete".into())));
        assert_eq!(last_token("用\u{1f}Rust"), Some((4, "rust".into())));
        // A CJK character or an emoji is a word of its own: nothing to complete.
        assert_eq!(last_token("修\u{1f}正"), None);
        assert_eq!(last_token("done\u{1f}✅"), None);
        assert_eq!(last_token("..."), None);
    }

    #[test]
    fn leaf_pages_list_their_words() {
        // Header (no rowid, data size 19), "0please" whole, its posting list (3 bytes), then
        // "0plex" sharing 4 bytes; the index: offsets 4, then +11.
        let mut page = vec![0, 0, 0, 19];
        page.extend([7]);
        page.extend(b"0please");
        page.extend([1, 2, 3]);
        page.extend([4, 1]);
        page.extend(b"x");
        page.extend([2]);
        assert_eq!(page.len(), 19);
        page.extend([4, 11]);
        assert_eq!(
            page_terms(&page),
            Some(vec![b"0please".to_vec(), b"0plex".to_vec()])
        );
        page[20] = 100;
        assert_eq!(page_terms(&page), None, "a word past the data");
        assert_eq!(varint(&[0x81, 0x00]), Some((128, 2)));
        assert_eq!(key_range("ple"), (b"0ple".to_vec(), b"0plf".to_vec()));
    }

    #[test]
    fn snippets_lose_the_separators() {
        assert_eq!(
            one_line("请\u{1f}\u{e000}修\u{1f}正\u{e001}\n状"),
            "请\u{e000}修正\u{e001} 状"
        );
    }
}
