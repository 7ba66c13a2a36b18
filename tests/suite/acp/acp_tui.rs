//! A session an editor started over ACP goes on in the TUI: the same store, the same
//! transcript, the next turn appended after the editor's.

use crate::support::bridge::Env;
use crate::support::pty::Pty;
use neocode::session::Role;
use neocode::testkit::scripted::Reply;

use super::acp_process::Acp;

#[test]
fn a_session_an_editor_started_continues_in_the_tui() {
    let env = Env::new(vec![
        Reply::text("First answer, from the editor's turn."),
        Reply::text("Second answer, in the terminal."),
    ]);
    let (mut acp, id) = Acp::opened(&env);
    acp.answer(&id, "hello from the editor");
    acp.close();

    let base = env.server.base_url();
    let vars = [
        ("NEOCODE_BASE_URL", base.as_str()),
        ("NEOCODE_MODEL", "scripted-model"),
        ("NEOCODE_API_KEY", "sk-test-acp"),
    ];
    let mut pty = Pty::spawn(&env.home, &env.workdir, &["--resume", &id], &vars, 35, 120);
    let screen = pty.wait_for("First answer, from the editor's turn.");
    assert!(screen.contains("hello from the editor"), "{screen}");
    pty.wait_for("scripted-model");
    pty.submit("and now from the terminal");
    pty.wait_for("Second answer, in the terminal.");
    assert_eq!(pty.quit(), 0);

    let texts = env.texts(&id);
    let users: Vec<&str> = texts
        .iter()
        .filter(|(r, _)| *r == Role::User)
        .map(|(_, t)| t.as_str())
        .collect();
    assert_eq!(
        users,
        ["hello from the editor", "and now from the terminal"]
    );
    // The second request carried the editor's turn: one conversation, not two.
    let second = env.server.requests()[1].json().to_string();
    assert!(
        second.contains("First answer, from the editor's turn."),
        "{second}"
    );
}
