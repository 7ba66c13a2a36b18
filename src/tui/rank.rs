//! Ranking the workspace's files for the `@` picker: nucleo's fuzzy matcher over the listed
//! paths, best first. It runs on the worker thread (a key draws at once; the matches follow),
//! and narrows the last matches when the query extends the last one.

use std::sync::{Arc, Weak};

use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};

/// Rows the picker lists.
pub(crate) const PICKER_ROWS: usize = 8;

/// What the last ranking matched, so typing on narrows those files instead of matching every
/// file again (a longer plain query only ever matches fewer files), and the matcher with its
/// memory, kept between keys.
#[derive(Debug, Default)]
pub(crate) struct PickerCache {
    matcher: Option<Matcher>,
    /// The query `hits` are for; empty when there is none.
    query: String,
    /// Indexes into the file list of every file that matched `query`.
    hits: Vec<u32>,
    /// The file list `hits` index (another list: nothing is narrowed). Held weakly, so its
    /// address cannot be reused by another list while it is compared.
    files: Weak<Vec<String>>,
}

impl PickerCache {
    /// Forgets the last ranking.
    pub(crate) fn clear(&mut self) {
        self.query.clear();
        self.hits.clear();
    }
}

/// Whether every file matching `query + more` also matches `query`: true for a query of
/// plain path characters (no pattern syntax such as `!`, `^`, `$`, `'` or `\\`).
fn narrows(query: &str) -> bool {
    !query.is_empty()
        && query
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '/' | '.' | '_' | '-' | ' '))
}

/// The best `PICKER_ROWS` files for `query` (fuzzy, smart case), best first; with no query
/// the shortest paths.
#[cfg(test)]
pub(crate) fn rank(files: &[String], query: &str) -> Vec<String> {
    rank_with(
        &Arc::new(files.to_vec()),
        query,
        &mut PickerCache::default(),
    )
}

/// From this many files to score, the scoring is split over the cores (up to four).
const PARALLEL_FROM: usize = 20_000;

/// Ranks the candidates, narrowing what `cache` kept from the last query when this one extends it.
pub(crate) fn rank_with(
    files: &Arc<Vec<String>>,
    query: &str,
    cache: &mut PickerCache,
) -> Vec<String> {
    if query.is_empty() {
        cache.clear();
        let scored = (0..files.len() as u32).map(|i| (i, 0)).collect();
        return best(files, scored);
    }
    let pattern = Pattern::parse(query, CaseMatching::Smart, Normalization::Smart);
    let narrow = narrows(&cache.query)
        && query.starts_with(cache.query.as_str())
        && cache
            .files
            .upgrade()
            .is_some_and(|f| Arc::ptr_eq(&f, files));
    let candidates: Vec<u32> = if narrow {
        std::mem::take(&mut cache.hits)
    } else {
        (0..files.len() as u32).collect()
    };
    let scored = score(files, &candidates, &pattern, cache);
    cache.query = query.to_string();
    cache.files = Arc::downgrade(files);
    cache.hits = scored.iter().map(|(i, _)| *i).collect();
    best(files, scored)
}

/// The files of `candidates` that match `pattern`, with their scores, in the candidates'
/// order; split over the cores when there are many.
fn score(
    files: &[String],
    candidates: &[u32],
    pattern: &Pattern,
    cache: &mut PickerCache,
) -> Vec<(u32, u32)> {
    let one = |part: &[u32], matcher: &mut Matcher| -> Vec<(u32, u32)> {
        let mut buf = Vec::new();
        part.iter()
            .filter_map(|&i| {
                let f = files.get(i as usize)?;
                pattern
                    .score(Utf32Str::new(f, &mut buf), matcher)
                    .map(|s| (i, s))
            })
            .collect()
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 4));
    if threads == 1 || candidates.len() < PARALLEL_FROM {
        let matcher = cache
            .matcher
            .get_or_insert_with(|| Matcher::new(Config::DEFAULT.match_paths()));
        return one(candidates, matcher);
    }
    let chunk = candidates.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = candidates
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || one(part, &mut Matcher::new(Config::DEFAULT.match_paths())))
            })
            .collect();
        // A scoring thread that panicked contributes nothing (never seen: scoring is pure).
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    })
}

/// The first `PICKER_ROWS` of `scored` (file index, score): best score first, among equals
/// the shorter path, then the list's order. Only those are sorted.
fn best(files: &[String], mut scored: Vec<(u32, u32)>) -> Vec<String> {
    let len = |i: u32| files.get(i as usize).map_or(0, String::len);
    let key = |&(i, s): &(u32, u32)| (std::cmp::Reverse(s), len(i), i);
    if scored.len() > PICKER_ROWS {
        scored.select_nth_unstable_by_key(PICKER_ROWS - 1, key);
        scored.truncate(PICKER_ROWS);
    }
    scored.sort_unstable_by_key(key);
    scored
        .into_iter()
        .filter_map(|(i, _)| files.get(i as usize).cloned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::rank;

    #[test]
    fn the_picker_ranks_fuzzy_matches_best_first() {
        let files: Vec<String> = ["src/main.rs", "src/tui/mod.rs", "README.md", "docs/main.md"]
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(rank(&files, "tuimod")[0], "src/tui/mod.rs");
        assert_eq!(rank(&files, "rdme"), vec!["README.md"]);
        assert!(rank(&files, "zzz").is_empty());
        assert_eq!(rank(&files, "")[0], "README.md");
    }

    #[test]
    fn narrowing_the_last_matches_ranks_as_matching_every_file() {
        let files: Vec<String> = (0..3000)
            .map(|i| format!("src/mod{}/file_{i}.rs", i % 37))
            .chain(["src/Model.rs".to_string(), "a!b".to_string()])
            .collect();
        let files = std::sync::Arc::new(files);
        let mut cache = super::PickerCache::default();
        for q in [
            "s", "sr", "src", "src/m", "src/mo", "src/m", "f", "fi", "file_1", "file_12", "", "M",
            "Mo", "a", "a!", "a!b", "1 2", "1 23",
        ] {
            assert_eq!(
                super::rank_with(&files, q, &mut cache),
                rank(&files, q),
                "{q:?}"
            );
        }
    }

    #[test]
    fn many_files_are_ranked_over_the_cores_as_over_one() {
        let files: Vec<String> = (0..50_000)
            .map(|i| format!("crate{}/src/module{}/lib_{i}.rs", i % 100, i % 10))
            .chain(["src/special_target.rs".to_string()])
            .collect();
        assert_eq!(rank(&files, "spectarg"), vec!["src/special_target.rs"]);
        let got = rank(&files, "lib_49");
        // Best score first, then the shorter path, then the list's order: the same whatever
        // thread scored which file.
        assert_eq!(got.len(), super::PICKER_ROWS);
        let mut one = super::PickerCache::default();
        let few: Vec<u32> = (0..files.len() as u32).collect();
        let pattern = nucleo_matcher::pattern::Pattern::parse(
            "lib_49",
            nucleo_matcher::pattern::CaseMatching::Smart,
            nucleo_matcher::pattern::Normalization::Smart,
        );
        let mut each: Vec<(u32, u32)> = few
            .chunks(10_000)
            .flat_map(|c| super::score(&files, c, &pattern, &mut one))
            .collect();
        each.sort_unstable();
        let mut all = super::score(&files, &few, &pattern, &mut one);
        all.sort_unstable();
        assert_eq!(each, all);
        assert_eq!(super::best(&files, all), got);
    }
}
