//! Whole-screen snapshots of the TUI on `TestBackend`, driven through the real app state with
//! injected keys, a real store in a temp dir and the worker's request handler run
//! synchronously. Also the behaviour behind the screens (fork, delete, export, paging, stale
//! answers, sanitising).

use std::path::PathBuf;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseEvent, MouseEventKind};
use neocode::runtime::{Location, Sessions};
use neocode::session::{
    AppendMeta, ListQuery, NewMessage, NewSession, Part, Role, StateUpdate, ToolCall,
    WorkspacePaths,
};
use neocode::tui::app::{App, AppOptions, Overlay, Screen, Tab, run_inline};
use neocode::tui::theme::Theme;
use neocode::tui::worker::{self, Done, Job};
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
    _tmp: tempfile::TempDir,
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
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let ws = tmp.path().join("ws");
        let export = tmp.path().join("out");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&export).unwrap();
        let loc = Location {
            paths: WorkspacePaths::resolve(&home, &ws).unwrap(),
            home,
        };
        let rt = Sessions::open(&loc).unwrap();
        fill(&rt);
        let root = loc.root().display().to_string();
        let (app, jobs) = App::new(AppOptions {
            theme: Theme::new(false),
            export_dir: export.clone(),
            workdir: root.clone(),
            root: root.clone(),
            size: (w, h),
            now_ms: NOW,
            resume: None,
        });
        let mut h = H {
            app,
            rt,
            loc: loc.clone(),
            root,
            export,
            _tmp: tmp,
        };
        h.run(jobs);
        h
    }

    /// Runs jobs (and the jobs their answers cause) to completion, like the worker would.
    fn run(&mut self, jobs: Vec<Job>) {
        run_inline(&mut self.app, &self.rt, jobs);
    }

    fn key(&mut self, code: KeyCode) {
        self.key_mod(code, KeyModifiers::NONE);
    }

    fn key_mod(&mut self, code: KeyCode, m: KeyModifiers) {
        let jobs = self.app.on_key(KeyEvent::new(code, m));
        self.run(jobs);
    }

    fn chars(&mut self, s: &str) {
        for c in s.chars() {
            self.key(KeyCode::Char(c));
        }
    }

    fn buffer(&self) -> ratatui::buffer::Buffer {
        let (w, h) = self.app.size;
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| views::draw(f, &self.app)).unwrap();
        t.backend().buffer().clone()
    }

    fn screen(&self) -> String {
        let b = self.buffer();
        let mut out = String::new();
        for y in 0..b.area.height {
            let mut line = String::new();
            for x in 0..b.area.width {
                line.push_str(b[(x, y)].symbol());
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out.replace(&self.root, "[WORKSPACE]")
    }

    fn app_location(&self) -> Location {
        self.loc.clone()
    }

    fn select_title(&mut self, title: &str) {
        for _ in 0..50 {
            if self
                .app
                .list
                .current()
                .is_some_and(|s| s.title.starts_with(title))
            {
                return;
            }
            self.key(KeyCode::Char('j'));
        }
        panic!("no session titled {title:?}");
    }
}

#[test]
fn empty_workspace_says_how_to_start() {
    let h = H::new(false, 100, 24);
    let s = h.screen();
    assert!(s.contains("Press n to start a new session"), "{s}");
    assert!(s.contains("neocode demo"), "{s}");
    insta::assert_snapshot!("empty", s);
}

#[test]
fn populated_list_with_transcript() {
    let h = H::new(true, 120, 35);
    let s = h.screen();
    assert!(s.contains("Draft release notes for v0.4"));
    assert!(s.contains("7 sessions"));
    insta::assert_snapshot!("list", s);
}

#[test]
fn fork_is_shown_under_its_parent() {
    let h = H::new(true, 120, 35);
    let s = h.screen();
    let parent = s.find("✔ Fix panic in config").unwrap();
    let fork = s.find("✔ └ Fix panic in config").unwrap();
    assert!(fork > parent, "{s}");
}

#[test]
fn plan_tab() {
    let mut h = H::new(true, 120, 35);
    h.select_title("Migrate billing");
    h.key(KeyCode::Char(']'));
    assert_eq!(h.app.tab, Tab::Plan);
    let s = h.screen();
    assert!(s.contains("4/7 done, 1 failed"), "{s}");
    assert!(
        s.contains("CompileError: MutexGuard held across .await"),
        "{s}"
    );
    insta::assert_snapshot!("plan", s);
}

#[test]
fn usage_tab() {
    let mut h = H::new(true, 120, 35);
    h.select_title("Migrate billing");
    h.key(KeyCode::Char(']'));
    h.key(KeyCode::Char(']'));
    let s = h.screen();
    assert!(s.contains("Per-turn tokens"), "{s}");
    assert!(s.contains("input tokens"), "{s}");
    insta::assert_snapshot!("usage", s);
}

#[test]
fn assets_tab_exports_the_asset() {
    let mut h = H::new(true, 120, 35);
    h.select_title("Match the login page");
    h.key(KeyCode::Char('['));
    h.key(KeyCode::Char('['));
    assert_eq!(h.app.tab, Tab::Assets);
    let s = h.screen();
    assert!(s.contains("image/png"), "{s}");
    insta::assert_snapshot!("assets", s);
    h.key(KeyCode::Tab);
    h.key(KeyCode::Enter);
    let files: Vec<_> = std::fs::read_dir(&h.export).unwrap().flatten().collect();
    assert_eq!(files.len(), 1);
    let bytes = std::fs::read(files[0].path()).unwrap();
    assert!(bytes.starts_with(b"\x89PNG"), "a real PNG was written");
    assert!(h.screen().contains("Wrote "));
}

#[test]
fn info_tab() {
    let mut h = H::new(true, 120, 35);
    h.select_title("Fix panic in config loader — try");
    h.key(KeyCode::Char('['));
    let s = h.screen();
    assert!(s.contains("forked from"), "{s}");
    assert!(s.contains("at message #8"), "{s}");
    insta::assert_snapshot!("info", s);
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
    assert!(
        collapsed.contains("⚙ bash  cargo test -p acme-config empty_file"),
        "{collapsed}"
    );
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
    h.key(KeyCode::Char('/'));
    h.chars("billing");
    let s = h.screen();
    assert!(s.contains("Migrate billing service"), "{s}");
    assert!(!s.contains("Walk me through"), "{s}");
    insta::assert_snapshot!("filtered", s);
    // Esc clears the filter; all rows come back.
    h.key(KeyCode::Esc);
    assert_eq!(h.app.list.visible.len(), 7);
}

#[test]
fn full_text_search_jumps_to_the_message() {
    let mut h = H::new(true, 120, 35);
    h.key(KeyCode::Char('s'));
    h.chars("redis");
    let s = h.screen();
    assert!(s.contains("Add rate limiting to the public API"), "{s}");
    assert!(!s.contains('\u{E000}') && !s.contains('\u{E001}'), "{s}");
    insta::assert_snapshot!("search", s);
    h.key(KeyCode::Enter);
    assert!(matches!(h.app.overlay, Overlay::None));
    let d = h.app.detail.as_ref().unwrap();
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
    h.select_title("Draft release notes");
    let id = h.app.list.current().unwrap().id.clone();
    h.key(KeyCode::Char('d'));
    let s = h.screen();
    assert!(s.contains("Delete session"), "{s}");
    insta::assert_snapshot!("confirm_delete", s);
    h.key(KeyCode::Char('n'));
    assert!(h.rt.header(&id).is_ok(), "n keeps the session");
    h.key(KeyCode::Char('d'));
    h.key(KeyCode::Char('y'));
    assert!(h.rt.header(&id).is_err(), "y deletes it");
    assert_eq!(h.app.list.visible.len(), 6);
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
    let id = h.app.list.current().unwrap().id.clone();
    h.key(KeyCode::Char('R'));
    h.key_mod(KeyCode::Char('u'), KeyModifiers::CONTROL);
    h.chars("Release notes (on hold)");
    insta::assert_snapshot!("rename", h.screen());
    h.key(KeyCode::Enter);
    assert_eq!(h.rt.header(&id).unwrap().title, "Release notes (on hold)");
    assert!(h.screen().contains("Release notes (on hold)"));
}

#[test]
fn conversation_view_appends_and_says_no_provider() {
    let mut h = H::new(true, 120, 35);
    h.select_title("Fix panic in config loader on empty file");
    let id = h.app.list.current().unwrap().id.clone();
    let before = h.rt.header(&id).unwrap().message_count;
    h.key(KeyCode::Enter);
    assert_eq!(h.app.screen, Screen::Conversation);
    h.chars("Yes please, add it to the README");
    insta::assert_snapshot!("conversation", h.screen());
    h.key(KeyCode::Enter);
    let hd = h.rt.header(&id).unwrap();
    assert_eq!(hd.message_count, before + 1);
    let last = h.rt.messages(&id, hd.last_seq, hd.last_seq).unwrap();
    assert_eq!(last[0].text(), "Yes please, add it to the README");
    let s = h.screen();
    assert!(s.contains("No model provider is connected yet"), "{s}");
    assert!(s.contains("Yes please, add it to the README"), "{s}");
    h.key(KeyCode::Esc);
    assert_eq!(h.app.screen, Screen::Browse);
}

#[test]
fn fork_from_selected_message() {
    let mut h = H::new(true, 120, 35);
    h.select_title("Walk me through");
    let parent = h.app.list.current().unwrap().id.clone();
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
        h.app.list.current().unwrap().id,
        kids[0].id,
        "the fork is selected"
    );
    assert!(h.screen().contains("Forked at message #3"));
}

#[test]
fn new_session_and_export() {
    let mut h = H::new(true, 120, 35);
    h.key(KeyCode::Char('n'));
    assert_eq!(h.rt.count().unwrap(), 8);
    assert_eq!(h.app.screen, Screen::Conversation);
    h.key(KeyCode::Esc);
    h.select_title("Add rate limiting");
    let id = h.app.list.current().unwrap().id.clone();
    h.key(KeyCode::Char('e'));
    let path = h.export.join(format!("{}.json", &id[..8]));
    let doc = neocode::session::file::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(doc.session.id, id);
    assert!(h.screen().contains(&format!("{}.json", &id[..8])));
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
    h.select_title("Add rate limiting");
    let id = h.app.list.current().unwrap().id.clone();
    let jobs = h.app.on_resize(80, 20);
    h.run(jobs);
    let _ = h.screen();
    assert_eq!(h.app.list.current().unwrap().id, id);
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
    assert_eq!(h.app.list.selected, 2);
    let jobs = h.app.on_mouse(MouseEvent {
        kind: MouseEventKind::ScrollDown,
        column: 5,
        row: 4,
        modifiers: KeyModifiers::NONE,
    });
    h.run(jobs);
    assert_eq!(h.app.list.selected, 5);
}

#[test]
fn pages_load_lazily_as_the_selection_moves() {
    let mut h = H::with(120, 35, |rt| {
        for i in 0..450 {
            rt.new_session(NewSession {
                title: format!("session {i:03}"),
                ..NewSession::default()
            })
            .unwrap();
        }
    });
    assert_eq!(h.app.list.rows.len(), 200, "one page at start");
    assert_eq!(h.app.list.total, Some(450));
    for _ in 0..160 {
        h.key(KeyCode::Char('j'));
    }
    assert_eq!(
        h.app.list.rows.len(),
        400,
        "the next page came as the end neared"
    );
    // One `G` loads everything left and lands on the true last (oldest) session.
    h.key(KeyCode::Char('G'));
    assert_eq!(h.app.list.rows.len(), 450);
    assert_eq!(h.app.list.current().unwrap().title, "session 000");
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
    let want = h.app.list.current().unwrap().id.clone();
    let answer = |h: &H, jobs: &[Job]| -> Vec<Done> {
        jobs.iter()
            .map(|j| Done {
                token: j.token,
                result: worker::handle(&h.rt, j.request.clone()),
            })
            .collect()
    };
    let (da, db) = (answer(&h, &a), answer(&h, &b));
    for d in db.into_iter().chain(da) {
        let jobs = h.app.on_done(d);
        h.run(jobs);
    }
    let d = h.app.detail.as_ref().unwrap();
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
                    parts: vec![Part::Reasoning { text: evil.into() }],
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
                plan: Some(Some(neocode::session::Plan {
                    steps: vec![neocode::session::Step {
                        id: "s1".into(),
                        title: evil.into(),
                        depends_on: vec![],
                    }],
                })),
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
        let old = rt
            .new_session(NewSession {
                title: "the oldest one".into(),
                ..NewSession::default()
            })
            .unwrap();
        rt.append(
            &old.id,
            &[NewMessage::text(Role::User, "where is the zeppelin config")],
            &AppendMeta::default(),
        )
        .unwrap();
        for i in 0..450 {
            rt.new_session(NewSession {
                title: format!("session {i:03}"),
                ..NewSession::default()
            })
            .unwrap();
        }
    });
    assert_eq!(
        h.app.list.rows.len(),
        200,
        "the old session is not loaded yet"
    );
    h.key(KeyCode::Char('s'));
    h.chars("zeppelin");
    h.key(KeyCode::Enter);
    let detail = h.app.detail.as_ref().unwrap().id.clone();
    let selected = h.app.list.current().unwrap();
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
    let selected = h.app.list.current().unwrap().id.clone();
    let before = h.rt.header(&selected).unwrap().message_count;

    // Another neocode process on the same workspace: its own runtime and connections.
    let other = Sessions::open(&h.app_location()).unwrap();
    other
        .append(
            &selected,
            &[NewMessage::text(Role::User, "written by the other window")],
            &AppendMeta::default(),
        )
        .unwrap();
    other
        .new_session(NewSession {
            title: "Started in another terminal".into(),
            ..NewSession::default()
        })
        .unwrap();
    tick(&mut h);
    assert_eq!(h.app.list.rows.len(), 8, "the new session is listed");
    assert!(h.screen().contains("Started in another"), "{}", h.screen());
    let d = h.app.detail.as_ref().unwrap();
    assert_eq!(d.id, selected, "the selection stays where it was");
    assert_eq!(d.header.as_ref().unwrap().message_count, before + 1);

    // The other window deletes the session this one shows.
    other.delete(&selected).unwrap();
    tick(&mut h);
    assert!(h.app.list.rows.iter().all(|s| s.id != selected));
    let now = h.app.list.current().unwrap().id.clone();
    assert_eq!(
        h.app.detail.as_ref().unwrap().id,
        now,
        "detail follows the new selection"
    );
    assert!(!h.screen().contains("no session matches"), "{}", h.screen());
}

#[test]
fn deleting_a_fork_parent_keeps_a_valid_selection() {
    // The parent sits just above its fork at the end of the tree; deleting it shifts the
    // rows under the tree order (this used to index past the end and crash).
    let mut h = H::new(true, 120, 35);
    h.key(KeyCode::Char('G'));
    h.key(KeyCode::Char('k'));
    let parent = h.app.list.current().unwrap().id.clone();
    assert!(
        h.app
            .list
            .rows
            .iter()
            .any(|s| s.parent_id.as_deref() == Some(parent.as_str())),
        "the selected session should be a fork's parent"
    );
    h.key(KeyCode::Char('d'));
    h.key(KeyCode::Char('y'));
    assert!(h.rt.header(&parent).is_err(), "deleted");
    let now = h.app.list.current().expect("a selection").id.clone();
    assert_ne!(now, parent);
    assert_eq!(h.app.detail.as_ref().unwrap().id, now);
    assert_eq!(h.app.list.visible.len(), 6);
}

#[test]
fn a_search_jump_clears_a_filter_that_hides_the_session() {
    let mut h = H::new(true, 120, 35);
    h.key(KeyCode::Char('/'));
    h.chars("zzzz");
    h.key(KeyCode::Enter);
    assert!(h.app.list.visible.is_empty(), "the filter hides everything");
    h.key(KeyCode::Char('s'));
    h.chars("redis");
    h.key(KeyCode::Enter);
    let shown = h.app.detail.as_ref().unwrap().id.clone();
    assert_eq!(h.app.list.current().map(|s| s.id.clone()), Some(shown));
    assert!(h.app.list.filter.is_none());
}

#[test]
fn opening_a_session_that_stopped_mid_turn_says_which_calls_were_interrupted() {
    let mut h = H::with(120, 35, |rt| {
        let id = rt
            .new_session(NewSession {
                title: "stopped mid-turn".into(),
                ..NewSession::default()
            })
            .unwrap()
            .id;
        rt.append(
            &id,
            &[
                NewMessage::text(Role::User, "edit the config"),
                NewMessage {
                    role: Some(Role::Assistant),
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: "edit_file".into(),
                        arguments: "{}".into(),
                    }],
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
    assert!(
        s.contains("1 tool call never got a result (edit_file)"),
        "{s}"
    );
    h.key(KeyCode::Esc);
    h.key(KeyCode::Char(']'));
    h.key(KeyCode::Char(']'));
    h.key(KeyCode::Char(']'));
    h.key(KeyCode::Char(']'));
    let s = h.screen();
    assert!(s.contains("interrupted"), "Info tab: {s}");
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
        std::fs::write(
            rt.home().join("config.toml"),
            "[mcp_servers.docs]\ncommand = \"docs-server\"\n",
        )
        .unwrap();
        let id = rt
            .new_session(NewSession {
                title: "with context".into(),
                ..NewSession::default()
            })
            .unwrap()
            .id;
        rt.update_state(
            &id,
            &StateUpdate {
                skills: Some(Some(serde_json::json!([{"name": "deploy"}]))),
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
