//! The rewind dialog's keys and answers (issue 26): Alt-R (`r` in the list's transcript) on a
//! selected message, or `Esc Esc` in the conversation, asks the worker what a rewind would do;
//! the dialog opens on the answer; Enter has the worker carry it out and the conversation
//! opens the session to continue, saying what happened. The dialog's state is
//! `tui::rewind`, its view `views/rewind.rs`.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::App;
use super::state::{ESC_ESC_MS, EscBack, Overlay, Screen, Slot};
use crate::tui::effect::Effect;
use crate::tui::rewind::{CHOICES, Preview, RewindDialog, Rewound, preview_rows};
use crate::tui::worker::{Reply, Request};

impl App {
    /// Alt-R / `r`: the rewind dialog at the selected message (else the last user message).
    pub(super) fn rewind_selected(&mut self) -> Vec<Effect> {
        if self.screen == Screen::Conversation && self.conv.draft() {
            self.fail("A new session has nothing to rewind yet.");
            return Vec::new();
        }
        let Some((id, _)) = self.selected_id() else {
            return Vec::new();
        };
        let at = self.transcript_selection();
        self.open_rewind(id, at)
    }

    /// Asks what a rewind of `id` from message `at` would do; the dialog opens on the answer.
    fn open_rewind(&mut self, id: String, at: Option<i64>) -> Vec<Effect> {
        if self.turn_active() {
            self.fail("Rewind: wait for the turn to end first (Esc cancels it).");
            return Vec::new();
        }
        if self.running_elsewhere() && self.browse.detail.as_ref().is_some_and(|d| d.id == id) {
            self.fail("Rewind: this session runs in another neocode process; wait until it stops.");
            return Vec::new();
        }
        self.say("Reading what a rewind would do…");
        vec![self.ask(Some(Slot::Rewind), Request::RewindPreview { id, at })]
    }

    /// Esc left the conversation: remembered, so that a second one opens the dialog.
    pub(super) fn remember_esc(&mut self, id: String, at: Option<i64>) {
        self.esc_back = Some(EscBack {
            id,
            at,
            at_ms: self.now_ms,
        });
    }

    /// The key after an Esc that left a conversation (`last`): a second Esc soon enough goes
    /// back into it and opens the rewind dialog. `None`: the key acts as usual.
    pub(super) fn esc_esc(&mut self, key: &KeyEvent, last: Option<EscBack>) -> Option<Vec<Effect>> {
        let last = last?;
        let again = key.code == KeyCode::Esc
            && key.modifiers == KeyModifiers::NONE
            && self.screen == Screen::Browse
            && matches!(self.overlay, Overlay::None)
            && self.now_ms.saturating_sub(last.at_ms) <= ESC_ESC_MS;
        if !again {
            return None;
        }
        let mut effects = self.resume(&last.id);
        effects.extend(self.open_rewind(last.id, last.at));
        Some(effects)
    }

    /// The worker's answers about rewind: `/undo`'s, the dialog's, the Info tab's changes.
    pub(super) fn rewind_reply(&mut self, token: u64, reply: Reply) -> Vec<Effect> {
        match reply {
            Reply::Undone(text) => {
                self.say(text);
                if let Some(d) = self.browse.detail.as_mut() {
                    d.changes_requested = false;
                }
                let mut effects = self.refresh_detail();
                effects.extend(self.tab_data());
                effects
            }
            Reply::RewindPreview(p) => self.on_rewind_preview(token, *p),
            Reply::Rewound(r) => self.on_rewound(*r),
            Reply::FileChanges { id, turns } => {
                if self.current(Slot::FileChanges, token)
                    && let Some(d) = self.browse.detail.as_mut()
                    && d.id == id
                {
                    d.changes = Some(turns);
                }
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    /// What a rewind would do arrived: the dialog opens (unless something else was opened
    /// meanwhile).
    pub(super) fn on_rewind_preview(&mut self, token: u64, preview: Preview) -> Vec<Effect> {
        if self.current(Slot::Rewind, token) && matches!(self.overlay, Overlay::None) {
            self.status = None;
            self.overlay = Overlay::Rewind(Box::new(RewindDialog::new(preview)));
        }
        Vec::new()
    }

    /// A key over the rewind dialog: Tab (←→, 1-3) chooses, ↑↓ PgUp PgDn scroll the preview,
    /// Enter rewinds, Esc cancels.
    pub(super) fn rewind_key(&mut self, mut d: Box<RewindDialog>, key: KeyEvent) -> Vec<Effect> {
        let rows = preview_rows(self.size);
        let n = CHOICES.len();
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => {
                self.say("Rewind cancelled: nothing changed.");
                return Vec::new();
            }
            KeyCode::Enter => {
                let request = Request::Rewind {
                    id: d.preview.session_id.clone(),
                    seq: d.preview.seq,
                    scope: d.scope(),
                };
                self.say("Rewinding…");
                return vec![self.ask(None, request)];
            }
            KeyCode::Tab | KeyCode::Right | KeyCode::Char('l') => d.choice = (d.choice + 1) % n,
            KeyCode::BackTab | KeyCode::Left | KeyCode::Char('h') => {
                d.choice = (d.choice + n - 1) % n;
            }
            KeyCode::Char(c @ '1'..='3') => d.choice = usize::from(c as u8 - b'1'),
            KeyCode::Up | KeyCode::Char('k') => d.scroll_by(-1, rows),
            KeyCode::Down | KeyCode::Char('j') => d.scroll_by(1, rows),
            KeyCode::PageUp => d.scroll_by(-(rows as i64), rows),
            KeyCode::PageDown | KeyCode::Char(' ') => d.scroll_by(rows as i64, rows),
            KeyCode::Home | KeyCode::Char('g') => d.scroll = 0,
            KeyCode::End | KeyCode::Char('G') => d.scroll_by(i64::MAX / 2, rows),
            _ => {}
        }
        if matches!(
            key.code,
            KeyCode::Tab | KeyCode::BackTab | KeyCode::Left | KeyCode::Right | KeyCode::Char(_)
        ) {
            // Another choice has other lines: keep the scroll within them.
            d.scroll_by(0, rows);
        }
        self.overlay = Overlay::Rewind(d);
        Vec::new()
    }

    /// The rewind was done: the conversation opens the session to continue and says what
    /// happened.
    pub(super) fn on_rewound(&mut self, r: Rewound) -> Vec<Effect> {
        let mut effects = self.resume(&r.result_id);
        if let Some(d) = self.browse.detail.as_mut() {
            // Its files changed: the Info tab reads them again.
            d.changes = None;
            d.changes_requested = false;
        }
        effects.extend(self.tab_data());
        self.say(r.text);
        effects
    }
}
