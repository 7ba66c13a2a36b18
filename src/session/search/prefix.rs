//! Completing the last word (search as you type): how much of the index a prefix covers, read
//! from FTS5's own b-tree and leaf pages, and the cheaper completions used when that is too much.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, params};

use super::limits::{PrefixLimits, PrefixSearch};
use super::text::{fold, fold_char, quoted, word_char};
use crate::session::error::Result;

/// Leaf pages read, at most, for the words of a range (pages where its words start).
const WORD_PAGES: usize = 64;
/// The newest messages read, at most, for the words a costly prefix completes to…
const RECENT_MESSAGES: i64 = 2000;
/// …and at most this much of their text.
const RECENT_BYTES: usize = 256 * 1024;
/// Completions from recent messages searched for a costly prefix.
const COMPLETIONS: usize = 8;

/// The keys of the main index that start with an ASCII prefix: `[lo, hi)`, after the '0' byte
/// FTS5 puts before each word of the main index.
pub(super) fn key_range(ascii: &str) -> (Vec<u8>, Vec<u8>) {
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
pub(super) fn page_terms(page: &[u8]) -> Option<Vec<Vec<u8>>> {
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
pub(super) fn varint(b: &[u8]) -> Option<(u64, usize)> {
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
/// to. Tokenised like the index (letters and digits; CJK is already split by [`SPLIT`](super::text::SPLIT)).
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

/// The query that completes the last word (`None`: the words as typed, already searched),
/// and how it was completed. FTS5 answers a prefix by merging the posting lists of every word
/// that starts with it before it can return the newest, at a cost that grows with the
/// history; so its prefix query runs only when the index says it is cheap. Otherwise, when
/// the index lists few words with the prefix, they are searched OR-ed, which FTS5 merges
/// lazily and stops at the candidates; otherwise, within the budget, the prefix query;
/// otherwise the words that start with it in recent messages, OR-ed. One letter is then not
/// completed at all.
pub(super) fn complete(
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
