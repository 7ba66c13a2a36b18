//! The `@` file picker. While the word at the end of the editor starts with `@`, the
//! workspace's files (listed once by the worker with an `ignore` walk, `.gitignore` respected,
//! then cached) are ranked against what follows the `@` by nucleo's fuzzy matcher and listed
//! above the editor; ↑↓ choose, Enter or Tab inserts `@path `, Esc closes the list. When the
//! message is sent, each `@path` naming a workspace file has the file's text attached after
//! the message (size-capped; the message says what was attached and what was cut).

use std::path::Path;

use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};

use super::Conversation;
use super::commands::at_word;
use super::ctx::{Ask, Ctx};
use crate::tui::worker::Request;

/// Rows the picker lists.
pub const PICKER_ROWS: usize = 8;
/// Bytes of one attached file sent at most.
pub const ATTACH_FILE_CAP: usize = 32 * 1024;
/// Bytes of all attached files of one message at most.
pub const ATTACH_TOTAL_CAP: usize = 128 * 1024;

/// What the last ranking matched, so typing on narrows those files instead of matching every
/// file again (a longer plain query only ever matches fewer files), and the matcher with its
/// memory, kept between keys.
#[derive(Debug, Default)]
pub struct PickerCache {
    matcher: Option<Matcher>,
    /// The query `hits` are for; empty when there is none.
    query: String,
    /// Indexes into the file list of every file that matched `query`.
    hits: Vec<u32>,
    /// Length of the file list `hits` index (another list: nothing is narrowed).
    files: usize,
}

impl PickerCache {
    /// Forgets the last ranking.
    pub fn clear(&mut self) {
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
pub fn rank(files: &[String], query: &str) -> Vec<String> {
    rank_with(files, query, &mut PickerCache::default())
}

/// [`rank`], narrowing what `cache` kept from the last query when this one extends it.
pub fn rank_with(files: &[String], query: &str, cache: &mut PickerCache) -> Vec<String> {
    if query.is_empty() {
        cache.clear();
        let scored = (0..files.len() as u32).map(|i| (i, 0)).collect();
        return best(files, scored);
    }
    let matcher = cache
        .matcher
        .get_or_insert_with(|| Matcher::new(Config::DEFAULT.match_paths()));
    let pattern = Pattern::parse(query, CaseMatching::Smart, Normalization::Smart);
    let narrow = narrows(&cache.query)
        && query.starts_with(cache.query.as_str())
        && cache.files == files.len();
    let mut buf = Vec::new();
    let mut score = |i: u32| {
        let f = files.get(i as usize)?;
        pattern
            .score(Utf32Str::new(f, &mut buf), matcher)
            .map(|s| (i, s))
    };
    let scored: Vec<(u32, u32)> = if narrow {
        cache.hits.iter().filter_map(|&i| score(i)).collect()
    } else {
        (0..files.len() as u32).filter_map(score).collect()
    };
    cache.query = query.to_string();
    cache.files = files.len();
    cache.hits = scored.iter().map(|(i, _)| *i).collect();
    best(files, scored)
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

impl Conversation {
    /// Whether the picker lists files now (its keys come before the editor's).
    pub fn picker_open(&self) -> bool {
        self.picker && !self.path_matches.is_empty()
    }

    /// After an edit: the picker follows the `@word` being typed (the first one asks the
    /// worker for the files).
    pub fn refresh_picker(&mut self) -> Vec<Ask> {
        let text = self.composer.text();
        let Some(word) = at_word(&text) else {
            self.picker = false;
            self.path_matches.clear();
            return Vec::new();
        };
        let Some(files) = &self.files else {
            if self.files_asked {
                return Vec::new();
            }
            self.files_asked = true;
            self.picker = true;
            return vec![Ask::Request(Request::Files)];
        };
        self.path_matches = rank_with(files, word, &mut self.picker_cache);
        self.path_sel = 0;
        self.picker = true;
        Vec::new()
    }

    /// A key while the picker is open: moving, choosing, closing; `None` for a key the
    /// editor takes.
    pub fn picker_key(&mut self, key: crossterm::event::KeyEvent) -> Option<Vec<Ask>> {
        use crossterm::event::{KeyCode, KeyModifiers};
        if !key.modifiers.difference(KeyModifiers::SHIFT).is_empty() {
            return None;
        }
        match key.code {
            KeyCode::Up => {
                self.path_sel = self.path_sel.saturating_sub(1);
                Some(Vec::new())
            }
            KeyCode::Down => {
                self.path_sel = (self.path_sel + 1).min(self.path_matches.len().saturating_sub(1));
                Some(Vec::new())
            }
            KeyCode::Enter | KeyCode::Tab => {
                let chosen = self.path_matches.get(self.path_sel)?.clone();
                let text = self.composer.text();
                let word = at_word(&text).unwrap_or("");
                let head = &text[..text.len() - word.len()];
                self.composer.set_text(&format!("{head}{chosen} "));
                self.picker = false;
                self.path_matches.clear();
                Some(Vec::new())
            }
            KeyCode::Esc => {
                self.picker = false;
                self.path_matches.clear();
                Some(Vec::new())
            }
            _ => None,
        }
    }

    /// The message with the text of each `@path` it names attached after it (workspace files
    /// only, each and all size-capped); what was attached, for the status line.
    pub(super) fn attach_files(&self, text: String, ctx: &mut Ctx<'_>) -> String {
        let Some(files) = &self.files else {
            return text;
        };
        let mut named: Vec<String> = Vec::new();
        for w in text.split_whitespace() {
            if let Some(p) = w.strip_prefix('@')
                && files.iter().any(|f| f == p)
                && !named.iter().any(|n| n == p)
            {
                named.push(p.to_string());
            }
        }
        if named.is_empty() {
            return text;
        }
        let mut out = text;
        let mut left = ATTACH_TOTAL_CAP;
        let mut said = Vec::new();
        for p in named {
            let (block, note) = attachment(&self.root, &p, &mut left);
            out.push_str(&block);
            said.push(note);
        }
        ctx.say(format!("Attached {}.", said.join(", ")));
        out
    }
}

/// One file's attachment block and how it reads in the status line; `left` is the budget of
/// the whole message.
fn attachment(root: &Path, rel: &str, left: &mut usize) -> (String, String) {
    let bytes = match std::fs::read(root.join(rel)) {
        Ok(b) => b,
        Err(e) => {
            let why = crate::session::io_error(&e);
            return (
                format!("\n\n[@{rel} not attached: {why}]"),
                format!("@{rel} (not read: {why})"),
            );
        }
    };
    if bytes.contains(&0) {
        return (
            format!("\n\n[@{rel} not attached: a binary file]"),
            format!("@{rel} (binary, not attached)"),
        );
    }
    let cap = ATTACH_FILE_CAP.min(*left);
    let mut n = bytes.len().min(cap);
    while n > 0 && std::str::from_utf8(&bytes[..n]).is_err() {
        n -= 1;
    }
    *left -= n;
    let body = String::from_utf8_lossy(&bytes[..n]);
    let size = size_text(bytes.len() as u64);
    let (head, note) = if n < bytes.len() {
        let kept = size_text(n as u64);
        (
            format!("@{rel} attached: the first {kept} of {size} (cut)"),
            format!("@{rel} ({kept} of {size}, cut)"),
        )
    } else {
        (
            format!("@{rel} attached ({size})"),
            format!("@{rel} ({size})"),
        )
    };
    (format!("\n\n[{head}]\n```\n{body}\n```"), note)
}

/// `812 B`, `31.9 KiB`.
pub(super) fn size_text(n: u64) -> String {
    if n < 1024 {
        format!("{n} B")
    } else {
        format!("{:.1} KiB", n as f64 / 1024.0)
    }
}

#[cfg(test)]
mod tests {
    use super::rank;

    #[test]
    fn the_picker_ranks_fuzzy_matches_best_first() {
        let files: Vec<String> = ["src/main.rs", "src/tui/mod.rs", "README.md", "docs/main.md"]
            .iter()
            .map(|s| s.to_string())
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
}
