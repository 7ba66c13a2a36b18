//! Rewind in the TUI (issue 26): `Esc Esc` in the conversation and Alt-R on a selected
//! message open the rewind dialog (conversation and files / conversation only / files only,
//! with the preview); Enter rewinds through the runtime and the conversation opens the
//! session to continue; Esc cancels and nothing changes. The Info tab lists the file changes
//! per turn. What a user checks: the files on disk, the sessions, the screen.

use crate::support::text::has;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::Env;
use crate::support::pty::Pty;
use crate::support::tui::{Keys, options};
use crossterm::event::{KeyCode, KeyModifiers};
use neocode::runtime::Sessions;
use neocode::session::snapshot::{FileChange, Image};
use neocode::session::{
    AppendMeta, ListQuery, NewMessage, NewSession, Role, StateUpdate, ToolCall,
};
use neocode::tui::app::{App, ESC_ESC_MS, Overlay, Screen, Tab};
use neocode::tui::views;

/// 2025-06-01 12:00:00 UTC: the clock of every snapshot.
const NOW: i64 = 1_748_779_200_000;

/// The fixture session's id (fixed: the snapshots show it).
const ID: &str = "0e5a1b2c-0000-4000-8000-000000000026";

/// Writes `data` to `ws/rel` with mode 0644 (what the fixture records).
fn put(ws: &Path, rel: &str, data: &str) {
    let p = ws.join(rel);
    std::fs::write(&p, data).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
}

fn read(ws: &Path, rel: &str) -> Option<String> {
    std::fs::read_to_string(ws.join(rel)).ok()
}

/// The files as they were before message #5: `a.txt` back to its first content, `new.txt` gone.
fn files_as_before_message_5(ws: &Path) {
    assert_eq!(read(ws, "a.txt").as_deref(), Some("one\n"));
    assert_eq!(read(ws, "new.txt"), None);
}

/// One turn as the runtime records it: the user's message, a `write_file` call per file,
/// their results with the files' before- and after-images (the files written for real),
/// and the reply. `writes`: (path, content before or `None` when new, content after).
fn turn(rt: &Sessions, id: &str, ws: &Path, prompt: &str, writes: &[(&str, Option<&str>, &str)]) {
    let meta = AppendMeta::default();
    rt.append(id, &[NewMessage::text(Role::User, prompt)], &meta)
        .unwrap();
    let calls: Vec<ToolCall> = writes
        .iter()
        .enumerate()
        .map(|(i, (path, _, after))| ToolCall {
            id: format!("{id}-{path}-{i}"),
            name: "write_file".into(),
            arguments: serde_json::json!({"path": path, "content": after}).to_string(),
        })
        .collect();
    let mut asks = NewMessage::text(Role::Assistant, "");
    asks.parts.clear();
    asks.tool_calls = calls.clone();
    rt.append(id, &[asks], &meta).unwrap();
    for (call, (path, before, after)) in calls.iter().zip(writes) {
        put(ws, path, after);
        let change = FileChange::Written {
            path: path.to_string(),
            before: before.map_or(Image::Absent, |b| Image::Bytes {
                data: b.as_bytes().to_vec(),
                mode: 0o644,
            }),
            after: Image::Bytes {
                data: after.as_bytes().to_vec(),
                mode: 0o644,
            },
        };
        rt.append_with_files(
            id,
            &[NewMessage::tool_result(&call.id, "wrote it", false)],
            &meta,
            &StateUpdate::default(),
            &[change],
        )
        .unwrap();
    }
    rt.append(id, &[NewMessage::text(Role::Assistant, "Done.")], &meta)
        .unwrap();
}

/// A session of two turns that changed real files: #1 rewrote a.txt (zero → one); #5
/// rewrote it again (one → two) and created new.txt. Returns its id.
fn two_turns(rt: &Sessions, ws: &Path) -> String {
    put(ws, "a.txt", "zero\n");
    let h = rt
        .new_session(NewSession {
            id: Some(ID.into()),
            title: "edit the files".into(),
            ..NewSession::default()
        })
        .unwrap();
    turn(
        rt,
        &h.id,
        ws,
        "first: a.txt says one",
        &[("a.txt", Some("zero\n"), "one\n")],
    );
    turn(
        rt,
        &h.id,
        ws,
        "second: a.txt says two, and a new file",
        &[
            ("a.txt", Some("one\n"), "two\n"),
            ("new.txt", None, "new\n"),
        ],
    );
    h.id
}

struct H {
    app: App,
    rt: Sessions,
    root: String,
    ws: std::path::PathBuf,
    id: String,
    _env: Env,
}

impl H {
    fn new(w: u16, h: u16) -> H {
        let env = Env::new();
        let rt = env.sessions();
        let ws = env.workdir.clone();
        let id = two_turns(&rt, &ws);
        let root = env.location().root().display().to_string();
        let export = env.tmp.path().join("out");
        let (app, jobs) = App::new(options(&root, &export, (w, h), NOW));
        let mut h = H {
            app,
            rt,
            root,
            ws,
            id,
            _env: env,
        };
        h.run(jobs);
        h
    }

    fn screen(&self) -> String {
        views::draw_to_text(&self.app).replace(&self.root, "[WORKSPACE]")
    }

    fn count(&self) -> usize {
        self.rt
            .list(&neocode::session::ListQuery::default())
            .unwrap()
            .items
            .len()
    }

    fn status(&self) -> String {
        crate::support::tui::status_text(&self.app)
    }

    /// Opens the session's conversation from the list.
    fn open(&mut self) {
        self.key(KeyCode::Enter);
        assert_eq!(self.app.screen, Screen::Conversation);
        has(&self.screen(), "Assistant  #9");
    }

    fn dialog_open(&self) -> bool {
        matches!(self.app.overlay, Overlay::Rewind(_))
    }
}

crate::support::tui::inline_keys!(H);

/// Esc Esc in the conversation opens the dialog at the last user message with the preview
/// (the same plan `--dry-run` prints); Enter on the default choice forks and puts the files
/// back, and the conversation opens the fork and says what happened.
#[test]
fn esc_esc_opens_the_dialog_and_enter_rewinds_conversation_and_files() {
    let mut h = H::new(80, 24);
    h.open();
    h.key(KeyCode::Esc);
    assert_eq!(h.app.screen, Screen::Browse, "Esc alone still goes back");
    h.key(KeyCode::Esc);
    assert_eq!(
        h.app.screen,
        Screen::Conversation,
        "back in the conversation"
    );
    assert!(h.dialog_open(), "{}", h.screen());
    let s = h.screen();
    insta::assert_snapshot!("rewind_dialog", s);
    assert!(s.contains("Rewind to before message #5"), "{s}");
    assert!(s.contains("▶ 1 conversation and files"), "{s}");
    assert!(s.contains("restored       a.txt"), "{s}");
    has(&s, "deleted        new.txt (created by the session)");
    assert!(s.contains("+one"), "{s}");

    // Tab: conversation only touches no file; back to the default.
    h.key(KeyCode::Tab);
    has(&h.screen(), "No file is touched");
    h.key(KeyCode::BackTab);
    has(&h.screen(), "▶ 1 conversation and files");

    h.key(KeyCode::Enter);
    assert!(!h.dialog_open());
    assert_eq!(read(&h.ws, "a.txt").as_deref(), Some("one\n"));
    assert_eq!(
        read(&h.ws, "new.txt"),
        None,
        "the file the turn created is gone"
    );
    assert_eq!(h.count(), 2, "a fork: the original is kept");
    let open = h.app.browse.detail.as_ref().unwrap().id.clone();
    assert_ne!(open, h.id, "the conversation is the new session");
    assert_eq!(h.app.screen, Screen::Conversation);
    let status = h.status();
    assert!(status.contains("Rewound to before message #5"), "{status}");
    assert!(status.contains("1 restored, 1 deleted"), "{status}");
    let fork = h.rt.header(&open).unwrap();
    assert_eq!(fork.parent_id.as_deref(), Some(h.id.as_str()));
    assert_eq!(fork.message_count, 4, "the fork ends before message #5");
    // The original session is as it was.
    assert_eq!(h.rt.header(&h.id).unwrap().message_count, 9);
}

/// Alt-R on a selected user message opens the dialog at that message; "files only" puts the
/// files back as they were before it and keeps the conversation (no fork).
#[test]
fn alt_r_on_a_selected_message_rewinds_to_it_and_files_only_keeps_the_session() {
    let mut h = H::new(100, 30);
    h.open();
    for _ in 0..20 {
        let sel = h
            .app
            .browse
            .detail
            .as_ref()
            .and_then(|d| d.transcript.as_ref())
            .and_then(|t| t.selected);
        if sel == Some(1) {
            break;
        }
        h.key_mod(KeyCode::Up, KeyModifiers::ALT);
    }
    h.key_mod(KeyCode::Char('r'), KeyModifiers::ALT);
    assert!(h.dialog_open(), "{}", h.screen());
    has(&h.screen(), "Rewind to before message #1");
    h.key(KeyCode::Char('3'));
    has(&h.screen(), "▶ 3 files only");
    h.key(KeyCode::Enter);
    assert_eq!(read(&h.ws, "a.txt").as_deref(), Some("zero\n"));
    assert_eq!(read(&h.ws, "new.txt"), None);
    assert_eq!(h.count(), 1, "files only: no fork");
    assert_eq!(h.app.browse.detail.as_ref().unwrap().id, h.id);
    assert_eq!(
        h.rt.header(&h.id).unwrap().message_count,
        9,
        "the conversation is kept"
    );
    assert!(
        h.status()
            .contains("Put the files back as they were before message #1")
    );
}

/// Esc in the dialog cancels: no file, no session changes. A lone Esc keeps its meanings:
/// back to the list at once, and (the second one late) back again from there.
#[test]
fn a_cancelled_rewind_changes_nothing_and_a_lone_esc_still_goes_back() {
    let mut h = H::new(80, 24);
    h.open();
    h.key(KeyCode::Esc);
    h.key(KeyCode::Esc);
    assert!(h.dialog_open());
    h.key(KeyCode::Down);
    h.key(KeyCode::Esc);
    assert!(!h.dialog_open());
    assert_eq!(h.app.screen, Screen::Conversation);
    assert!(h.status().contains("nothing changed"), "{}", h.status());
    assert_eq!(read(&h.ws, "a.txt").as_deref(), Some("two\n"));
    assert_eq!(read(&h.ws, "new.txt").as_deref(), Some("new\n"));
    assert_eq!(h.count(), 1);
    assert_eq!(h.rt.header(&h.id).unwrap().message_count, 9);

    // With text in the editor Esc goes back (the text kept) and a second Esc is the list's.
    h.chars("half a thought");
    h.key(KeyCode::Esc);
    assert_eq!(h.app.screen, Screen::Browse);
    h.key(KeyCode::Esc);
    assert!(!h.dialog_open());
    assert_eq!(h.app.screen, Screen::Browse);

    // A second Esc after the pause is the list's own too (it quits from the list).
    h.key(KeyCode::Enter);
    // The unsent text came back; Ctrl-U empties the editor.
    h.key_mod(KeyCode::Char('u'), KeyModifiers::CONTROL);
    assert_eq!(h.app.conv.composer().text(), "");
    h.key(KeyCode::Esc);
    assert_eq!(h.app.screen, Screen::Browse);
    h.app.now_ms += ESC_ESC_MS + 1;
    h.key(KeyCode::Esc);
    assert!(!h.dialog_open());
    assert!(h.app.quit, "Esc on the list quits");
    assert_eq!(read(&h.ws, "a.txt").as_deref(), Some("two\n"));
}

/// The Info tab lists the session's file changes per turn, as `show` does.
#[test]
fn the_info_tab_shows_the_file_changes_per_turn() {
    let mut h = H::new(120, 36);
    h.key(KeyCode::Tab);
    while h.app.tab != Tab::Info {
        h.key(KeyCode::Char(']'));
    }
    // The session was written now, not at the app's clock.
    let time = regex::Regex::new(r"\d{4}-\d\d-\d\d \d\d:\d\d [+-]\d\d:\d\d").unwrap();
    let s = time.replace_all(&h.screen(), "[TIME]").into_owned();
    insta::assert_snapshot!("info_file_changes", s);
    assert!(s.contains("file changes  3 in 2 turns"), "{s}");
    assert!(s.contains("turn at message 1"), "{s}");
    assert!(s.contains("turn at message 5"), "{s}");
    assert!(s.contains("#8    created   new.txt"), "{s}");
}

/// [`two_turns`] in `env`'s workspace, and the real binary in a `rows` x `cols` terminal
/// opened on it (its last message in view): the sessions, the workspace, the session, the
/// terminal.
fn two_turns_open(env: &Env, rows: u16, cols: u16) -> (Sessions, PathBuf, String, Pty) {
    let rt = env.sessions();
    let ws = env.workdir.clone();
    let id = two_turns(&rt, &ws);
    let mut pty = Pty::spawn(&env.home, &ws, &[], &[], rows, cols);
    pty.wait_for("edit the files");
    pty.press("\r", "Assistant  #9");
    (rt, ws, id, pty)
}

/// The real binary in a terminal: Esc Esc, the preview, Esc cancels (nothing changes), Esc Esc
/// again, Enter: the files on disk are back and the conversation is the fork.
#[test]
fn esc_esc_rewinds_in_a_real_terminal() {
    let env = Env::new();
    let (rt, ws, id, mut pty) = two_turns_open(&env, 24, 80);

    let esc_esc = |pty: &mut Pty| {
        pty.keys("\x1b");
        std::thread::sleep(Duration::from_millis(120));
        pty.keys("\x1b");
    };
    esc_esc(&mut pty);
    pty.wait_for("Rewind to before message #5");
    pty.wait_for("deleted        new.txt");
    pty.press("\x1b", "nothing changed");
    assert_eq!(read(&ws, "a.txt").as_deref(), Some("two\n"));
    assert_eq!(read(&ws, "new.txt").as_deref(), Some("new\n"));

    esc_esc(&mut pty);
    pty.wait_for("Rewind to before message #5");
    pty.press("\r", "Rewound to before message #5");
    files_as_before_message_5(&ws);
    let all = rt.list(&ListQuery::default()).unwrap().items;
    assert_eq!(all.len(), 2);
    assert!(
        all.iter()
            .any(|s| s.parent_id.as_deref() == Some(id.as_str()) && s.title.starts_with("↺")),
        "the fork, marked"
    );
    let code = pty.quit();
    assert_eq!(code, 0);
}

/// A session with hundreds of file changes: the Info tab builds only the lines in view, and
/// scrolling shows them in order without a gap or a repeat.
#[test]
fn the_info_tab_scrolls_through_many_file_changes() {
    let env = Env::new();
    let rt = env.sessions();
    let h = crate::support::titled(&rt, "many files");
    let meta = AppendMeta::default();
    rt.append(
        &h.id,
        &[NewMessage::text(Role::User, "make 300 files")],
        &meta,
    )
    .unwrap();
    let changes: Vec<FileChange> = (0..300)
        .map(|i| FileChange::Written {
            path: format!("f{i:03}.txt"),
            before: Image::Absent,
            after: Image::Bytes {
                data: format!("{i}\n").into_bytes(),
                mode: 0o644,
            },
        })
        .collect();
    rt.append_with_files(
        &h.id,
        &[NewMessage::text(Role::Assistant, "made them")],
        &meta,
        &StateUpdate::default(),
        &changes,
    )
    .unwrap();
    let root = env.location().root().display().to_string();
    let (app, jobs) = App::new(options(&root, env.tmp.path(), (100, 30), NOW));
    let mut h = H {
        app,
        rt,
        root,
        ws: env.workdir.clone(),
        id: h.id,
        _env: env,
    };
    h.run(jobs);
    h.key(KeyCode::Tab);
    while h.app.tab != Tab::Info {
        h.key(KeyCode::Char(']'));
    }
    let shown = |h: &H| -> Vec<usize> {
        h.screen()
            .lines()
            .filter_map(|l| {
                let at = l.find(" f")?;
                let name = l[at + 2..].get(..3)?;
                l[at..].contains(".txt").then(|| name.parse().ok())?
            })
            .collect()
    };
    for _ in 0..150 {
        h.key(KeyCode::Down);
    }
    let first = shown(&h);
    assert!(first.len() > 10, "{}", h.screen());
    assert!(
        first.windows(2).all(|w| w[1] == w[0] + 1),
        "in order, no gap: {first:?}"
    );
    h.key(KeyCode::Down);
    let next = shown(&h);
    assert_eq!(next[0], first[0] + 1, "{first:?} then {next:?}");
    assert_eq!(next.len(), first.len());
    for _ in 0..400 {
        h.key(KeyCode::Down);
    }
    assert!(shown(&h).is_empty(), "past the end: {}", h.screen());
}

/// A file the user edited after the session's last write is skipped: the preview says so and
/// why, the rewind leaves it as it is, and the conversation says which file and why.
#[test]
fn a_file_edited_since_is_skipped_and_the_conversation_says_why() {
    let mut h = H::new(100, 30);
    put(&h.ws, "a.txt", "mine\n");
    h.open();
    h.key_mod(KeyCode::Char('r'), KeyModifiers::ALT);
    let s = h.screen();
    has(
        &s,
        "skipped        a.txt (changed since the session's last write)",
    );
    assert!(!s.contains("--force"), "the TUI has no --force: {s}");
    h.key(KeyCode::Enter);
    assert_eq!(
        read(&h.ws, "a.txt").as_deref(),
        Some("mine\n"),
        "left alone"
    );
    assert_eq!(read(&h.ws, "new.txt"), None);
    let status = h.status();
    assert!(status.contains("1 deleted"), "{status}");
    has(
        &status,
        "Skipped: a.txt (changed since the session's last write)",
    );
}

/// The real binary in a terminal, the message key: Alt-↑ selects the last message, Alt-R
/// opens the dialog at its turn (#5), `3` chooses files only, Enter: the files are back and
/// no session is made.
#[test]
fn alt_r_on_a_selected_message_in_a_real_terminal() {
    let env = Env::new();
    let (rt, ws, id, mut pty) = two_turns_open(&env, 30, 100);
    pty.keys("\x1b[1;3A");
    std::thread::sleep(Duration::from_millis(150));
    pty.press("\x1br", "Rewind to before message #5");
    pty.press("3", "▶ 3 files only");
    pty.press("\r", "Put the files back as they were before message #5");
    files_as_before_message_5(&ws);
    let all = rt.list(&ListQuery::default()).unwrap().items;
    assert_eq!(all.len(), 1, "files only: no fork");
    assert_eq!(rt.header(&id).unwrap().message_count, 9);
    let code = pty.quit();
    assert_eq!(code, 0);
}
