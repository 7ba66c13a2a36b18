//! The list filter's matching, run on the storage thread so typing never waits for it.
//!
//! Matching used to run on the input path over the loaded rows, and again over all of them for
//! every page that arrived while filtering: quadratic in the number of sessions. Here the
//! storage thread keeps the text to match (sanitised title and first prompt of every session,
//! in list order) between keystrokes, matches all of it once per query, narrows to the
//! previous matches when the query only grew, stops as soon as a newer query is queued, and
//! returns the best [`FILTER_ROWS`] matches with the count of all of them.

use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str, Utf32String};

use crate::runtime::Sessions;
use crate::sanitize;
use crate::session::{ListQuery, SessionSummary, StoreError};

/// The most matches a filter returns (best first); the count covers all of them.
pub const FILTER_ROWS: usize = 500;

/// A filter's answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FilterResult {
    /// The best matches, best first; equal scores in activity order.
    pub rows: Vec<SessionSummary>,
    /// Matched character indices of each row's sanitised title.
    pub hl: Vec<Vec<u32>>,
    /// Sessions matching, all of them.
    pub matched: usize,
}

/// One session's text to match.
struct Entry {
    id: Box<str>,
    title: Utf32String,
    prompt: Utf32String,
}

/// What the storage thread keeps between keystrokes.
pub struct FilterState {
    /// Every session's text, newest activity first, and the data version it was read at.
    corpus: Option<(i64, Vec<Entry>)>,
    /// The previous query and the corpus positions it matched.
    last: Option<(String, Vec<u32>)>,
    matcher: Matcher,
}

impl Default for FilterState {
    fn default() -> FilterState {
        FilterState {
            corpus: None,
            last: None,
            matcher: Matcher::new(Config::DEFAULT),
        }
    }
}

impl std::fmt::Debug for FilterState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FilterState")
            .field("sessions", &self.corpus.as_ref().map(|c| c.1.len()))
            .finish()
    }
}

/// Characters that make a longer query match more, not less (negation, anchors, escapes):
/// with any of them the previous matches are not a superset.
fn narrows(prev: &str, next: &str) -> bool {
    let special = |s: &str| s.contains(['!', '^', '$', '\'', '\\']);
    !prev.trim().is_empty() && next.starts_with(prev) && !special(prev) && !special(next)
}

impl FilterState {
    /// Forgets the text kept (a write through this connection, which `data_version` does not
    /// count).
    pub fn invalidate(&mut self) {
        self.corpus = None;
        self.last = None;
    }

    /// Matches `text` against every session. `stale` is polled while matching; when it
    /// answers true a newer query is waiting and `None` is returned.
    pub fn run(
        &mut self,
        rt: &Sessions,
        text: &str,
        stale: &dyn Fn() -> bool,
    ) -> crate::session::Result<Option<FilterResult>> {
        let version = rt.data_version()?;
        if self.corpus.as_ref().is_none_or(|(v, _)| *v != version) {
            self.last = None;
            let mut entries = Vec::new();
            rt.for_each_summary(&ListQuery::default(), |s| {
                entries.push(Entry {
                    title: Utf32String::from(sanitize::line(s.display_title()).as_ref()),
                    prompt: Utf32String::from(s.first_prompt.as_str()),
                    id: s.id.into_boxed_str(),
                });
                Ok(())
            })?;
            entries.shrink_to_fit();
            self.corpus = Some((version, entries));
        }
        let text = text.trim();
        let Some((_, entries)) = &self.corpus else {
            return Ok(Some(FilterResult::default()));
        };
        if text.is_empty() {
            // Only reading the text ahead of the first key.
            return Ok(Some(FilterResult::default()));
        }
        let pattern = Pattern::parse(text, CaseMatching::Ignore, Normalization::Smart);
        let previous = match &self.last {
            Some((prev, positions)) if narrows(prev, text) => Some(positions),
            _ => None,
        };
        let all = entries.len() as u32;
        let positions: Box<dyn Iterator<Item = u32>> = match previous {
            Some(p) => Box::new(p.iter().copied()),
            None => Box::new(0..all),
        };
        let mut scored: Vec<(u32, u32)> = Vec::new();
        for (n, pos) in positions.enumerate() {
            if n % 4096 == 0 && stale() {
                return Ok(None);
            }
            let e = &entries[pos as usize];
            let t = pattern.score(e.title.slice(..), &mut self.matcher);
            let p = pattern.score(e.prompt.slice(..), &mut self.matcher);
            if let Some(score) = t.max(p) {
                scored.push((score, pos));
            }
        }
        let matched = scored.len();
        let mut kept: Vec<u32> = scored.iter().map(|&(_, p)| p).collect();
        kept.sort_unstable();
        self.last = Some((text.to_string(), kept));
        // Stable: equal scores keep activity order.
        scored.sort_by_key(|&(s, _)| std::cmp::Reverse(s));
        let mut out = FilterResult {
            matched,
            ..FilterResult::default()
        };
        for &(_, pos) in scored.iter().take(FILTER_ROWS) {
            let e = &entries[pos as usize];
            let s = match rt.summary(&e.id) {
                Ok(s) => s,
                // Deleted since the text was read: a later poll reloads.
                Err(StoreError::NotFound { .. }) => continue,
                Err(e) => return Err(e),
            };
            let mut hl = Vec::new();
            let mut buf = Vec::new();
            let title = sanitize::line(s.display_title());
            if pattern
                .indices(Utf32Str::new(&title, &mut buf), &mut self.matcher, &mut hl)
                .is_none()
            {
                hl.clear();
            }
            hl.sort_unstable();
            hl.dedup();
            out.rows.push(s);
            out.hl.push(hl);
        }
        Ok(Some(out))
    }
}

#[cfg(test)]
mod tests {
    use super::narrows;

    #[test]
    fn only_a_grown_plain_query_narrows() {
        assert!(narrows("ab", "abc"));
        assert!(narrows("ab", "ab c"));
        assert!(!narrows("", "a"));
        assert!(!narrows("abc", "ab"));
        assert!(!narrows("!a", "!ab"));
        assert!(!narrows("ab", "ab$"));
    }
}
