//! `/resume`: the session list as a picker over the conversation. It is the browse list
//! itself (its loaded window, its filter, the filter's matches from the storage thread);
//! only the open session does not follow the selection until Enter switches to it.

use crossterm::event::{KeyCode, KeyEvent};

use super::App;
use super::state::{Overlay, Screen};
use crate::format::short_id;
use crate::tui::effect::Effect;
use crate::tui::worker::Request;

impl App {
    /// Opens the picker on the open session's row, with the list's filter taking the keys.
    pub(super) fn open_resume(&mut self) -> Vec<Effect> {
        self.browse.open_picker();
        self.overlay = Overlay::Resume;
        // The storage thread reads the text to match while the first key is typed.
        vec![self.ask(
            None,
            Request::Filter {
                text: String::new(),
            },
        )]
    }

    /// A key over the picker.
    pub(super) fn resume_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        match key.code {
            KeyCode::Esc => {
                self.say("Back to the conversation.");
                self.clear_filter()
            }
            KeyCode::Up | KeyCode::Down => {
                self.browse.picker_step(key.code == KeyCode::Up);
                self.overlay = Overlay::Resume;
                Vec::new()
            }
            KeyCode::Enter => {
                let Some(id) = self.browse.list.current().map(|s| s.id.clone()) else {
                    self.overlay = Overlay::Resume;
                    return Vec::new();
                };
                let mut effects = self.clear_filter();
                if self.browse.detail.as_ref().is_some_and(|d| d.id == id) && !self.conv.draft() {
                    self.say("That is this session.");
                    return effects;
                }
                // Leaving this conversation as Esc would: its unsent text is kept for it.
                self.stash_draft();
                self.conv.set_draft(false);
                self.screen = Screen::Browse;
                effects.extend(self.resume(&id));
                self.say(format!(
                    "Switched to session {}. /resume goes on to another.",
                    short_id(&id, 8)
                ));
                effects
            }
            _ => {
                self.overlay = Overlay::Resume;
                self.with_browse(|b, screen| b.type_filter(&key, screen))
            }
        }
    }
}
