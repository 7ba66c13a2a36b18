//! The open session: its transcript window (chunks loaded around the viewport), the data a
//! tab needs, and entering the conversation view.

use super::state::{Overlay, Screen, Slot, Tab};
use super::{App, interrupted_note};
use crate::tui::effect::Effect;
use crate::tui::theme::Theme;
use crate::tui::transcript::{Transcript, chunk_range};
use crate::tui::worker::Request;

impl App {
    /// Columns and rows of the transcript viewport.
    pub fn viewport(&self) -> (usize, usize) {
        let a = self.current_layout();
        (
            a.transcript.width.saturating_sub(1) as usize,
            a.transcript.height as usize,
        )
    }

    /// Asks for the transcript chunks the viewport needs that are neither loaded nor asked.
    pub(super) fn load_window(&mut self) -> Vec<Effect> {
        let (_, h) = self.viewport();
        let Some(t) = self.browse.transcript() else {
            return Vec::new();
        };
        let id = t.id.clone();
        let wanted = t.wanted_chunks(h);
        let mut effects = Vec::new();
        for c in wanted {
            let (from, to) = chunk_range(c);
            let job = self.job(
                None,
                Request::Messages {
                    id: id.clone(),
                    from,
                    to,
                },
            );
            if let Some(t) = self.browse.transcript_mut() {
                t.requested(c, job.token);
            }
            effects.push(Effect::Storage(job));
        }
        effects
    }

    pub(super) fn with_transcript(
        &mut self,
        f: impl FnOnce(&mut Transcript, usize, usize, Theme),
    ) -> Vec<Effect> {
        let (w, h) = self.viewport();
        let theme = self.theme;
        if let Some(t) = self.browse.transcript_mut() {
            f(t, w, h, theme);
        }
        self.load_window()
    }

    /// What the current tab needs that is not loaded yet.
    pub(super) fn tab_data(&mut self) -> Vec<Effect> {
        let mut effects = Vec::new();
        if self.tab == Tab::Usage
            && let Some(d) = self.browse.detail.as_mut()
            && !d.usage_requested
        {
            d.usage_requested = true;
            let id = d.id.clone();
            effects.push(self.ask(Some(Slot::Usage), Request::Usage { id }));
        }
        if self.tab == Tab::Info
            && let Some(d) = self.browse.detail.as_mut()
            && !d.changes_requested
        {
            d.changes_requested = true;
            let id = d.id.clone();
            effects.push(self.ask(Some(Slot::FileChanges), Request::FileChanges { id }));
        }
        effects.extend(self.load_window());
        effects
    }

    /// Reads the editor's ↑ history for the conversation shown (its own messages first).
    pub(super) fn load_history(&mut self) -> Effect {
        let id = self
            .browse
            .detail
            .as_ref()
            .filter(|_| !self.conv.draft())
            .map(|d| d.id.clone());
        self.ask(Some(Slot::History), Request::History { id })
    }

    pub(super) fn enter_conversation(&mut self) {
        if self.screen != Screen::Conversation {
            self.restore_draft();
        }
        self.screen = Screen::Conversation;
        // A card waiting in it is seen only now.
        self.card_shown();
        // A proposed plan waits for its answer whatever is opened.
        if !matches!(self.overlay, Overlay::Plan(_)) {
            self.overlay = Overlay::None;
        }
        if let Some(t) = self.browse.transcript_mut() {
            t.follow_end = true;
            t.selected = None;
        }
        match self
            .browse
            .detail
            .as_ref()
            .map(|d| d.interrupted.as_slice())
        {
            Some(calls) if !calls.is_empty() => {
                let note = interrupted_note(calls);
                self.say(note);
            }
            _ if self.conv.open_subagent(self.browse.detail.as_ref()).is_some() => self.say(
                "A sub-agent of the running turn, live: Alt-Enter steers it, Esc cancels it alone, Ctrl-T lists them, Ctrl-B goes to the list.",
            ),
            _ => self.say("Type a message and press Enter. Esc goes back to the list."),
        }
    }
}
