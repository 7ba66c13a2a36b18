//! The app state and its transitions. Every entry point (`on_key`, `on_mouse`, `on_paste`,
//! `on_resize`, `on_done`, `on_turn`, `tick`, `update`) changes the state and returns the work
//! to do as [`Effect`]s; none does IO.
//!
//! `App` is the router: the screen, focus, tab, dialog, status line, layout and the request
//! tokens; the screens own their state and their transitions: [`Browse`] (`tui::browse`: the
//! list, the filter, the detail pane's reads) and [`Conversation`] (`tui::conversation`).
//! Both answer with [`Ask`](crate::tui::seam::Ask)s the router carries out (`turn`). By
//! concern: `state` names the router's types, `list` hands the list's transitions to
//! `Browse`, `detail` the open session's transcript window, `keys` turns keys and the mouse
//! into actions, `actions` applies the router's and hands the screens theirs, `answers`
//! takes the storage worker's answers (stale ones dropped by slot; the browse screen's go to
//! it), `turn` routes the agent's events and the conversation's actions and carries out what
//! the screens ask back, and `cards` hands a waiting card its keys.

mod actions;
mod answers;
mod cards;
mod copy;
mod detail;
mod find;
mod keys;
mod list;
mod permissions;
mod resume;
mod rewind;
mod state;
mod subagents;
mod turn;

use std::collections::HashMap;
use std::path::PathBuf;

use crossterm::event::{KeyEvent, MouseEvent};
use ratatui::layout::Rect;

pub use crate::tui::browse::{PAGE, WINDOW};
pub use crate::tui::conversation::commands::{
    COMMANDS as SLASH_COMMANDS, matching as slash_matches,
};
pub use crate::tui::conversation::{ANSWER_AFTER_MS, ANSWER_BEFORE_MS};
pub(crate) use crate::tui::transcript::CANCELLED_MARK;
pub use state::ESC_ESC_MS;
pub use state::{
    Confirm, Detail, Filter, Find, Focus, Overlay, PendingSelection, PlanAsk, Row, Screen,
    SearchState, SessionList, Status, Tab,
};

use super::action::Action;
use super::effect::{Effect, TurnEffect};
use super::keymap::Context;
use super::layout::Layout;
use super::theme::Theme;
use crate::runtime::agent::TurnEvent;
use crate::runtime::config::ApprovalPolicy;
use crate::sanitize;
use crate::session::ToolCall;
use crate::tui::browse::Browse;
use crate::tui::conversation::Conversation;
use crate::tui::live::Live;
use crate::tui::worker::{Done, Job, Request};
use state::Slot;

/// How long a status message stays.
pub(crate) const STATUS_MS: i64 = 6_000;
/// How long an error stays (long enough to read a path in it).
pub(crate) const STATUS_ERROR_MS: i64 = 15_000;

/// How the app starts.
#[derive(Debug, Clone)]
pub struct AppOptions {
    pub theme: Theme,
    /// Where exports are written (the current directory).
    pub export_dir: PathBuf,
    /// Workdir recorded for new sessions.
    pub workdir: String,
    /// Workspace root, for the title bar.
    pub root: String,
    pub size: (u16, u16),
    /// The clock, ms since the epoch.
    pub now_ms: i64,
    /// Start in this session's conversation.
    pub resume: Option<String>,
}

/// Where things are written and named: the paths a session, an export and the title bar use.
#[derive(Debug, Clone)]
pub struct Paths {
    /// Where exports go.
    pub export_dir: PathBuf,
    /// Workdir for new sessions.
    pub workdir: String,
    pub root: String,
}

/// The storage requests asked, so a stale answer (another token than its slot's latest) is
/// dropped.
#[derive(Debug, Default)]
struct Requests {
    next_token: u64,
    /// The token of the latest request per slot.
    tokens: HashMap<Slot, u64>,
}

/// The router: which screen shows and what is over it, the status line, the layout drawn
/// into, and the two screens' own state.
pub struct App {
    pub theme: Theme,
    /// The clock used for relative times (set by the loop; fixed in tests).
    pub now_ms: i64,
    pub size: (u16, u16),
    pub paths: Paths,
    pub screen: Screen,
    pub focus: Focus,
    pub tab: Tab,
    pub overlay: Overlay,
    pub status: Option<Status>,
    /// The user asked to quit.
    pub quit: bool,
    /// Where things were last drawn for the terminal size: views draw into it and mouse
    /// clicks are hit-tested against it.
    pub layout: Layout,
    /// The session list and the detail pane.
    pub browse: Browse,
    /// The open conversation: editor, running turn, cards.
    pub conv: Conversation,
    requests: Requests,
    /// The Esc that just left a conversation (a second one opens the rewind dialog).
    esc_back: Option<state::EscBack>,
}

impl App {
    /// A new app and the first work to do.
    pub fn new(opts: AppOptions) -> (App, Vec<Effect>) {
        let conv = Conversation::new(opts.now_ms, PathBuf::from(&opts.root));
        let mut app = App {
            theme: opts.theme,
            now_ms: opts.now_ms,
            size: opts.size,
            paths: Paths {
                export_dir: opts.export_dir,
                workdir: opts.workdir,
                root: opts.root,
            },
            screen: Screen::Browse,
            focus: Focus::List,
            tab: Tab::Transcript,
            overlay: Overlay::None,
            status: None,
            quit: false,
            layout: Layout::default(),
            browse: Browse::default(),
            conv,
            requests: Requests::default(),
            esc_back: None,
        };
        // The change counter's baseline is taken before the first list is read (one worker,
        // in order), so a write landing between the two still shows at the next poll.
        let mut effects = app.tick();
        effects.extend(match opts.resume {
            Some(id) => app.resume(&id),
            None => app.reload_list(),
        });
        app.settle();
        (app, effects)
    }

    /// Opens a session's conversation: `--resume`, a new session, a fork made from the
    /// conversation. The list selects it once a page holding it arrives.
    pub fn resume(&mut self, id: &str) -> Vec<Effect> {
        self.browse.select_when_loaded(PendingSelection::Session {
            id: id.to_string(),
            message: None,
        });
        let mut effects = self.open_detail(id);
        let entering = self.screen != Screen::Conversation;
        self.enter_conversation();
        if entering {
            effects.push(self.load_history());
        }
        effects.extend(self.reload_top());
        effects
    }

    /// Whether the terminal is below the size the TUI draws into; only resizing and
    /// quitting act then (nothing may happen that cannot be seen).
    pub(crate) fn too_small(&self) -> bool {
        let (w, h) = crate::tui::layout::MIN_SIZE;
        self.size.0 < w || self.size.1 < h
    }

    /// Clears a status message that has been shown long enough; true when one went (the
    /// screen needs drawing).
    pub fn expire_status(&mut self, now_ms: i64) -> bool {
        let expired = self.status.as_ref().is_some_and(|s| {
            let ttl = if s.error { STATUS_ERROR_MS } else { STATUS_MS };
            now_ms.saturating_sub(s.at_ms) >= ttl
        });
        if expired {
            self.status = None;
            // A wrapped message's rows go back to the transcript.
            self.settle();
        }
        expired
    }

    /// Handles a key press.
    pub fn on_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        self.settled(|app| app.key(key))
    }

    /// Handles a mouse event: the wheel scrolls what is under it, a click selects.
    pub fn on_mouse(&mut self, m: MouseEvent) -> Vec<Effect> {
        self.settled(|app| app.mouse(m))
    }

    /// Handles pasted text.
    pub fn on_paste(&mut self, text: &str) -> Vec<Effect> {
        if self.too_small() {
            return Vec::new();
        }
        self.paste(text);
        self.settle();
        Vec::new()
    }

    /// What `$EDITOR` left for the draft (Ctrl-G): the new draft, or why not.
    pub(crate) fn draft_edited(&mut self, result: Result<String, crate::tui::editor::EditorError>) {
        self.with_conv(|c, ctx| {
            c.draft_edited(result, ctx);
            Vec::new()
        });
        self.settle();
    }

    /// Handles the terminal being resized.
    pub fn on_resize(&mut self, w: u16, h: u16) -> Vec<Effect> {
        self.size = (w, h);
        self.settle();
        self.load_window()
    }

    /// Applies an action.
    pub fn update(&mut self, action: Action) -> Vec<Effect> {
        self.settled(|app| app.act(action))
    }

    /// Takes a storage answer; stale ones are dropped.
    pub fn on_done(&mut self, done: Done) -> Vec<Effect> {
        self.settled(|app| app.answer(done))
    }

    /// Takes an event of a running turn.
    pub fn on_turn(&mut self, event: TurnEvent) -> Vec<Effect> {
        self.settled(|app| app.turn_event(event))
    }

    /// What a one-call intent of the agent came to ([`crate::tui::Msg::Outcome`]).
    pub fn on_outcome(&mut self, outcome: crate::tui::effect::Outcome) -> Vec<Effect> {
        self.settled(|app| app.with_conv(|c, ctx| c.on_outcome(outcome, ctx)))
    }

    /// Called about once a second: asks whether another process changed the database, so
    /// sessions an agent in another terminal writes show up live.
    pub fn tick(&mut self) -> Vec<Effect> {
        vec![self.ask(None, Request::Poll)]
    }

    /// A turn effect could not be carried out (no provider, the session is busy); says why.
    pub fn turn_refused(&mut self, effect: &TurnEffect, why: &(impl AsRef<str> + ?Sized)) {
        let (conv, mut ctx) = self.split();
        conv.turn_refused(effect, why.as_ref(), &mut ctx);
    }

    /// The model the next request of the open conversation uses: the session's own (kept
    /// in its header, `/model`), else the configured one.
    pub(crate) fn next_model(&self) -> Result<String, crate::tui::error::Failure> {
        self.conv.next_model(self.browse.detail.as_ref())
    }

    /// The approval policy of the next turn.
    pub fn approval(&self) -> ApprovalPolicy {
        self.conv.approval()
    }

    /// A turn runs (here or in the background) and has not finished.
    pub(crate) fn turn_active(&self) -> bool {
        self.conv.turn_active()
    }

    /// The tightest budget left, in words (the status line), when any is set.
    pub(crate) fn budget_left(&self) -> Option<String> {
        crate::tui::conversation::budget_left(self.browse.detail.as_ref())
    }

    /// The live turn, when it belongs to the session shown in the conversation view.
    pub(crate) fn live_here(&self) -> Option<&Live> {
        self.conv
            .live_here(self.screen, self.browse.detail.as_ref())
    }

    /// Whether something on screen moves by itself (a streaming turn), so the loop draws
    /// frames on a timer, at most ~30 a second.
    pub fn animating(&self) -> bool {
        self.conv.animating()
    }

    /// The key context of the current screen.
    pub(crate) fn context(&self) -> Context {
        match self.screen {
            Screen::Browse => Context::Browse,
            Screen::Conversation => Context::Conversation,
        }
    }

    /// The key contexts that come before the editor's, most specific first.
    pub(crate) fn turn_contexts(&self) -> Vec<Context> {
        self.conv
            .turn_contexts(self.screen, self.browse.detail.as_ref())
    }

    /// The layout of the current state: the same function the views and the mouse use, here
    /// for transitions that run before the state settles (a screen change mid-update).
    fn current_layout(&self) -> Layout {
        Layout::compute_with_status(
            self.screen,
            self.browse.list.filter.is_some(),
            self.conv.composer().rows(),
            self.status_rows(),
            Rect::new(0, 0, self.size.0, self.size.1),
        )
    }

    /// The status message wrapped to the terminal's width (what the status line shows; one
    /// line while the line edits something or shows the transcript search).
    pub(crate) fn status_lines(&self) -> Vec<ratatui::text::Line<'static>> {
        let Some(s) = &self.status else {
            return Vec::new();
        };
        let style = if s.error {
            self.theme.error()
        } else {
            self.theme.text()
        };
        crate::tui::markdown::wrap(
            &[(s.text.clone(), style)],
            self.size.0.saturating_sub(1) as usize,
            " ",
            " ",
        )
    }

    /// Rows the status line needs: a message longer than the width wraps (at most
    /// [`crate::tui::layout::STATUS_MAX_ROWS`]) instead of being cut.
    pub(crate) fn status_rows(&self) -> u16 {
        let editing = matches!(
            self.overlay,
            Overlay::Rename { .. } | Overlay::DenyReason { .. } | Overlay::AlwaysRule { .. }
        ) || matches!(&self.overlay, Overlay::Plan(p) if p.dropping.is_some());
        if editing || self.find().is_some() {
            return 1;
        }
        self.status_lines().len().max(1) as u16
    }

    /// Runs a transition, then settles (see [`App::settle`]).
    fn settled(&mut self, transition: impl FnOnce(&mut Self) -> Vec<Effect>) -> Vec<Effect> {
        let effects = transition(self);
        self.settle();
        effects
    }

    /// After every transition: the layout for what will be drawn, and the list's first drawn
    /// row moved just enough to show the selection.
    fn settle(&mut self) {
        self.layout = self.current_layout();
        if self.screen == Screen::Browse {
            self.browse
                .list
                .keep_in_view(self.layout.list_rows.height as usize);
        }
    }

    fn job(&mut self, slot: Option<Slot>, request: Request) -> Job {
        self.requests.next_token += 1;
        if let Some(s) = slot {
            self.requests.tokens.insert(s, self.requests.next_token);
        }
        Job {
            token: self.requests.next_token,
            request,
        }
    }

    fn ask(&mut self, slot: Option<Slot>, request: Request) -> Effect {
        Effect::Storage(self.job(slot, request))
    }

    /// Whether `token` answers the latest request of `slot`.
    fn current(&self, slot: Slot, token: u64) -> bool {
        self.requests.tokens.get(&slot) == Some(&token)
    }

    /// The slot whose latest request `token` is (tokens are never reused: one at most).
    fn slot_of(&self, token: u64) -> Option<Slot> {
        self.requests
            .tokens
            .iter()
            .find_map(|(slot, t)| (*t == token).then_some(*slot))
    }

    /// Leaving a conversation: its unsent text is kept for when it is opened again.
    fn stash_draft(&mut self) {
        self.conv.stash_draft(self.browse.detail.as_ref());
    }

    /// Entering a conversation: the text left unsent in it comes back.
    fn restore_draft(&mut self) {
        self.conv.restore_draft(self.browse.detail.as_ref());
    }

    fn say(&mut self, text: impl Into<String>) {
        self.status = Some(Status {
            text: text.into(),
            error: false,
            at_ms: self.now_ms,
        });
    }

    fn fail(&mut self, text: impl Into<String>) {
        self.status = Some(Status {
            text: text.into(),
            error: true,
            at_ms: self.now_ms,
        });
    }
}

/// What the user is told about tool calls a stopped session left without a result.
pub(crate) fn interrupted_note(calls: &[ToolCall]) -> String {
    let names: Vec<String> = calls
        .iter()
        .map(|c| sanitize::line(&c.name).into_owned())
        .collect();
    let n = calls.len();
    let (plural, them) = if n == 1 { ("", "it") } else { ("s", "them") };
    format!(
        "Stopped mid-turn: {n} tool call{plural} never got a result ({}); resuming replays {them}.",
        names.join(", ")
    )
}

/// Carries out `effects` on this thread, as the loop would, feeding every storage answer back
/// into `app` until no work is left. For headless use: tests, benchmarks, scripted runs. Turn
/// effects need an agent, which a headless run has not: they are returned, in order.
#[cfg(any(test, feature = "testkit"))]
pub fn run_inline(
    app: &mut App,
    sessions: &crate::runtime::Sessions,
    effects: Vec<Effect>,
) -> Vec<TurnEffect> {
    let mut turns = Vec::new();
    let mut queue: std::collections::VecDeque<Effect> = effects.into();
    while let Some(e) = queue.pop_front() {
        match e {
            Effect::Storage(j) => {
                let result = crate::tui::worker::handle(sessions, j.request);
                queue.extend(app.on_done(Done {
                    token: j.token,
                    result,
                }));
            }
            Effect::Turn(t) => turns.push(t),
            // Bytes for the terminal: a headless run has none.
            Effect::Clipboard(_) => {}
        }
    }
    turns
}
