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

use rusqlite::Connection;

use super::error::Result;
use super::model::{Role, SearchHit};

mod limits;
mod prefix;
mod rank;
mod snippet;
mod text;

pub use limits::{INDEX_MAX_BYTES, PREFIX_LIMITS, PrefixLimits, PrefixSearch, SEARCH_CANDIDATES};
use prefix::complete;
use rank::{candidates, rank};
use snippet::one_line;
pub use text::register_functions;
pub(crate) use text::{SPLIT, index_text};
use text::{fts_query, last_token, query_words};

/// Characters of a snippet kept (a "word" can be megabytes long).
const SNIPPET_MAX_CHARS: usize = 400;

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
        let mut snippet = one_line(&cand.snippet);
        if let Some((cut, _)) = snippet.char_indices().nth(SNIPPET_MAX_CHARS) {
            snippet.truncate(cut);
            snippet.push('…');
        }
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

/// The seqs of one session's messages that match `query` (its last word also as a prefix,
/// as the search dialog types it), in seq order, at most `limit` of them; and whether more
/// matched. Transcript search inside an open session: FTS5 finds the matching index rows,
/// the `messages_by_fts` index maps them to this session's messages (a fork's copies share
/// their source's rows, so the session is what filters).
pub(crate) fn in_session(
    c: &Connection,
    session_id: &str,
    query: &str,
    limit: usize,
) -> Result<(Vec<i64>, bool)> {
    // A one-letter prefix would merge the posting lists of a good part of the index: the
    // last word is completed from its second letter on.
    let words = query_words(query);
    let prefix = words
        .last()
        .and_then(|w| last_token(w))
        .is_some_and(|(_, t)| t.chars().count() >= 2);
    let Some(fts) = fts_query(query, prefix) else {
        return Ok((Vec::new(), false));
    };
    let mut st = c.prepare_cached(
        "SELECT m.seq FROM messages m
         WHERE m.session_id = ?1
           AND abs(m.fts_id) IN (SELECT rowid FROM message_fts WHERE message_fts MATCH ?2)
         ORDER BY m.seq LIMIT ?3",
    )?;
    let mut seqs: Vec<i64> = st
        .query_map(rusqlite::params![session_id, fts, limit as i64 + 1], |r| {
            r.get(0)
        })?
        .collect::<rusqlite::Result<_>>()?;
    let more = seqs.len() > limit;
    seqs.truncate(limit);
    Ok((seqs, more))
}

#[cfg(test)]
mod tests {
    use super::prefix::{key_range, page_terms, varint};
    use super::*;
    use std::borrow::Cow;

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
