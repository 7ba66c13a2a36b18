//! `neocode search <QUERY>`: matching messages across the workspace's sessions.

use serde::Serialize;

use super::common::{CmdResult, Failure};
use super::fmt::{self, Align};
use super::out::Out;
use crate::format::{search_completion, search_summary};
use crate::runtime::{Location, Sessions};
use crate::sanitize;
use crate::session::SearchResults;

#[derive(Serialize)]
struct JsonHit<'a> {
    session_id: &'a str,
    session_title: &'a str,
    seq: i64,
    role: &'static str,
    snippet: String,
}

/// `neocode search`.
pub(super) fn run(loc: &Location, query: &str, json: bool, limit: usize) -> CmdResult {
    if query.trim().is_empty() {
        return Err(Failure::usage("the search query is empty"));
    }
    let found = match Sessions::open_existing(loc)? {
        Some(sessions) => sessions.search_counted(query, limit)?,
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
            search_completion(&found.prefix).map_or(String::new(), |c| format!("; {c}"))
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
    let summary = out.paint("2", &search_summary(&found));
    out.line(&summary)?;
    out.finish()
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
