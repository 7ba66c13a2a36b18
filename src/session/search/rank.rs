//! The candidates of a query: the newest matches FTS5 returns with their snippets, and their
//! BM25 ranking.

use rusqlite::{Connection, params};

use super::limits::{INDEX_MAX_BYTES, SEARCH_CANDIDATES};
use super::snippet::{Candidate, long_candidate};
use crate::session::error::Result;

/// Messages longer than this (in characters) are not highlighted by FTS5: its snippet scores
/// a window at every match, and a 140 KB tool output holding a word 10,000 times took a
/// third of a second per message. Their matches are counted and their snippet is cut in
/// Rust, from this much of their text around the query's first place ([`long_candidate`]).
const HIGHLIGHT_MAX: i64 = 16 * 1024;

/// The newest `SEARCH_CANDIDATES + 1` matches of an FTS5 query, newest first. The snippet is
/// made here, while FTS5 holds the match: asking for it later by rowid makes FTS5 run the
/// whole query again for each hit. `needles` are the query's words, lower case, for the
/// messages too long to highlight.
pub(super) fn candidates(c: &Connection, fts: &str, needles: &[String]) -> Result<Vec<Candidate>> {
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
                           THEN substr(body, max(1, instr(lower(substr(body, 1, ?5)), ?4) - 300), ?3)
                      END AS head
               FROM message_fts WHERE message_fts MATCH ?1
               ORDER BY rowid DESC LIMIT ?2)",
    )?;
    let rows = st.query_map(
        params![
            fts,
            SEARCH_CANDIDATES as i64 + 1,
            HIGHLIGHT_MAX,
            anchor,
            // Bodies indexed before the index was capped can be larger: a search reads no
            // more of one than a capped body holds.
            INDEX_MAX_BYTES as i64
        ],
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

/// Orders candidates (given newest first) best first: BM25's saturating term frequency with
/// length normalisation (k1 = 1.2, b = 0.75); the sort is stable, so ties stay newest first.
pub(super) fn rank(candidates: &mut [Candidate]) {
    if candidates.is_empty() {
        return;
    }
    const K1: f64 = 1.2;
    const B: f64 = 0.75;
    let avg = candidates.iter().map(|c| c.len).sum::<f64>() / candidates.len() as f64;
    let score = |c: &Candidate| c.hits * (K1 + 1.0) / (c.hits + K1 * (1.0 - B + B * c.len / avg));
    candidates.sort_by(|a, b| score(b).total_cmp(&score(a)));
}
