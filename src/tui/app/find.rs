//! Search in the open session's transcript: `/` in the transcript pane or Ctrl-F opens a
//! search line, the store's index answers which messages match (a transcript of any length:
//! only the seqs come back, the view loads and draws only what is visible), n/N move between
//! them and scroll the transcript there, Esc closes.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::App;
use super::state::{Find, Focus, Screen, Slot, Tab};
use crate::tui::action::Action;
use crate::tui::effect::Effect;
use crate::tui::keymap::{self, Context};

impl App {
    /// The open session's transcript search, while it is open.
    pub fn find(&self) -> Option<&Find> {
        self.browse.detail.as_ref()?.find.as_ref()
    }

    fn find_mut(&mut self) -> Option<&mut Find> {
        self.browse.detail.as_mut()?.find.as_mut()
    }

    /// Opens the search line (or types its query again when it is open).
    pub(super) fn open_find(&mut self) -> Vec<Effect> {
        let Some(d) = self.browse.detail.as_mut() else {
            self.say("No session is open to search.");
            return Vec::new();
        };
        if d.transcript.is_none() {
            self.say("Nothing to search yet.");
            return Vec::new();
        }
        d.find.get_or_insert_with(Find::default).editing = true;
        if self.screen == Screen::Browse {
            self.focus = Focus::Detail;
            self.tab = Tab::Transcript;
        }
        Vec::new()
    }

    /// `/find TEXT`: the search line opened with TEXT as its query, asked at once; the
    /// answer moves to the nearest match and n/N move on from there.
    pub(super) fn find_text(&mut self, text: &str) -> Vec<Effect> {
        let mut effects = self.open_find();
        let asks = self
            .browse
            .detail
            .as_mut()
            .map(|d| d.find_text(text))
            .unwrap_or_default();
        effects.extend(self.carry_all(asks));
        effects
    }

    /// Closes the search line; its highlights go with it.
    fn close_find(&mut self) {
        match self.browse.detail.as_mut() {
            Some(d) => {
                let forget = d.close_find();
                self.carry_all(vec![forget]);
            }
            None => {
                self.requests.tokens.remove(&Slot::Find);
            }
        }
    }

    /// A key while the search line is open: `Some` when it took the key.
    pub(super) fn find_key(&mut self, key: &KeyEvent) -> Option<Vec<Effect>> {
        let editing = self.find()?.editing;
        // In the browse screen the search belongs to the transcript pane: elsewhere the
        // keys are the list's (its highlights stay).
        if self.screen == Screen::Browse
            && (self.focus != Focus::Detail || self.tab != Tab::Transcript)
        {
            return None;
        }
        if editing {
            return Some(self.find_edit_key(key));
        }
        match keymap::lookup(Context::Find, key) {
            Some(Action::FindNext) => Some(self.find_step(true)),
            Some(Action::FindPrev) => Some(self.find_step(false)),
            Some(Action::Find) => Some(self.open_find()),
            Some(Action::Back) => {
                self.close_find();
                Some(Vec::new())
            }
            _ => {
                // Typing in the conversation's editor closes the search first, so n and N
                // are never taken from a message being written once it is closed.
                let typing = self.screen == Screen::Conversation
                    && matches!(key.code, KeyCode::Char(_))
                    && !key
                        .modifiers
                        .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
                if typing {
                    self.close_find();
                }
                None
            }
        }
    }

    /// A key while the query is typed: Enter keeps it (n/N move then), Esc closes.
    fn find_edit_key(&mut self, key: &KeyEvent) -> Vec<Effect> {
        match key.code {
            KeyCode::Enter => {
                let Some(f) = self.find_mut() else {
                    return Vec::new();
                };
                if f.input.text.trim().is_empty() {
                    self.close_find();
                    return Vec::new();
                }
                f.editing = false;
                if f.current.is_none() && !f.matches.is_empty() {
                    return self.find_step(true);
                }
                Vec::new()
            }
            KeyCode::Esc => {
                self.close_find();
                Vec::new()
            }
            _ => {
                let asks = self
                    .browse
                    .detail
                    .as_mut()
                    .map(|d| d.find_typed(key))
                    .unwrap_or_default();
                self.carry_all(asks)
            }
        }
    }

    /// The answer to a transcript search: the matches, and the view moves to the nearest
    /// (the newest in a conversation that follows its end, else the first from the top).
    pub(super) fn on_found(
        &mut self,
        token: u64,
        id: &str,
        query: String,
        seqs: Vec<i64>,
        more: bool,
    ) -> Vec<Effect> {
        if !self.current(Slot::Find, token) {
            return Vec::new();
        }
        let from_end = self.browse.transcript().is_none_or(|t| t.follow_end);
        let Some(d) = self.browse.detail.as_mut().filter(|d| d.id == id) else {
            return Vec::new();
        };
        if !d.found(query, seqs, more) {
            return Vec::new();
        }
        self.find_step(!from_end)
    }

    /// n / N: the next or previous match after the current one (else after the selected or
    /// first shown message), round the ends; the transcript scrolls to it and selects it.
    pub(super) fn find_step(&mut self, forward: bool) -> Vec<Effect> {
        let Some(d) = self.browse.detail.as_mut() else {
            return Vec::new();
        };
        if let Some(seq) = d.next_match(forward) {
            return self.with_transcript(|t, w, h, th| t.select(seq, w, h, th));
        }
        let Some(f) = d.find.as_ref() else {
            return Vec::new();
        };
        let q = f.input.text.trim().to_string();
        if !q.is_empty() && !f.searching {
            self.say(format!("No message matches {}.", crate::sanitize::line(&q)));
        }
        Vec::new()
    }
}
