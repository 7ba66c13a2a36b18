//! The conversation screen's state: the editor and what it sends (drafts, attachments, the
//! message waiting for its images), the running turn as far as it has arrived, the approval
//! cards' held answer, and the policy and model chosen here. Its transitions are its own:
//! a running turn's events ([`Conversation::on_turn`]: `turn` routes to `stream`, `calls`
//! and `plan_events`) and its actions ([`Conversation::act`]: `actions` routes to `calls`
//! (approvals), `plan_events` (the plan's answer), `send` (sending, cancelling) and `slash`
//! (slash commands, by group in `slash_agent` and `slash_session`); `complete` is Tab in
//! the editor and `cards` the keys of a card waiting for an answer. They see the router
//! through a narrow [`Ctx`] and leave what only the router can do (storage requests, the
//! list, opening a session, its own actions) as [`Ask`]s. The views read it; nothing here
//! imports the router (`tui::app`).

mod actions;
mod calls;
mod cards;
pub mod commands;
mod complete;
mod ctx;
pub mod picker;
mod plan_events;
mod queue;
mod send;
mod slash;
mod slash_agent;
mod slash_session;
mod stream;
mod turn;

pub use ctx::{Ask, Ctx};
pub use slash::{budget_left, limits_text};

use std::collections::HashMap;
use std::path::PathBuf;

use crate::runtime::config::ApprovalPolicy;
use crate::tui::action::Action;
use crate::tui::browse::Detail;
use crate::tui::composer::Composer;
use crate::tui::keymap::Context;
use crate::tui::live::{AgentInfo, Live};

/// Quiet before a one-letter answer: since the last printable key or paste, and since the
/// card appeared (a key typed as it appears was meant for the editor).
pub const ANSWER_BEFORE_MS: i64 = 500;
/// Quiet after it: a printable key this soon after makes it part of a burst of typing.
pub const ANSWER_AFTER_MS: i64 = 300;

/// An answer key waiting to be confirmed by the quiet after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Held {
    pub(crate) action: Action,
    pub(crate) context: Context,
    /// The approval it answers (the call asked about when the key came).
    pub(crate) call: Option<String>,
    pub(crate) at_ms: i64,
}

/// What the conversation screen holds.
pub struct Conversation {
    /// The message editor.
    pub composer: Composer,
    /// The conversation view shows a new session that does not exist yet: it is created
    /// when its first message is sent, so opening one and leaving leaves nothing behind.
    pub draft: bool,
    /// The agent as the status line shows it (set by the loop when it connects one).
    pub agent: AgentInfo,
    /// The running (or last) turn, as far as it has arrived.
    pub live: Option<Live>,
    /// Workspace files for `@path` completion, once listed.
    pub files: Option<std::sync::Arc<Vec<String>>>,
    /// Paths the last `@` completion left to choose from, or the `@` picker's matches
    /// (shown above the editor).
    pub path_matches: Vec<String>,
    /// The `@` picker is open (its keys come first); `path_sel` is its chosen row.
    pub picker: bool,
    pub path_sel: usize,
    /// The workspace's files were asked of the worker (once).
    pub(crate) files_asked: bool,
    /// The workspace root (`@path` attachments are read from it).
    pub root: PathBuf,
    /// Ctrl-G asked for the draft to be edited in `$EDITOR` (the loop runs it).
    pub edit_draft: bool,
    /// Images to send with the next message (`/attach`, a pasted image path).
    pub attachments: Vec<PathBuf>,
    /// Approval policy chosen with `/approve` (else the agent's).
    pub policy: Option<ApprovalPolicy>,
    /// A turn is running: frames are paced for streaming.
    pub(crate) turn_running: bool,
    /// The provider before a `/model` switch the agent has not accepted yet.
    pub(crate) model_before: Option<Result<String, String>>,
    /// A `/model NAME` of a session on its way to the store: (session, model), shown until
    /// the session's header names it.
    pub(crate) model_switch: Option<(String, String)>,
    /// A card's one-letter answer waiting for the quiet after it (see `cards`).
    pub(crate) held: Option<Held>,
    /// When the last printable key or paste came in the conversation, ms.
    pub(crate) last_typed_ms: Option<i64>,
    /// When the card waiting for an answer appeared, ms.
    pub(crate) card_since_ms: i64,
    /// Unsent text of conversations left, by session id ("" for the new session being
    /// written): it is there again when the conversation is opened again.
    pub(crate) drafts: HashMap<String, crate::tui::composer::Draft>,
    /// The queue of this session does not go on by itself, and why (a budget stop, a failure
    /// or a cancel), until the user sends something: (session, why).
    pub(crate) queue_hold: Option<(String, String)>,
    /// The session whose stored hold (its last turn failed, was cancelled or hit a budget) the
    /// user lifted here (see `queue::queue_held`).
    pub(crate) queue_released: Option<String>,
    /// The queued message last handed to the agent (tried once).
    pub(crate) delivering: Option<i64>,
}

impl Conversation {
    /// An empty conversation; `now_ms` starts the card clock.
    pub fn new(now_ms: i64) -> Conversation {
        Conversation {
            composer: Composer::new(),
            draft: false,
            agent: AgentInfo::default(),
            live: None,
            files: None,
            path_matches: Vec::new(),
            picker: false,
            path_sel: 0,
            files_asked: false,
            root: PathBuf::new(),
            edit_draft: false,
            attachments: Vec::new(),
            policy: None,
            turn_running: false,
            model_before: None,
            model_switch: None,
            held: None,
            last_typed_ms: None,
            card_since_ms: now_ms,
            drafts: HashMap::new(),
            queue_hold: None,
            queue_released: None,
            delivering: None,
        }
    }
}

impl Conversation {
    /// What `$EDITOR` left (Ctrl-G): the draft is replaced by it (sanitised like a paste), or
    /// the status says why not.
    pub fn draft_edited(&mut self, result: Result<String, String>, ctx: &mut Ctx<'_>) {
        match result {
            Ok(text) => {
                self.composer.put(&text);
                ctx.say("The message is back from the editor: Enter sends it.");
            }
            Err(why) => ctx.fail(why),
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
    pub fn stash_draft(&mut self, detail: Option<&Detail>) {
        let key = self.draft_key(detail);
        let draft = self.composer.draft_now();
        if draft.shown.trim().is_empty() {
            self.drafts.remove(&key);
        } else {
            self.drafts.insert(key, draft);
        }
        self.composer.set_text("");
    }

    /// Entering a conversation: the text left unsent in it comes back.
    pub fn restore_draft(&mut self, detail: Option<&Detail>) {
        let key = self.draft_key(detail);
        let draft = self.drafts.remove(&key).unwrap_or_default();
        self.composer.set_draft(&draft);
    }
}

#[cfg(test)]
mod tests;
