//! Actions (from the keymap or the mouse) applied to the state.

use super::App;
use super::state::{Filter, Focus, Overlay, PendingSelection, Screen, SearchState, Slot, Tab};
use crate::sanitize;
use crate::tui::action::Action;
use crate::tui::effect::Effect;
use crossterm::event::KeyEvent;

use crate::tui::composer::Outcome;
use crate::tui::input::Input;
use crate::tui::worker::Request;

impl App {
    fn selected_id(&self) -> Option<(String, String)> {
        if (self.screen == Screen::Conversation || self.focus == Focus::Detail)
            && let Some(d) = &self.detail
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
        self.list
            .current()
            .map(|s| (s.id.clone(), sanitize::line(s.display_title()).into_owned()))
    }

    fn transcript_selection(&self) -> Option<i64> {
        let in_transcript = self.screen == Screen::Conversation
            || (self.focus == Focus::Detail && self.tab == Tab::Transcript);
        if !in_transcript {
            return None;
        }
        self.detail.as_ref()?.transcript.as_ref()?.selected
    }

    pub(super) fn act(&mut self, action: Action) -> Vec<Effect> {
        let detail_focus = self.screen == Screen::Conversation || self.focus == Focus::Detail;
        let (_, vh) = self.viewport();
        match action {
            Action::Quit => {
                self.quit = true;
                Vec::new()
            }
            Action::Up | Action::Down => {
                let d = if action == Action::Up { -1 } else { 1 };
                if !detail_focus {
                    return self.move_list(d);
                }
                match self.tab {
                    Tab::Transcript => self.with_transcript(|t, w, h, th| t.select_by(d, w, h, th)),
                    _ if self.screen == Screen::Conversation => {
                        self.with_transcript(|t, w, h, th| t.select_by(d, w, h, th))
                    }
                    Tab::Assets => {
                        if let Some(det) = self.detail.as_mut() {
                            let n = det.assets.len() as i64;
                            det.asset_sel =
                                (det.asset_sel as i64 + d).clamp(0, (n - 1).max(0)) as usize;
                        }
                        Vec::new()
                    }
                    Tab::Plan | Tab::Usage | Tab::Info => {
                        if let Some(det) = self.detail.as_mut() {
                            det.scroll = det.scroll.saturating_add_signed(d as i16);
                        }
                        Vec::new()
                    }
                }
            }
            Action::PageUp | Action::PageDown => {
                let d = if action == Action::PageUp { -1 } else { 1 };
                if !detail_focus {
                    let page = self.list_page_height() as i64;
                    return self.move_list(d * page.max(1));
                }
                let page = (vh as i64 - 2).max(1);
                self.with_transcript(|t, w, h, th| t.scroll(d * page, w, h, th))
            }
            Action::Top | Action::Bottom => {
                if !detail_focus && action == Action::Bottom && self.list.next.is_some() {
                    // Read the last page upwards, then land on the true last session.
                    self.pending = PendingSelection::LastRow;
                    return self.last_page();
                }
                if !detail_focus && action == Action::Top && self.list.above.is_some() {
                    return self.home();
                }
                if !detail_focus {
                    // Far enough to clamp at either end, and halved so adding it to the
                    // selection cannot overflow.
                    let target = if action == Action::Top {
                        i64::MIN / 2
                    } else {
                        i64::MAX / 2
                    };
                    return self.move_list(target);
                }
                self.with_transcript(|t, _, _, _| {
                    if action == Action::Top {
                        t.home()
                    } else {
                        t.end()
                    }
                })
            }
            Action::Open => {
                if self.focus == Focus::Detail && self.tab == Tab::Assets {
                    return self.export_asset();
                }
                let mut effects = Vec::new();
                if self.focus == Focus::List {
                    effects.extend(self.sync_detail());
                }
                if self.detail.is_some() {
                    self.enter_conversation();
                    effects.extend(self.load_window());
                }
                effects
            }
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
                if let Some(d) = self.detail.as_mut() {
                    d.scroll = 0;
                }
                self.tab_data()
            }
            Action::Filter => {
                let f = self.list.filter.get_or_insert_with(Filter::default);
                f.editing = true;
                self.focus = Focus::List;
                // The storage thread reads the text to match while the first key is typed.
                vec![self.ask(
                    None,
                    Request::Filter {
                        text: String::new(),
                    },
                )]
            }
            Action::Search => {
                // A fresh dialog: an answer to an earlier one's query is not for it.
                self.tokens.remove(&Slot::Search);
                self.overlay = Overlay::Search(SearchState::default());
                Vec::new()
            }
            Action::New => {
                // Nothing is written until the first message is sent.
                self.draft = true;
                self.detail = None;
                self.composer.set_text("");
                self.screen = Screen::Conversation;
                self.overlay = Overlay::None;
                self.say(
                    "A new session: it is saved when you send the first message. Esc goes back.",
                );
                Vec::new()
            }
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
            Action::Export => {
                if self.focus == Focus::Detail && self.tab == Tab::Assets {
                    return self.export_asset();
                }
                let Some((id, _)) = self.selected_id() else {
                    return Vec::new();
                };
                let dir = self.export_dir.clone();
                vec![self.ask(None, Request::Export { id, dir })]
            }
            Action::Expand => {
                if let Some(t) = self.detail.as_mut().and_then(|d| d.transcript.as_mut())
                    && let Some(s) = t.selected
                    && !t.expanded.remove(&s)
                {
                    t.expanded.insert(s);
                }
                Vec::new()
            }
            Action::Help => {
                self.overlay = Overlay::Help(0);
                Vec::new()
            }
            Action::Back => {
                if self.screen == Screen::Conversation && self.draft {
                    self.draft = false;
                    self.screen = Screen::Browse;
                    self.status = None;
                    return self.sync_detail();
                }
                if self.screen == Screen::Conversation {
                    self.screen = Screen::Browse;
                    self.status = None;
                    if let Some(t) = self.detail.as_mut().and_then(|d| d.transcript.as_mut()) {
                        t.follow_end = false;
                        t.top = (1, 0);
                        t.selected = None;
                    }
                    // Return to the list row of this session if it is loaded.
                    return self.sync_detail();
                }
                if self.list.filter.is_some() {
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
            Action::Submit => {
                if !self.draft && self.detail.is_none() {
                    return Vec::new();
                }
                let Outcome::Submit(text) = self.composer.key(KeyEvent::new(
                    crossterm::event::KeyCode::Enter,
                    crossterm::event::KeyModifiers::NONE,
                )) else {
                    return Vec::new();
                };
                self.say("Saving your message…");
                if self.draft {
                    self.draft = false;
                    let workdir = self.workdir.clone();
                    return vec![self.ask(
                        None,
                        Request::NewSession {
                            workdir,
                            first: Some(text),
                        },
                    )];
                }
                let Some(id) = self.detail.as_ref().map(|d| d.id.clone()) else {
                    return Vec::new();
                };
                vec![self.ask(None, Request::Append { id, text })]
            }
        }
    }

    fn list_page_height(&self) -> usize {
        self.current_layout().list.height.saturating_sub(2) as usize
    }

    fn export_asset(&mut self) -> Vec<Effect> {
        let Some(d) = &self.detail else {
            return Vec::new();
        };
        let Some(a) = d.assets.get(d.asset_sel) else {
            self.say("This session has no assets.");
            return Vec::new();
        };
        let req = Request::SaveAsset {
            id: d.id.clone(),
            asset_id: a.id.clone(),
            dir: self.export_dir.clone(),
        };
        vec![self.ask(None, req)]
    }
}
