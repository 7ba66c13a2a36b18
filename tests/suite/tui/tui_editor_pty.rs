//! The message editor and the conversation's keys in a real terminal (the binary in a pty, a
//! scripted model on 127.0.0.1):
//! a bracketed paste with the CR line breaks terminals send keeps its lines, a big paste is a
//! chip whose whole text is sent, Ctrl-C with a draft clears it (↑ brings it back) before
//! a second Ctrl-C quits, Enter on the empty editor retries a turn that failed, and F1 opens
//! the help at the conversation's keys.

use crate::support::Env;
use crate::support::tui_flows::{answers, user_texts};
use neocode::testkit::scripted::Reply;

/// `text` as a terminal pastes it with bracketed paste on.
fn bracketed(text: &str) -> String {
    format!("\x1b[200~{text}\x1b[201~")
}

/// What the user said in the newest session.
fn said(env: &Env) -> Vec<String> {
    let (rt, id) = env.newest();
    user_texts(&rt, &id)
}

#[test]
fn a_terminal_paste_keeps_its_lines_and_a_big_one_is_a_chip_sent_whole() {
    let env = Env::new();
    let (srv, mut pty) = env.chat(answers(&["Three lines came.", "The log came."]), 35, 120);
    // tmux, xterm, VTE and Alacritty send CR for each newline of a paste.
    let s = pty.press(&bracketed("alpha\rbeta\rgamma"), "gamma");
    assert!(!s.contains("alphabetagamma"), "{s}");
    let rows: Vec<&str> = s
        .lines()
        .filter(|l| l.contains("alpha") || l.contains("beta") || l.contains("gamma"))
        .collect();
    assert_eq!(rows.len(), 3, "one row each:\n{s}");
    pty.keys("\r");
    pty.answered("Three lines came.");

    // 5,000 lines (CRLF, as Windows Terminal sends them): a chip, not 5,000 rows.
    let log: String = (0..5000)
        .map(|i| format!("2026-01-01 12:00:00 worker {i:04} finished its batch\r\n"))
        .collect();
    pty.keys("why did these finish? ");
    let s = pty.press(&bracketed(&log), "[pasted 5,000 lines · 255 KB]");
    assert!(
        !s.contains("worker 4999"),
        "the lines are not in the editor:\n{s}"
    );
    pty.keys("\r");
    pty.answered("The log came.");
    assert_eq!(pty.quit(), 0);

    let texts = said(&env);
    assert_eq!(texts[0], "alpha\nbeta\ngamma");
    let sent = &texts[1];
    assert!(sent.starts_with("why did these finish? 2026-01-01 12:00:00 worker 0000"));
    assert_eq!(sent.lines().count(), 5000, "its line breaks are kept");
    assert!(!sent.contains('\r'));
    // The model got the lines, not one 255 KB line.
    let req = srv.requests()[1].json();
    let content = req["messages"][3]["content"].as_str().unwrap().to_string();
    assert_eq!(content.lines().count(), 5000);
    assert!(content.contains("worker 4999 finished its batch"));
}

#[test]
fn ctrl_c_clears_the_draft_which_up_brings_back_and_a_second_ctrl_c_quits() {
    let env = Env::new();
    let (_srv, mut pty) = env.chat(vec![Reply::text("Got the draft.")], 24, 80);
    pty.press("a long thought I do not want to lose", "a long thought");
    let s = pty.press("\x03", "Message cleared");
    assert!(!s.contains("a long thought"), "cleared:\n{s}");
    // Still running: the draft comes back with ↑ and can be sent.
    pty.press("\x1b[A", "a long thought I do not want to lose");
    pty.keys("\r");
    pty.answered("Got the draft.");
    // Ctrl-Z undoes a clearing too.
    pty.press("second draft", "second draft");
    pty.press("\x03", "Message cleared");
    pty.press("\x1a", "second draft");
    // With text, the first Ctrl-C clears; on the empty editor the next one quits.
    pty.press("\x03", "Message cleared");
    assert_eq!(pty.quit(), 0);
    assert_eq!(said(&env), ["a long thought I do not want to lose"]);
}

#[test]
fn enter_on_the_empty_editor_retries_a_failed_turn_and_says_so() {
    let env = Env::new();
    let (srv, mut pty) = env.chat(
        vec![
            Reply::error(400, "the request was refused"),
            Reply::text("Answered on the retry."),
        ],
        24,
        80,
    );
    let s = pty.press("hello\r", "Enter retries");
    assert!(s.contains("the request was refused"), "{s}");
    assert!(s.contains("the last turn failed: Enter retries it"), "{s}");
    pty.keys("\r");
    pty.answered("Answered on the retry.");
    assert_eq!(pty.quit(), 0);
    // The prompt was asked again, not stored twice.
    assert_eq!(said(&env), ["hello"]);
    assert_eq!(srv.request_count(), 2);
}

#[test]
fn f1_in_the_conversation_opens_the_help_at_the_conversation_keys() {
    let env = Env::new();
    let (_srv, mut pty) = env.chat(vec![], 35, 120);
    let s = pty.press("\x1bOP", "Help");
    assert!(s.contains("Conversation view"), "{s}");
    assert!(
        !s.contains("Session list and detail"),
        "not at the list's keys:\n{s}"
    );
    // Any key closes it; from the list, F1 opens at the top.
    pty.keys("x");
    pty.press("\x1b", "0 sessions");
    let s = pty.press("\x1bOP", "Session list and detail");
    assert!(s.contains("Help"), "{s}");
    pty.keys("x");
    assert_eq!(pty.quit(), 0);
}
