//! Full-text search over message text.

use rusqlite::params;

use super::Store;
use crate::session::error::Result;
use crate::session::model::*;

impl Store {
    /// Full-text search over message text, best matches first.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>> {
        let Some(fts) = fts_query(query) else {
            return Ok(Vec::new());
        };
        self.with_conn(|c| {
            let mut st = c.prepare_cached(
                "SELECT m.session_id, s.title, s.first_prompt, m.seq, m.role,
                        snippet(message_fts, 0, char(57344), char(57345), '…', 12)
                 FROM message_fts
                 JOIN messages m ON m.fts_id = message_fts.rowid
                 JOIN sessions s ON s.id = m.session_id
                 WHERE message_fts MATCH ?1
                 ORDER BY rank
                 LIMIT ?2",
            )?;
            let rows = st.query_map(params![fts, limit as i64], |r| {
                let title: String = r.get(1)?;
                let prompt: String = r.get(2)?;
                let role: String = r.get(4)?;
                Ok(SearchHit {
                    session_id: r.get(0)?,
                    session_title: if title.is_empty() { prompt } else { title },
                    seq: r.get(3)?,
                    role: Role::parse(&role).unwrap_or(Role::User),
                    snippet: one_line(&r.get::<_, String>(5)?),
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }
}

/// Turns free text into a safe FTS5 query: every word quoted, the last one a prefix.
/// Control characters (NUL ends the query string inside FTS5's parser) become spaces.
fn fts_query(q: &str) -> Option<String> {
    let q: String = q
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let words: Vec<String> = q
        .split_whitespace()
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect();
    if words.is_empty() {
        return None;
    }
    let mut s = words.join(" ");
    s.push('*');
    Some(s)
}

/// A snippet is a one-line excerpt: runs of whitespace (newlines, tabs) become one space.
fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for word in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}
