//! The app state and its transitions. `on_key`, `on_mouse`, `on_done` and `update` change the
//! state and return the storage work to run as data ([`Job`]s); they never do IO.

use std::collections::HashMap;
use std::path::PathBuf;

use crossterm::event::{
    KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};
use ratatui::layout::{Position, Rect};

use super::action::Action;
use super::input::Input;
use super::keymap::{self, Context};
use super::theme::Theme;
use super::transcript::{Transcript, chunk_range};
use super::views;
use crate::sanitize;
use crate::session::{
    AssetMeta, ListQuery, PageKey, PlanProgress, SearchHit, SessionHeader, SessionSummary,
    ToolCall, Usage,
};
use crate::tui::worker::{Done, Job, Reply, Request};

/// Sessions per list page.
pub const PAGE: usize = 200;
/// Fetch the next page when the selection is this close to the end of what is loaded.
const PREFETCH: usize = 50;

/// Which screen is showing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    /// Session list + detail.
    Browse,
    /// One session's conversation: transcript, input box, status line.
    Conversation,
}

/// Which pane of the browse screen has the keyboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    /// The session list.
    List,
    /// The detail pane.
    Detail,
}

/// Detail tabs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    /// Messages.
    Transcript,
    /// The plan DAG.
    Plan,
    /// Token usage and budgets.
    Usage,
    /// Stored assets.
    Assets,
    /// Ids, paths, model.
    Info,
}

impl Tab {
    /// Tabs in order.
    pub const ALL: [Tab; 5] = [
        Tab::Transcript,
        Tab::Plan,
        Tab::Usage,
        Tab::Assets,
        Tab::Info,
    ];

    /// Tab title.
    pub fn title(self) -> &'static str {
        match self {
            Tab::Transcript => "Transcript",
            Tab::Plan => "Plan",
            Tab::Usage => "Usage",
            Tab::Assets => "Assets",
            Tab::Info => "Info",
        }
    }

    fn index(self) -> usize {
        Tab::ALL.iter().position(|t| *t == self).unwrap_or(0)
    }
}

/// The full-text search dialog.
#[derive(Debug, Clone, Default)]
pub struct SearchState {
    /// The query being typed.
    pub input: Input,
    /// Hits of the last answered query.
    pub hits: Vec<SearchHit>,
    /// Selected hit.
    pub selected: usize,
    /// A query is in flight.
    pub searching: bool,
    /// The query `hits` answer.
    pub answered: String,
}

/// A dialog over the screen.
#[derive(Debug, Clone, Default)]
pub enum Overlay {
    /// Nothing.
    #[default]
    None,
    /// The help screen, scrolled.
    Help(u16),
    /// "Delete this session?"
    ConfirmDelete {
        /// Session id.
        id: String,
        /// Its title (sanitised).
        title: String,
    },
    /// Renaming inline.
    Rename {
        /// Session id.
        id: String,
        /// The new title being typed.
        input: Input,
    },
    /// Full-text search.
    Search(SearchState),
}

/// The list filter.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// The filter text.
    pub input: Input,
    /// Keys go to the filter input.
    pub editing: bool,
}

/// One visible row of the list.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Index into [`SessionList::rows`].
    pub idx: usize,
    /// Tree depth (forks under their parent).
    pub depth: u8,
    /// Matched character indices of the sanitised title.
    pub hl: Vec<u32>,
}

/// The session list as loaded so far.
#[derive(Debug, Default)]
pub struct SessionList {
    /// Loaded rows, newest activity first.
    pub rows: Vec<SessionSummary>,
    /// Sanitised display titles, parallel to `rows`.
    pub titles: Vec<String>,
    /// Key of the next page, if any.
    pub next: Option<PageKey>,
    /// A page is being loaded.
    pub loading: bool,
    /// The first answer has arrived.
    pub loaded: bool,
    /// All sessions in the workspace.
    pub total: Option<u64>,
    /// `G` was pressed before every page was loaded: select the last row once they are.
    pub jump_to_end: bool,
    /// A search jumped to a session not loaded yet: select it once its page arrives.
    pub select_when_loaded: Option<String>,
    /// The filter, when one is active.
    pub filter: Option<Filter>,
    /// Rows as shown (tree order, or filter matches).
    pub visible: Vec<Row>,
    /// Selected index into `visible`.
    pub selected: usize,
    /// First row drawn (kept between frames so the list does not jump).
    pub offset: std::cell::Cell<usize>,
    /// Screen row of the first drawn session row (for mouse clicks).
    pub rows_y: std::cell::Cell<u16>,
}

impl SessionList {
    /// The selected session.
    pub fn current(&self) -> Option<&SessionSummary> {
        self.visible
            .get(self.selected)
            .and_then(|r| self.rows.get(r.idx))
    }
}

/// What the detail pane shows.
#[derive(Debug)]
pub struct Detail {
    /// Session id.
    pub id: String,
    /// Header, once loaded.
    pub header: Option<SessionHeader>,
    /// Plan progress.
    pub progress: PlanProgress,
    /// Assets.
    pub assets: Vec<AssetMeta>,
    /// Selected asset.
    pub asset_sel: usize,
    /// Per-turn usage, once loaded.
    pub usage: Option<Vec<(i64, Usage)>>,
    /// Usage was asked for.
    pub usage_requested: bool,
    /// The transcript window (after the header arrived).
    pub transcript: Option<Transcript>,
    /// Scroll of the plan/usage/info tabs.
    pub scroll: u16,
    /// Message to select once the transcript exists (a search jump).
    pub jump: Option<i64>,
    /// Tool calls left without a result when the session stopped (replayed on resume).
    pub interrupted: Vec<ToolCall>,
    /// Instruction files, skills and MCP servers its turns take in (Info tab).
    pub context: Option<Box<crate::runtime::context::ContextReport>>,
}

impl Detail {
    fn new(id: &str) -> Detail {
        Detail {
            id: id.to_string(),
            header: None,
            progress: PlanProgress::default(),
            assets: Vec::new(),
            asset_sel: 0,
            interrupted: Vec::new(),
            context: None,
            usage: None,
            usage_requested: false,
            transcript: None,
            scroll: 0,
            jump: None,
        }
    }
}

/// A status-line message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// Text.
    pub text: String,
    /// Shown as an error.
    pub error: bool,
}

/// Requests whose stale answers are dropped: only the latest token per slot counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Slot {
    List,
    Detail,
    Usage,
    Search,
}

/// How the app starts.
#[derive(Debug, Clone)]
pub struct AppOptions {
    /// Theme.
    pub theme: Theme,
    /// Where exports are written (the current directory).
    pub export_dir: PathBuf,
    /// Workdir recorded for new sessions.
    pub workdir: String,
    /// Workspace root, for the title bar.
    pub root: String,
    /// Terminal size.
    pub size: (u16, u16),
    /// The clock, ms since the epoch.
    pub now_ms: i64,
    /// Start in this session's conversation.
    pub resume: Option<String>,
}

/// The whole TUI state.
pub struct App {
    /// Theme.
    pub theme: Theme,
    /// The clock used for relative times (set by the loop; fixed in tests).
    pub now_ms: i64,
    /// Terminal size.
    pub size: (u16, u16),
    /// Where exports go.
    pub export_dir: PathBuf,
    /// Workdir for new sessions.
    pub workdir: String,
    /// Workspace root.
    pub root: String,
    /// Screen.
    pub screen: Screen,
    /// Focused pane.
    pub focus: Focus,
    /// Detail tab.
    pub tab: Tab,
    /// Dialog.
    pub overlay: Overlay,
    /// Session list.
    pub list: SessionList,
    /// Detail of the selected (or opened) session.
    pub detail: Option<Detail>,
    /// The conversation input box.
    pub input: Input,
    /// Status line.
    pub status: Option<Status>,
    /// The user asked to quit.
    pub quit: bool,
    /// The database change counter last seen (see [`App::tick`]).
    data_version: Option<i64>,
    /// Something changed elsewhere: refresh the open session once the list is back.
    refresh_after_list: bool,
    next_token: u64,
    pending: HashMap<Slot, u64>,
    want_select: Option<String>,
    matcher: Box<Matcher>,
}

impl App {
    /// A new app and the first storage work to run.
    pub fn new(opts: AppOptions) -> (App, Vec<Job>) {
        let mut app = App {
            theme: opts.theme,
            now_ms: opts.now_ms,
            size: opts.size,
            export_dir: opts.export_dir,
            workdir: opts.workdir,
            root: opts.root,
            screen: Screen::Browse,
            focus: Focus::List,
            tab: Tab::Transcript,
            overlay: Overlay::None,
            list: SessionList::default(),
            detail: None,
            input: Input::default(),
            status: None,
            quit: false,
            data_version: None,
            refresh_after_list: false,
            next_token: 0,
            pending: HashMap::new(),
            want_select: None,
            matcher: Box::new(Matcher::new(Config::DEFAULT)),
        };
        let mut jobs = app.reload_list();
        if let Some(id) = opts.resume {
            app.want_select = Some(id.clone());
            jobs.extend(app.open_detail(&id));
            app.enter_conversation();
        }
        (app, jobs)
    }

    fn job(&mut self, slot: Option<Slot>, request: Request) -> Job {
        self.next_token += 1;
        if let Some(s) = slot {
            self.pending.insert(s, self.next_token);
        }
        Job {
            token: self.next_token,
            request,
        }
    }

    fn say(&mut self, text: impl Into<String>) {
        self.status = Some(Status {
            text: text.into(),
            error: false,
        });
    }

    fn fail(&mut self, text: impl Into<String>) {
        self.status = Some(Status {
            text: text.into(),
            error: true,
        });
    }

    /// The key context of the current screen.
    pub fn context(&self) -> Context {
        match self.screen {
            Screen::Browse => Context::Browse,
            Screen::Conversation => Context::Conversation,
        }
    }

    // ----- list ------------------------------------------------------------------------------

    fn reload_list(&mut self) -> Vec<Job> {
        self.list.loading = true;
        let limit = self.list.rows.len().max(PAGE);
        vec![self.job(
            Some(Slot::List),
            Request::List {
                query: ListQuery {
                    limit,
                    ..ListQuery::default()
                },
                count: true,
            },
        )]
    }

    fn next_page(&mut self) -> Vec<Job> {
        if self.list.loading {
            return Vec::new();
        }
        self.load_after(PAGE)
    }

    /// Every page not loaded yet, as one request (header rows only: ~1 ms per thousand).
    fn rest_of_list(&mut self) -> Vec<Job> {
        self.load_after(0)
    }

    /// Loads `limit` rows (0 = all) after the last loaded one.
    fn load_after(&mut self, limit: usize) -> Vec<Job> {
        let Some(after) = self.list.next.clone() else {
            return Vec::new();
        };
        self.list.loading = true;
        vec![self.job(
            Some(Slot::List),
            Request::List {
                query: ListQuery {
                    limit,
                    after: Some(after),
                    ..ListQuery::default()
                },
                count: false,
            },
        )]
    }

    fn maybe_prefetch(&mut self) -> Vec<Job> {
        let filtering = self
            .list
            .filter
            .as_ref()
            .is_some_and(|f| !f.input.text.is_empty());
        if filtering || self.list.selected + PREFETCH >= self.list.visible.len() {
            self.next_page()
        } else {
            Vec::new()
        }
    }

    /// Rebuilds the visible rows (tree order, or fuzzy matches), keeping the selected session.
    fn rebuild(&mut self) {
        let current = self.list.current().map(|s| s.id.clone());
        self.rebuild_keeping(current);
    }

    /// [`App::rebuild`] when the rows were replaced: `current` is the id selected before.
    fn rebuild_keeping(&mut self, current: Option<String>) {
        let keep = self.want_select.clone().or(current);
        let text = self
            .list
            .filter
            .as_ref()
            .map(|f| f.input.text.trim().to_string())
            .unwrap_or_default();
        self.list.visible = if text.is_empty() {
            tree(&self.list.rows)
        } else {
            let pattern = Pattern::parse(&text, CaseMatching::Ignore, Normalization::Smart);
            let mut buf = Vec::new();
            let mut scored: Vec<(u32, Row)> = Vec::new();
            for (idx, s) in self.list.rows.iter().enumerate() {
                let mut hl = Vec::new();
                let title = &self.list.titles[idx];
                let t = pattern.indices(Utf32Str::new(title, &mut buf), &mut self.matcher, &mut hl);
                let p = pattern.score(Utf32Str::new(&s.first_prompt, &mut buf), &mut self.matcher);
                let score = match (t, p) {
                    (Some(a), Some(b)) => a.max(b),
                    (Some(a), None) => a,
                    (None, Some(b)) => b,
                    (None, None) => continue,
                };
                if t.is_none() {
                    hl.clear();
                }
                hl.sort_unstable();
                hl.dedup();
                scored.push((score, Row { idx, depth: 0, hl }));
            }
            // Stable: equal scores keep activity order.
            scored.sort_by_key(|(s, _)| std::cmp::Reverse(*s));
            scored.into_iter().map(|(_, r)| r).collect()
        };
        if let Some(id) = keep
            && let Some(pos) = self
                .list
                .visible
                .iter()
                .position(|r| self.list.rows[r.idx].id == id)
        {
            self.list.selected = pos;
            if self.want_select.as_deref() == Some(id.as_str()) {
                self.want_select = None;
            }
        }
        self.list.selected = self
            .list
            .selected
            .min(self.list.visible.len().saturating_sub(1));
    }

    fn move_list(&mut self, delta: i64) -> Vec<Job> {
        let n = self.list.visible.len();
        if n == 0 {
            return Vec::new();
        }
        let sel = (self.list.selected as i64 + delta).clamp(0, n as i64 - 1) as usize;
        self.list.selected = sel;
        let mut jobs = self.sync_detail();
        jobs.extend(self.maybe_prefetch());
        jobs
    }

    /// Makes the detail pane follow the list selection.
    fn sync_detail(&mut self) -> Vec<Job> {
        let Some(id) = self.list.current().map(|s| s.id.clone()) else {
            self.detail = None;
            return Vec::new();
        };
        if self.detail.as_ref().is_some_and(|d| d.id == id) {
            return Vec::new();
        }
        self.open_detail(&id)
    }

    fn open_detail(&mut self, id: &str) -> Vec<Job> {
        self.detail = Some(Detail::new(id));
        vec![self.job(Some(Slot::Detail), Request::Detail { id: id.to_string() })]
    }

    fn refresh_detail(&mut self) -> Vec<Job> {
        match self.detail.as_ref().map(|d| d.id.clone()) {
            Some(id) => vec![self.job(Some(Slot::Detail), Request::Detail { id })],
            None => Vec::new(),
        }
    }

    // ----- transcript ------------------------------------------------------------------------

    /// Columns and rows of the transcript viewport.
    pub fn viewport(&self) -> (usize, usize) {
        let a = views::areas(self, Rect::new(0, 0, self.size.0, self.size.1));
        (
            a.transcript.width.saturating_sub(1) as usize,
            a.transcript.height as usize,
        )
    }

    fn load_window(&mut self) -> Vec<Job> {
        let (_, h) = self.viewport();
        let Some(t) = self.detail.as_ref().and_then(|d| d.transcript.as_ref()) else {
            return Vec::new();
        };
        let id = t.id.clone();
        let wanted = t.wanted_chunks(h);
        let mut jobs = Vec::new();
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
            if let Some(t) = self.detail.as_mut().and_then(|d| d.transcript.as_mut()) {
                t.requested(c, job.token);
            }
            jobs.push(job);
        }
        jobs
    }

    fn with_transcript(
        &mut self,
        f: impl FnOnce(&mut Transcript, usize, usize, &Theme),
    ) -> Vec<Job> {
        let (w, h) = self.viewport();
        let theme = self.theme;
        if let Some(t) = self.detail.as_mut().and_then(|d| d.transcript.as_mut()) {
            f(t, w, h, &theme);
        }
        self.load_window()
    }

    fn tab_data(&mut self) -> Vec<Job> {
        let mut jobs = Vec::new();
        if self.tab == Tab::Usage
            && let Some(d) = self.detail.as_mut()
            && !d.usage_requested
        {
            d.usage_requested = true;
            let id = d.id.clone();
            jobs.push(self.job(Some(Slot::Usage), Request::Usage { id }));
        }
        jobs.extend(self.load_window());
        jobs
    }

    fn enter_conversation(&mut self) {
        self.screen = Screen::Conversation;
        self.overlay = Overlay::None;
        if let Some(t) = self.detail.as_mut().and_then(|d| d.transcript.as_mut()) {
            t.follow_end = true;
            t.selected = None;
        }
        match self.detail.as_ref().map(|d| d.interrupted.as_slice()) {
            Some(calls) if !calls.is_empty() => {
                let note = interrupted_note(calls);
                self.say(note);
            }
            _ => self.say("Type a message and press Enter. Esc goes back to the list."),
        }
    }

    // ----- input -----------------------------------------------------------------------------

    /// Handles a key press.
    pub fn on_key(&mut self, key: KeyEvent) -> Vec<Job> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
            self.quit = true;
            return Vec::new();
        }
        match std::mem::take(&mut self.overlay) {
            Overlay::None => {}
            Overlay::Help(scroll) => {
                self.overlay = match key.code {
                    KeyCode::Char('j') | KeyCode::Down => Overlay::Help(scroll.saturating_add(1)),
                    KeyCode::Char('k') | KeyCode::Up => Overlay::Help(scroll.saturating_sub(1)),
                    _ => Overlay::None,
                };
                return Vec::new();
            }
            Overlay::ConfirmDelete { id, title } => {
                return match key.code {
                    KeyCode::Char('y') | KeyCode::Char('Y') | KeyCode::Enter => {
                        self.say(format!("Deleting \"{title}\"…"));
                        vec![self.job(None, Request::Delete { id })]
                    }
                    _ => {
                        self.say("Delete cancelled.");
                        Vec::new()
                    }
                };
            }
            Overlay::Rename { id, mut input } => {
                return match key.code {
                    KeyCode::Enter => {
                        let title = input.text.trim().to_string();
                        vec![self.job(None, Request::Rename { id, title })]
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
                };
            }
            Overlay::Search(mut s) => {
                return self.search_key(&mut s, key).unwrap_or_else(|| {
                    self.overlay = Overlay::Search(s);
                    Vec::new()
                });
            }
        }
        if self.screen == Screen::Conversation {
            if let Some(a) = keymap::lookup(Context::Conversation, &key) {
                return self.update(a);
            }
            self.input.key(&key);
            return Vec::new();
        }
        if let Some(f) = self.list.filter.as_mut()
            && f.editing
        {
            match key.code {
                KeyCode::Enter => {
                    f.editing = false;
                    if f.input.text.is_empty() {
                        self.list.filter = None;
                    }
                    return Vec::new();
                }
                KeyCode::Esc => {
                    self.list.filter = None;
                    self.rebuild();
                    return self.sync_detail();
                }
                KeyCode::Up => return self.move_list(-1),
                KeyCode::Down => return self.move_list(1),
                _ => {
                    if f.input.key(&key) == Some(true) {
                        self.list.selected = 0;
                        self.rebuild();
                        let mut jobs = self.sync_detail();
                        jobs.extend(self.maybe_prefetch());
                        return jobs;
                    }
                    return Vec::new();
                }
            }
        }
        match keymap::lookup(Context::Browse, &key) {
            Some(a) => self.update(a),
            None => Vec::new(),
        }
    }

    /// Keys of the search dialog; `None` keeps the dialog open.
    fn search_key(&mut self, s: &mut SearchState, key: KeyEvent) -> Option<Vec<Job>> {
        match key.code {
            KeyCode::Esc => {
                self.overlay = Overlay::None;
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
                        s.hits.clear();
                        s.answered.clear();
                        s.searching = false;
                    } else {
                        s.searching = true;
                        let job = self.job(
                            Some(Slot::Search),
                            Request::Search {
                                query: q,
                                limit: 200,
                            },
                        );
                        self.overlay = Overlay::Search(std::mem::take(s));
                        return Some(vec![job]);
                    }
                }
                None
            }
        }
    }

    /// Opens a session's transcript at a message.
    fn jump(&mut self, id: &str, seq: i64) -> Vec<Job> {
        let mut jobs = Vec::new();
        // Search is global: a filter that hides the session goes, so the list can show it.
        let visible = |app: &App| {
            app.list
                .visible
                .iter()
                .any(|r| app.list.rows[r.idx].id == id)
        };
        if self.list.filter.is_some() && !visible(self) {
            self.list.filter = None;
            self.rebuild();
        }
        if let Some(pos) = self
            .list
            .visible
            .iter()
            .position(|r| self.list.rows[r.idx].id == id)
        {
            self.list.selected = pos;
        } else if self.list.next.is_some() {
            // Older than the loaded pages: load the rest, then select it (the list and the
            // detail pane must never show two different sessions).
            self.list.select_when_loaded = Some(id.to_string());
            jobs.extend(self.rest_of_list());
        }
        if self.detail.as_ref().is_none_or(|d| d.id != id) {
            jobs.extend(self.open_detail(id));
        }
        self.screen = Screen::Browse;
        self.tab = Tab::Transcript;
        self.focus = Focus::Detail;
        let has_transcript = self.detail.as_ref().is_some_and(|d| d.transcript.is_some());
        if has_transcript {
            jobs.extend(self.with_transcript(|t, w, h, th| t.select(seq, w, h, th)));
        } else if let Some(d) = self.detail.as_mut() {
            d.jump = Some(seq);
        }
        self.say(format!("Message #{seq}. Tab goes back to the list."));
        jobs
    }

    /// Handles pasted text.
    pub fn on_paste(&mut self, text: &str) -> Vec<Job> {
        match &mut self.overlay {
            Overlay::Rename { input, .. } => input.paste(text),
            Overlay::Search(s) => s.input.paste(text),
            Overlay::None if self.screen == Screen::Conversation => self.input.paste(text),
            _ => {}
        }
        Vec::new()
    }

    /// Handles the terminal being resized.
    pub fn on_resize(&mut self, w: u16, h: u16) -> Vec<Job> {
        self.size = (w, h);
        self.load_window()
    }

    /// Handles a mouse event: the wheel scrolls what is under it, a click selects.
    pub fn on_mouse(&mut self, m: MouseEvent) -> Vec<Job> {
        if !matches!(self.overlay, Overlay::None) {
            return Vec::new();
        }
        let a = views::areas(self, Rect::new(0, 0, self.size.0, self.size.1));
        let at = Position::new(m.column, m.row);
        let in_list = self.screen == Screen::Browse && a.list.contains(at);
        match m.kind {
            MouseEventKind::ScrollDown | MouseEventKind::ScrollUp => {
                let d = if m.kind == MouseEventKind::ScrollDown {
                    3
                } else {
                    -3
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
                    let inner_y = self.list.rows_y.get().max(a.list.y + 1);
                    if m.row >= inner_y {
                        let row = self.list.offset.get() + (m.row - inner_y) as usize;
                        if row < self.list.visible.len() {
                            self.list.selected = row;
                            let mut jobs = self.sync_detail();
                            jobs.extend(self.maybe_prefetch());
                            return jobs;
                        }
                    }
                    Vec::new()
                } else if self.screen == Screen::Browse && a.detail.contains(at) {
                    self.focus = Focus::Detail;
                    if m.row == a.tabs.y {
                        let mut x = a.tabs.x;
                        for t in Tab::ALL {
                            let w = t.title().len() as u16 + 3;
                            if m.column >= x && m.column < x + w {
                                self.tab = t;
                                return self.tab_data();
                            }
                            x += w;
                        }
                    }
                    Vec::new()
                } else {
                    Vec::new()
                }
            }
            _ => Vec::new(),
        }
    }

    // ----- actions ---------------------------------------------------------------------------

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

    /// Applies an action.
    pub fn update(&mut self, action: Action) -> Vec<Job> {
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
                    // Load everything that is left in one go (header rows only, ~1 ms per
                    // thousand), then land on the true last session.
                    self.list.jump_to_end = true;
                    return self.rest_of_list();
                }
                if !detail_focus {
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
                let mut jobs = Vec::new();
                if self.focus == Focus::List {
                    jobs.extend(self.sync_detail());
                }
                if self.detail.is_some() {
                    self.enter_conversation();
                    jobs.extend(self.load_window());
                }
                jobs
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
                self.maybe_prefetch()
            }
            Action::Search => {
                self.overlay = Overlay::Search(SearchState::default());
                Vec::new()
            }
            Action::New => {
                let workdir = self.workdir.clone();
                self.say("Creating a new session…");
                vec![self.job(None, Request::NewSession { workdir })]
            }
            Action::Fork => {
                let Some((id, _)) = self.selected_id() else {
                    return Vec::new();
                };
                let at = self.transcript_selection();
                vec![self.job(None, Request::Fork { id, at })]
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
                vec![self.job(None, Request::Export { id, dir })]
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
                    self.list.filter = None;
                    self.rebuild();
                    return self.sync_detail();
                }
                if self.focus == Focus::Detail {
                    self.focus = Focus::List;
                    return Vec::new();
                }
                self.quit = true;
                Vec::new()
            }
            Action::Submit => {
                let text = self.input.text.trim().to_string();
                let Some(id) = self.detail.as_ref().map(|d| d.id.clone()) else {
                    return Vec::new();
                };
                if text.is_empty() {
                    return Vec::new();
                }
                self.input = Input::default();
                self.say("Saving your message…");
                vec![self.job(None, Request::Append { id, text })]
            }
        }
    }

    fn list_page_height(&self) -> usize {
        let a = views::areas(self, Rect::new(0, 0, self.size.0, self.size.1));
        a.list.height.saturating_sub(2) as usize
    }

    fn export_asset(&mut self) -> Vec<Job> {
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
        vec![self.job(None, req)]
    }

    // ----- results ---------------------------------------------------------------------------

    /// Called about once a second while idle: asks whether the database changed, so sessions
    /// written by another process (an agent in another terminal) show up live.
    pub fn tick(&mut self) -> Vec<Job> {
        vec![self.job(None, Request::Poll)]
    }

    /// Takes a finished job's result; stale answers are dropped.
    pub fn on_done(&mut self, done: Done) -> Vec<Job> {
        let current =
            |slot: Slot, pending: &HashMap<Slot, u64>| pending.get(&slot) == Some(&done.token);
        let reply = match done.result {
            Ok(r) => r,
            Err(e) => {
                let e = sanitize::line(&e).into_owned();
                if current(Slot::List, &self.pending) {
                    self.list.loading = false;
                }
                if current(Slot::Search, &self.pending)
                    && let Overlay::Search(s) = &mut self.overlay
                {
                    s.searching = false;
                }
                self.fail(e);
                return Vec::new();
            }
        };
        match reply {
            Reply::Version(v) => {
                let changed = self.data_version.is_some_and(|old| old != v);
                self.data_version = Some(v);
                if !changed || self.list.loading {
                    return Vec::new();
                }
                // Another process (or this one) wrote: reload what is shown, keeping the
                // selection; the open session refreshes once the list says it still exists.
                self.refresh_after_list = true;
                self.reload_list()
            }
            Reply::List {
                page,
                count,
                continued,
            } => {
                if !current(Slot::List, &self.pending) {
                    return Vec::new();
                }
                self.list.loading = false;
                self.list.loaded = true;
                if let Some(c) = count {
                    self.list.total = Some(c);
                }
                let current = self.list.current().map(|s| s.id.clone());
                if !continued {
                    self.list.rows.clear();
                    self.list.titles.clear();
                }
                for s in &page.items {
                    self.list
                        .titles
                        .push(sanitize::line(s.display_title()).into_owned());
                }
                self.list.rows.extend(page.items);
                self.list.next = page.next;
                self.rebuild_keeping(current);
                if self.list.jump_to_end && self.list.next.is_none() {
                    self.list.jump_to_end = false;
                    self.list.selected = self.list.visible.len().saturating_sub(1);
                }
                if let Some(id) = self.list.select_when_loaded.take() {
                    match self
                        .list
                        .visible
                        .iter()
                        .position(|r| self.list.rows[r.idx].id == id)
                    {
                        Some(pos) => self.list.selected = pos,
                        None if self.list.next.is_some() => self.list.select_when_loaded = Some(id),
                        None => {}
                    }
                }
                let mut jobs = Vec::new();
                if std::mem::take(&mut self.refresh_after_list)
                    && let Some(d) = &self.detail
                    && self.list.rows.iter().any(|s| s.id == d.id)
                {
                    jobs.extend(self.refresh_detail());
                }
                if self.screen == Screen::Browse {
                    jobs.extend(self.sync_detail());
                }
                jobs.extend(self.maybe_prefetch());
                jobs
            }
            Reply::Detail {
                header,
                progress,
                assets,
                interrupted,
                context,
            } => {
                if !current(Slot::Detail, &self.pending) {
                    return Vec::new();
                }
                let Some(d) = self.detail.as_mut() else {
                    return Vec::new();
                };
                if d.id != header.id {
                    return Vec::new();
                }
                let last = header.last_seq;
                let first_load = d.transcript.is_none();
                match d.transcript.as_mut() {
                    Some(t) if t.last_seq != last => {
                        // Grown (or shrunk): the chunks from the old end on must be reloaded.
                        let from = super::transcript::chunk_of(t.last_seq.min(last).max(1));
                        t.chunks.retain(|c, _| *c < from);
                        t.last_seq = last;
                        t.clear_cache();
                    }
                    Some(_) => {}
                    None => {
                        let follow = self.screen == Screen::Conversation;
                        d.transcript = Some(Transcript::new(&header.id, last, follow));
                    }
                }
                d.header = Some(*header);
                d.progress = progress;
                d.asset_sel = d.asset_sel.min(assets.len().saturating_sub(1));
                d.assets = assets;
                let warn =
                    first_load && self.screen == Screen::Conversation && !interrupted.is_empty();
                if warn {
                    self.say(interrupted_note(&interrupted));
                }
                let Some(d) = self.detail.as_mut() else {
                    return Vec::new();
                };
                d.interrupted = interrupted;
                d.context = Some(context);
                if let Some(seq) = d.jump.take() {
                    return self.with_transcript(|t, w, h, th| t.select(seq, w, h, th));
                }
                self.tab_data()
            }
            Reply::Messages {
                id, from, messages, ..
            } => {
                let Some(t) = self.detail.as_mut().and_then(|d| d.transcript.as_mut()) else {
                    return Vec::new();
                };
                if t.id != id || !t.loaded(done.token, from, messages) {
                    return Vec::new();
                }
                self.load_window()
            }
            Reply::Usage { id, turns } => {
                if current(Slot::Usage, &self.pending)
                    && let Some(d) = self.detail.as_mut()
                    && d.id == id
                {
                    d.usage = Some(turns);
                }
                Vec::new()
            }
            Reply::Search { query, hits } => {
                if current(Slot::Search, &self.pending)
                    && let Overlay::Search(s) = &mut self.overlay
                {
                    s.searching = false;
                    s.answered = query;
                    s.hits = hits;
                    s.selected = 0;
                }
                Vec::new()
            }
            Reply::Forked(h) => {
                let at = h.fork_seq.unwrap_or(0);
                self.say(format!(
                    "Forked at message #{at} into new session {}.",
                    short(&h.id)
                ));
                self.want_select = Some(h.id.clone());
                if self.screen == Screen::Conversation {
                    let mut jobs = self.open_detail(&h.id);
                    self.enter_conversation();
                    self.say(format!(
                        "Forked at message #{at}: you are now in {}.",
                        short(&h.id)
                    ));
                    jobs.extend(self.reload_list());
                    return jobs;
                }
                self.focus = Focus::List;
                self.reload_list()
            }
            Reply::Deleted(id) => {
                self.say(format!("Deleted session {}.", short(&id)));
                if self.detail.as_ref().is_some_and(|d| d.id == id) {
                    self.detail = None;
                }
                self.screen = Screen::Browse;
                self.focus = Focus::List;
                if let Some(pos) = self.list.rows.iter().position(|s| s.id == id) {
                    // `visible` indexes `rows`: take the selection before the rows shift.
                    let current = self.list.current().map(|s| s.id.clone());
                    self.list.rows.remove(pos);
                    self.list.titles.remove(pos);
                    self.rebuild_keeping(current);
                }
                let mut jobs = self.sync_detail();
                jobs.extend(self.reload_list());
                jobs
            }
            Reply::Renamed { id, title } => {
                self.say(format!("Renamed to \"{}\".", sanitize::line(&title)));
                let mut jobs = self.reload_list();
                if self.detail.as_ref().is_some_and(|d| d.id == id) {
                    jobs.extend(self.refresh_detail());
                }
                jobs
            }
            Reply::Created(h) => {
                self.want_select = Some(h.id.clone());
                let mut jobs = self.open_detail(&h.id);
                self.enter_conversation();
                self.say(format!(
                    "New session {}. Type a message and press Enter.",
                    short(&h.id)
                ));
                jobs.extend(self.reload_list());
                jobs
            }
            Reply::Wrote(path) => {
                self.say(format!(
                    "Wrote {}",
                    sanitize::line(&path.display().to_string())
                ));
                Vec::new()
            }
            Reply::Appended { seq, .. } => {
                self.say(format!(
                    "Saved as message #{seq}. No model provider is connected yet, so no reply will come (the agent runtime is a separate issue)."
                ));
                let mut jobs = self.refresh_detail();
                jobs.extend(self.reload_list());
                jobs
            }
        }
    }
}

/// What the user is told about tool calls a stopped session left without a result.
pub fn interrupted_note(calls: &[ToolCall]) -> String {
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

/// The first 8 characters of an id.
pub fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// Rows in tree order: each fork right under its parent when the parent is loaded.
fn tree(rows: &[SessionSummary]) -> Vec<Row> {
    let index: HashMap<&str, usize> = rows
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.as_str(), i))
        .collect();
    let mut children: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut roots = Vec::new();
    for (i, s) in rows.iter().enumerate() {
        match s.parent_id.as_deref().and_then(|p| index.get(p)) {
            Some(&p) if p != i => children.entry(p).or_default().push(i),
            _ => roots.push(i),
        }
    }
    let mut out = Vec::with_capacity(rows.len());
    let mut seen = vec![false; rows.len()];
    let mut stack: Vec<(usize, u8)> = roots.into_iter().rev().map(|i| (i, 0)).collect();
    while let Some((i, depth)) = stack.pop() {
        if std::mem::replace(&mut seen[i], true) {
            continue;
        }
        out.push(Row {
            idx: i,
            depth,
            hl: Vec::new(),
        });
        if let Some(ch) = children.get(&i) {
            for &c in ch.iter().rev() {
                stack.push((c, depth.saturating_add(1)));
            }
        }
    }
    // A parent cycle (corrupt data) leaves rows unseen: show them flat rather than lose them.
    for (i, s) in seen.iter().enumerate() {
        if !s {
            out.push(Row {
                idx: i,
                depth: 0,
                hl: Vec::new(),
            });
        }
    }
    out
}

/// Runs `jobs` on this thread, as the worker would, feeding every answer back into `app`
/// until no work is left. For headless use: tests, benchmarks, scripted runs.
pub fn run_inline(app: &mut App, rt: &crate::runtime::Sessions, jobs: Vec<Job>) {
    let mut queue: std::collections::VecDeque<Job> = jobs.into();
    while let Some(j) = queue.pop_front() {
        let result = crate::tui::worker::handle(rt, j.request);
        queue.extend(app.on_done(crate::tui::worker::Done {
            token: j.token,
            result,
        }));
    }
}
