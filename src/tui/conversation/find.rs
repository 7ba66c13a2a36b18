//! `/find TEXT`: the open session's messages containing TEXT (any case, read by the worker in
//! batches, so a long session is searched whole, not only its loaded window). The newest match
//! is selected and scrolled into view; while the editor is empty `n` goes to the next older
//! match, `N` to the next newer one, `Esc` ends the search. The status line counts them.

use super::Conversation;
use super::ctx::{Ask, Ctx};
use crate::sanitize;
use crate::tui::worker::Request;

/// A `/find` in progress: what was searched, where it matched, which match is selected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Find {
    pub session_id: String,
    pub query: String,
    /// Matching seqs, oldest first.
    pub seqs: Vec<i64>,
    /// Index of the selected match.
    pub at: usize,
}

impl Conversation {
    /// `/find TEXT`.
    pub(super) fn slash_find(
        &mut self,
        open: Option<String>,
        arg: &str,
        ctx: &mut Ctx<'_>,
    ) -> Vec<Ask> {
        let Some(id) = open.filter(|_| !self.draft) else {
            ctx.fail("/find searches a saved session: none is open");
            return Vec::new();
        };
        if arg.is_empty() {
            ctx.fail("/find needs the text to find: /find config loader");
            return Vec::new();
        }
        ctx.say(format!("Finding “{}”…", sanitize::line(arg)));
        vec![Ask::Request(Request::Find {
            id,
            query: arg.to_string(),
        })]
    }

    /// What `/find` found in session `id`.
    pub fn found(
        &mut self,
        id: &str,
        query: String,
        seqs: Vec<i64>,
        ctx: &mut Ctx<'_>,
    ) -> Vec<Ask> {
        if ctx.open_id().as_deref() != Some(id) {
            return Vec::new();
        }
        let q = sanitize::line(&query).into_owned();
        let Some(&newest) = seqs.last() else {
            self.find = None;
            ctx.fail(format!("No message of this session contains “{q}”."));
            return Vec::new();
        };
        let at = seqs.len() - 1;
        self.find = Some(Find {
            session_id: id.to_string(),
            query,
            seqs,
            at,
        });
        self.say_find(ctx);
        vec![Ask::Select(newest)]
    }

    /// `n` (`older`) or `N`: the next match.
    pub(super) fn find_step(&mut self, older: bool, ctx: &mut Ctx<'_>) -> Vec<Ask> {
        let Some(f) = self.find.as_mut() else {
            return Vec::new();
        };
        f.at = if older {
            f.at.saturating_sub(1)
        } else {
            (f.at + 1).min(f.seqs.len() - 1)
        };
        let seq = f.seqs[f.at];
        self.say_find(ctx);
        vec![Ask::Select(seq)]
    }

    /// Esc while finding: the search ends (the selection stays).
    pub(super) fn find_end(&mut self, ctx: &mut Ctx<'_>) -> Vec<Ask> {
        self.find = None;
        ctx.say("Search ended.");
        Vec::new()
    }

    /// Whether `n`/`N`/Esc belong to a search now.
    pub fn finding(&self, open: Option<&str>) -> bool {
        self.composer.is_empty()
            && self
                .find
                .as_ref()
                .is_some_and(|f| Some(f.session_id.as_str()) == open)
    }

    fn say_find(&self, ctx: &mut Ctx<'_>) {
        if let Some(f) = &self.find {
            ctx.say(format!(
                "“{}”: match {} of {} (message #{}) · n older, N newer, Esc ends",
                sanitize::line(&f.query),
                f.at + 1,
                f.seqs.len(),
                f.seqs[f.at]
            ));
        }
    }
}
