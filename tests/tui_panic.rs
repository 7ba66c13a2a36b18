//! A panic, on the event loop or on another thread, restores the terminal (leaves the
//! alternate screen, stops mouse capture, shows the cursor) before the message prints, and the
//! process exits instead of hanging.

use std::io::Read;
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

fn run_panicking(kind: &str) -> (Vec<u8>, u32) {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let pair = native_pty_system()
        .openpty(PtySize {
            rows: 30,
            cols: 100,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_neocode"));
    cmd.env("NEOCODE_HOME", home.path());
    cmd.env("NEOCODE_TEST_PANIC", kind);
    cmd.env("TERM", "xterm-256color");
    cmd.arg("--workdir");
    cmd.arg(work.path());
    let mut child = pair.slave.spawn_command(cmd).unwrap();
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().unwrap();
    let pump = std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            all.extend_from_slice(&buf[..n]);
        }
        all
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "the TUI hung after a panic on the {kind}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    drop(pair.master);
    (pump.join().unwrap(), status.exit_code())
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
