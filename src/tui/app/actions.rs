//! Actions (from the keymap or the mouse) applied to the state.

use super::App;
use super::state::{Confirm, Focus, Overlay, Screen, SearchState, Slot, Tab};
use crate::format::short_id;
use crate::sanitize;
use crate::tui::action::Action;
use crate::tui::effect::Effect;

use crate::tui::input::Input;
use crate::tui::worker::Request;

impl App {
    pub(super) fn selected_id(&self) -> Option<(String, String)> {
        if (self.screen == Screen::Conversation || self.focus == Focus::Detail)
            && let Some(d) = &self.browse.detail
        {
            {
                let title = d
                    .header
                    .as_ref()
                    .map(|h| sanitize::line(&h.title).into_owned())
                    .unwrap_or_default();
                return Some((d.id.clone(), title));
            }
        }
        self.browse
            .list
            .current()
            .map(|s| (s.id.clone(), sanitize::line(s.display_title()).into_owned()))
    }

    pub(super) fn transcript_selection(&self) -> Option<i64> {
        let in_transcript = self.screen == Screen::Conversation
            || (self.focus == Focus::Detail && self.tab == Tab::Transcript);
        if !in_transcript {
            return None;
        }
        self.browse.detail.as_ref()?.transcript.as_ref()?.selected
    }

    pub(super) fn act(&mut self, action: Action) -> Vec<Effect> {
        match action {
            Action::Quit => {
                self.quit = true;
                Vec::new()
            }
            Action::Up | Action::Down => self.select_step(action),
            Action::PageUp | Action::PageDown => self.select_page(action),
            Action::Top | Action::Bottom => self.select_end(action),
            Action::Open => self.open_selected(),
            Action::SwitchPane => {
                self.focus = match self.focus {
                    Focus::List => Focus::Detail,
                    Focus::Detail => Focus::List,
                };
                Vec::new()
            }
            Action::PrevTab | Action::NextTab => {
                let i = self.tab.index() as i64 + if action == Action::NextTab { 1 } else { -1 };
                self.tab = Tab::ALL[i.rem_euclid(Tab::ALL.len() as i64) as usize];
                if let Some(d) = self.browse.detail.as_mut() {
                    d.scroll = 0;
                }
                self.tab_data()
            }
            Action::Filter
                if self.screen == Screen::Browse
                    && self.focus == Focus::Detail
                    && self.tab == Tab::Transcript =>
            {
                self.open_find()
            }
            Action::Filter => self.open_filter(),
            Action::Find => self.open_find(),
            Action::FindNext => self.find_step(true),
            Action::FindPrev => self.find_step(false),
            Action::ResumePicker => self.open_resume(),
            Action::Rewind => self.rewind_selected(),
            Action::Copy => self.copy_selected(false),
            Action::CopyCode => self.copy_selected(true),
            Action::Search => {
                // A fresh dialog: an answer to an earlier one's query is not for it.
                self.requests.tokens.remove(&Slot::Search);
                self.overlay = Overlay::Search(SearchState::default());
                Vec::new()
            }
            Action::New => self.new_session(),
            Action::Fork => {
                let Some((id, _)) = self.selected_id() else {
                    return Vec::new();
                };
                let at = self.transcript_selection();
                vec![self.ask(None, Request::Fork { id, at })]
            }
            Action::Delete => {
                if let Some((id, title)) = self.selected_id() {
                    self.overlay = Overlay::ConfirmDelete { id, title };
                }
                Vec::new()
            }
            Action::Rename => {
                if let Some((id, title)) = self.selected_id() {
                    self.overlay = Overlay::Rename {
                        id,
                        input: Input::with(&title),
                    };
                }
                Vec::new()
            }
            Action::Export => self.export_selected(false),
            Action::ExportMarkdown => self.export_selected(true),
            Action::Expand => self.toggle_expand(),
            Action::Help => self.open_help(),
            Action::Subagents => self.open_subagents(),
            Action::Back => self.back(),
            // The conversation's own: cards, the turn, the editor.
            Action::Approve
            | Action::ApproveAlways
            | Action::Deny
            | Action::DenyWhy
            | Action::Cancel
            | Action::PlanRun
            | Action::PlanReject
            | Action::PlanDrop
            | Action::Leave
            | Action::Rerun
            | Action::MarkInterrupted
            | Action::Steer
            | Action::EditQueued
            | Action::EditDraft
            | Action::PasteImage
            | Action::Submit => self.with_conv(|c, ctx| c.act(action, ctx)),
        }
    }

    /// Up / Down: the list row, the transcript message, or the tab's selection or scroll.
    fn select_step(&mut self, action: Action) -> Vec<Effect> {
        let detail_focus = self.screen == Screen::Conversation || self.focus == Focus::Detail;
        let d = if action == Action::Up { -1 } else { 1 };
        if !detail_focus {
            return self.with_browse(|b, _| b.act(action, 1));
        }
        match self.tab {
            Tab::Transcript => self.with_transcript(|t, w, h, th| t.select_by(d, w, h, th)),
            _ if self.screen == Screen::Conversation => {
                self.with_transcript(|t, w, h, th| t.select_by(d, w, h, th))
            }
            tab @ (Tab::Assets | Tab::Plan | Tab::Usage | Tab::Info) => {
                if let Some(det) = self.browse.detail.as_mut() {
                    det.step_tab(tab, d);
                }
                Vec::new()
            }
        }
    }

    /// Page Up / Down: a page of the list or of the transcript.
    fn select_page(&mut self, action: Action) -> Vec<Effect> {
        let detail_focus = self.screen == Screen::Conversation || self.focus == Focus::Detail;
        let (_, vh) = self.viewport();
        let d = if action == Action::PageUp { -1 } else { 1 };
        if !detail_focus {
            let page = self.list_page_height();
            return self.with_browse(|b, _| b.act(action, page));
        }
        let page = (vh as i64 - 2).max(1);
        self.with_transcript(|t, w, h, th| t.scroll(d * page, w, h, th))
    }

    /// Home / End: the first or last session (loading the pages between), or message.
    fn select_end(&mut self, action: Action) -> Vec<Effect> {
        let detail_focus = self.screen == Screen::Conversation || self.focus == Focus::Detail;
        if !detail_focus {
            return self.with_browse(|b, _| b.act(action, 1));
        }
        self.with_transcript(|t, _, _, _| {
            if action == Action::Top {
                t.home()
            } else {
                t.end()
            }
        })
    }

    /// Enter: the selected asset is exported, the step's session or the session's conversation opens.
    pub(super) fn open_selected(&mut self) -> Vec<Effect> {
        if self.focus == Focus::Detail && self.tab == Tab::Assets {
            return self.export_asset();
        }
        if self.focus == Focus::Detail && self.tab == Tab::Plan {
            return self.open_step();
        }
        let mut effects = Vec::new();
        if self.focus == Focus::List {
            effects.extend(self.sync_detail());
        }
        if self.browse.detail.is_some() {
            self.enter_conversation();
            effects.extend(self.load_window());
            effects.push(self.load_history());
        }
        effects
    }

    /// The list filter takes the keys.
    fn open_filter(&mut self) -> Vec<Effect> {
        self.browse.start_filter();
        self.focus = Focus::List;
        // The storage thread reads the text to match while the first key is typed.
        vec![self.ask(
            None,
            Request::Filter {
                text: String::new(),
            },
        )]
    }

    /// A new session's conversation (written when its first message is sent).
    fn new_session(&mut self) -> Vec<Effect> {
        // Nothing is written until the first message is sent.
        if self.screen == Screen::Conversation {
            self.stash_draft();
        }
        self.conv.set_draft(true);
        self.browse.detail = None;
        self.restore_draft();
        self.screen = Screen::Conversation;
        self.overlay = Overlay::None;
        if self.conv.composer().is_empty() {
            self.say("A new session: it is saved when you send the first message. Esc goes back.");
        } else {
            self.say("Your unsent new-session message is back. Enter sends it.");
        }
        vec![self.load_history()]
    }

    /// The selected asset or session is exported to the export directory (the session as
    /// markdown when `markdown` is set).
    fn export_selected(&mut self, markdown: bool) -> Vec<Effect> {
        if !markdown && self.focus == Focus::Detail && self.tab == Tab::Assets {
            return self.export_asset();
        }
        let Some((id, _)) = self.selected_id() else {
            return Vec::new();
        };
        let dir = self.paths.export_dir.clone();
        vec![self.ask(None, Request::Export { id, dir, markdown })]
    }

    /// The selected message expands or collapses.
    fn toggle_expand(&mut self) -> Vec<Effect> {
        if let Some(t) = self.browse.transcript_mut()
            && let Some(s) = t.selected
            && !t.expanded.remove(&s)
        {
            t.expanded.insert(s);
        }
        Vec::new()
    }

    /// The help screen.
    fn open_help(&mut self) -> Vec<Effect> {
        // With no model configured the help opens at how to set one up; in the conversation
        // at its keys (those of a running turn, an approval and the queue follow them).
        let size = ratatui::layout::Rect::new(0, 0, self.size.0, self.size.1);
        let at = if self.screen != Screen::Conversation {
            0
        } else if self.conv.agent().provider.is_err() {
            crate::tui::help::help_model_scroll(self.theme, size)
        } else {
            crate::tui::help::help_section_scroll(
                self.theme,
                size,
                crate::tui::keymap::Context::Conversation.title(),
            )
        };
        self.overlay = Overlay::Help(at);
        Vec::new()
    }

    /// Esc: one step back (the conversation, the filter, the detail pane), quitting last.
    fn back(&mut self) -> Vec<Effect> {
        if self.screen == Screen::Browse
            && self.focus == Focus::List
            && self.browse.list.filter.is_none()
            && self.turn_active()
        {
            self.overlay = Overlay::Confirm(Confirm::Quit);
            return Vec::new();
        }
        if self.screen == Screen::Conversation && self.conv.draft() {
            let kept = !self.conv.composer().text().trim().is_empty();
            self.stash_draft();
            self.conv.set_draft(false);
            self.screen = Screen::Browse;
            self.status = None;
            if kept {
                // Nothing is saved, and nothing typed is lost either.
                self.say("Your unsent message is kept: n opens it again.");
            }
            return self.sync_detail();
        }
        if self.screen == Screen::Conversation {
            if self.conv.composer().text().is_empty()
                && self.card_focus().is_none()
                && let Some(d) = &self.browse.detail
            {
                // A second Esc soon after opens the rewind dialog (`rewind`).
                let at = d.transcript.as_ref().and_then(|t| t.selected);
                self.remember_esc(d.id.clone(), at);
            }
            self.stash_draft();
            self.screen = Screen::Browse;
            self.status = None;
            if let Some(t) = self.browse.transcript_mut() {
                t.follow_end = false;
                t.top = (1, 0);
                t.selected = None;
            }
            // Return to the list row of this session if it is loaded.
            return self.sync_detail();
        }
        if self.browse.list.filter.is_some() {
            let mut effects = self.clear_filter();
            effects.extend(self.sync_detail());
            return effects;
        }
        if self.focus == Focus::Detail {
            self.focus = Focus::List;
            return Vec::new();
        }
        self.quit = true;
        Vec::new()
    }

    /// The open session is running, and not in this process.
    pub(crate) fn running_elsewhere(&self) -> bool {
        !self.turn_active()
            && self
                .browse
                .detail
                .as_ref()
                .and_then(|d| d.header.as_ref())
                .is_some_and(|h| h.status == crate::session::Status::Running)
    }

    /// Back to the list, the turn going on (the list marks it running).
    pub(super) fn leave_conversation(&mut self) -> Vec<Effect> {
        self.stash_draft();
        self.screen = Screen::Browse;
        self.conv.set_draft(false);
        self.say("The turn keeps running; Enter on its row comes back to it.");
        self.sync_detail()
    }

    fn list_page_height(&self) -> usize {
        self.current_layout().list.height.saturating_sub(2) as usize
    }

    /// Enter on a plan step: opens the conversation of its newest attempt.
    fn open_step(&mut self) -> Vec<Effect> {
        let Some(d) = self.browse.detail.as_ref() else {
            return Vec::new();
        };
        let Some(step) = d.plan_order().get(d.plan_sel).cloned() else {
            return Vec::new();
        };
        match d
            .step_conversation(&step)
            .map(|(c, _)| c.session.id.clone())
        {
            Some(id) => {
                let effects = self.resume(&id);
                self.say(format!(
                    "Step {}: its conversation (session {}).",
                    sanitize::line(&step),
                    short_id(&id, 8)
                ));
                effects
            }
            None => {
                self.say(format!(
                    "Step {} has no conversation: it has not run in a plan run.",
                    sanitize::line(&step)
                ));
                Vec::new()
            }
        }
    }

    fn export_asset(&mut self) -> Vec<Effect> {
        let Some(d) = &self.browse.detail else {
            return Vec::new();
        };
        let Some(a) = d.assets.get(d.asset_sel) else {
            self.say("This session has no assets.");
            return Vec::new();
        };
        let req = Request::SaveAsset {
            id: d.id.clone(),
            asset_id: a.id.clone(),
            dir: self.paths.export_dir.clone(),
        };
        vec![self.ask(None, req)]
    }
}
