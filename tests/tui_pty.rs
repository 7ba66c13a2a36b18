//! The real binary in a pseudo-terminal: open the list, move, filter, switch tabs, fork and
//! quit, asserting on the screen text (vt100) and on the database afterwards (through the
//! runtime).

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use neocode::runtime::{Location, Runtime};
use neocode::session::{ListQuery, WorkspacePaths};
use portable_pty::{CommandBuilder, PtySize, native_pty_system};

struct Screen {
    parser: Arc<Mutex<vt100::Parser>>,
}

impl Screen {
    fn text(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    /// Waits until the screen shows `what` (generous limit: this is not a speed test).
    fn wait_for(&self, what: &str) -> String {
        let start = Instant::now();
        loop {
            let t = self.text();
            if t.contains(what) {
                return t;
            }
            if start.elapsed() > Duration::from_secs(30) {
                panic!("the screen never showed {what:?}:\n{t}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[test]
fn browse_filter_tabs_fork_quit_in_a_real_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let loc = Location {
        paths: WorkspacePaths::resolve(&home, &ws).unwrap(),
        home: home.clone(),
    };
    let rt = Runtime::open(&loc).unwrap();
    neocode::tui::demo::load_into(&rt, neocode::session::now_ms()).unwrap();
    let billing = rt
        .list(&ListQuery::default())
        .unwrap()
        .items
        .into_iter()
        .find(|s| s.title.starts_with("Migrate billing"))
        .unwrap()
        .id;

    let pty = native_pty_system();
    // A pty starts at 0x0: size it before the program starts.
    let pair = pty
        .openpty(PtySize {
            rows: 35,
            cols: 120,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_neocode"));
    cmd.arg("--workdir");
    cmd.arg(&ws);
    cmd.env("NEOCODE_HOME", &home);
    cmd.env("TERM", "xterm-256color");
    cmd.cwd(tmp.path());
    let mut child = pair.slave.spawn_command(cmd).unwrap();
    drop(pair.slave);
    let parser = Arc::new(Mutex::new(vt100::Parser::new(
        std::num::NonZeroU16::new(35).unwrap(),
        std::num::NonZeroU16::new(120).unwrap(),
        0,
    )));
    let mut reader = pair.master.try_clone_reader().unwrap();
    {
        let parser = parser.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                parser.lock().unwrap().process(&buf[..n]);
            }
        });
    }
    let mut w = pair.master.take_writer().unwrap();
    let mut keys = |s: &str| {
        w.write_all(s.as_bytes()).unwrap();
        w.flush().unwrap();
        std::thread::sleep(Duration::from_millis(150));
    };
    let screen = Screen { parser };

    // The list.
    let s = screen.wait_for("7 sessions");
    assert!(s.contains("Draft release notes for v0.4"), "{s}");
    assert!(s.contains("Transcript"), "{s}");

    // Move down: the detail follows.
    keys("j");
    screen.wait_for("Add per-key rate limiting");

    // Filter as you type.
    keys("/");
    keys("billing");
    let s = screen.wait_for("1 match");
    assert!(!s.contains("Walk me through"), "{s}");
    keys("\r");

    // Tabs: Plan shows the DAG with the failure.
    keys("]");
    screen.wait_for("4/7 done, 1 failed");
    keys("]");
    screen.wait_for("Per-turn tokens");
    keys("[");
    keys("[");

    // Fork at the end.
    keys("f");
    screen.wait_for("Forked at message #10");
    screen.wait_for("8 sessions");

    // Quit (Esc clears the filter first, q quits).
    keys("\x1b");
    std::thread::sleep(Duration::from_millis(200));
    keys("q");
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("neocode did not quit:\n{}", screen.text());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "exit status {status:?}");

    // The database saw the fork.
    let all = rt.list(&ListQuery::default()).unwrap().items;
    assert_eq!(all.len(), 8);
    let fork = all
        .iter()
        .find(|s| s.parent_id.as_deref() == Some(billing.as_str()))
        .expect("a fork of the billing session");
    assert_eq!(fork.fork_seq, Some(10));
    assert_eq!(fork.message_count, 10);
}
