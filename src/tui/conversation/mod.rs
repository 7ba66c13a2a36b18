//! The conversation screen's state and transitions. Its state is cut into parts that own
//! their fields: the `Editor` (`editor/`: the message being written, the `@` picker and
//! completion, attachments, the unsent drafts of conversations left), the `TurnView` (the
//! running turn as far as it has arrived, the cards' clock and held answer), the `Delivery`
//! of the session's queue and the `AgentState` (the agent as shown, the policy and model
//! chosen here). No file sees all of them; the router and the views call methods of
//! [`Conversation`]. Its transitions are its own: a running turn's events
//! ([`Conversation::on_turn`]: `turn` routes to `stream`, `calls` and `plan_events`) and its
//! actions ([`Conversation::act`]: `actions` routes to `calls` (approvals), `plan_events`
//! (the plan's answer), `send` (sending, cancelling) and `slash` (slash commands, by group
//! in `slash_agent` and `slash_session`); `cards` takes the keys of a card waiting for an
//! answer. They see the router through a narrow [`Ctx`] and leave what only the router can
//! do (storage requests, the list, opening a session, its own actions) as [`Ask`]s. Nothing
//! here imports the router (`tui::app`).

mod actions;
mod agent_state;
mod calls;
mod cards;
pub(crate) mod commands;
mod delivery;
mod editor;
mod limits;
mod plan_events;
mod queue;
mod send;
mod slash;
mod slash_agent;
mod slash_session;
mod stream;
mod turn;
mod turn_view;

pub(crate) use crate::tui::seam::{Ask, Ctx};
pub(crate) use editor::picker;
pub(crate) use limits::budget_left;
pub use turn_view::{ANSWER_AFTER_MS, ANSWER_BEFORE_MS};

use std::path::PathBuf;

use crossterm::event::KeyEvent;

use crate::tui::composer::Composer;
use crate::tui::live::{AgentInfo, Live};
use crate::tui::pane::Detail;
use agent_state::AgentState;
use delivery::Delivery;
use editor::Editor;
use turn_view::TurnView;

/// What the conversation screen holds, in parts that own their fields: the editor, the
/// running turn, the queue's delivery and the agent. Only the conversation's transitions see
/// the parts; the router and the views call methods.
pub struct Conversation {
    editor: Editor,
    turn: TurnView,
    delivery: Delivery,
    agent: AgentState,
    /// The conversation view shows a new session that does not exist yet: it is created
    /// when its first message is sent, so opening one and leaving leaves nothing behind.
    draft: bool,
    /// The custom slash commands the completion offers and Enter expands.
    custom: crate::runtime::extensions::commands::CustomCommands,
}

impl Conversation {
    /// An empty conversation; `now_ms` starts the card clock, `root` is the workspace
    /// `@path` attachments are read from.
    pub(crate) fn new(now_ms: i64, root: PathBuf) -> Conversation {
        let mut editor = Editor::new();
        editor.set_root(root);
        Conversation {
            editor,
            turn: TurnView::new(now_ms),
            delivery: Delivery::default(),
            agent: AgentState::default(),
            draft: false,
            custom: crate::runtime::extensions::commands::CustomCommands::default(),
        }
    }

    /// The custom slash commands found for this workspace (`runtime::trust::custom_commands`).
    pub fn set_commands(&mut self, custom: crate::runtime::extensions::commands::CustomCommands) {
        self.custom = custom;
    }

    /// The custom slash commands given at start.
    #[cfg(test)]
    pub(crate) fn custom_commands(&self) -> &crate::runtime::extensions::commands::CustomCommands {
        &self.custom
    }

    /// The slash commands, built-in then custom, whose name starts with what is typed: name,
    /// arguments, what it does (one sanitised line each).
    pub(crate) fn slash_matches(&self) -> Vec<(String, String, String)> {
        commands::matching_all(&self.editor.composer().text(), &self.custom)
    }

    /// The message editor, read.
    pub fn composer(&self) -> &Composer {
        self.editor.composer()
    }

    /// Whether the view shows a new session that does not exist yet.
    pub(crate) fn draft(&self) -> bool {
        self.draft
    }

    /// Shows (or stops showing) a new session that does not exist yet.
    pub(crate) fn set_draft(&mut self, draft: bool) {
        self.draft = draft;
    }

    /// The agent as the status line shows it.
    pub(crate) fn agent(&self) -> &AgentInfo {
        self.agent.info()
    }

    /// The loop connected an agent: this is how the status line shows it.
    pub fn set_agent(&mut self, info: AgentInfo) {
        self.agent.set_info(info);
    }

    /// The configured model, or what to configure (a run without an agent sets it).
    pub fn set_provider(&mut self, provider: Result<String, crate::tui::error::Failure>) {
        self.agent.set_provider(provider);
    }

    /// The running (or last) turn, as far as it has arrived.
    pub fn live(&self) -> Option<&Live> {
        self.turn.live()
    }

    /// Whether a turn of session `id` runs in this app and has not finished.
    pub(crate) fn running_in(&self, id: &str) -> bool {
        self.turn
            .live()
            .is_some_and(|l| !l.finished && l.session_id.as_deref() == Some(id))
    }

    /// Whether a turn streams (frames are paced for it).
    pub(crate) fn animating(&self) -> bool {
        self.turn.running()
    }

    /// Whether a card's one-letter answer waits for the quiet after it.
    pub(crate) fn holds_answer(&self) -> bool {
        self.turn.held().is_some()
    }

    /// Session `id`'s stored header names `model`: a `/model` switch to it is done.
    pub(crate) fn model_stored(&mut self, id: &str, model: &str) {
        self.agent.model_stored(id, model);
    }

    /// Workspace files for `@path` completion, once listed.
    pub fn files(&self) -> Option<&std::sync::Arc<Vec<String>>> {
        self.editor.files()
    }

    /// Paths offered above the editor (the `@` picker's matches or the last completion's).
    pub(crate) fn path_matches(&self) -> &[String] {
        self.editor.path_matches()
    }

    /// The `@` picker's chosen row, while it lists files.
    pub(crate) fn picker_row(&self) -> Option<usize> {
        self.editor.picker_row()
    }

    /// Whether the `@` picker lists files now (its keys come before the editor's).
    pub fn picker_open(&self) -> bool {
        self.editor.picker_open()
    }

    /// A key while the picker is open: moving, choosing, closing; `None` for a key the
    /// editor takes.
    pub(crate) fn picker_key(&mut self, key: KeyEvent) -> Option<Vec<Ask>> {
        self.editor.picker_key(key)
    }

    /// The worker's matches for `query`: shown if the `@word` being typed is still that.
    pub(crate) fn ranked(&mut self, query: &str, matches: Vec<String>) {
        self.editor.ranked(query, matches);
    }

    /// The workspace's files arrived: the picker waiting for them ranks them, else the Tab
    /// that asked for them completes.
    pub(crate) fn files_listed(&mut self, files: Vec<String>, ctx: &mut Ctx<'_>) -> Vec<Ask> {
        if self.editor.set_files(files) {
            return self.editor.refresh_picker();
        }
        self.editor.complete_path(ctx);
        Vec::new()
    }

    /// Tab in the editor: completes a slash command or an `@path`; `None` when there was
    /// nothing to complete.
    pub(crate) fn complete(&mut self, ctx: &mut Ctx<'_>) -> Option<Vec<Ask>> {
        self.editor.complete(&self.custom, ctx)
    }

    /// Images waiting to go with the next message.
    pub fn attachments(&self) -> &[PathBuf] {
        self.editor.attachments()
    }

    /// Ctrl-C with text in the editor: it is cleared (↑ or Ctrl-Z brings it back) and the
    /// paths offered go; false when the editor was empty.
    pub(crate) fn clear_message(&mut self) -> bool {
        if !self.editor.composer_mut().clear_to_history() {
            return false;
        }
        self.editor.close_picker();
        true
    }

    /// A key that is no action: the paths offered go (the key makes them stale).
    pub(crate) fn forget_matches(&mut self) {
        self.editor.clear_matches();
    }

    /// A key for the editor: it edits, and the `@` picker follows what is typed.
    pub(crate) fn edit_key(&mut self, key: KeyEvent) -> Vec<Ask> {
        self.editor.composer_mut().key(key);
        self.editor.refresh_picker()
    }

    /// Pasted text goes into the editor.
    pub(crate) fn paste(&mut self, text: &str) {
        self.editor.composer_mut().paste(text);
    }

    /// What was typed in this workspace before, oldest first (↑ in the editor).
    pub(crate) fn set_history(&mut self, typed: Vec<String>) {
        self.editor.composer_mut().set_history(typed);
    }

    /// The draft to edit in `$EDITOR`, when Ctrl-G asked for it (the request is taken).
    pub(crate) fn take_edit_request(&mut self) -> Option<String> {
        self.editor
            .take_edit()
            .then(|| self.editor.composer().message())
    }

    /// What `$EDITOR` left (Ctrl-G): the draft is replaced by it (sanitised like a paste), or
    /// the status says why not.
    pub(crate) fn draft_edited(
        &mut self,
        result: Result<String, crate::tui::editor::EditorError>,
        ctx: &mut Ctx<'_>,
    ) {
        match result {
            Ok(text) => {
                self.editor.composer_mut().put(&text);
                ctx.say("The message is back from the editor: Enter sends it.");
            }
            Err(why) => ctx.fail(why.to_string()),
        }
    }

    /// Which conversation the editor's text belongs to (`detail`: the open session).
    fn draft_key(&self, detail: Option<&Detail>) -> String {
        match (detail, self.draft) {
            (Some(d), false) => d.id.clone(),
            _ => String::new(),
        }
    }

    /// Leaving a conversation: its unsent text is kept for when it is opened again.
    pub(crate) fn stash_draft(&mut self, detail: Option<&Detail>) {
        let key = self.draft_key(detail);
        self.editor.stash(key);
    }

    /// Entering a conversation: the text left unsent in it comes back.
    pub(crate) fn restore_draft(&mut self, detail: Option<&Detail>) {
        let key = self.draft_key(detail);
        self.editor.restore(&key);
    }
}

#[cfg(test)]
mod tests;
