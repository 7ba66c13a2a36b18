//! The durable queue in a real terminal, against the demo model (in process, its stream slowed
//! down so there is time to type): Enter while a turn runs queues the message (a store row,
//! shown above the editor) and it is sent as the next turn once this one ends; Alt-Enter
//! steers the running turn at its next tool boundary; a queued message survives a kill and is
//! sent when the session is resumed; Ctrl-E takes one back into the editor. A SIGKILL between
//! reading a queued (or steering) message and storing it never loses it.

use std::path::PathBuf;
use std::time::Duration;

use crate::support::Env;
use crate::support::pty::{Envs, Pty};
use crate::support::tui_flows::{Kept, approve, demo_conversation};
use neocode::session::Role;

/// The test hook that sleeps between reading a queued message and the append that stores it
/// (and marks it delivered).
const PAUSED: &[(&str, &str)] = &[("NEOCODE_TEST_QUEUE_PAUSE_MS", "60000")];

/// The demo in a terminal, paced `pace_ms` with `more` variables, after "hello" was answered.
fn said_hello(env: &Env, pace_ms: &str, more: &[(&str, &str)]) -> (Pty, PathBuf) {
    let (mut pty, tmp) = demo_conversation(env, pace_ms, more);
    pty.press("hello\r", "Hello from the demo model");
    (pty, tmp)
}

/// [`said_hello`], then `text` typed and Enter while the turn still runs: queued (the panel
/// shows it); the screen then.
fn queued_behind_hello(env: &Env, pace_ms: &str, more: Envs, text: &str) -> (Pty, PathBuf, String) {
    let (mut pty, tmp) = said_hello(env, pace_ms, more);
    let s = pty.press(&format!("{text}\r"), "Queued (1)");
    (pty, tmp, s)
}

/// The kept session opened again: the queued "show me test.sh" goes out by itself, once.
fn resumed_sends_the_queue(kept: &Kept) {
    let mut pty = kept.resume();
    let s = pty.wait_for("test.sh (");
    assert!(s.contains("show me test.sh"), "{s}");
    pty.wait_for("Done in");
    pty.quit();
    kept.delivered(&["hello", "show me test.sh"]);
}

#[test]
fn enter_while_a_turn_streams_queues_the_message_and_it_is_sent_after_the_turn() {
    let env = Env::new();
    // Still streaming: Enter queues instead of refusing.
    let (mut pty, tmp, s) = queued_behind_hello(&env, "40", &[], "run the tests");
    assert!(s.contains("1. next  run the tests"), "{s}");
    assert!(!s.contains("You  #3"), "not sent during the turn:\n{s}");
    let kept = Kept::find(&tmp, "hello");
    let (sessions, id) = (&kept.sessions, kept.id.as_str());
    let waiting = sessions.queued(id).unwrap();
    assert_eq!(waiting.len(), 1, "a store row while it waits");
    assert_eq!(waiting[0].text, "run the tests");

    // The turn ends; the queued message is the next turn (its command asks first).
    let s = approve(&mut pty, "run_command  sh test.sh  · waiting");
    assert!(s.contains("run the tests"), "{s}");
    assert!(
        !s.contains("Queued ("),
        "the queue is empty once sent:\n{s}"
    );
    pty.answered("The tests fail");
    pty.quit();
    kept.delivered(&["hello", "run the tests"]);
}

#[test]
fn alt_enter_steers_the_running_turn_at_its_next_tool_boundary() {
    let env = Env::new();
    let (mut pty, tmp) = demo_conversation(&env, "60", &[]);
    pty.press("fix the bug\r", "Let me look");
    // Alt-Enter while the first reply streams: delivered after its read_file, in this turn.
    pty.keys("show me README.md\x1b\r");
    pty.answered("Reading README.md.");
    // The finished turn's messages are read back from the store after "Done in": the tool
    // result shows once they are (a screen taken at "Done in" may still say "loading").
    pty.wait_for("README.md (6 lines)");
    pty.quit();
    let kept = Kept::find(&tmp, "fix the bug");
    let (sessions, id) = (&kept.sessions, kept.id.as_str());
    let msgs = sessions.messages(id, 0, i64::MAX).unwrap();
    let roles: Vec<Role> = msgs.iter().map(|m| m.role).collect();
    // prompt, reply with read_file, its result, the steering message, then the replies.
    assert_eq!(
        &roles[..4],
        &[Role::User, Role::Assistant, Role::Tool, Role::User]
    );
    assert_eq!(msgs[3].text(), "show me README.md");
    assert!(sessions.queued(id).unwrap().is_empty());
}

#[test]
fn a_queued_message_survives_a_kill_and_is_sent_when_the_session_is_resumed() {
    let env = Env::new();
    let (pty, tmp, _) = queued_behind_hello(&env, "200", &[], "show me test.sh");
    // Killed mid-turn: nothing is said, nothing is cleaned up.
    drop(pty);
    let kept = Kept::find(&tmp, "hello");
    let (sessions, id) = (&kept.sessions, kept.id.as_str());
    assert_eq!(
        sessions.queued(id).unwrap().len(),
        1,
        "kept across the kill"
    );

    // Resumed (the kept demo keeps its demo model): the queue goes on by itself.
    resumed_sends_the_queue(&kept);
}

#[test]
fn ctrl_e_takes_the_last_queued_message_back_into_the_editor() {
    let env = Env::new();
    let (mut pty, tmp, _) = queued_behind_hello(&env, "60", &[], "run the tests");
    let s = pty.press("\x05", "Back in the editor");
    assert!(!s.contains("Queued ("), "{s}");
    assert!(
        s.contains("┃run the tests"),
        "the text is in the editor again:\n{s}"
    );
    pty.wait_for("Done in");
    std::thread::sleep(Duration::from_millis(500));
    let s = pty.screen();
    assert!(!s.contains("You  #3"), "nothing was sent:\n{s}");
    // The first Ctrl-C clears the editor's text, the second quits.
    pty.press("\x03", "Message cleared");
    pty.quit();
    let kept = Kept::find(&tmp, "hello");
    kept.delivered(&["hello"]);
}

#[test]
fn run_queue_from_another_process_is_sent_by_the_tui_running_the_session() {
    let env = Env::new();
    let (mut pty, tmp) = said_hello(&env, "50", &[]);
    let kept = Kept::find(&tmp, "hello");
    let (sessions, id) = (&kept.sessions, kept.id.as_str());
    let out = kept.neocode(&["run", "--resume", id, "--queue", "show me test.sh"]);
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.starts_with("queued #") && said.contains("runs it and sends it when its turn ends"),
        "{said}"
    );
    // The TUI sees the row (another process's write) and sends it after its turn.
    pty.wait_for("Queued (1)");
    let s = pty.wait_for("test.sh (");
    assert!(s.contains("show me test.sh"), "{s}");
    pty.wait_for("Done in");
    pty.quit();
    assert_eq!(kept.user_texts(), vec!["hello", "show me test.sh"]);

    // Nothing runs the session now: the message waits, and the line says so.
    let out = kept.neocode(&["run", "--resume", id, "--queue", "later"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("nothing runs it now"), "{said}");
    assert_eq!(sessions.queued(id).unwrap().len(), 1);
    // Bad use: no session named.
    let out = kept.neocode(&["run", "--queue", "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--queue needs --resume ID"));
}

#[test]
fn a_queued_message_killed_between_its_sending_and_its_storing_is_still_queued() {
    let env = Env::new();
    let (mut pty, tmp, _) = queued_behind_hello(&env, "40", PAUSED, "show me test.sh");
    // The first turn ends, the queued one starts and stops before its message is stored.
    pty.wait_for("Sending the next queued message");
    std::thread::sleep(Duration::from_millis(1500));
    pty.sigkill();
    let kept = Kept::find(&tmp, "hello");
    let (sessions, id) = (&kept.sessions, kept.id.as_str());
    let waiting = sessions.queued(id).unwrap();
    assert_eq!(
        waiting.iter().map(|q| q.text.as_str()).collect::<Vec<_>>(),
        vec!["show me test.sh"],
        "still queued after the kill (not marked delivered without being stored)"
    );
    assert_eq!(kept.user_texts(), vec!["hello"]);

    // The next start sends it, once.
    resumed_sends_the_queue(&kept);
    let msgs = sessions.messages(id, 0, i64::MAX).unwrap();
    let sent = msgs.iter().find(|m| m.text() == "show me test.sh").unwrap();
    assert_eq!(
        sent.tool_metadata
            .as_ref()
            .and_then(|m| m["queued"]["id"].as_i64()),
        Some(waiting[0].id),
        "the stored message names the queued row it delivered"
    );
}

#[test]
fn a_steering_message_killed_before_it_is_stored_at_the_tool_boundary_is_still_queued() {
    let env = Env::new();
    let (mut pty, tmp) = demo_conversation(&env, "60", PAUSED);
    pty.press("fix the bug\r", "Let me look");
    pty.keys("show me README.md\x1b\r");
    let kept = Kept::find(&tmp, "fix the bug");
    let (sessions, id) = (&kept.sessions, kept.id.as_str());
    // The first tool result is stored; the steering message is next, at this boundary.
    let start = std::time::Instant::now();
    while !sessions
        .messages(id, 0, i64::MAX)
        .unwrap()
        .iter()
        .any(|m| m.role == Role::Tool)
    {
        assert!(start.elapsed() < Duration::from_secs(30), "no tool result");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1500));
    pty.sigkill();
    let waiting = sessions.queued(id).unwrap();
    assert_eq!(waiting.len(), 1, "still queued after the kill");
    assert_eq!(waiting[0].text, "show me README.md");
    assert!(waiting[0].steer);
    assert_eq!(kept.user_texts(), vec!["fix the bug"]);
}
