//! The storage worker's answers, one method per kind. Reads answer the latest request of
//! their slot only: an answer whose token is no longer current is stale and dropped.

use std::path::Path;

use super::state::{Focus, Overlay, PendingSelection, Screen, Slot};
use super::{App, interrupted_note};
use crate::format::short_id;
use crate::sanitize;
use crate::session::{SearchResults, SessionHeader};
use crate::tui::browse::{BrowseReply, DetailRead};
use crate::tui::effect::Effect;
use crate::tui::worker::{Done, Reply};

impl App {
    pub(super) fn answer(&mut self, done: Done) -> Vec<Effect> {
        let token = done.token;
        let reply = match done.result {
            Ok(r) => r,
            Err(e) => {
                self.failed(token, e.as_str());
                return Vec::new();
            }
        };
        // The open session's queue comes with it; read after the rest of the detail.
        let queue = match &reply {
            Reply::Detail { header, queued, .. } if self.current(Slot::Detail, token) => {
                Some((header.id.clone(), queued.clone()))
            }
            _ => None,
        };
        let mut effects = self.reply(token, reply);
        if let Some((id, queued)) = queue {
            effects.extend(self.with_conv(|c, ctx| c.queue_read(&id, queued, None, false, ctx)));
        }
        effects
    }

    fn reply(&mut self, token: u64, reply: Reply) -> Vec<Effect> {
        match reply {
            Reply::Version(v) => self.browse_reply(None, token, BrowseReply::Version(v)),
            Reply::List {
                page, count, base, ..
            } => self.browse_reply(
                Some(Slot::List),
                token,
                BrowseReply::List { page, count, base },
            ),
            Reply::Filter { text, result } => self.browse_reply(
                Some(Slot::Filter),
                token,
                BrowseReply::Filter { text, result },
            ),
            Reply::Detail {
                header,
                progress,
                assets,
                interrupted,
                steps,
                context,
                ..
            } => self.on_detail(
                token,
                DetailRead {
                    header: *header,
                    progress,
                    assets,
                    interrupted,
                    steps,
                    context,
                },
            ),
            Reply::Queue {
                id,
                queued,
                taken,
                unqueue,
            } => self.with_conv(|c, ctx| c.queue_read(&id, queued, taken, unqueue, ctx)),
            Reply::Messages {
                id, from, messages, ..
            } => {
                let Some(t) = self.browse.transcript_mut() else {
                    return Vec::new();
                };
                // Each chunk keeps the token it was asked with.
                if t.id != id || !t.loaded(token, from, messages) {
                    return Vec::new();
                }
                self.load_window()
            }
            Reply::History(texts) => {
                if self.current(Slot::History, token) {
                    // What was typed: `@path` attachments were sent with it, not typed.
                    let mut typed: Vec<String> = Vec::with_capacity(texts.len());
                    for t in &texts {
                        let t = crate::tui::attachment::typed(t).to_string();
                        if !typed.contains(&t) {
                            typed.push(t);
                        }
                    }
                    self.conv.set_history(typed);
                }
                Vec::new()
            }
            Reply::Usage { id, turns } => {
                self.browse_reply(Some(Slot::Usage), token, BrowseReply::Usage { id, turns })
            }
            Reply::Search { query, found } => {
                self.on_search(token, query, *found);
                Vec::new()
            }
            Reply::Found {
                id,
                query,
                seqs,
                more,
            } => self.on_found(token, &id, query, seqs, more),
            Reply::Forked(h) => self.on_forked(&h),
            Reply::Deleted(id) => self.on_deleted(&id),
            Reply::Renamed { id, title } => self.on_renamed(&id, &title),
            Reply::Wrote(path) => {
                self.on_wrote(&path);
                Vec::new()
            }
            Reply::Appended { seq, .. } => self.on_appended(seq),
            r @ (Reply::Undone(_)
            | Reply::RewindPreview(_)
            | Reply::Rewound(_)
            | Reply::FileChanges { .. }) => self.rewind_reply(token, r),
            r @ (Reply::Ranked { .. } | Reply::Files(_)) => self.files_reply(r),
        }
    }

    /// The workspace's files (the picker ranks them, or a completion waits for them) and the
    /// picker's matches.
    fn files_reply(&mut self, r: Reply) -> Vec<Effect> {
        match r {
            Reply::Ranked { query, matches } => {
                self.conv.ranked(&query, matches);
                Vec::new()
            }
            Reply::Files(files) => self.with_conv(|c, ctx| c.files_listed(files, ctx)),
            _ => Vec::new(),
        }
    }

    /// Hands the browse screen its answer when it is still the latest of its slot (`None`:
    /// an answer that is never stale).
    fn browse_reply(&mut self, slot: Option<Slot>, token: u64, reply: BrowseReply) -> Vec<Effect> {
        if slot.is_some_and(|s| !self.current(s, token)) {
            return Vec::new();
        }
        self.with_browse(|b, screen| b.on_reply(reply, screen))
    }

    fn failed(&mut self, token: u64, e: &str) {
        if let Some(slot) = self.slot_of(token) {
            if slot == Slot::Search
                && let Overlay::Search(s) = &mut self.overlay
            {
                s.searching = false;
            }
            self.browse.request_failed(slot);
        }
        self.fail(sanitize::line(e).into_owned());
    }

    fn on_detail(&mut self, token: u64, read: DetailRead) -> Vec<Effect> {
        if !self.current(Slot::Detail, token) {
            return Vec::new();
        }
        let id = read.header.id.clone();
        if self.browse.detail.as_ref().is_none_or(|d| d.id != id) {
            return Vec::new();
        }
        self.conv.model_stored(&id, &read.header.model);
        // A session whose turn runs in the background opens at its end, where it streams.
        let conversation = self.screen == Screen::Conversation;
        let at_end = conversation || self.conv.running_in(&id);
        let Some(d) = self.browse.detail.as_mut() else {
            return Vec::new();
        };
        let first_load = d.take_read(read, at_end);
        if first_load && conversation && !d.interrupted.is_empty() {
            let note = interrupted_note(&d.interrupted);
            self.say(note);
        }
        match self.browse.message_to_select(&id) {
            Some(seq) => self.with_transcript(|t, w, h, th| t.select(seq, w, h, th)),
            None => self.tab_data(),
        }
    }

    fn on_search(&mut self, token: u64, query: String, found: SearchResults) {
        // A dialog opened again after the query was sent has not asked for it (an empty query
        // sends nothing, so the token alone does not tell).
        if self.current(Slot::Search, token)
            && let Overlay::Search(s) = &mut self.overlay
            && s.input.text.trim() == query
        {
            s.searching = false;
            s.answered = query;
            s.summary = if found.hits.is_empty() {
                crate::format::search_completion(&found.prefix).unwrap_or_default()
            } else {
                crate::format::search_summary(&found)
            };
            s.hits = found.hits;
            s.selected = 0;
        }
    }

    fn on_forked(&mut self, h: &SessionHeader) -> Vec<Effect> {
        let at = h.fork_seq.unwrap_or(0);
        if self.screen == Screen::Conversation {
            let effects = self.resume(&h.id);
            self.say(format!(
                "Forked at message #{at}: you are now in {}.",
                short_id(&h.id, 8)
            ));
            return effects;
        }
        self.say(format!(
            "Forked at message #{at} into new session {}.",
            short_id(&h.id, 8)
        ));
        self.browse.select_when_loaded(PendingSelection::Session {
            id: h.id.clone(),
            message: None,
        });
        self.focus = Focus::List;
        self.reload_top()
    }

    fn on_deleted(&mut self, id: &str) -> Vec<Effect> {
        self.say(format!("Deleted session {}.", short_id(id, 8)));
        self.screen = Screen::Browse;
        self.focus = Focus::List;
        self.with_browse(|b, _| b.session_deleted(id))
    }

    fn on_renamed(&mut self, id: &str, title: &str) -> Vec<Effect> {
        self.say(format!("Renamed to \"{}\".", sanitize::line(title)));
        // Renaming is activity: the session is the newest now.
        let mut effects = self.reload_top();
        if self.browse.detail.as_ref().is_some_and(|d| d.id == id) {
            effects.extend(self.refresh_detail());
        }
        effects
    }

    fn on_wrote(&mut self, path: &Path) {
        self.say(format!(
            "Wrote {}",
            sanitize::line(&path.display().to_string())
        ));
    }

    fn on_appended(&mut self, seq: i64) -> Vec<Effect> {
        self.say(format!("Saved as message #{seq}."));
        let mut effects = self.refresh_detail();
        // The session is the newest now.
        effects.extend(self.reload_top());
        effects
    }
}
