//! How much a search ranks and completes, and how the last word was completed.

/// At most this many matches are ranked (the newest); the count stops there too.
pub const SEARCH_CANDIDATES: usize = 1000;

/// Bytes of a message's text the index holds: its first MiB. A message larger than that (a
/// pasted log, an imported one) is found by the words of its first MiB, and neither the index
/// nor a search holds more of it at once.
pub const INDEX_MAX_BYTES: usize = 1024 * 1024;

/// How the last word was completed (search as you type).
#[derive(Debug, Clone, PartialEq, Default)]
pub enum PrefixSearch {
    /// Every word starting with it was searched, or completing it could add nothing: the words
    /// as typed already matched more than [`SEARCH_CANDIDATES`] messages, or the last word
    /// ends in a CJK character or symbol (a word of its own).
    #[default]
    Complete,
    /// Too much of the index holds words starting with `prefix` to search them all in time:
    /// only `prefix` itself and `words`, the ones that start with it in the newest messages
    /// (most frequent first), were searched.
    RecentWords { prefix: String, words: Vec<String> },
    /// A single character that starts too much of the index: searched as a whole word only.
    NotExpanded { prefix: String },
}

/// How far the last word is completed before a cheaper completion is used.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PrefixLimits {
    /// Leaf pages of the index (4 KB each by default) FTS5's own prefix query may cost (see
    /// `PrefixRange::cost`): FTS5 answers a prefix by merging the posting lists of every word
    /// that starts with it, all of them, before it returns the first row.
    pub pages: u64,
    /// Words a costlier prefix may complete to and still be searched as all of them, OR-ed
    /// (which FTS5 merges lazily, newest first): each is one more posting list to open.
    pub words: usize,
}

/// Measured on a 10M-message workspace, a merged page costs ~60 µs warm and ~150 µs cold.
pub const PREFIX_LIMITS: PrefixLimits = PrefixLimits {
    pages: 500,
    words: 16,
};
