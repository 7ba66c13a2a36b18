//! Whole-screen snapshots of the TUI on `TestBackend`, driven through the real app state with
//! injected keys, a real store in a temp dir and the worker's request handler run
//! synchronously. Also the behaviour behind the screens (fork, delete, export, paging, stale
//! answers, sanitising).

use crate::support::Env;
use crate::support::text::has;
use crate::support::titled;
use crate::support::tui_flows::user_says;
use std::path::PathBuf;

use crate::support::tui::{Keys, options};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseEvent, MouseEventKind};
use neocode::runtime::{Location, Sessions};
use neocode::session::{
    AppendMeta, ListQuery, NewMessage, NewSession, Part, Role, StateUpdate, ToolCall,
};
use neocode::tui::app::{App, Overlay, PAGE, Screen, Tab, WINDOW, run_inline};
use neocode::tui::effect::Effect;
use neocode::tui::worker::{self, Done};
use neocode::tui::{demo, views};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// 2025-06-01 12:00:00 UTC: the clock of every snapshot.
const NOW: i64 = 1_748_779_200_000;

struct H {
    app: App,
    rt: Sessions,
    loc: Location,
    root: String,
    export: PathBuf,
    _env: Env,
}

impl H {
    fn new(with_demo: bool, w: u16, h: u16) -> H {
        Self::with(w, h, |rt| {
            if with_demo {
                demo::load_into(rt, NOW).unwrap();
            }
        })
    }

    fn with(w: u16, h: u16, fill: impl FnOnce(&Sessions)) -> H {
        let env = Env::new();
        let loc = env.location();
        let export = env.tmp.path().join("out");
        std::fs::create_dir_all(&export).unwrap();
        let rt = env.sessions();
        fill(&rt);
        let root = loc.root().display().to_string();
        let (app, jobs) = App::new(options(&root, &export, (w, h), NOW));
        let mut h = H {
            app,
            rt,
            loc,
            root,
            export,
            _env: env,
        };
        h.run(jobs);
        h
    }

    fn buffer(&self) -> ratatui::buffer::Buffer {
        let (w, h) = self.app.size;
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| views::draw(f, &self.app)).unwrap();
        t.backend().buffer().clone()
    }

    fn screen(&self) -> String {
        views::draw_to_text(&self.app).replace(&self.root, "[WORKSPACE]")
    }

    fn app_location(&self) -> Location {
        self.loc.clone()
    }

    /// Moves down the list to the first session whose title starts with `title`; its id.
    fn select_title(&mut self, title: &str) -> String {
        for _ in 0..50 {
            if let Some(s) = self.app.browse.list.current()
                && s.title.starts_with(title)
            {
                return s.id.clone();
            }
            self.key(KeyCode::Char('j'));
        }
        panic!("no session titled {title:?}");
    }

    /// Opens the filter (`/`) or the search (`s`) and types `text`; the screen then.
    fn look_for(&mut self, key: char, text: &str) -> String {
        self.key(KeyCode::Char(key));
        self.chars(text);
        self.screen()
    }

    /// Selects the session titled `title` and types `keys` (tab keys, say); the screen then.
    fn open(&mut self, title: &str, keys: &str) -> String {
        self.select_title(title);
        self.chars(keys);
        self.screen()
    }
}

/// `n` sessions titled `session 000`, `session 001`, ...
fn numbered(rt: &Sessions, n: usize) {
    for i in 0..n {
        titled(rt, &format!("session {i:03}"));
    }
}

crate::support::tui::inline_keys!(H);

#[test]
fn empty_workspace_says_how_to_start() {
    let h = H::new(false, 100, 24);
    let s = h.screen();
    assert!(s.contains("Press n to start a new session"), "{s}");
    assert!(s.contains("neocode demo"), "{s}");
    // The detail box says what it holds.
    assert!(s.contains("┌ Getting started ─"), "{s}");
    insta::assert_snapshot!("empty", s);
}

#[test]
fn populated_list_with_transcript() {
    let h = H::new(true, 120, 35);
    let s = h.screen();
    assert!(s.contains("Draft release notes for v0.4"));
    assert!(s.contains("13 sessions"));
    insta::assert_snapshot!("list", s);
}

#[test]
fn forks_keep_activity_order_and_show_their_lineage() {
    let h = H::new(true, 120, 35);
    let s = h.screen();
    // The fork (active 2h ago) sits above its parent (9h ago), as in `--list`, marked ↳.
    let parent = s.find("✔ Fix panic in config").unwrap();
    let fork = s.find("✔ ↳ Fix panic in config").unwrap();
    assert!(fork < parent, "{s}");
}

/// A demo session opened at one of its tabs: the tab, what it shows, and its snapshot.
#[test]
fn plan_usage_and_info_tabs() {
    let cases: [(&str, &str, Tab, &[&str], &str); 3] = [
        (
            "Migrate billing",
            "]",
            Tab::Plan,
            &[
                "4/7 done, 1 failed",
                "CompileError: MutexGuard held across .await",
            ],
            "plan",
        ),
        (
            "Migrate billing",
            "]]",
            Tab::Usage,
            &["Per-turn tokens", "input tokens"],
            "usage",
        ),
        (
            "Fix panic in config loader — try",
            "[",
            Tab::Info,
            &["forked from", "message #8"],
            "info",
        ),
    ];
    for (title, keys, tab, wants, snapshot) in cases {
        let mut h = H::new(true, 120, 35);
        let s = h.open(title, keys);
        assert_eq!(h.app.tab, tab);
        for want in wants {
            has(&s, want);
        }
        insta::assert_snapshot!(snapshot, s);
    }
}

#[test]
fn the_usage_tab_shows_the_prompt_cache_and_the_cost() {
    use neocode::session::{Change, RuntimeLedger, RuntimeLimits, RuntimeUsage};
    let mut h = H::with(200, 35, |rt| {
        let s = crate::support::titled(rt, "Cached turns");
        let ledger = RuntimeLedger {
            usage: RuntimeUsage {
                input_tokens: 1000,
                cached_input_tokens: 9000,
                cache_write_tokens: 0,
                cost_usd: Some(0.0123),
                turns: 2,
                ..RuntimeUsage::default()
            },
            limits: RuntimeLimits {
                max_cost_usd: Some(1.0),
                ..RuntimeLimits::default()
            },
            ..RuntimeLedger::default()
        };
        rt.update_state(
            &s.id,
            &StateUpdate {
                ledger: Change::Set(ledger),
                ..StateUpdate::default()
            },
        )
        .unwrap();
    });
    let s = h.open("Cached turns", "]]");
    assert!(s.contains("90% hit rate (cached input / all input)"), "{s}");
    assert!(s.contains("$0.0123 of $1.00"), "{s}");
}

#[test]
fn assets_tab_exports_the_asset() {
    let mut h = H::new(true, 120, 35);
    let s = h.open("Match the login page", "[[");
    assert_eq!(h.app.tab, Tab::Assets);
    assert!(s.contains("image/png"), "{s}");
    insta::assert_snapshot!("assets", s);
    h.key(KeyCode::Tab);
    h.key(KeyCode::Enter);
    let files: Vec<_> = std::fs::read_dir(&h.export).unwrap().flatten().collect();
    assert_eq!(files.len(), 1);
    let bytes = std::fs::read(files[0].path()).unwrap();
    assert!(bytes.starts_with(b"\x89PNG"), "a real PNG was written");
    has(&h.screen(), "Wrote ");
}

#[test]
fn transcript_tool_call_expands() {
    let mut h = H::new(true, 120, 35);
    h.select_title("Fix panic in config loader on empty file");
    h.key(KeyCode::Tab);
    for _ in 0..6 {
        h.key(KeyCode::Char('j'));
    }
    let collapsed = h.screen();
    has(&collapsed, "⚙ bash  cargo test -p acme-config empty_file");
    assert!(collapsed.contains("✗ error"), "{collapsed}");
    assert!(!collapsed.contains("could not compile"), "{collapsed}");
    h.key(KeyCode::Char(' '));
    h.key(KeyCode::PageDown);
    let s = h.screen();
    assert!(s.contains("could not compile"), "{s}");
    insta::assert_snapshot!("transcript_expanded", s);
}

#[test]
fn filter_as_you_type() {
    let mut h = H::new(true, 120, 35);
    let s = h.look_for('/', "billing");
    assert!(s.contains("Migrate billing service"), "{s}");
    assert!(!s.contains("Walk me through"), "{s}");
    insta::assert_snapshot!("filtered", s);
    // Esc clears the filter; all rows come back.
    h.key(KeyCode::Esc);
    assert_eq!(h.app.browse.list.visible.len(), 13);
}

#[test]
fn full_text_search_jumps_to_the_message() {
    let mut h = H::new(true, 120, 35);
    let s = h.look_for('s', "redis");
    assert!(s.contains("Add rate limiting to the public API"), "{s}");
    assert!(!s.contains('\u{E000}') && !s.contains('\u{E001}'), "{s}");
    insta::assert_snapshot!("search", s);
    h.key(KeyCode::Enter);
    assert!(matches!(h.app.overlay, Overlay::None));
    let d = h.app.browse.detail.as_ref().unwrap();
    assert!(
        d.header
            .as_ref()
            .unwrap()
            .title
            .starts_with("Add rate limiting")
    );
    let sel = d.transcript.as_ref().unwrap().selected.unwrap();
    let m = &h.rt.messages(&d.id, sel, sel).unwrap()[0];
    let args: String = m.tool_calls.iter().map(|c| c.arguments.clone()).collect();
    assert!((m.text() + &args).to_lowercase().contains("redis"));
}

#[test]
fn delete_asks_first_then_deletes() {
    let mut h = H::new(true, 120, 35);
    let id = h.select_title("Draft release notes");
    h.key(KeyCode::Char('d'));
    let s = h.screen();
    assert!(s.contains("Delete session"), "{s}");
    insta::assert_snapshot!("confirm_delete", s);
    h.key(KeyCode::Char('n'));
    assert!(h.rt.header(&id).is_ok(), "n keeps the session");
    h.key(KeyCode::Char('d'));
    h.key(KeyCode::Char('y'));
    assert!(h.rt.header(&id).is_err(), "y deletes it");
    assert_eq!(h.app.browse.list.visible.len(), 12);
}

#[test]
fn help_comes_from_the_key_table() {
    let mut h = H::new(true, 120, 35);
    h.key(KeyCode::Char('?'));
    let s = h.screen();
    for b in neocode::tui::keymap::BINDINGS.iter().take(10) {
        assert!(s.contains(b.help), "help lacks {:?}\n{s}", b.help);
    }
    insta::assert_snapshot!("help", s);
    h.key(KeyCode::Esc);
    assert!(matches!(h.app.overlay, Overlay::None));
}

#[test]
fn rename_inline() {
    let mut h = H::new(true, 120, 35);
    let id = h.app.browse.list.current().unwrap().id.clone();
    h.key(KeyCode::Char('R'));
    h.key_mod(KeyCode::Char('u'), KeyModifiers::CONTROL);
    h.chars("Release notes (on hold)");
    insta::assert_snapshot!("rename", h.screen());
    h.key(KeyCode::Enter);
    assert_eq!(h.rt.header(&id).unwrap().title, "Release notes (on hold)");
    has(&h.screen(), "Release notes (on hold)");
}

#[test]
fn conversation_view_without_a_provider_keeps_the_message_and_says_why() {
    let mut h = H::new(true, 120, 35);
    let id = h.select_title("Fix panic in config loader on empty file");
    let before = h.rt.header(&id).unwrap().message_count;
    h.key(KeyCode::Enter);
    assert_eq!(h.app.screen, Screen::Conversation);
    // Before anything is sent: no model, and where to read how to configure one.
    has(&h.screen(), "No model configured: F1 says how");
    h.key(KeyCode::F(1));
    let help = {
        for _ in 0..100 {
            h.key(KeyCode::Down);
        }
        h.screen()
    };
    assert!(help.contains("NEOCODE_BASE_URL"), "{help}");
    h.key(KeyCode::Esc);
    assert_eq!(h.app.screen, Screen::Conversation);
    h.chars("Yes please, add it to the README");
    insta::assert_snapshot!("conversation", h.screen());
    h.key(KeyCode::Enter);
    // Sending is disabled: nothing is written, the text stays, the reason is shown.
    let hd = h.rt.header(&id).unwrap();
    assert_eq!(hd.message_count, before);
    assert_eq!(
        h.app.conv.composer().text(),
        "Yes please, add it to the README"
    );
    let s = h.screen();
    has(&s, "Cannot send: no model provider configured");
    h.key(KeyCode::Esc);
    assert_eq!(h.app.screen, Screen::Browse);
}

#[test]
fn fork_from_selected_message() {
    let mut h = H::new(true, 120, 35);
    let parent = h.select_title("Walk me through");
    h.key(KeyCode::Tab);
    for _ in 0..3 {
        h.key(KeyCode::Char('j'));
    }
    h.key(KeyCode::Char('f'));
    let kids: Vec<_> =
        h.rt.list(&ListQuery::default())
            .unwrap()
            .items
            .into_iter()
            .filter(|s| s.parent_id.as_deref() == Some(parent.as_str()))
            .collect();
    assert_eq!(kids.len(), 1);
    assert_eq!(kids[0].fork_seq, Some(3));
    assert_eq!(kids[0].message_count, 3);
    assert_eq!(
        h.app.browse.list.current().unwrap().id,
        kids[0].id,
        "the fork is selected"
    );
    has(&h.screen(), "Forked at message #3");
}

#[test]
fn new_session_and_export() {
    let mut h = H::new(true, 120, 35);
    // `n` then Esc leaves nothing behind: the session exists only once a message is sent.
    h.key(KeyCode::Char('n'));
    assert_eq!(h.app.screen, Screen::Conversation);
    has(&h.screen(), "New session");
    h.key(KeyCode::Esc);
    assert_eq!(h.app.screen, Screen::Browse);
    assert_eq!(h.rt.count().unwrap(), 13);
    // Without a provider nothing can be sent, so nothing is created either (tests/suite/tui/tui_live.rs
    // and tests/suite/tui/tui_live_pty.rs send with one).
    h.key(KeyCode::Char('n'));
    h.submit("Start here");
    assert_eq!(h.rt.count().unwrap(), 13);
    assert_eq!(h.app.conv.composer().text(), "Start here");
    assert_eq!(h.app.screen, Screen::Conversation);
    h.key(KeyCode::Esc);
    let id = h.select_title("Add rate limiting");
    h.key(KeyCode::Char('e'));
    let path = h.export.join(format!("{}.json", &id[..8]));
    let doc = neocode::session::file::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(doc.session.id, id);
    has(&h.screen(), &format!("{}.json", &id[..8]));
}

#[test]
fn tiny_terminal_says_so_and_never_panics() {
    let mut h = H::new(true, 30, 8);
    let s = h.screen();
    assert!(s.contains("Terminal too"), "{s}");
    insta::assert_snapshot!("tiny", s);
    for (w, hh) in [(20, 5), (1, 1), (40, 10), (0, 0)] {
        h.app.size = (w, hh);
        let jobs = h.app.on_resize(w, hh);
        h.run(jobs);
        let _ = h.buffer();
    }
}

#[test]
fn resize_keeps_the_selection() {
    let mut h = H::new(true, 120, 35);
    let id = h.select_title("Add rate limiting");
    let jobs = h.app.on_resize(80, 20);
    h.run(jobs);
    let _ = h.screen();
    assert_eq!(h.app.browse.list.current().unwrap().id, id);
}

#[test]
fn mouse_click_selects_and_wheel_moves() {
    let mut h = H::new(true, 120, 35);
    let _ = h.screen();
    // The third row (title bar 0, border 1, column header 2, rows from 3).
    let jobs = h.app.on_mouse(MouseEvent {
        kind: MouseEventKind::Down(crossterm::event::MouseButton::Left),
        column: 5,
        row: 5,
        modifiers: KeyModifiers::NONE,
    });
    h.run(jobs);
    assert_eq!(h.app.browse.list.selected, 2);
    let jobs = h.app.on_mouse(MouseEvent {
        kind: MouseEventKind::ScrollDown,
        column: 5,
        row: 4,
        modifiers: KeyModifiers::NONE,
    });
    h.run(jobs);
    assert_eq!(h.app.browse.list.selected, 5);
}

#[test]
fn pages_load_lazily_as_the_selection_moves() {
    let mut h = H::with(120, 35, |rt| {
        numbered(rt, 450);
    });
    assert_eq!(h.app.browse.list.rows.len(), 200, "one page at start");
    assert_eq!(h.app.browse.list.total, Some(450));
    for _ in 0..160 {
        h.key(KeyCode::Char('j'));
    }
    assert_eq!(
        h.app.browse.list.rows.len(),
        400,
        "the next page came as the end neared"
    );
    // One `G` reads the last page only and lands on the true last (oldest) session.
    h.key(KeyCode::Char('G'));
    assert_eq!(h.app.browse.list.rows.len(), 200);
    assert_eq!(h.app.browse.list.base, 250, "sessions above the window");
    assert_eq!(h.app.browse.list.current().unwrap().title, "session 000");
    has(&h.screen(), "Sessions 450/450");
    // Moving up from there brings the page above into the window.
    for _ in 0..160 {
        h.key(KeyCode::Char('k'));
    }
    assert_eq!(h.app.browse.list.current().unwrap().title, "session 160");
    assert_eq!(h.app.browse.list.base, 50);
    // `g` goes back to the first session.
    h.key(KeyCode::Char('g'));
    assert_eq!(h.app.browse.list.base, 0);
    assert_eq!(h.app.browse.list.current().unwrap().title, "session 449");
}

#[test]
fn the_list_holds_a_window_of_rows_however_far_it_scrolls() {
    let n = WINDOW + 3 * PAGE + 17;
    let mut h = H::with(120, 35, |rt| {
        for i in 0..n {
            let s = titled(rt, &format!("session {i:04}"));
            if i == n / 2 {
                user_says(rt, &s.id, "the narwhal question");
            }
        }
    });
    let mut most = 0;
    for i in 0..n - 1 {
        h.key(KeyCode::Char('j'));
        most = most.max(h.app.browse.list.rows.len());
        let want = format!("session {:04}", n - 2 - i);
        assert_eq!(h.app.browse.list.current().unwrap().title, want);
    }
    assert!(most <= WINDOW, "at most {WINDOW} rows held, saw {most}");
    assert_eq!(h.app.browse.list.base + h.app.browse.list.rows.len(), n);
    // And all the way back up, one row at a time, never skipping one.
    for i in 1..n {
        h.key(KeyCode::Char('k'));
        assert_eq!(
            h.app.browse.list.current().unwrap().title,
            format!("session {i:04}")
        );
        assert!(h.app.browse.list.rows.len() <= WINDOW);
    }
    assert_eq!(h.app.browse.list.base, 0);
    // A search jump to a session outside the window moves the window to it.
    h.key(KeyCode::Char('G'));
    assert_eq!(h.app.browse.list.current().unwrap().title, "session 0000");
    let target = format!("session {:04}", n / 2);
    assert!(h.app.browse.list.rows.iter().all(|s| s.title != target));
    h.key(KeyCode::Char('s'));
    h.submit("narwhal");
    assert_eq!(h.app.browse.list.current().unwrap().title, target);
    let above = n - 1 - n / 2;
    let l = &h.app.browse.list;
    let at = l.rows.iter().position(|s| s.title == target).unwrap();
    assert_eq!(l.base + at, above, "its place in the whole list");
    assert!(l.rows.len() <= WINDOW);
    assert_eq!(
        h.app.browse.detail.as_ref().map(|d| d.id.clone()),
        h.app.browse.list.current().map(|s| s.id.clone())
    );
}

#[test]
fn stale_answers_are_dropped() {
    let mut h = H::new(true, 120, 35);
    // Ask for two details; answer the first one last.
    let a = h
        .app
        .on_key(KeyEvent::new(KeyCode::Char('j'), KeyModifiers::NONE));
    let b = h
        .app
        .on_key(KeyEvent::new(KeyCode::Char('j'), KeyModifiers::NONE));
    let want = h.app.browse.list.current().unwrap().id.clone();
    let answer = |h: &H, effects: &[Effect]| -> Vec<Done> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Storage(j) => Some(Done {
                    token: j.token,
                    result: worker::handle(&h.rt, j.request.clone()),
                }),
                Effect::Turn(_) | Effect::Clipboard(_) => None,
            })
            .collect()
    };
    let (da, db) = (answer(&h, &a), answer(&h, &b));
    for d in db.into_iter().chain(da) {
        let jobs = h.app.on_done(d);
        h.run(jobs);
    }
    let d = h.app.browse.detail.as_ref().unwrap();
    assert_eq!(d.id, want);
    assert_eq!(d.header.as_ref().unwrap().id, want);
}

#[test]
fn hostile_text_never_reaches_a_cell() {
    let evil = "ti\x1b]0;pwned\x07tle\x1b[2J \u{9b}31m \u{202e}gnp.exe\u{2066}";
    let mut h = H::with(120, 35, |rt| {
        let s = rt
            .new_session(NewSession {
                title: evil.into(),
                model: evil.into(),
                workdir: evil.into(),
                ..NewSession::default()
            })
            .unwrap();
        rt.append(
            &s.id,
            &[
                NewMessage::text(
                    Role::User,
                    format!("# head {evil}\n\n```\n{evil}\n```\n- {evil}"),
                ),
                NewMessage {
                    role: Some(Role::Assistant),
                    parts: vec![Part::reasoning(evil)],
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: evil.into(),
                        arguments: serde_json::json!({ "command": evil }).to_string(),
                    }],
                    ..NewMessage::default()
                },
                NewMessage::tool_result("c1", format!("{evil}\n{evil}"), true),
            ],
            &AppendMeta::default(),
        )
        .unwrap();
        rt.update_state(
            &s.id,
            &StateUpdate {
                plan: neocode::session::Change::Set(neocode::session::Plan {
                    steps: vec![neocode::session::Step {
                        id: "s1".into(),
                        title: evil.into(),
                        depends_on: vec![],
                    }],
                }),
                ..StateUpdate::default()
            },
        )
        .unwrap();
    });
    let bad = |c: char| {
        c.is_control()
            || matches!(c, '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{061C}')
    };
    let check = |h: &H, what: &str| {
        let b = h.buffer();
        for cell in b.content() {
            assert!(
                !cell.symbol().chars().any(bad),
                "{what}: a raw control/bidi character reached a cell: {:?}",
                cell.symbol()
            );
        }
    };
    check(&h, "list");
    h.key(KeyCode::Tab);
    h.key(KeyCode::Char('j'));
    h.key(KeyCode::Char('j'));
    h.key(KeyCode::Char(' '));
    check(&h, "transcript");
    for tab in ["plan", "usage", "assets", "info"] {
        h.key(KeyCode::Char(']'));
        check(&h, tab);
    }
    h.key(KeyCode::Char('s'));
    h.chars("pwned");
    check(&h, "search");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Char('d'));
    check(&h, "confirm");
    h.key(KeyCode::Char('n'));
    h.key(KeyCode::Enter);
    check(&h, "conversation");
    assert!(
        h.screen().contains("^[]0;pwned^G"),
        "escapes are shown as visible text"
    );
}

#[test]
fn search_jump_to_an_unloaded_session_selects_it_in_the_list() {
    let mut h = H::with(120, 35, |rt| {
        let old = titled(rt, "the oldest one");
        user_says(rt, &old.id, "where is the zeppelin config");
        numbered(rt, 450);
    });
    assert_eq!(
        h.app.browse.list.rows.len(),
        200,
        "the old session is not loaded yet"
    );
    h.key(KeyCode::Char('s'));
    h.submit("zeppelin");
    let detail = h.app.browse.detail.as_ref().unwrap().id.clone();
    let selected = h.app.browse.list.current().unwrap();
    assert_eq!(selected.title, "the oldest one");
    assert_eq!(selected.id, detail, "list and detail show the same session");
}

#[test]
fn writes_from_another_process_show_up_live() {
    let mut h = H::new(true, 120, 35);
    let tick = |h: &mut H| {
        let jobs = h.app.tick();
        h.run(jobs);
    };
    tick(&mut h); // first sight of the counter: nothing to reload
    let selected = h.app.browse.list.current().unwrap().id.clone();
    let before = h.rt.header(&selected).unwrap().message_count;

    // Another neocode process on the same workspace: its own runtime and connections.
    let other = Sessions::open(&h.app_location()).unwrap();
    user_says(&other, &selected, "written by the other window");
    titled(&other, "Started in another terminal");
    tick(&mut h);
    assert_eq!(
        h.app.browse.list.rows.len(),
        14,
        "the new session is listed"
    );
    has(&h.screen(), "Started in another");
    let d = h.app.browse.detail.as_ref().unwrap();
    assert_eq!(d.id, selected, "the selection stays where it was");
    assert_eq!(d.header.as_ref().unwrap().message_count, before + 1);

    // The other window deletes the session this one shows.
    other.delete(&selected).unwrap();
    tick(&mut h);
    assert!(h.app.browse.list.rows.iter().all(|s| s.id != selected));
    let now = h.app.browse.list.current().unwrap().id.clone();
    assert_eq!(
        h.app.browse.detail.as_ref().unwrap().id,
        now,
        "detail follows the new selection"
    );
    assert!(!h.screen().contains("no session matches"), "{}", h.screen());
}

#[test]
fn deleting_a_fork_parent_keeps_a_valid_selection() {
    // The parent is the least recently active session (its fork is newer); deleting the last
    // row used to index past the end and crash.
    let mut h = H::new(true, 120, 35);
    h.key(KeyCode::Char('G'));
    let parent = h.app.browse.list.current().unwrap().id.clone();
    assert!(
        h.app
            .browse
            .list
            .rows
            .iter()
            .any(|s| s.parent_id.as_deref() == Some(parent.as_str())),
        "the selected session should be a fork's parent"
    );
    h.key(KeyCode::Char('d'));
    h.key(KeyCode::Char('y'));
    assert!(h.rt.header(&parent).is_err(), "deleted");
    let now = h.app.browse.list.current().expect("a selection").id.clone();
    assert_ne!(now, parent);
    assert_eq!(h.app.browse.detail.as_ref().unwrap().id, now);
    assert_eq!(h.app.browse.list.visible.len(), 12);
}

#[test]
fn a_search_jump_clears_a_filter_that_hides_the_session() {
    let mut h = H::new(true, 120, 35);
    h.key(KeyCode::Char('/'));
    h.submit("zzzz");
    assert!(
        h.app.browse.list.visible.is_empty(),
        "the filter hides everything"
    );
    h.key(KeyCode::Char('s'));
    h.submit("redis");
    let shown = h.app.browse.detail.as_ref().unwrap().id.clone();
    assert_eq!(
        h.app.browse.list.current().map(|s| s.id.clone()),
        Some(shown)
    );
    assert!(h.app.browse.list.filter.is_none());
}

#[test]
fn opening_a_session_that_stopped_mid_turn_says_which_calls_were_interrupted() {
    let mut h = H::with(120, 35, |rt| {
        let id = titled(rt, "stopped mid-turn").id;
        rt.append(
            &id,
            &[
                NewMessage::text(Role::User, "edit the config"),
                // As a turn that crashed leaves it: the calls came from the model here.
                NewMessage {
                    role: Some(Role::Assistant),
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: "edit_file".into(),
                        arguments: "{}".into(),
                    }],
                    tool_metadata: Some(serde_json::json!({ "calls_from": "model" })),
                    ..NewMessage::default()
                },
            ],
            &AppendMeta::default(),
        )
        .unwrap();
    });
    h.key(KeyCode::Enter);
    assert_eq!(h.app.screen, Screen::Conversation);
    let s = h.screen();
    has(&s, "1 tool call never got a result (edit_file)");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Char(']'));
    h.key(KeyCode::Char(']'));
    h.key(KeyCode::Char(']'));
    h.key(KeyCode::Char(']'));
    let s = h.screen();
    assert!(s.contains("interrupted"), "Info tab: {s}");
}

#[test]
fn own_writes_are_not_news_but_another_process_writes_are() {
    let mut h = H::new(true, 120, 35);
    let poll = |h: &mut H| -> Vec<Effect> {
        let Effect::Storage(job) = h.app.tick().remove(0) else {
            panic!("a poll is storage work");
        };
        h.app.on_done(Done {
            token: job.token,
            result: worker::handle(&h.rt, job.request),
        })
    };
    poll(&mut h); // first sight of the counter
    // This process renames (through the app, as a user would): the app applies it itself.
    h.key(KeyCode::Char('R'));
    h.submit(" (mine)");
    has(&h.screen(), "(mine)");
    assert!(poll(&mut h).is_empty(), "own write: nothing to reload");
    // Another process writes: the poll reloads the list.
    let other = Sessions::open(&h.app_location()).unwrap();
    other.new_session(NewSession::default()).unwrap();
    assert!(!poll(&mut h).is_empty(), "another process wrote: reload");
}

#[test]
fn turn_events_pace_frames_and_refresh_what_a_turn_stored() {
    use neocode::runtime::agent::{FinishReason, TurnEvent};
    use neocode::session::Usage;
    let mut h = H::new(true, 120, 35);
    h.key(KeyCode::Enter);
    let id = h.app.browse.detail.as_ref().unwrap().id.clone();
    assert!(!h.app.animating());
    let fx = h.app.on_turn(TurnEvent::Started {
        session_id: id.clone(),
    });
    h.run(fx);
    assert!(h.app.animating(), "a running turn paces frames");
    // A stored result is this process's own write: the open session reloads it directly.
    let seq =
        h.rt.append(
            &id,
            &[NewMessage::tool_result("c9", "done", false)],
            &AppendMeta::default(),
        )
        .unwrap()[0];
    let fx = h.app.on_turn(TurnEvent::ToolResult {
        call_id: "c9".into(),
        text: "done".into(),
        is_error: false,
        seq,
        permission: None,
        diagnostics: None,
    });
    h.run(fx);
    let d = h.app.browse.detail.as_ref().unwrap();
    assert_eq!(d.header.as_ref().unwrap().last_seq, seq);
    let fx = h.app.on_turn(TurnEvent::Finished {
        reason: FinishReason::Completed,
        usage: Usage::default(),
    });
    h.run(fx);
    assert!(!h.app.animating());
}

#[test]
fn the_key_bar_fits_80_columns_and_keeps_help_and_quit() {
    let mut h = H::new(true, 80, 24);
    // Under 104 columns the browse bar takes two rows (nothing of it is dropped).
    let bar = |h: &H| {
        let s = h.screen();
        let rows: Vec<&str> = s.lines().collect();
        rows[rows.len().saturating_sub(2)..].join("\n")
    };
    let list_bar = bar(&h);
    assert!(list_bar.contains("? help"), "{list_bar}");
    assert!(list_bar.contains("q quit"), "{list_bar}");
    // Focus on the detail pane: the bar says what the keys do there.
    h.key(KeyCode::Tab);
    let detail_bar = bar(&h);
    assert!(detail_bar.contains("Space expand"), "{detail_bar}");
    assert!(detail_bar.contains("? help"), "{detail_bar}");
    assert!(detail_bar.contains("q/Esc list"), "{detail_bar}");
    h.key(KeyCode::Enter);
    let conv_bar = bar(&h);
    assert!(conv_bar.contains("F1 help"), "{conv_bar}");
    assert!(conv_bar.contains("Esc back"), "{conv_bar}");
}

#[test]
fn help_wraps_at_80_and_120_columns_and_stops_at_its_end() {
    for w in [80u16, 120] {
        let mut h = H::new(true, w, 24);
        h.key(KeyCode::Char('?'));
        for _ in 0..200 {
            h.key(KeyCode::Down);
        }
        let end = h.screen();
        assert!(
            end.contains("The wheel scrolls what is under it"),
            "the help scrolled past its end:\n{end}"
        );
        // Long help lines wrap at word boundaries inside the box.
        assert!(end.contains("Type to narrow the list"), "{end}");
        assert!(end.contains("│  filter, Esc clears it."), "{end}");
        // One step up moves at once (the scroll never ran past the end).
        h.key(KeyCode::Up);
        assert_ne!(h.screen(), end);
        // No blank screenful under the last line.
        let rows: Vec<String> = end.lines().map(str::to_string).collect();
        let last_text = rows
            .iter()
            .rposition(|l| l.contains("The wheel scrolls") || l.contains("a tab."))
            .unwrap();
        assert!(rows.len() - last_text <= 4, "{end}");
    }
}

#[test]
fn focus_is_visible_without_colour() {
    let mut h = H::new(true, 120, 30);
    let s = h.screen();
    assert!(s.contains("┏▶ Sessions"), "{s}");
    h.key(KeyCode::Tab);
    let s = h.screen();
    assert!(s.contains("┌ Sessions"), "{s}");
    assert!(s.contains("┏▶ "), "{s}");
}

#[test]
fn the_search_overlay_leaves_no_transcript_beside_it() {
    let mut h = H::new(true, 120, 30);
    let s = h.look_for('s', "redis");
    for line in s.lines().skip(1).take(26) {
        let last = line.chars().last().unwrap_or(' ');
        assert!(matches!(last, '│' | '┐' | '┘'), "{line}");
        let first = line.chars().next().unwrap_or(' ');
        assert!(matches!(first, '│' | '┌' | '└'), "{line}");
    }
}

/// The message numbers (`#n`) shown on screen, top to bottom.
fn shown_seqs(s: &str) -> Vec<i64> {
    s.lines()
        .filter_map(|l| {
            let i = l.find("  #")?;
            l[i + 3..]
                .split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

#[test]
fn paging_moves_one_page_both_ways_in_the_detail_pane_and_the_conversation() {
    let mut h = H::new(true, 120, 35);
    h.select_title("Walk me through");
    h.key(KeyCode::Tab);
    h.key(KeyCode::Char('G'));
    let end = shown_seqs(&h.screen());
    assert!(end.contains(&48), "{}", h.screen());
    h.key(KeyCode::PageUp);
    let up = shown_seqs(&h.screen());
    assert!(
        !up.contains(&1) && up.iter().max() < end.iter().max(),
        "PgUp from the end jumped: {end:?} -> {up:?}\n{}",
        h.screen()
    );
    // Paging down at the end never scrolls into blank space, and PgUp still moves one page.
    for _ in 0..5 {
        h.key(KeyCode::PageDown);
    }
    assert_eq!(shown_seqs(&h.screen()), end);
    h.key(KeyCode::PageUp);
    assert_eq!(shown_seqs(&h.screen()), up);

    h.key(KeyCode::Enter);
    assert_eq!(h.app.screen, Screen::Conversation);
    let end = shown_seqs(&h.screen());
    assert!(end.contains(&48), "{}", h.screen());
    h.key(KeyCode::PageUp);
    let up = shown_seqs(&h.screen());
    assert!(!up.is_empty() && !up.contains(&1), "{up:?}\n{}", h.screen());
    assert!(up.iter().max() < end.iter().max(), "{end:?} -> {up:?}");
}

#[test]
fn behind_terminal_too_small_only_resize_and_quit_act() {
    let mut h = H::new(true, 120, 35);
    let before = h.rt.count().unwrap();
    let jobs = h.app.on_resize(20, 5);
    h.run(jobs);
    has(&h.screen(), "Terminal too small");
    for c in ['d', 'y', 'n', 'f', 'R'] {
        h.key(KeyCode::Char(c));
    }
    h.key(KeyCode::Enter);
    assert_eq!(
        h.rt.count().unwrap(),
        before,
        "nothing was deleted, created or forked"
    );
    assert!(matches!(h.app.overlay, Overlay::None));
    assert_eq!(h.app.screen, Screen::Browse);
    let jobs = h.app.on_resize(120, 35);
    h.run(jobs);
    assert!(!h.screen().contains("Terminal too small"));
    let jobs = h.app.on_resize(20, 5);
    h.run(jobs);
    h.key(KeyCode::Char('q'));
    assert!(h.app.quit, "q still quits");
}

#[test]
fn status_messages_expire_and_say_what_happened() {
    let mut h = H::new(true, 120, 35);
    h.key(KeyCode::Char('d'));
    h.key(KeyCode::Char('n'));
    has(&h.screen(), "Delete cancelled.");
    assert!(!h.app.expire_status(NOW + 1_000), "still fresh");
    assert!(h.app.expire_status(NOW + 10_000));
    assert!(!h.screen().contains("Delete cancelled."));
    // Exporting twice: the second write is refused in words, not an OS error number.
    let s = h.open("Add rate limiting", "ee");
    assert!(s.contains("file exists:"), "{s}");
    assert!(!s.contains("os error"), "{s}");
}

#[test]
fn the_composer_is_multi_line_with_history() {
    let mut h = H::new(true, 120, 35);
    h.select_title("Fix panic in config loader on empty file");
    h.key(KeyCode::Enter);
    h.chars("first line");
    h.key_mod(KeyCode::Enter, KeyModifiers::ALT);
    h.chars("second line");
    let jobs = h.app.on_paste("pasted\nthird\x1b[2J");
    h.run(jobs);
    let s = h.screen();
    assert!(s.contains("first line"), "{s}");
    assert!(s.contains("second linepasted"), "{s}");
    assert!(s.contains("third^[[2J"), "{s}");
    // With a model configured, Enter starts a turn with the text as written.
    h.app.conv.set_provider(Ok("m".into()));
    let id = h.app.browse.detail.as_ref().unwrap().id.clone();
    let fx = h
        .app
        .on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    let turns = run_inline(&mut h.app, &h.rt, fx);
    assert_eq!(
        turns,
        vec![neocode::tui::effect::TurnEffect::Start {
            session_id: Some(id),
            text: Some("first line\nsecond linepasted\nthird^[[2J".into()),
            images: Vec::new(),
            approval: neocode::runtime::config::ApprovalPolicy::Ask,
        }]
    );
    // ↑ in the empty editor brings the sent message back.
    h.key(KeyCode::Up);
    assert_eq!(
        h.app.conv.composer().text(),
        "first line\nsecond linepasted\nthird^[[2J"
    );
    // Sent messages keep their line breaks in the transcript.
    let s = h.screen();
    assert!(s.contains("│   first line"), "{s}");
    assert!(s.contains("│   second linepasted"), "{s}");
}

#[test]
fn resuming_a_session_past_the_first_page_selects_it_so_going_back_stays_on_it() {
    let mut old = String::new();
    let mut h = H::with(120, 35, |rt| {
        old = titled(rt, "the old one").id;
        numbered(rt, 250);
    });
    assert_eq!(
        h.app.browse.list.rows.len(),
        200,
        "the old session is not loaded yet"
    );
    let fx = h.app.resume(&old);
    h.run(fx);
    assert_eq!(h.app.screen, Screen::Conversation);
    assert_eq!(h.app.browse.detail.as_ref().unwrap().id, old);
    assert_eq!(
        h.app.browse.list.current().map(|s| s.id.clone()),
        Some(old.clone()),
        "the list loaded on until it held the resumed session"
    );
    h.key(KeyCode::Esc);
    assert_eq!(h.app.screen, Screen::Browse);
    assert_eq!(
        h.app.browse.detail.as_ref().unwrap().id,
        old,
        "back on its own row"
    );
}

#[test]
fn plan_run_tab_shows_each_step_and_enter_opens_its_conversation() {
    let mut h = H::new(true, 120, 40);
    h.select_title("Add a --json flag");
    h.key(KeyCode::Char(']'));
    assert_eq!(h.app.tab, Tab::Plan);
    h.key(KeyCode::Tab);
    let s = h.screen();
    assert!(s.contains("5/5 done"), "{s}");
    // Layers in dependency order (read in the detail pane, right of the list).
    let pane: String = s
        .lines()
        .filter_map(|l| l.split_once('│').map(|(_, r)| r.to_string()))
        .collect::<Vec<_>>()
        .join("\n");
    let pos = |needle: &str| {
        pane.find(needle)
            .unwrap_or_else(|| panic!("{needle}: {pane}"))
    };
    assert!(pos("✔ survey") < pos("Layer 2") && pos("Layer 2") < pos("✔ flag"));
    assert!(pos("✔ flag") < pos("✔ docs") && pos("✔ docs") < pos("Layer 3"));
    assert!(pos("Layer 3") < pos("✔ test") && pos("Layer 4") < pos("✔ review"));
    assert!(s.contains("› ✔ survey"), "the first step is selected: {s}");
    assert!(s.contains("in / "), "{s}");
    assert!(s.contains("→ `print_report` in src/report.rs"), "{s}");
    insta::assert_snapshot!("plan_run", s);
    // Down to `flag`, Enter: its conversation opens.
    h.key(KeyCode::Down);
    has(&h.screen(), "› ✔ flag");
    h.key(KeyCode::Enter);
    let d = h.app.browse.detail.as_ref().unwrap();
    let header = d.header.as_ref().expect("the step conversation is loaded");
    assert!(header.title.starts_with("step flag:"), "{}", header.title);
    assert!(header.parent_id.is_some());
    has(&h.screen(), "edited src/report.rs");
}

#[test]
fn info_tab_lists_instructions_skills_and_mcp_servers() {
    let mut h = H::with(140, 35, |rt| {
        std::fs::write(rt.root().join("AGENTS.md"), "Use tabs.").unwrap();
        let skill = rt.root().join(".neocode/skills/deploy");
        std::fs::create_dir_all(&skill).unwrap();
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: deploy\ndescription: Deploy it\n---\nRun make deploy.",
        )
        .unwrap();
        neocode::runtime::trust::trust(rt.home(), rt.root()).unwrap();
        std::fs::write(
            rt.home().join("config.toml"),
            "[mcp_servers.docs]\ncommand = \"docs-server\"\n",
        )
        .unwrap();
        let id = titled(rt, "with context").id;
        rt.update_state(
            &id,
            &StateUpdate {
                skills: neocode::session::Change::Set(serde_json::json!([{"name": "deploy"}])),
                ..StateUpdate::default()
            },
        )
        .unwrap();
    });
    h.key(KeyCode::Char('['));
    let s = h.screen();
    assert!(s.contains("instr files AGENTS.md (project, 9 B)"), "{s}");
    assert!(s.contains("skills      deploy (workspace, active)"), "{s}");
    assert!(s.contains("mcp servers docs (docs-server)"), "{s}");
}

#[test]
fn at_80x24_every_tab_its_key_and_the_column_heads_are_on_screen() {
    let mut h = H::new(true, 80, 24);
    let s = h.screen();
    for tab in ["Transcript", "Plan", "Usage", "Assets", "Info"] {
        assert!(s.contains(tab), "tab {tab} is not drawn:\n{s}");
    }
    // The column heads of the narrow list.
    assert!(s.contains("title") && s.contains("active"), "{s}");
    let rows: Vec<&str> = s.lines().collect();
    let bar = rows[rows.len() - 2..].join("\n");
    for key in [
        "Tab pane", "[ ] tabs", "d delete", "? help", "q quit", "/ filter",
    ] {
        assert!(
            bar.contains(key),
            "{key:?} missing from the key bar:\n{bar}"
        );
    }
    insta::assert_snapshot!("list_80x24", s);
    // Every tab can be reached with its key, and a click on its title.
    h.key(KeyCode::Tab);
    for tab in [Tab::Plan, Tab::Usage, Tab::Assets, Tab::Info] {
        h.key(KeyCode::Char(']'));
        assert_eq!(h.app.tab, tab);
    }
    let info = h.screen();
    assert!(info.contains("[ ] tabs"), "{info}");
    assert!(info.contains("model       gpt-4.1-mini"), "{info}");
    let r = h.app.layout.tab_rects[4];
    assert!(r.width > 0, "the Info tab has a place to click");
    assert_eq!(h.app.layout.tab_at(r.x, r.y), Some(Tab::Info));
}

#[test]
fn help_describes_forks_as_the_list_marks_them_and_a_filter_keeps_the_mark() {
    let mut h = H::new(true, 120, 35);
    h.key(KeyCode::Char('?'));
    let mut help = String::new();
    for _ in 0..120 {
        help.push_str(&h.screen());
        h.key(KeyCode::Down);
    }
    assert!(!help.contains("with └ is a fork"), "{help}");
    assert!(help.contains("↳ marks a fork"), "{help}");
    h.key(KeyCode::Esc);
    let s = h.look_for('/', "panic");
    assert!(
        s.contains("✔ ↳ Fix panic in config"),
        "the fork keeps its mark:\n{s}"
    );
    assert!(s.contains("✔ Fix panic in config"), "{s}");
}

#[test]
fn f1_without_a_model_opens_help_at_the_model_settings() {
    let mut h = H::new(true, 80, 24);
    h.key(KeyCode::Char('n'));
    assert_eq!(h.app.screen, Screen::Conversation);
    let s = h.screen();
    assert!(s.contains("F1 says how"), "{s}");
    // The composer's title is whole.
    let title = s.lines().find(|l| l.contains("Message")).unwrap();
    assert!(title.contains("F1 says how"), "{title}");
    h.key(KeyCode::F(1));
    let help = h.screen();
    for v in ["NEOCODE_BASE_URL", "NEOCODE_MODEL", "NEOCODE_API_KEY"] {
        assert!(
            help.contains(v),
            "{v} not on the first help screen:\n{help}"
        );
    }
    insta::assert_snapshot!("help_no_model_80x24", help);
    // Narrow: the title is shorter, never cut.
    h.key(KeyCode::Esc);
    h.app.on_resize(44, 20);
    let s = h.screen();
    let title = s.lines().find(|l| l.contains("Message")).unwrap();
    assert!(title.contains("no model: F1 ━"), "{s}");
}

#[test]
fn limits_without_budgets_say_used_and_no_limit() {
    let mut h = H::new(true, 120, 35);
    let id = h.app.browse.list.current().unwrap().id.clone();
    let mut l = neocode::session::RuntimeLedger::default();
    l.usage.turns = 7;
    l.usage.tool_calls = 3;
    l.usage.input_tokens = 9600;
    l.usage.output_tokens = 450;
    let other = Sessions::open(&h.app_location()).unwrap();
    let set = |h: &mut H, l: &neocode::session::RuntimeLedger| {
        let jobs = h.app.tick();
        h.run(jobs);
        other
            .update_state(
                &id,
                &StateUpdate {
                    ledger: neocode::session::Change::Set(l.clone()),
                    ..StateUpdate::default()
                },
            )
            .unwrap();
        let jobs = h.app.tick();
        h.run(jobs);
        h.key(KeyCode::Enter);
        assert_eq!(h.app.screen, Screen::Conversation);
        h.submit("/limits");
        let s = h.screen();
        h.key(KeyCode::Esc);
        s
    };
    let s = set(&mut h, &l);
    has(
        &s,
        "No budgets set (config.toml [limits], neocode run --max-*); used: turns 7 · tool calls 3",
    );
    // With one limit set, the others say they have none.
    l.limits.max_turns = Some(40);
    let s = set(&mut h, &l);
    has(&s, "Budgets: turns 7/40 · tool calls used 3 (no limit)");
}

#[test]
fn an_edit_whose_result_carried_diagnostics_counts_them_in_its_head() {
    let mut h = H::with(120, 30, |rt| {
        let id = titled(rt, "diagnostics after an edit").id;
        let at = |m: NewMessage| NewMessage {
            created_at_ms: Some(NOW),
            ..m
        };
        let edit = |cid: &str, old: &str, new: &str| ToolCall {
            id: cid.into(),
            name: "edit_file".into(),
            arguments: serde_json::json!({
                "path": "calc.c", "old_string": old, "new_string": new
            })
            .to_string(),
        };
        let result = |cid: &str, text: &str, errors: u64, warnings: u64| NewMessage {
            tool_metadata: Some(serde_json::json!({"diagnostics": {
                "errors": errors, "warnings": warnings, "items": []
            }})),
            ..at(NewMessage::tool_result(cid, text, false))
        };
        let call = |c: ToolCall| NewMessage {
            role: Some(Role::Assistant),
            tool_calls: vec![c],
            ..at(NewMessage::default())
        };
        rt.append(
            &id,
            &[
                at(NewMessage::text(Role::User, "make total a string")),
                call(edit("c1", "add(1, 2)", "add(1, \"two\")")),
                result(
                    "c1",
                    "edited calc.c (+1 -1 lines):\n@@ -3 +3 @@\n-int total = add(1, 2);\n+int total = add(1, \"two\");\n\nclangd reports 2 errors and 1 warning in calc.c:\n  calc.c:3:20: error: incompatible pointer to integer conversion\n  calc.c:3:13: error: too few arguments\n  calc.c:1:1: warning: unused",
                    2,
                    1,
                ),
                call(edit("c2", "add(1, \"two\")", "add(1, 2)")),
                result(
                    "c2",
                    "edited calc.c (+1 -1 lines):\n@@ -3 +3 @@\n-int total = add(1, \"two\");\n+int total = add(1, 2);\n\nclangd: no errors or warnings in calc.c",
                    0,
                    0,
                ),
            ],
            &AppendMeta::default(),
        )
        .unwrap();
    });
    h.key(KeyCode::Enter);
    assert_eq!(h.app.screen, Screen::Conversation);
    let s = h.screen();
    let heads: Vec<&str> = s
        .lines()
        .filter(|l| l.contains("Tool · edit_file"))
        .collect();
    assert_eq!(heads.len(), 2, "{s}");
    assert!(
        heads[0].contains("Tool · edit_file  2 errors, 1 warning  #3"),
        "{s}"
    );
    // A clean result carries no count.
    assert!(heads[1].contains("Tool · edit_file  #5"), "{s}");
    insta::assert_snapshot!("transcript_edit_with_diagnostics", s);
}
