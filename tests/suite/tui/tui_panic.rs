//! A panic, on the event loop or on another thread, restores the terminal (leaves the
//! alternate screen, stops mouse capture, shows the cursor) before the message prints, and the
//! process exits instead of hanging.

use std::time::Duration;

use crate::support::Env;
use crate::support::pty::Pty;

fn run_panicking(kind: &str) -> (Vec<u8>, u32) {
    let env = Env::new();
    let vars = [("NEOCODE_TEST_PANIC", kind)];
    let mut pty = Pty::spawn(&env.home, &env.workdir, &[], &vars, 30, 100);
    let code = pty.wait_exit(
        Duration::from_secs(15),
        &format!("the TUI hung after a panic on the {kind}"),
    );
    (pty.bytes(), code)
}

fn check(kind: &str, message: &str) {
    let (out, code) = run_panicking(kind);
    assert_eq!(code, 101, "exit code after a panic on the {kind}");
    let text = String::from_utf8_lossy(&out);
    let entered = text
        .find("\x1b[?1049h")
        .expect("never entered the alternate screen");
    let left = text
        .rfind("\x1b[?1049l")
        .expect("alternate screen never left");
    let panicked = text.find(message).expect("panic message missing");
    assert!(
        entered < left && left < panicked,
        "restored after the message:\n{text:?}"
    );
    let mouse_off = text
        .rfind("\x1b[?1000l")
        .expect("mouse capture never disabled");
    let cursor_on = text.rfind("\x1b[?25h").expect("cursor never shown again");
    assert!(mouse_off < panicked && cursor_on < panicked);
}

#[test]
fn panic_on_the_event_loop_restores_the_terminal() {
    check("loop", "test panic on the event loop");
}

#[test]
fn panic_on_another_thread_restores_the_terminal_and_exits() {
    check("thread", "test panic on a worker thread");
}
