//! The list filter's matching, run on the storage thread so typing never waits for it.
//!
//! Matching used to run on the input path over the loaded rows, and again over all of them for
//! every page that arrived while filtering: quadratic in the number of sessions. Here the
//! storage thread keeps the text to match (sanitised title and first prompt of every session,
//! in list order) between keystrokes, matches all of it once per query, narrows to the
//! previous matches when the query only grew, stops as soon as a newer query is queued, and
//! returns the best [`FILTER_ROWS`] matches with the count of all of them.

use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};

use crate::runtime::Sessions;
use crate::sanitize;
use crate::session::{SessionSummary, StoreError, display_title};

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

/// Every session's text to match, packed: one string holding each session's id, sanitised
/// title and first prompt back to back, and where each of them ends. At 100,000 sessions this
/// is a few large allocations (about 17 MB) instead of 300,000 small ones, and it goes back
/// to the system as a whole when the filter closes.
#[derive(Default)]
struct Corpus {
    text: String,
    ends: Vec<[u32; 3]>,
    /// Each entry's branch, as an index into `branch_names` (0: none).
    branches: Vec<u32>,
    /// The distinct branches ("" first, for none).
    branch_names: Vec<String>,
}

/// Splits `branch:NAME` words out of a filter text: the branch asked for and the rest.
fn branch_filter(text: &str) -> (Option<&str>, String) {
    let mut branch = None;
    let mut rest = Vec::new();
    for w in text.split_whitespace() {
        match w.strip_prefix("branch:") {
            Some(b) if !b.is_empty() => branch = Some(b),
            _ => rest.push(w),
        }
    }
    (branch, rest.join(" "))
}

impl Corpus {
    fn len(&self) -> usize {
        self.ends.len()
    }

    /// Id, title and prompt of entry `i`.
    fn get(&self, i: usize) -> (&str, &str, &str) {
        let start = if i == 0 { 0 } else { self.ends[i - 1][2] } as usize;
        let [id, title, prompt] = self.ends[i].map(|e| e as usize);
        (
            &self.text[start..id],
            &self.text[id..title],
            &self.text[title..prompt],
        )
    }

    /// Appends an entry; false once the packed text would pass 4 GiB (never in practice).
    fn push(&mut self, id: &str, title: &str, prompt: &str) -> bool {
        let mut ends = [0u32; 3];
        for (end, s) in ends.iter_mut().zip([id, title, prompt]) {
            self.text.push_str(s);
            match u32::try_from(self.text.len()) {
                Ok(e) => *end = e,
                Err(_) => return false,
            }
        }
        self.ends.push(ends);
        true
    }

    fn push_branch(&mut self, branch: &str) {
        if self.branch_names.is_empty() {
            self.branch_names.push(String::new());
        }
        let i = match self.branch_names.iter().position(|b| b == branch) {
            Some(i) => i,
            None => {
                self.branch_names.push(branch.to_string());
                self.branch_names.len() - 1
            }
        };
        self.branches.push(i as u32);
    }

    /// The positions of the entries on `branch`.
    fn on_branch(&self, branch: &str) -> Vec<u32> {
        let Some(b) = self.branch_names.iter().position(|n| n == branch) else {
            return Vec::new();
        };
        (0..self.branches.len() as u32)
            .filter(|&i| self.branches.get(i as usize) == Some(&(b as u32)))
            .collect()
    }
}

/// What the storage thread keeps between keystrokes.
pub struct FilterState {
    /// Every session's text, newest activity first, and the data version it was read at.
    corpus: Option<(i64, Corpus)>,
    /// The previous query and the corpus positions it matched.
    last: Option<(String, Vec<u32>)>,
    /// One matcher per thread that matches.
    matchers: Vec<Matcher>,
    /// From this many sessions to match on, the matching is split over the threads.
    parallel_from: usize,
    /// The `@` picker's last ranking (the worker ranks files too).
    picker: crate::tui::rank::PickerCache,
}

impl Default for FilterState {
    /// One thread per core (up to four), from 20,000 sessions (below that, spawning costs
    /// more than it saves).
    fn default() -> FilterState {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 4));
        FilterState::new(threads, 20_000)
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

/// What a session whose id starts with the query scores: above any fuzzy match.
const ID_SCORE: u32 = u32::MAX / 2;

/// The query as a session id prefix (4 characters or more of hex digits and dashes, as the
/// list and `/resume` show ids), lowercased.
fn id_prefix(text: &str) -> Option<String> {
    (text.len() >= 4 && text.chars().all(|c| c.is_ascii_hexdigit() || c == '-'))
        .then(|| text.to_ascii_lowercase())
}

/// Scores the corpus entries at `positions` (best of title and prompt; a session whose id
/// starts with `id` first); `None` when `stale` answered true on the way.
fn score_all(
    corpus: &Corpus,
    pattern: &Pattern,
    id: Option<&str>,
    positions: &[u32],
    matcher: &mut Matcher,
    stale: &(dyn Fn() -> bool + Sync),
) -> Option<Vec<(u32, u32)>> {
    let mut scored = Vec::new();
    let mut buf = Vec::new();
    for (n, &pos) in positions.iter().enumerate() {
        if n % 4096 == 0 && stale() {
            return None;
        }
        let (sid, title, prompt) = corpus.get(pos as usize);
        if id.is_some_and(|p| sid.starts_with(p)) {
            scored.push((ID_SCORE, pos));
            continue;
        }
        let t = pattern.score(Utf32Str::new(title, &mut buf), matcher);
        let p = pattern.score(Utf32Str::new(prompt, &mut buf), matcher);
        if let Some(score) = t.max(p) {
            scored.push((score, pos));
        }
    }
    Some(scored)
}

impl FilterState {
    /// A filter matching on `threads` threads once there are `parallel_from` sessions to match.
    pub fn new(threads: usize, parallel_from: usize) -> FilterState {
        FilterState {
            corpus: None,
            last: None,
            matchers: (0..threads.max(1))
                .map(|_| Matcher::new(Config::DEFAULT))
                .collect(),
            parallel_from,
            picker: crate::tui::rank::PickerCache::default(),
        }
    }

    /// The `@` picker's ranking state, kept between its requests.
    pub(crate) fn picker(&mut self) -> &mut crate::tui::rank::PickerCache {
        &mut self.picker
    }

    /// Forgets the text kept (a write through this connection, which `data_version` does not
    /// count).
    pub(crate) fn invalidate(&mut self) {
        self.corpus = None;
        self.last = None;
    }

    /// Reads the sessions' text again when the database changed since it was read.
    fn read_corpus(&mut self, sessions: &Sessions) -> crate::session::Result<()> {
        let version = sessions.data_version()?;
        if self.corpus.as_ref().is_some_and(|(v, _)| *v == version) {
            return Ok(());
        }
        self.last = None;
        self.corpus = None;
        let mut corpus = Corpus::default();
        sessions.for_each_list_text(|id, title, prompt, branch| {
            let title = sanitize::line(display_title(title, prompt));
            let prompt = sanitize::line(prompt);
            if !corpus.push(id, &title, &prompt) {
                return Err(StoreError::io(
                    "filter",
                    std::io::Error::other("too much text to filter"),
                ));
            }
            corpus.push_branch(branch);
            Ok(())
        })?;
        corpus.text.shrink_to_fit();
        corpus.ends.shrink_to_fit();
        self.corpus = Some((version, corpus));
        Ok(())
    }

    /// Matches `text` against every session. `stale` is polled while matching; when it
    /// answers true a newer query is waiting and `None` is returned.
    pub fn run(
        &mut self,
        sessions: &Sessions,
        text: &str,
        stale: &(dyn Fn() -> bool + Sync),
    ) -> crate::session::Result<Option<FilterResult>> {
        self.read_corpus(sessions)?;
        let full = text.trim();
        let Some((_, corpus)) = &self.corpus else {
            return Ok(Some(FilterResult::default()));
        };
        if full.is_empty() {
            // Only reading the text ahead of the first key.
            return Ok(Some(FilterResult::default()));
        }
        // `branch:NAME` keeps the sessions started on that branch; the rest is matched.
        let (branch, rest) = branch_filter(full);
        let text = rest.as_str();
        let pattern = Pattern::parse(text, CaseMatching::Ignore, Normalization::Smart);
        // `3f9a2c1e`: the session with that id prefix (the ids the picker shows).
        let id = id_prefix(text);
        let all: Vec<u32>;
        let positions: &[u32] = match (&self.last, branch) {
            // A query that just became an id prefix matches ids the shorter one did not.
            (Some((prev, positions)), None)
                if narrows(prev, full) && (id.is_none() || id_prefix(prev).is_some()) =>
            {
                positions
            }
            (_, Some(b)) => {
                all = corpus.on_branch(b);
                &all
            }
            _ => {
                all = (0..corpus.len() as u32).collect();
                &all
            }
        };
        let query = Query {
            corpus,
            pattern: &pattern,
            id: id.as_deref(),
            stale,
        };
        let threads = if positions.len() < self.parallel_from {
            1
        } else {
            self.matchers.len()
        };
        let Some(mut scored) = query.score(positions, &mut self.matchers[..threads]) else {
            return Ok(None);
        };
        let matched = scored.len();
        self.last = Some((full.to_string(), scored.iter().map(|&(_, p)| p).collect()));
        // The best first; equal scores in activity order (position). Only the shown ones
        // are sorted.
        let key = |&(s, p): &(u32, u32)| (std::cmp::Reverse(s), p);
        if scored.len() > FILTER_ROWS {
            scored.select_nth_unstable_by_key(FILTER_ROWS, key);
            scored.truncate(FILTER_ROWS);
        }
        scored.sort_unstable_by_key(key);
        let mut out = FilterResult {
            matched,
            ..FilterResult::default()
        };
        query.rows(sessions, &scored, &mut self.matchers[0], &mut out)?;
        Ok(Some(out))
    }
}

/// One query over the corpus: its pattern, the id prefix it may be, and how to tell that a
/// newer one waits.
struct Query<'a> {
    corpus: &'a Corpus,
    pattern: &'a Pattern,
    id: Option<&'a str>,
    stale: &'a (dyn Fn() -> bool + Sync),
}

impl Query<'_> {
    /// Scores the sessions at `positions` on one thread per matcher (at least one), in
    /// contiguous chunks so the chunks' answers joined in order stay in activity order;
    /// `None` when a newer query is waiting.
    fn score(&self, positions: &[u32], matchers: &mut [Matcher]) -> Option<Vec<(u32, u32)>> {
        let chunk = positions.len().div_ceil(matchers.len().max(1)).max(1);
        let answers: Vec<Option<Vec<(u32, u32)>>> = std::thread::scope(|scope| {
            let (corpus, pattern, id, stale) = (self.corpus, self.pattern, self.id, self.stale);
            let mut handles = Vec::new();
            let mut matchers = matchers.iter_mut();
            let mut chunks = positions.chunks(chunk);
            let first = chunks.next().unwrap_or(&[]);
            let first_matcher = matchers.next();
            for (part, m) in chunks.zip(matchers) {
                handles.push(scope.spawn(move || score_all(corpus, pattern, id, part, m, stale)));
            }
            // There is always a first matcher (`threads.max(1)` of them are made).
            let mut out = vec![match first_matcher {
                Some(m) => score_all(corpus, pattern, id, first, m, stale),
                None => Some(Vec::new()),
            }];
            out.extend(handles.into_iter().map(|h| h.join().unwrap_or(None)));
            out
        });
        let mut scored: Vec<(u32, u32)> = Vec::new();
        for a in answers {
            scored.extend(a?);
        }
        Some(scored)
    }

    /// The sessions `scored` names as rows, each with the title's matched characters.
    fn rows(
        &self,
        sessions: &Sessions,
        scored: &[(u32, u32)],
        matcher: &mut Matcher,
        out: &mut FilterResult,
    ) -> crate::session::Result<()> {
        let mut buf = Vec::new();
        for &(_, pos) in scored {
            let (id, _, _) = self.corpus.get(pos as usize);
            let s = match sessions.summary(id) {
                Ok(s) => s,
                // Deleted since the text was read: a later poll reloads.
                Err(StoreError::NotFound { .. }) => continue,
                Err(e) => return Err(e),
            };
            let mut hl = Vec::new();
            let title = sanitize::line(s.display_title());
            if self
                .pattern
                .indices(Utf32Str::new(&title, &mut buf), matcher, &mut hl)
                .is_none()
            {
                hl.clear();
            }
            hl.sort_unstable();
            hl.dedup();
            out.rows.push(s);
            out.hl.push(hl);
        }
        Ok(())
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
