//! Keys, paste and the mouse: dialogs take their own keys, everything else goes through the
//! keymap to an action.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::Position;

use super::App;
use super::state::{Confirm, Focus, Overlay, PlanAsk, Screen, SearchState, Slot, Tab};
use crate::runtime::agent::TurnCommand;
use crate::tui::conversation::Conversation;
use crate::tui::effect::Effect;
use crate::tui::input::Input;
use crate::tui::keymap::{self, Context};
use crate::tui::worker::Request;

/// Lines one wheel notch scrolls.
const WHEEL: i64 = 3;
/// Hits the search dialog asks for: more than fit on any screen, few enough to come back
/// in milliseconds.
const SEARCH_HITS: usize = 200;

impl App {
    pub(super) fn key(&mut self, key: KeyEvent) -> Vec<Effect> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        let esc_back = self.esc_back.take();
        if crate::tui::keymap::is_ctrl_c(&key) {
            // The first Ctrl-C stops a running turn; the next one quits.
            if self
                .conv
                .live()
                .is_some_and(|l| !l.finished && !l.cancelling)
            {
                self.overlay = Overlay::None;
                return self.with_conv(Conversation::cancel_turn);
            }
            // Text in the editor is cleared first (kept: ↑ or Ctrl-Z brings it back), as in
            // Claude Code and Codex; Ctrl-C on an empty editor quits.
            if self.screen == Screen::Conversation
                && matches!(self.overlay, Overlay::None)
                && self.conv.clear_message()
            {
                self.say("Message cleared: ↑ or Ctrl-Z brings it back; Ctrl-C again quits.");
                return Vec::new();
            }
            self.quit = true;
            return Vec::new();
        }
        if self.too_small() {
            // Nothing can be seen: only quitting acts (a blind `d y` once deleted a session).
            if key.code == KeyCode::Char('q') && key.modifiers.is_empty() {
                self.quit = true;
            }
            return Vec::new();
        }
        match std::mem::take(&mut self.overlay) {
            Overlay::None => {}
            Overlay::Help(scroll) => return self.help_key(scroll, key),
            Overlay::ConfirmDelete { id, title } => return self.confirm_delete_key(id, title, key),
            Overlay::Rename { id, input } => return self.rename_key(id, input, key),
            Overlay::DenyReason { call_id, input } => {
                return self.deny_reason_key(call_id, input, key);
            }
            Overlay::AlwaysRule {
                call_id,
                rules,
                selected,
                scope,
            } => return self.always_rule_key(call_id, rules, selected, scope, key),
            Overlay::Confirm(what) => return self.confirm_key(what, key),
            Overlay::Plan(p) => return self.plan_key(p, key),
            Overlay::Models { names, selected } => return self.models_key(names, selected, key),
            Overlay::Resume => return self.resume_key(key),
            Overlay::Rewind(d) => return self.rewind_key(d, key),
            Overlay::Permissions(d) => return self.permissions_key(d, key),
            Overlay::Subagents(d) => return self.subagents_key(d, key),
            Overlay::Search(mut s) => {
                return self.search_key(&mut s, key).unwrap_or_else(|| {
                    self.overlay = Overlay::Search(s);
                    Vec::new()
                });
            }
        }
        if let Some(effects) = self.esc_esc(&key, esc_back) {
            return effects;
        }
        if let Some(effects) = self.find_key(&key) {
            return effects;
        }
        if self.screen == Screen::Conversation {
            return self.conversation_key(key);
        }
        let screen = self.screen;
        if let Some(asks) = self.browse.filter_key(&key, screen) {
            return self.carry_all(asks);
        }
        match keymap::lookup(Context::Browse, &key) {
            Some(a) => self.act(a),
            None => Vec::new(),
        }
    }

    /// A key over the help: it scrolls, anything else closes it.
    fn help_key(&mut self, scroll: u16, key: KeyEvent) -> Vec<Effect> {
        let max = crate::tui::help::help_max_scroll(
            self.theme,
            ratatui::layout::Rect::new(0, 0, self.size.0, self.size.1),
        );
        let page = self.size.1.saturating_sub(6).max(1);
        self.overlay = match key.code {
            KeyCode::Char('j') | KeyCode::Down => Overlay::Help((scroll + 1).min(max)),
            KeyCode::Char('k') | KeyCode::Up => Overlay::Help(scroll.saturating_sub(1)),
            KeyCode::PageDown | KeyCode::Char(' ') => {
                Overlay::Help(scroll.saturating_add(page).min(max))
            }
            KeyCode::PageUp => Overlay::Help(scroll.saturating_sub(page)),
            _ => Overlay::None,
        };
        Vec::new()
    }

    /// A key over "Delete this session?".
    fn confirm_delete_key(&mut self, id: String, title: String, key: KeyEvent) -> Vec<Effect> {
        match key.code {
            KeyCode::Char('y') | KeyCode::Char('Y') | KeyCode::Enter => {
                self.say(format!("Deleting \"{title}\"…"));
                vec![self.ask(None, Request::Delete { id })]
            }
            _ => {
                self.say("Delete cancelled.");
                Vec::new()
            }
        }
    }

    /// A key while renaming.
    fn rename_key(&mut self, id: String, mut input: Input, key: KeyEvent) -> Vec<Effect> {
        match key.code {
            KeyCode::Enter => {
                let title = input.text.trim().to_string();
                vec![self.ask(None, Request::Rename { id, title })]
            }
            KeyCode::Esc => {
                self.say("Rename cancelled.");
                Vec::new()
            }
            _ => {
                input.key(&key);
                self.overlay = Overlay::Rename { id, input };
                Vec::new()
            }
        }
    }

    /// A key while the reason for a denial is typed.
    fn deny_reason_key(&mut self, call_id: String, mut input: Input, key: KeyEvent) -> Vec<Effect> {
        match key.code {
            KeyCode::Enter => {
                let why = input.text.trim().to_string();
                if self
                    .live_here()
                    .and_then(|l| l.asking.front())
                    .is_some_and(|a| a.call_id == call_id)
                {
                    let why = (!why.is_empty()).then_some(why);
                    self.with_conv(|c, ctx| c.reply_to_call(false, false, why, ctx))
                } else {
                    Vec::new()
                }
            }
            KeyCode::Esc => {
                self.say("Still asking: y yes, n no, r no with a reason, a always.");
                Vec::new()
            }
            _ => {
                input.key(&key);
                self.overlay = Overlay::DenyReason { call_id, input };
                Vec::new()
            }
        }
    }

    /// A key while the rules of an "always" answer are edited: Enter runs the call and keeps
    /// the rules (a rule emptied is left out), ↑↓ choose the rule the status line edits, Tab
    /// changes where, Esc goes back to the question.
    fn always_rule_key(
        &mut self,
        call_id: String,
        mut rules: Vec<Input>,
        mut selected: usize,
        mut scope: crate::runtime::agent::RuleScope,
        key: KeyEvent,
    ) -> Vec<Effect> {
        match key.code {
            KeyCode::Enter => {
                let kept: Vec<String> = rules
                    .iter()
                    .map(|i| i.text.trim().to_string())
                    .filter(|r| !r.is_empty())
                    .collect();
                if kept.is_empty() {
                    self.say("A rule cannot be empty: type one, or Esc to go back.");
                } else if self
                    .live_here()
                    .and_then(|l| l.asking.front())
                    .is_some_and(|a| a.call_id == call_id)
                {
                    return self.with_conv(|c, ctx| c.reply_always(kept, scope, ctx));
                } else {
                    return Vec::new();
                }
            }
            KeyCode::Tab => scope = scope.next(),
            KeyCode::Up => selected = selected.saturating_sub(1),
            KeyCode::Down => selected = (selected + 1).min(rules.len().saturating_sub(1)),
            KeyCode::Esc => {
                self.say("Still asking: y yes, n no, r no with a reason, a always.");
                return Vec::new();
            }
            _ => {
                if let Some(input) = rules.get_mut(selected) {
                    input.key(&key);
                }
            }
        }
        self.overlay = Overlay::AlwaysRule {
            call_id,
            rules,
            selected,
            scope,
        };
        Vec::new()
    }

    /// A key over a yes/no question.
    fn confirm_key(&mut self, what: Confirm, key: KeyEvent) -> Vec<Effect> {
        if !matches!(
            key.code,
            KeyCode::Char('y') | KeyCode::Char('Y') | KeyCode::Enter
        ) {
            self.say("Stayed.");
            return Vec::new();
        }
        match what {
            Confirm::Quit => {
                self.quit = true;
                Vec::new()
            }
            Confirm::Leave => self.leave_conversation(),
        }
    }

    /// A key over the server's models: ↑↓ choose, Enter switches to it, anything else keeps
    /// the model.
    fn models_key(&mut self, names: Vec<String>, selected: usize, key: KeyEvent) -> Vec<Effect> {
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => {
                self.overlay = Overlay::Models {
                    selected: selected.saturating_sub(1),
                    names,
                };
                Vec::new()
            }
            KeyCode::Down | KeyCode::Char('j') => {
                self.overlay = Overlay::Models {
                    selected: (selected + 1).min(names.len().saturating_sub(1)),
                    names,
                };
                Vec::new()
            }
            KeyCode::Enter => match names.get(selected) {
                Some(name) => {
                    let name = name.clone();
                    self.with_conv(|c, ctx| c.pick_model(&name, ctx))
                }
                None => Vec::new(),
            },
            _ => {
                self.say("Model kept.");
                Vec::new()
            }
        }
    }

    /// A key over a proposed plan.
    fn plan_key(&mut self, mut p: PlanAsk, key: KeyEvent) -> Vec<Effect> {
        if let Some(mut input) = p.dropping.take() {
            match key.code {
                KeyCode::Enter => {
                    let drop: Vec<String> = input
                        .text
                        .split(|c: char| c.is_whitespace() || c == ',')
                        .filter(|w| !w.is_empty())
                        .map(str::to_string)
                        .collect();
                    if !drop.is_empty() {
                        let cmd = TurnCommand::EditPlan { drop };
                        return self.with_conv(|_, ctx| Conversation::answer_plan(cmd, ctx));
                    }
                }
                KeyCode::Esc => {}
                _ => {
                    input.key(&key);
                    p.dropping = Some(input);
                }
            }
            self.overlay = Overlay::Plan(p);
            return Vec::new();
        }
        // The run waits for an answer: the dialog stays until it gets one, and
        // typing is never read as one.
        self.overlay = Overlay::Plan(p);
        self.card_key(Context::Plan, key)
    }

    /// A key in the conversation: a card's answer, a turn's key, completion, else the editor.
    fn conversation_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        if let Some(ctx) = self.card_focus() {
            return self.card_key(ctx, key);
        }
        if self.conv.picker_open()
            && let Some(asks) = self.conv.picker_key(key)
        {
            return self.carry_all(asks);
        }
        if matches!(key.code, KeyCode::Char(_))
            && !key.modifiers.intersects(
                crossterm::event::KeyModifiers::CONTROL | crossterm::event::KeyModifiers::ALT,
            )
        {
            self.typed_now();
        }
        for ctx in self.turn_contexts() {
            if let Some(a) = keymap::lookup(ctx, &key) {
                return self.act(a);
            }
        }
        if key.code == KeyCode::Tab && key.modifiers.is_empty() {
            let (conv, mut ctx) = self.split();
            if let Some(asks) = conv.complete(&mut ctx) {
                return self.carry_all(asks);
            }
        }
        self.conv.forget_matches();
        if let Some(a) = keymap::lookup(Context::Conversation, &key) {
            return self.act(a);
        }
        let asks = self.conv.edit_key(key);
        self.carry_all(asks)
    }

    /// Keys of the search dialog; `None` keeps the dialog open.
    fn search_key(&mut self, s: &mut SearchState, key: KeyEvent) -> Option<Vec<Effect>> {
        match key.code {
            KeyCode::Esc => {
                self.overlay = Overlay::None;
                self.requests.tokens.remove(&Slot::Search);
                Some(Vec::new())
            }
            KeyCode::Up => {
                s.selected = s.selected.saturating_sub(1);
                None
            }
            KeyCode::Down => {
                s.selected = (s.selected + 1).min(s.hits.len().saturating_sub(1));
                None
            }
            KeyCode::Enter => {
                let hit = s.hits.get(s.selected).cloned()?;
                self.overlay = Overlay::None;
                Some(self.jump(&hit.session_id, hit.seq))
            }
            _ => {
                if s.input.key(&key) == Some(true) {
                    let q = s.input.text.trim().to_string();
                    if q.is_empty() {
                        // A query still in flight answers text that is gone.
                        self.requests.tokens.remove(&Slot::Search);
                        s.hits.clear();
                        s.answered.clear();
                        s.searching = false;
                    } else {
                        s.searching = true;
                        let effect = self.ask(
                            Some(Slot::Search),
                            Request::Search {
                                query: q,
                                limit: SEARCH_HITS,
                            },
                        );
                        self.overlay = Overlay::Search(std::mem::take(s));
                        return Some(vec![effect]);
                    }
                }
                None
            }
        }
    }

    /// Opens a session's transcript at a message (a search hit).
    fn jump(&mut self, id: &str, seq: i64) -> Vec<Effect> {
        let (asks, select_now) = self.browse.jump(id, seq);
        self.screen = Screen::Browse;
        self.tab = Tab::Transcript;
        self.focus = Focus::Detail;
        let mut effects = self.carry_all(asks);
        if select_now {
            effects.extend(self.with_transcript(|t, w, h, th| t.select(seq, w, h, th)));
        }
        self.say(format!("Message #{seq}. Tab goes back to the list."));
        effects
    }

    pub(super) fn paste(&mut self, text: &str) {
        if let Some(ctx) = self.card_focus() {
            self.card_paste(ctx);
            return;
        }
        if self.screen == Screen::Conversation {
            self.typed_now();
        }
        match &mut self.overlay {
            Overlay::Rename { input, .. } => input.paste(text),
            Overlay::Search(s) => s.input.paste(text),
            Overlay::DenyReason { input, .. } => input.paste(text),
            Overlay::AlwaysRule {
                rules, selected, ..
            } => {
                if let Some(input) = rules.get_mut(*selected) {
                    input.paste(text);
                }
            }
            Overlay::None if self.screen == Screen::Conversation => {
                // A pasted path of an existing image (a file dragged into the terminal)
                // attaches the image.
                if let Some(path) =
                    crate::tui::clipboard::pasted_image_path(text, &self.paths.export_dir)
                {
                    let t = path.to_string_lossy().into_owned();
                    self.with_conv(|c, ctx| {
                        c.attach(&t, ctx);
                        Vec::new()
                    });
                } else {
                    self.conv.paste(text)
                }
            }
            _ => {}
        }
    }

    /// Hit-tests against the layout that was drawn.
    pub(super) fn mouse(&mut self, m: MouseEvent) -> Vec<Effect> {
        if !matches!(self.overlay, Overlay::None) || self.too_small() {
            return Vec::new();
        }
        let a = self.layout;
        let at = Position::new(m.column, m.row);
        let in_list = self.screen == Screen::Browse && a.list.contains(at);
        match m.kind {
            MouseEventKind::ScrollDown | MouseEventKind::ScrollUp => {
                let d = if m.kind == MouseEventKind::ScrollDown {
                    WHEEL
                } else {
                    -WHEEL
                };
                if in_list {
                    self.move_list(d)
                } else {
                    self.with_transcript(|t, w, h, th| t.scroll(d, w, h, th))
                }
            }
            MouseEventKind::Down(MouseButton::Left) => {
                if in_list {
                    self.focus = Focus::List;
                    if m.row < a.list_rows.y {
                        return Vec::new();
                    }
                    let drawn = (m.row - a.list_rows.y) as usize;
                    self.with_browse(|b, _| b.click_row(drawn))
                } else if self.screen == Screen::Browse && a.detail.contains(at) {
                    self.focus = Focus::Detail;
                    if let Some(t) = a.tab_at(m.column, m.row) {
                        self.tab = t;
                        return self.tab_data();
                    }
                    Vec::new()
                } else {
                    Vec::new()
                }
            }
            _ => Vec::new(),
        }
    }
}
