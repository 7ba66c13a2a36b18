//! Full-text search over message text (the index, queries and ranking are in
//! [`crate::session::search`]).

use super::core::Store;
use crate::session::error::Result;
use crate::session::model::*;
use crate::session::search::{self, SearchResults};

impl Store {
    /// Full-text search over message text, best matches first (see [`crate::session::search`]
    /// for how matches are bounded and ranked).
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>> {
        Ok(self.search_counted(query, limit)?.hits)
    }

    /// [`Store::search`] with the number of matching messages (bounded).
    pub fn search_counted(&self, query: &str, limit: usize) -> Result<SearchResults> {
        // Long messages committed but not yet indexed are indexed first, so a search finds
        // every committed message. Should that fail (a read-only file), the search goes on.
        let _ = self.index_pending_now();
        self.with_conn(|c| search::search(c, query, limit))
    }

    /// The seqs of session `session_id`'s messages matching `query`, in order, at most
    /// `limit`, and whether more matched (transcript search in an open session).
    pub(crate) fn search_session(
        &self,
        session_id: &str,
        query: &str,
        limit: usize,
    ) -> Result<(Vec<i64>, bool)> {
        let _ = self.index_pending_now();
        self.with_conn(|c| search::in_session(c, session_id, query, limit))
    }

    /// [`Store::search_counted`] with other limits on completing the last word than
    /// [`search::PREFIX_LIMITS`]: lets tests reach the completion of a costly prefix without a
    /// history of millions of messages.
    #[doc(hidden)]
    pub fn search_counted_within(
        &self,
        query: &str,
        limit: usize,
        limits: search::PrefixLimits,
    ) -> Result<SearchResults> {
        self.with_conn(|c| search::search_within(c, query, limit, limits))
    }
}
