//! `neocode search <QUERY>`: matching messages across the workspace's sessions.

use serde::Serialize;

use super::fmt::{self, Align};
use super::out::Out;
use super::{CmdResult, Failure};
use crate::runtime::{Location, Sessions};
use crate::sanitize;
use crate::session::search::PrefixSearch;
use crate::session::{SEARCH_CANDIDATES, SearchResults};

#[derive(Serialize)]
struct JsonHit<'a> {
    session_id: &'a str,
    session_title: &'a str,
    seq: i64,
    role: &'static str,
    snippet: String,
}

/// `neocode search`.
pub fn run(loc: &Location, query: &str, json: bool, limit: usize) -> CmdResult {
    if query.trim().is_empty() {
        return Err(Failure::usage("the search query is empty"));
    }
    let found = match Sessions::open_existing(loc)? {
        Some(rt) => rt.search_counted(query, limit)?,
        None => SearchResults::default(),
    };
    let hits = &found.hits;
    let mut out = Out::stdout();
    if json {
        out.json_array(hits.iter().map(|h| JsonHit {
            session_id: &h.session_id,
            session_title: &h.session_title,
            seq: h.seq,
            role: h.role.as_str(),
            snippet: fmt::mark_snippet(&h.snippet, "", ""),
        }))?;
        return out.finish();
    }
    if hits.is_empty() {
        out.line(&format!(
            "no messages match '{}' in {}{}",
            sanitize::line(query),
            sanitize::line(&loc.root().to_string_lossy()),
            completion(&found.prefix).map_or(String::new(), |c| format!("; {c}"))
        ))?;
        return out.finish();
    }
    let id_len = fmt::short_id_len(hits.iter().map(|h| h.session_id.as_str()));
    let mut rows = vec![vec![
        "SESSION".to_string(),
        "SEQ".to_string(),
        "ROLE".to_string(),
        "MATCH".to_string(),
    ]];
    for h in hits {
        rows.push(vec![
            sanitize::line(fmt::short_id(&h.session_id, id_len)).into_owned(),
            h.seq.to_string(),
            h.role.as_str().to_string(),
            // Sanitise first: the markers are private-use characters that survive it, and
            // the highlighting escapes are added only afterwards.
            sanitize::line(&h.snippet).into_owned(),
        ]);
    }
    let laid = fmt::layout(
        &rows,
        &[Align::Left, Align::Right, Align::Left, Align::Left],
    );
    let (open, close) = if out.color {
        ("\x1b[1;31m", "\x1b[0m")
    } else {
        ("", "")
    };
    for (i, cells) in laid.iter().enumerate() {
        let mut snippet = cells[3].clone();
        if let Some(w) = out.width {
            let plain = fmt::mark_snippet(&snippet, "", "");
            let room = w.saturating_sub(fmt::prefix_width(cells)).max(1);
            if fmt::width(&plain) > room {
                // Cutting may drop a closing marker; an unbalanced highlight is reset below.
                snippet = cut_marked(&snippet, room);
            }
        }
        let snippet = fmt::mark_snippet(&snippet, open, close);
        let line = if i == 0 {
            out.paint("1", &cells.join("  "))
        } else {
            format!(
                "{}  {}  {}  {}{}",
                out.paint("33", &cells[0]),
                cells[1],
                out.paint("2", &cells[2]),
                snippet,
                if out.color { "\x1b[0m" } else { "" }
            )
        };
        out.line(line.trim_end())?;
    }
    let summary = out.paint("2", &summary(&found));
    out.line(&summary)?;
    out.finish()
}

/// The line under the hits: how many matched, how they are ordered, and how the last word was
/// completed when it was not completed in full.
fn summary(found: &SearchResults) -> String {
    let shown = found.hits.len();
    let counted = if found.more {
        format!(
            "{shown} shown of {SEARCH_CANDIDATES}+ matching messages; the newest {SEARCH_CANDIDATES} are ranked by how often the words occur"
        )
    } else {
        let n = found.matched;
        let s = if n == 1 { "" } else { "s" };
        format!("{shown} shown of {n} matching message{s}, ranked by how often the words occur")
    };
    match completion(&found.prefix) {
        Some(c) => format!("{counted}; {c}"),
        None => counted,
    }
}

/// How the last word was completed, when it was not in full.
fn completion(prefix: &PrefixSearch) -> Option<String> {
    Some(match prefix {
        PrefixSearch::Complete => return None,
        PrefixSearch::RecentWords { prefix, words } if words.iter().any(|w| w != prefix) => {
            format!(
                "'{}' completed only to words in recent messages: {}",
                sanitize::line(prefix),
                sanitize::line(&words.join(", "))
            )
        }
        PrefixSearch::RecentWords { prefix, .. } => format!(
            "'{}' searched as typed: too many words start with it and no other in recent messages",
            sanitize::line(prefix)
        ),
        PrefixSearch::NotExpanded { prefix } => format!(
            "'{}' searched as a whole word only: one letter starts too many words",
            sanitize::line(prefix)
        ),
    })
}

/// Cuts a snippet that still holds its zero-width markers to `max` columns.
fn cut_marked(s: &str, max: usize) -> String {
    let mut out = String::new();
    let mut w = 0;
    for c in s.chars() {
        let cw = if c == crate::session::SNIPPET_OPEN || c == crate::session::SNIPPET_CLOSE {
            0
        } else {
            unicode_width::UnicodeWidthChar::width(c).unwrap_or(0)
        };
        if w + cw > max.saturating_sub(1) {
            out.push('…');
            return out;
        }
        out.push(c);
        w += cw;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_says_how_many_matched_bounded() {
        let hit = crate::session::SearchHit {
            session_id: "s".into(),
            session_title: "t".into(),
            seq: 1,
            role: crate::session::Role::User,
            snippet: "x".into(),
        };
        let many = SearchResults {
            hits: vec![hit.clone(); 20],
            matched: SEARCH_CANDIDATES,
            more: true,
            prefix: PrefixSearch::Complete,
        };
        assert_eq!(
            summary(&many),
            "20 shown of 1000+ matching messages; the newest 1000 are ranked by how often the words occur"
        );
        let one = SearchResults {
            hits: vec![hit.clone()],
            matched: 1,
            more: false,
            prefix: PrefixSearch::Complete,
        };
        assert_eq!(
            summary(&one),
            "1 shown of 1 matching message, ranked by how often the words occur"
        );
    }

    #[test]
    fn the_summary_says_when_the_last_word_was_not_completed_in_full() {
        let found = |prefix| SearchResults {
            hits: Vec::new(),
            matched: 3,
            more: false,
            prefix,
        };
        assert_eq!(
            summary(&found(PrefixSearch::RecentWords {
                prefix: "ple".into(),
                words: vec!["please".into(), "plenty".into()],
            })),
            "0 shown of 3 matching messages, ranked by how often the words occur; 'ple' completed only to words in recent messages: please, plenty"
        );
        assert_eq!(
            summary(&found(PrefixSearch::RecentWords {
                prefix: "qz".into(),
                words: vec!["qz".into()],
            })),
            "0 shown of 3 matching messages, ranked by how often the words occur; 'qz' searched as typed: too many words start with it and no other in recent messages"
        );
        assert_eq!(
            summary(&found(PrefixSearch::NotExpanded { prefix: "p".into() })),
            "0 shown of 3 matching messages, ranked by how often the words occur; 'p' searched as a whole word only: one letter starts too many words"
        );
    }
}
