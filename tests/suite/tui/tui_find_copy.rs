//! Issue 29, the second half, in the real app state (keys injected, the store's answers run
//! inline) and in a real terminal: searching the open transcript (`/` in the transcript
//! pane, Ctrl-F; n/N; the count; a 100,000-message transcript) and copying a message, a tool
//! result or a code block by OSC 52.

use std::time::{Duration, Instant};

use base64::Engine;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use neocode::runtime::Sessions;
use neocode::session::{AppendMeta, NewMessage, Role};
use neocode::tui::app::{App, Screen};
use neocode::tui::effect::Effect;
use neocode::tui::transcript::Transcript;
use neocode::tui::views;

use crate::support::Env;
use crate::support::pty::Pty;
use crate::support::text::has;
use crate::support::tui::{Keys, options};

const NOW: i64 = 1_748_779_200_000;

struct H {
    app: App,
    rt: Sessions,
    id: String,
    _env: Env,
}

crate::support::tui::inline_keys!(H);

impl H {
    /// The open session's transcript as the conversation view holds it.
    fn transcript(&self) -> &Transcript {
        self.app
            .browse
            .detail
            .as_ref()
            .unwrap()
            .transcript
            .as_ref()
            .unwrap()
    }

    /// A session holding `messages` (appended in one batch), open in the conversation view
    /// when `open`, else on the list.
    fn with(messages: Vec<NewMessage>, open: bool) -> H {
        let env = Env::new();
        let rt = env.sessions();
        let s = crate::support::titled(&rt, "Searchable");
        for batch in messages.chunks(5000) {
            rt.append(&s.id, batch, &AppendMeta::default()).unwrap();
        }
        let root = env.workdir.display().to_string();
        let export = env.tmp.path().to_path_buf();
        let mut opts = options(&root, &export, (100, 30), NOW);
        if open {
            opts.resume = Some(s.id.clone());
        }
        let (app, fx) = App::new(opts);
        let mut h = H {
            app,
            rt,
            id: s.id,
            _env: env,
        };
        h.run(fx);
        h
    }

    fn screen(&self) -> String {
        views::draw_to_text(&self.app)
            .replace(&self._env.workdir.display().to_string(), "[WORKSPACE]")
    }

    /// The effects of one key, not carried out.
    fn effects_of(&mut self, code: KeyCode, m: KeyModifiers) -> Vec<Effect> {
        self.app.on_key(KeyEvent::new(code, m))
    }

    fn status(&self) -> String {
        crate::support::tui::status_text(&self.app)
    }
}

fn user(text: &str) -> NewMessage {
    NewMessage::text(Role::User, text)
}

fn reply(text: &str) -> NewMessage {
    NewMessage::text(Role::Assistant, text)
}

/// The text an OSC 52 sequence puts on the clipboard.
fn osc52_text(effects: &[Effect]) -> Option<String> {
    effects.iter().find_map(|e| match e {
        Effect::Clipboard(s) => {
            let b64 = s.strip_prefix("\x1b]52;c;")?.strip_suffix('\x07')?;
            let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
            String::from_utf8(bytes).ok()
        }
        _ => None,
    })
}

/// Sixty messages, "the Parser bug again" in three replies (20, 40, 60).
fn parser_three_times() -> Vec<NewMessage> {
    (1..=60)
        .map(|i| {
            if i % 20 == 0 {
                reply(&format!("the Parser bug again, take {i}"))
            } else {
                user(&format!("filler message {i}"))
            }
        })
        .collect()
}

#[test]
fn ctrl_f_searches_the_conversation_and_n_moves_between_matches() {
    let mut h = H::with(parser_three_times(), true);
    assert_eq!(h.app.screen, Screen::Conversation);
    h.key_mod(KeyCode::Char('f'), KeyModifiers::CONTROL);
    h.chars("parser");
    // The conversation follows its end: the newest match is current, and shown.
    let s = h.screen();
    assert!(s.contains("Find: parser  3/3"), "{s}");
    assert!(s.contains("take 60"), "{s}");
    h.key(KeyCode::Enter);
    // n wraps round to the first match, which the transcript scrolls to.
    h.key(KeyCode::Char('n'));
    let s = h.screen();
    assert!(s.contains("1/3"), "{s}");
    assert!(s.contains("take 20") && s.contains("#20"), "{s}");
    assert!(!s.contains("take 60"), "{s}");
    h.key(KeyCode::Char('n'));
    has(&h.screen(), "take 40");
    h.key_mod(KeyCode::Char('N'), KeyModifiers::SHIFT);
    let s = h.screen();
    assert!(s.contains("1/3") && s.contains("take 20"), "{s}");
    // The selected message is the match.
    let t = h.transcript();
    assert_eq!(t.selected, Some(20));
    // Esc closes the search line; the editor has the keys again (n was never typed into it).
    h.key(KeyCode::Esc);
    assert!(h.app.find().is_none());
    assert!(h.app.conv.composer().text().is_empty());
    assert!(!h.screen().contains("Find:"));
    assert_eq!(
        h.app.screen,
        Screen::Conversation,
        "Esc closed only the search"
    );
}

/// `/find TEXT` opens the same search with TEXT as its query: the count, n/N, Esc.
#[test]
fn slash_find_text_opens_the_search_with_its_query() {
    let mut h = H::with(parser_three_times(), true);
    h.submit("/find parser");
    let s = h.screen();
    assert!(s.contains("Find: parser  3/3"), "{s}");
    assert!(s.contains("take 60"), "{s}");
    // The query is kept (not being typed): n moves, round to the first match.
    h.key(KeyCode::Char('n'));
    let s = h.screen();
    assert!(s.contains("1/3") && s.contains("take 20"), "{s}");
    assert!(h.app.conv.composer().text().is_empty());
    h.key(KeyCode::Esc);
    assert!(h.app.find().is_none());
    // Without TEXT it opens the search line to type in.
    h.submit("/find");
    assert!(h.app.find().is_some_and(|f| f.editing));
    h.chars("take 40");
    has(&h.screen(), "Find: take 40  1/1");
}

#[test]
fn slash_in_the_transcript_pane_searches_it_and_says_no_match() {
    let msgs = vec![
        user("how do I rotate keys"),
        reply("Use `neocode keys rotate`."),
    ];
    let mut h = H::with(msgs, false);
    // On the list, / filters.
    h.key(KeyCode::Tab);
    h.key(KeyCode::Char('/'));
    assert!(
        h.app.browse.list.filter.is_none(),
        "/ in the transcript pane is not the filter"
    );
    h.chars("ROTATE");
    let s = h.screen();
    assert!(s.contains("Find: ROTATE  1/2"), "{s}");
    h.key_mod(KeyCode::Char('u'), KeyModifiers::CONTROL);
    h.chars("zebra");
    has(&h.screen(), "Find: zebra  no match");
    h.key(KeyCode::Esc);
    assert!(h.app.find().is_none());
}

#[test]
fn a_hundred_thousand_message_transcript_is_searched_through_the_index() {
    let n = 100_000;
    let msgs: Vec<NewMessage> = (1..=n)
        .map(|i| {
            if i % 10_000 == 0 {
                reply(&format!("needle number {i}"))
            } else {
                user(&format!("hay {i}"))
            }
        })
        .collect();
    let mut h = H::with(msgs, true);
    h.key_mod(KeyCode::Char('f'), KeyModifiers::CONTROL);
    h.chars("needl");
    let start = Instant::now();
    h.key(KeyCode::Char('e'));
    let took = start.elapsed();
    let s = h.screen();
    has(&s, "Find: needle  10/10");
    has(&s, "needle number 100000");
    h.key(KeyCode::Enter);
    h.key(KeyCode::Char('n'));
    let s = h.screen();
    assert!(
        s.contains("1/10") && s.contains("needle number 10000"),
        "{s}"
    );
    // Only the window around the match is loaded, not the transcript.
    let t = h.transcript();
    assert!(t.msgs.len() < 5_000, "{} messages loaded", t.msgs.len());
    eprintln!("search + jump in {n} messages: {took:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");
}

#[test]
fn alt_c_copies_the_selected_message_by_osc52_sanitised() {
    let msgs = vec![
        user("show me"),
        reply(
            "Here:\n\n```sh\ncargo test\n```\n\nand\n\n```rust\nfn main() {}\n```\n\x1b]52;c;ZXZpbA==\x07done",
        ),
    ];
    let mut h = H::with(msgs, true);
    // Nothing selected: the last message.
    let fx = h.effects_of(KeyCode::Char('c'), KeyModifiers::ALT);
    let text = osc52_text(&fx).expect("an OSC 52 sequence");
    assert!(
        text.starts_with("Here:") && text.contains("cargo test"),
        "{text:?}"
    );
    assert!(!text.contains('\x1b') && !text.contains('\x07'), "{text:?}");
    assert!(h.status().contains("Copied reply #2"), "{}", h.status());
    // Alt-K: the code blocks, one after the other.
    let fx = h.effects_of(KeyCode::Char('k'), KeyModifiers::ALT);
    assert_eq!(osc52_text(&fx).as_deref(), Some("cargo test"));
    assert!(h.status().contains("code block 1/2"), "{}", h.status());
    let fx = h.effects_of(KeyCode::Char('k'), KeyModifiers::ALT);
    assert_eq!(osc52_text(&fx).as_deref(), Some("fn main() {}"));
    // The selected message.
    h.key_mod(KeyCode::Up, KeyModifiers::ALT);
    h.key_mod(KeyCode::Up, KeyModifiers::ALT);
    let fx = h.effects_of(KeyCode::Char('c'), KeyModifiers::ALT);
    assert_eq!(osc52_text(&fx).as_deref(), Some("show me"));
    assert!(h.status().contains("your message #1"), "{}", h.status());
    // The editor got none of it.
    assert!(h.app.conv.composer().text().is_empty());
}

#[test]
fn y_copies_a_tool_result_in_the_transcript_pane() {
    let msgs = vec![
        user("run it"),
        NewMessage::tool_result("call-1", "\x1b[32mok\x1b[0m\t3 passed", false),
    ];
    let mut h = H::with(msgs, false);
    h.key(KeyCode::Tab);
    h.key(KeyCode::Char('j'));
    h.key(KeyCode::Char('j'));
    let fx = h.effects_of(KeyCode::Char('y'), KeyModifiers::NONE);
    assert_eq!(osc52_text(&fx).as_deref(), Some("ok\t3 passed"));
    assert!(h.status().contains("tool result #2"), "{}", h.status());
    let _ = &h.id;
}

/// The real binary: Alt-C in the conversation writes the OSC 52 sequence to the terminal,
/// and the mouse wheel still scrolls the transcript afterwards.
#[test]
fn osc52_reaches_the_terminal_and_the_wheel_still_scrolls() {
    let env = Env::new();
    let rt = env.sessions();
    let s = crate::support::titled(&rt, "Copy me");
    let mut msgs = vec![user("first question")];
    for i in 2..=80 {
        msgs.push(reply(&format!("line {i}")));
    }
    msgs.push(reply("the answer is 42"));
    rt.append(&s.id, &msgs, &AppendMeta::default()).unwrap();
    let mut pty = Pty::spawn(&env.home, &env.workdir, &["--resume", &s.id], &[], 30, 100);
    pty.wait_for("the answer is 42");
    pty.press("\x1bc", "Copied reply #81");
    let want = format!(
        "\x1b]52;c;{}\x07",
        base64::engine::general_purpose::STANDARD.encode("the answer is 42")
    );
    let raw = String::from_utf8_lossy(&pty.bytes()).into_owned();
    assert!(raw.contains(&want), "no OSC 52 sequence in the output");
    // SGR mouse report: wheel up at (10, 5), three times.
    pty.keys("\x1b[<64;10;5M\x1b[<64;10;5M\x1b[<64;10;5M\x1b[<64;10;5M\x1b[<64;10;5M");
    let start = Instant::now();
    while pty.screen().contains("the answer is 42") {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the wheel did not scroll:\n{}",
            pty.screen()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `/model` with no name lists what the (scripted) server offers from `GET /v1/models`, once
/// per process; picking one switches this session's model (kept in its header).
#[test]
fn model_without_a_name_lists_the_servers_models_to_pick_from() {
    use neocode::testkit::scripted::ScriptedServer;
    let srv = ScriptedServer::start(Vec::new()).unwrap();
    srv.set_models(&["zeta-coder", "alpha-7b", "scripted-model"]);
    let env = Env::new();
    let rt = env.sessions();
    let s = crate::support::titled(&rt, "Pick a model");
    rt.append(&s.id, &[user("hello")], &AppendMeta::default())
        .unwrap();
    let base = srv.base_url();
    let envs = [
        ("NEOCODE_BASE_URL", base.as_str()),
        ("NEOCODE_MODEL", "scripted-model"),
        ("NEOCODE_API_KEY", ""),
    ];
    let mut pty = Pty::spawn(
        &env.home,
        &env.workdir,
        &["--resume", &s.id],
        &envs,
        30,
        100,
    );
    pty.wait_for("hello");
    let screen = pty.press("/model\r", "Models · 3");
    // Sorted, the model in use selected.
    let a = screen.find("alpha-7b").unwrap();
    let z = screen.find("zeta-coder").unwrap();
    assert!(a < z, "{screen}");
    assert!(screen.contains("▶ scripted-model"), "{screen}");
    pty.press("\x1b[B", "▶ zeta-coder");
    pty.press("\r", "uses zeta-coder");
    let start = Instant::now();
    while rt.header(&s.id).unwrap().model != "zeta-coder" {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the switch was not stored"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Asked again: from memory, the server is not asked again. (The window probe of a turn
    // may GET /v1/models too, so the count before is what compares.)
    let gets = || {
        srv.requests()
            .iter()
            .filter(|r| r.method == "GET" && r.path.ends_with("/v1/models"))
            .count()
    };
    let before = gets();
    assert!(before >= 1, "the list was asked for");
    pty.press("/model\r", "Models · 3");
    pty.keys("\x1b");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(gets(), before);
}

/// The views this adds: the search line with its count and keys, and the model picker.
#[test]
fn snapshots_of_the_search_line_and_the_model_picker() {
    let msgs = vec![
        user("where is the parser"),
        reply("The parser lives in `src/parse.rs`."),
        user("and the lexer?"),
    ];
    let mut h = H::with(msgs, true);
    h.key_mod(KeyCode::Char('f'), KeyModifiers::CONTROL);
    h.chars("parser");
    h.key(KeyCode::Enter);
    let s = h.screen();
    assert!(s.contains("Find: parser  2/2"), "{s}");
    assert!(s.contains("n next") && s.contains("Esc close"), "{s}");
    insta::assert_snapshot!("find_line", s);
    h.key(KeyCode::Esc);
    let fx = h.app.on_outcome(neocode::tui::Outcome {
        intent: neocode::tui::Intent::Models,
        result: Ok("alpha-7b\nbeta\u{1b}[2J\nzeta-coder".into()),
    });
    assert!(fx.is_empty());
    let s = h.screen();
    assert!(
        s.contains("Models · 3") && s.contains("Enter switch"),
        "{s}"
    );
    assert!(!s.contains('\u{1b}'), "a hostile model name is neutralised");
    insta::assert_snapshot!("model_picker", s);
}

/// `/resume` opens the session list over the conversation with the list's filter: typing
/// filters, Esc returns to the same conversation (its unsent text intact), Enter switches.
#[test]
fn resume_picks_another_session_without_leaving_the_conversation() {
    let mut h = H::with(vec![user("first session's question")], true);
    let first = h.id.clone();
    // Written by another process (another connection): the list learns of it by its poll.
    let elsewhere = h._env.sessions();
    let other = crate::support::titled(&elsewhere, "Billing migration notes");
    elsewhere
        .append(
            &other.id,
            &[user("what about invoices")],
            &AppendMeta::default(),
        )
        .unwrap();
    let fx = h.app.tick();
    h.run(fx);
    h.submit("/resume");
    let s = h.screen();
    assert!(s.contains("Resume a session"), "{s}");
    assert!(
        s.contains("Billing migration notes") && s.contains("Searchable"),
        "{s}"
    );
    h.chars("billing");
    let s = h.screen();
    assert!(s.contains("1 match"), "{s}");
    insta::assert_snapshot!("resume_picker", s.replace(&other.id[..8], "[ID]"));
    // Esc: the same conversation, nothing switched.
    h.key(KeyCode::Esc);
    assert_eq!(h.app.screen, Screen::Conversation);
    assert_eq!(h.app.browse.detail.as_ref().unwrap().id, first);
    assert!(!h.screen().contains("Resume a session"));
    h.submit("/resume");
    h.chars("billing");
    h.key(KeyCode::Enter);
    assert_eq!(h.app.screen, Screen::Conversation);
    assert_eq!(h.app.browse.detail.as_ref().unwrap().id, other.id);
    let s = h.screen();
    assert!(s.contains("what about invoices"), "{s}");
    assert!(h.status().contains("Switched to session"), "{}", h.status());
}

/// `/resume` finds a session by the id it shows (a prefix, as `--resume` takes), also when
/// its title is one many sessions share (rewinds of one session).
#[test]
fn resume_filters_by_id_prefix() {
    let mut h = H::with(vec![user("first session's question")], true);
    let elsewhere = h._env.sessions();
    let mut ids = Vec::new();
    for _ in 0..3 {
        let s = crate::support::titled(&elsewhere, "Same title");
        elsewhere
            .append(&s.id, &[user("a question")], &AppendMeta::default())
            .unwrap();
        ids.push(s.id);
    }
    let fx = h.app.tick();
    h.run(fx);
    h.submit("/resume");
    let want = &ids[1];
    h.chars(&want[..6]);
    let s = h.screen();
    assert!(s.contains("1 match"), "{s}");
    assert!(s.contains(&want[..8]), "{s}");
    h.key(KeyCode::Enter);
    assert_eq!(h.app.browse.detail.as_ref().unwrap().id, *want);
}
