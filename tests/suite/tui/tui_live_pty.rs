//! The live conversation end to end: the real binary in a pseudo-terminal against a scripted
//! OpenAI-compatible server on 127.0.0.1. Type a message and see the streamed reply, approve
//! a `write_file` (the file exists afterwards), deny a command (it never ran), cancel a long
//! reply, quit, and find it all in `neocode show`.

use crate::support::Env;
use crate::support::text::has;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::pty::Pty;
use crate::support::tui_flows::{answers, write_file};
use neocode::session::{ListQuery, Message, Status};
use neocode::testkit::scripted::{Reply, ScriptedServer, Stream};
use std::path::PathBuf;

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < Duration::from_secs(30), "never: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The home's settings file made a FIFO: loading the settings blocks until it is written.
fn settings_fifo(env: &Env) -> PathBuf {
    std::fs::create_dir_all(&env.home).unwrap();
    let config = env.home.join("config.toml");
    let c = std::ffi::CString::new(config.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string; mkfifo only creates the node.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    config
}

#[test]
fn stream_approve_deny_cancel_quit_and_show() {
    let env = Env::new();
    let (home, ws) = (env.home.clone(), env.workdir.clone());
    let long: String = (0..400).map(|i| format!("word{i} ")).collect();
    let srv = ScriptedServer::start(vec![
        // 1: a streamed answer with markdown.
        Stream::new()
            .role()
            .text_deltas("Hello from the **scripted** model.", 6)
            .finish("stop")
            .usage(12, 7)
            .delays(Duration::ZERO, Duration::from_millis(20))
            .reply(),
        // 2: a write (approved) and a command (denied), then the answer.
        Reply::tool_calls(&[
            (
                "c1",
                "write_file",
                r#"{"path":"hello.txt","content":"hi there\n"}"#,
            ),
            ("c2", "run_command", r#"{"command":"touch ran.txt"}"#),
        ]),
        Reply::text("Wrote hello.txt and skipped the command."),
        // 3: a long, slow answer to cancel.
        Stream::new()
            .role()
            .text_deltas(&long, 400)
            .finish("stop")
            .delays(Duration::ZERO, Duration::from_millis(40))
            .reply(),
    ])
    .unwrap();
    // The status line names the model once in the conversation.
    let mut pty = env.compose(&srv, 40, 120);
    let s = pty.wait_for("scripted-model");
    assert!(s.contains("approve ask"), "{s}");

    // 1: streamed reply.
    pty.submit("Say hello");
    let s = pty.wait_for("Hello from the scripted model.");
    assert!(s.contains("Say hello"), "{s}");
    pty.wait_for("Done in");

    // 2: approve the write, deny the command.
    pty.submit("Write hello.txt, then touch ran.txt");
    let s = pty.wait_for("Allow?");
    assert!(s.contains("write_file"), "{s}");
    assert!(s.contains("hello.txt"), "{s}");
    assert!(
        s.contains("+ hi there"),
        "the card shows the new content as a diff:\n{s}"
    );
    pty.deliberately("y");
    wait_until("hello.txt written", || ws.join("hello.txt").exists());
    // The command's card was on screen all along (waiting its turn); now it asks.
    let s = pty.wait_for("▶ Allow?");
    assert!(s.contains("touch ran.txt"), "{s}");
    pty.deliberately("n");
    pty.answered("Wrote hello.txt and skipped the command.");
    assert_eq!(
        std::fs::read_to_string(ws.join("hello.txt")).unwrap(),
        "hi there\n"
    );
    assert!(!ws.join("ran.txt").exists(), "the denied command never ran");

    // 3: cancel a long reply once it streams.
    pty.submit("Tell me a long story");
    pty.wait_for("word3 ");
    pty.press("\x1b", "Cancelled; what arrived is kept");

    // Quit: no turn runs, Ctrl-C quits at once.
    let code = pty.quit();
    assert_eq!(code, 0);

    // The store has all of it.
    let rt = env.sessions();
    let all = rt.list(&ListQuery::default()).unwrap().items;
    assert_eq!(all.len(), 1, "one session");
    let id = all[0].id.clone();
    assert_eq!(rt.header(&id).unwrap().status, Status::Cancelled);

    let show = |json: bool| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_neocode"));
        c.env("NEOCODE_HOME", &home).arg("--workdir").arg(&ws);
        c.args(["show", &id]);
        if json {
            c.arg("--json");
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // `show`: the header and the last messages.
    let text = show(false);
    for want in [
        "Say hello",
        "status     cancelled",
        "model      openai / scripted-model",
        "created hello.txt",
        "The user denied this call.",
        "Wrote hello.txt and skipped the command.",
        "Tell me a long story",
        "word0 word1 word2",
        "assistant (cancelled)",
    ] {
        assert!(text.contains(want), "show lacks {want:?}:\n{text}");
    }
    assert!(show(true).contains("\"status\": \"cancelled\""));
    // Every message, in order, through the runtime.
    let msgs = rt.messages(&id, 1, 100).unwrap();
    let all: Vec<String> = msgs.iter().map(Message::text).collect();
    assert_eq!(all[0], "Say hello");
    assert_eq!(all[1], "Hello from the **scripted** model.");
    assert_eq!(all[2], "Write hello.txt, then touch ran.txt");
    assert_eq!(msgs[3].tool_calls.len(), 2, "{msgs:?}");
    let last = all.last().unwrap();
    assert!(last.starts_with("word0 word1"), "{last}");
    // The long reply was cut: its end never arrived.
    assert!(!last.contains("word399"), "{last}");
}

#[test]
fn resume_lands_in_the_view_and_reruns_an_interrupted_call_after_asking() {
    use neocode::session::{AppendMeta, NewMessage, Role, ToolCall};
    let env = Env::new();
    let (home, ws) = (env.home.clone(), env.workdir.clone());
    let rt = env.sessions();
    // A session that stopped between "the model asked" and "the tool answered".
    let s = crate::support::titled(&rt, "Crashed mid-turn");
    let mut asked = NewMessage::text(Role::Assistant, "Writing it.");
    asked.tool_calls = vec![ToolCall {
        id: "d1".into(),
        name: "write_file".into(),
        arguments: r#"{"path":"replayed.txt","content":"again\n"}"#.into(),
    }];
    // As a turn that crashed leaves it: the calls came from the model here.
    asked.tool_metadata = Some(serde_json::json!({ "calls_from": "model" }));
    rt.append(
        &s.id,
        &[NewMessage::text(Role::User, "write replayed.txt"), asked],
        &AppendMeta::default(),
    )
    .unwrap();
    let srv = ScriptedServer::start(vec![Reply::text("Replayed and done.")]).unwrap();
    let base = srv.base_url();
    let vars = [
        ("NEOCODE_BASE_URL", base.as_str()),
        ("NEOCODE_MODEL", "scripted-model"),
    ];
    let mut pty = Pty::spawn(&home, &ws, &["--resume", &s.id], &vars, 40, 120);
    // In the conversation at once, with the interrupted call and its choices.
    let screen = pty.wait_for("interrupted");
    assert!(screen.contains("write_file  replayed.txt"), "{screen}");
    assert!(screen.contains("Ctrl-R rerun"), "{screen}");
    // The status line names the model as soon as the settings are loaded (off the loop).
    pty.wait_for("scripted-model");
    pty.keys("\x12"); // Ctrl-R
    let screen = pty.wait_for("Allow?");
    assert!(screen.contains("may already have run"), "{screen}");
    pty.deliberately("y");
    pty.wait_for("Replayed and done.");
    assert_eq!(
        std::fs::read_to_string(ws.join("replayed.txt")).unwrap(),
        "again\n"
    );
    assert!(rt.interrupted_tool_calls(&s.id).unwrap().is_empty());
    assert_eq!(pty.quit(), 0);
}

#[test]
fn typing_goes_on_while_the_settings_load_and_enter_waits_for_them() {
    use std::io::Write;
    let env = Env::new();
    std::fs::create_dir_all(&env.workdir).unwrap();
    // Loading the settings blocks until the test writes them.
    let config = settings_fifo(&env);
    let srv =
        ScriptedServer::start(vec![Reply::text("Answered after the settings came.")]).unwrap();
    let mut pty = env.compose(&srv, 40, 120);
    pty.keys("typed before the settings");
    // The keys were handled while the settings thread is still blocked on the FIFO.
    let screen = pty.wait_for("typed before the settings");
    assert!(!screen.contains("scripted-model"), "{screen}");
    // Enter needs the agent: it waits for the settings instead of refusing.
    pty.keys("\r");
    assert_eq!(srv.request_count(), 0);
    // From now on every reader of the settings gets them (the store reads them too, for a
    // session's context report).
    std::thread::spawn(move || {
        while let Ok(mut fifo) = std::fs::OpenOptions::new().write(true).open(&config) {
            let _ = fifo.write_all(b"# written by the test\n");
            drop(fifo);
            // With no writer open, the reader sees the end of the file.
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    pty.answered("Answered after the settings came.");
    let screen = pty.wait_for("scripted-model");
    assert!(!screen.contains("Cannot send"), "{screen}");
    assert_eq!(srv.request_count(), 1);
    assert_eq!(pty.quit(), 0);
}

#[test]
fn while_the_settings_load_a_held_enter_does_not_freeze_quitting() {
    let env = Env::new();
    // The settings never come: nobody writes the FIFO.
    settings_fifo(&env);
    let srv = ScriptedServer::start(vec![Reply::text("never asked")]).unwrap();
    let mut pty = env.compose(&srv, 40, 120);
    pty.press("a message", "a message");
    // Enter waits for the settings; the loop does not: Ctrl-C still clears the editor, and
    // the next one quits.
    pty.keys("\r");
    pty.press("\x03", "Message cleared");
    assert_eq!(pty.quit_within(10), 0);
    assert_eq!(srv.request_count(), 0);
}

#[test]
fn typing_while_an_approval_waits_never_answers_it() {
    let env = Env::new();
    let ws = env.workdir.clone();
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("stats.py"), "total = 1\n").unwrap();
    let (srv, mut pty) = env.chat(
        vec![
            Reply::tool_calls(&[(
                "e1",
                "edit_file",
                r#"{"path":"stats.py","old_string":"total = 1","new_string":"total = 2"}"#,
            )]),
            Reply::text("Edited stats.py."),
        ],
        40,
        120,
    );
    pty.submit("Bump the total");
    let s = pty.wait_for("Allow?");
    assert!(s.contains("edit_file"), "{s}");
    // The next message typed quickly while the card waits: its y, n and a answer nothing.
    std::thread::sleep(Duration::from_millis(800));
    let s = pty.press("hey there, and now", "Typing is not taken");
    assert!(s.contains("not taking keys"), "{s}");
    std::thread::sleep(Duration::from_millis(1500));
    let s = pty.screen();
    assert!(s.contains("Allow?"), "the card still waits:\n{s}");
    assert!(!s.contains("hey there"), "typing went nowhere:\n{s}");
    assert_eq!(
        std::fs::read_to_string(ws.join("stats.py")).unwrap(),
        "total = 1\n",
        "typing approved the edit"
    );
    assert_eq!(srv.request_count(), 1);
    // A deliberate y approves it.
    pty.deliberately("y");
    pty.wait_for("Edited stats.py.");
    assert_eq!(
        std::fs::read_to_string(ws.join("stats.py")).unwrap(),
        "total = 2\n"
    );
    assert_eq!(pty.quit(), 0);
}

#[test]
fn a_switched_model_is_kept_by_the_session_across_a_restart() {
    let env = Env::new();
    let (srv, mut pty) = env.chat(
        answers(&["First answer.", "Second answer.", "Third answer."]),
        40,
        120,
    );
    pty.exchange("Hello", "First answer.");
    pty.submit("/model fake-big");
    pty.wait_for("uses fake-big from its next turn");
    assert_eq!(pty.quit(), 0);
    let (_, id) = env.newest();
    let neocode = |args: &[&str]| {
        let out = env.run_on(&srv, args);
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(neocode(&["--list"]).contains("fake-big"));

    // Resumed: the status line names the session's model, and the next request asks for it.
    let mut pty = env.tui(&srv, &["--resume", &id], 40, 120);
    let s = pty.wait_for("fake-big");
    assert!(!s.contains("scripted-model ░"), "{s}");
    pty.exchange("Again", "Second answer.");
    assert_eq!(pty.quit(), 0);
    let models: Vec<String> = srv
        .requests()
        .iter()
        .map(|r| r.json()["model"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(models, ["scripted-model", "fake-big"]);
    assert!(neocode(&["--list"]).contains("fake-big"));

    // `run --model` overrides it for that run only.
    neocode(&["run", "--resume", &id, "--model", "one-off", "once more"]);
    assert_eq!(srv.requests()[2].json()["model"], "one-off");
    let list = neocode(&["--list"]);
    assert!(
        list.contains("fake-big") && !list.contains("one-off"),
        "{list}"
    );
}

#[test]
fn a_retry_shows_in_the_status_line_while_it_waits() {
    let env = Env::new();
    let (srv, mut pty) = env.chat(
        vec![
            Reply::rate_limited(2),
            Reply::text("Answered after the wait."),
        ],
        24,
        100,
    );
    pty.submit("hi");
    let s = pty.wait_for("rate limited (429), retry 1/3 in 2 s");
    assert!(!s.contains("Answered after the wait."), "{s}");
    pty.wait_for("Answered after the wait.");
    assert_eq!(srv.request_count(), 2);
    pty.wait_for("Done in");
    assert_eq!(pty.quit(), 0);
}

/// Issue 35: a session's own rules ("always" for this session) could be neither seen nor
/// revoked in the TUI. `/permissions` lists every rule in force with where it comes from —
/// this session, the workspace's file, the home's config — and `d` revokes one of the
/// session's own, which the stored session then no longer has.
#[test]
fn permissions_lists_every_rule_with_its_source_and_revokes_a_session_rule() {
    let env = Env::new();
    let (home, ws) = (env.home.clone(), env.workdir.clone());
    write_file(
        ws.join(".neocode/permissions.toml"),
        "allow = [\"run_command(cargo test *)\"]\n",
    );
    write_file(
        home.join("config.toml"),
        "[permissions]\ndeny = [\"read_file(.env)\"]\n",
    );
    std::fs::write(ws.join("a.tmp"), "x").unwrap();
    env.trust_workspace();
    let (_srv, mut pty) = env.chat(
        vec![
            Reply::tool_calls(&[(
                "c1",
                "run_command",
                r#"{"command":"rm -f a.tmp && echo tidy"}"#,
            )]),
            Reply::text("Tidied."),
        ],
        35,
        120,
    );
    pty.submit("Tidy up");
    let s = pty.wait_for("▶ Allow?");
    has(&s, "a always keeps 2 rules, one per part of the command:");
    pty.deliberately("a");
    pty.wait_for("Always allow, for this session (rule 1 of 2)");
    pty.keys("\r");
    pty.answered("Tidied.");

    pty.submit("/permissions");
    let s = pty.wait_for("Permissions · 4 rules");
    for want in [
        "This session (\"always\" for this session; d revokes)",
        "▶ allow   run_command(rm -f a.tmp)",
        "allow   run_command(echo tidy)",
        ".neocode/permissions.toml, this workspace",
        "allow   run_command(cargo test *)",
        "config.toml [permissions], everywhere",
        "deny    read_file(.env)",
    ] {
        assert!(s.contains(want), "{want}\n{s}");
    }
    let s = pty.press("d", "Permissions · 3 rules");
    assert!(!s.contains("allow   run_command(rm -f a.tmp)"), "{s}");
    pty.wait_for("Revoked `run_command(rm -f a.tmp)`");
    // The workspace's rules are not revoked here: the status line says where to edit them.
    pty.keys("j");
    pty.press("d", "Only this session's own rules are revoked here");
    pty.keys("\x1b");
    assert_eq!(pty.quit(), 0);

    let (rt, id) = env.newest();
    let grants = rt.header(&id).unwrap().ledger.unwrap().approved_tools;
    assert_eq!(grants, vec!["run_command(echo tidy)".to_string()]);
}

/// Issue 35: with `NEOCODE_BASE_URL` / `NEOCODE_MODEL` set, `/provider err` said it switched
/// while the requests still went to the environment's server; and reopened without those
/// variables, the session that keeps the profile said "No model configured". Now the explicit
/// profile wins for that session, and the session reopens on it.
#[test]
fn provider_wins_over_the_environment_and_a_profiled_session_reopens_without_it() {
    let env = Env::new();
    let (home, ws) = (env.home.clone(), env.workdir);
    let from_env = ScriptedServer::start(vec![Reply::text("Answer from the env server.")]).unwrap();
    let profiled = ScriptedServer::start(answers(&[
        "Answer from the err profile.",
        "Again from the err profile.",
    ]))
    .unwrap();
    write_file(
        home.join("config.toml"),
        &format!(
            "[providers.err]\nbase_url = \"{}\"\nmodel = \"err-model\"\n",
            profiled.base_url()
        ),
    );
    let env_base = from_env.base_url();
    let vars = [
        ("NEOCODE_BASE_URL", env_base.as_str()),
        ("NEOCODE_MODEL", "env-model"),
        ("NEOCODE_API_KEY", ""),
    ];
    let mut pty = Pty::spawn(&home, &ws, &[], &vars, 35, 120);
    pty.wait_for("0 sessions");
    pty.press("n", "env-model");
    pty.exchange("Hello", "Answer from the env server.");
    pty.submit("/provider err");
    pty.wait_for("Profile err: this session uses");
    pty.exchange("And now?", "Answer from the err profile.");
    assert_eq!(pty.quit(), 0);
    assert_eq!(
        from_env.request_count(),
        1,
        "the env server got only the first"
    );
    assert_eq!(profiled.request_count(), 1);
    assert_eq!(profiled.requests()[0].json()["model"], "err-model");

    // Reopened with neither variable: the session runs on its profile.
    let none = [
        ("NEOCODE_BASE_URL", ""),
        ("NEOCODE_MODEL", ""),
        ("NEOCODE_API_KEY", ""),
    ];
    let mut pty = Pty::spawn(&home, &ws, &["--continue"], &none, 35, 120);
    let s = pty.wait_for("err-model");
    assert!(!s.contains("No model configured"), "{s}");
    pty.exchange("Once more", "Again from the err profile.");
    assert_eq!(pty.quit(), 0);
    assert_eq!(profiled.request_count(), 2);
    assert_eq!(from_env.request_count(), 1);
}

/// Issue 35: `/model` took a name the server does not list without a word (the next turn
/// then failed, or went to another model). It still takes it (some servers route names they
/// do not list), and says the server does not list it.
#[test]
fn model_says_when_the_server_does_not_list_the_name() {
    let env = Env::new();
    let (srv, mut pty) = env.chat(vec![Reply::text("First answer.")], 35, 160);
    srv.set_models(&["scripted-model", "big-model"]);
    pty.exchange("Hello", "First answer.");
    pty.submit("/model no-such-model");
    pty.wait_for(
        "This session uses no-such-model from its next turn, but the server does not list no-such-model (it lists big-model, scripted-model; /model alone picks one).",
    );
    pty.submit("/model big-model");
    let s = pty.wait_for("This session uses big-model from its next turn (kept with it");
    assert!(!s.contains("does not list big-model"), "{s}");
    assert_eq!(pty.quit(), 0);
}

#[test]
fn compact_in_the_tui_keeps_the_transcript_on_screen_and_in_the_store() {
    let env = Env::new();
    let (srv, mut pty) = env.chat(
        answers(&[
            "The first answer, about kiwis.",
            "Second answer.",
            "SUMMARY: kiwis, then a second question.",
            "Third answer, after the summary.",
        ]),
        35,
        120,
    );
    pty.exchange("Tell me about kiwis", "The first answer, about kiwis.");
    pty.exchange("And then?", "Second answer.");
    pty.submit("/compact");
    let s = pty.wait_for("stay in the transcript");
    has(
        &s,
        "Compacted: the model is now sent a summary of 2 messages and the last 2",
    );
    // The messages the summary stands for are still on screen, the summary after them.
    let s = pty.wait_for("Compaction summary");
    assert!(s.contains("Tell me about kiwis"), "{s}");
    assert!(s.contains("The first answer, about kiwis."), "{s}");
    pty.exchange("Go on", "Third answer, after the summary.");
    assert_eq!(pty.quit(), 0);
    // The model was sent the summary and the tail; the store kept everything.
    let last = srv.requests()[3].json().to_string();
    assert!(
        last.contains("SUMMARY: kiwis") && !last.contains("about kiwis."),
        "{last}"
    );
    let (rt, id) = env.newest();
    let texts: Vec<String> = rt
        .load(&id)
        .unwrap()
        .messages
        .iter()
        .map(Message::text)
        .collect();
    assert_eq!(texts.len(), 7, "{texts:?}");
    assert_eq!(texts[1], "The first answer, about kiwis.");
}

#[test]
fn a_queue_held_by_a_failed_turn_is_not_sent_after_a_restart_without_asking() {
    let env = Env::new();
    let srv = ScriptedServer::start(vec![
        Reply::error(400, "the request was refused"),
        Reply::text("Answered on retry."),
        Reply::text("Sent once you asked."),
    ])
    .unwrap();
    let neocode = |args: &[&str]| env.run_on(&srv, args);
    // A turn fails; a message is queued behind it (from another process, as a queue held in
    // a TUI that quit leaves it).
    assert!(!neocode(&["run", "first question"]).status.success());
    let (rt, id) = env.newest();
    assert_eq!(rt.header(&id).unwrap().status, Status::Failed);
    assert!(
        neocode(&["run", "--resume", &id, "--queue", "then this"])
            .status
            .success()
    );
    // Opened again: the queue is held, says why, and nothing is sent.
    let mut pty = env.tui(&srv, &["--resume", &id], 35, 120);
    let s = pty.wait_for("held: the last turn failed");
    assert!(s.contains("1. next  then this"), "{s}");
    assert!(s.contains("Enter retries"), "{s}");
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(srv.request_count(), 1, "nothing sent without asking");
    assert_eq!(rt.queued(&id).unwrap().len(), 1);
    // Enter on the empty editor retries the failed turn, then the queue goes on; the panel
    // drops the message once it is sent.
    pty.press("\r", "Answered on retry.");
    let s = pty.wait_for("Sent once you asked.");
    assert!(!s.contains("Queued (1)"), "{s}");
    pty.wait_for("Done in");
    assert_eq!(pty.quit(), 0);
    assert!(rt.queued(&id).unwrap().is_empty());
    assert_eq!(srv.request_count(), 3);
}

#[test]
fn a_hook_denial_reads_denied_once_not_as_an_error_three_times() {
    let env = Env::new();
    let (home, ws) = (env.home.clone(), env.workdir.clone());
    // The user's own hook (no reason on stderr): it denies every command.
    write_file(
        home.join("hooks.json"),
        &serde_json::json!({"hooks": {"PreToolUse": [{"matcher": "run_command", "hooks": [
            {"type": "command", "command": "test guard-marker && exit 2"}]}]}})
        .to_string(),
    );
    let (_srv, mut pty) = env.chat(
        vec![
            Reply::tool_calls(&[("c1", "run_command", r#"{"command":"touch ran.txt"}"#)]),
            Reply::text("Understood, not running it."),
        ],
        35,
        120,
    );
    pty.submit("touch ran.txt");
    let s = pty.answered("Understood, not running it.");
    assert!(!ws.join("ran.txt").exists());
    assert!(s.contains("⊘ denied"), "{s}");
    assert!(!s.contains("✗ error"), "{s}");
    has(&s, "Denied by a PreToolUse hook (it gave no reason).");
    assert_eq!(
        s.matches("guard-marker").count(),
        1,
        "the command once:\n{s}"
    );
    assert_eq!(pty.quit(), 0);
}
