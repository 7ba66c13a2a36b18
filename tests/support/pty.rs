//! The real binary in a pseudo-terminal: run to the end with input typed ([`run_typed`]), or
//! spawn, type, read the screen (vt100), wait for exit ([`Pty`]).

use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{
    Child, CommandBuilder, ExitStatus, MasterPty, PtyPair, PtySize, native_pty_system,
};

/// A pty sized `rows` x `cols` before any program starts in it (a pty starts at 0x0).
fn open(rows: u16, cols: u16) -> PtyPair {
    native_pty_system()
        .openpty(PtySize {
            rows,
            cols,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap()
}

/// Runs `cmd` to its end on a `rows` x `cols` pty with `input` already typed; its exit status
/// and everything it wrote.
pub(crate) fn run_typed(
    cmd: CommandBuilder,
    input: &str,
    rows: u16,
    cols: u16,
) -> (ExitStatus, String) {
    let pair = open(rows, cols);
    let mut child = pair.slave.spawn_command(cmd).unwrap();
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().unwrap();
    let mut writer = pair.master.take_writer().unwrap();
    writer.write_all(input.as_bytes()).unwrap();
    writer.flush().unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match reader.read(&mut buf) {
            Ok(0) | Err(_) => break, // EIO once the child is gone and the buffer is drained
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    let status = child.wait().unwrap();
    drop(writer);
    (status, String::from_utf8_lossy(&out).into_owned())
}

/// A running `neocode` in a pty of a fixed size.
/// Environment variables set for the program, as `(name, value)` pairs.
pub(crate) type Envs<'a> = &'a [(&'a str, &'a str)];

pub(crate) struct Pty {
    child: Box<dyn Child + Send + Sync>,
    writer: Box<dyn Write + Send>,
    master: Option<Box<dyn MasterPty + Send>>,
    raw: Arc<Mutex<Vec<u8>>>,
    pump: Option<std::thread::JoinHandle<()>>,
    rows: NonZeroU16,
    cols: NonZeroU16,
}

impl Pty {
    /// Starts `neocode --workdir <workdir> <args>` with `NEOCODE_HOME=<home>` and `envs`, in a
    /// pty sized `rows` x `cols` before the program starts (a pty starts at 0x0).
    pub(crate) fn spawn(
        home: &Path,
        workdir: &Path,
        args: &[&str],
        envs: &[(&str, &str)],
        rows: u16,
        cols: u16,
    ) -> Pty {
        let workdir = workdir.to_string_lossy();
        let mut all = vec!["--workdir", workdir.as_ref()];
        all.extend_from_slice(args);
        Pty::spawn_args(home, &all, envs, rows, cols)
    }

    /// Starts `neocode <args>` (no `--workdir` added) with `NEOCODE_HOME=<home>` and `envs`,
    /// in the folder above `home`.
    pub(crate) fn spawn_args(home: &Path, args: &[&str], envs: Envs, rows: u16, cols: u16) -> Pty {
        let pair = open(rows, cols);
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_neocode"));
        cmd.env("NEOCODE_HOME", home);
        cmd.env("TERM", "xterm-256color");
        for (k, v) in envs {
            cmd.env(k, v);
        }
        cmd.cwd(home.parent().unwrap_or(home));
        for a in args {
            cmd.arg(a);
        }
        let child = pair.slave.spawn_command(cmd).unwrap();
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().unwrap();
        let writer = pair.master.take_writer().unwrap();
        let raw = Arc::new(Mutex::new(Vec::new()));
        let pump = {
            let raw = raw.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                while let Ok(n) = reader.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    raw.lock().unwrap().extend_from_slice(&buf[..n]);
                }
            })
        };
        Pty {
            child,
            writer,
            master: Some(pair.master),
            raw,
            pump: Some(pump),
            rows: NonZeroU16::new(rows).unwrap(),
            cols: NonZeroU16::new(cols).unwrap(),
        }
    }

    /// Every byte the program wrote so far.
    pub(crate) fn bytes(&self) -> Vec<u8> {
        self.raw.lock().unwrap().clone()
    }

    /// The bytes so far, replayed into a terminal with `callbacks`.
    pub(crate) fn replay<C: vt100::Callbacks>(&self, callbacks: C) -> vt100::Parser<C> {
        let mut p = vt100::Parser::new_with_callbacks(self.rows, self.cols, 0, callbacks);
        p.process(&self.bytes());
        p
    }

    /// The screen's text now.
    pub(crate) fn screen(&self) -> String {
        let mut p = vt100::Parser::new(self.rows, self.cols, 0);
        p.process(&self.bytes());
        p.screen().contents()
    }

    /// Kills the program with SIGKILL (no handler runs, nothing is cleaned up) and reaps it.
    pub(crate) fn sigkill(&mut self) {
        let pid = self.child.process_id().expect("a pid").to_string();
        let st = std::process::Command::new("kill")
            .args(["-9", &pid])
            .status()
            .unwrap();
        assert!(st.success(), "kill -9 {pid}");
        let _ = self.child.wait();
    }

    /// Waits until the screen shows `what` (a generous limit: this is not a speed test).
    pub(crate) fn wait_for(&self, what: &str) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if s.contains(what) {
                return s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the screen never showed {what:?}:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Resizes the terminal (the program gets SIGWINCH); the screen is read at the new size.
    pub(crate) fn resize(&mut self, rows: u16, cols: u16) {
        if let Some(m) = &self.master {
            m.resize(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        }
        self.rows = NonZeroU16::new(rows).unwrap();
        self.cols = NonZeroU16::new(cols).unwrap();
        std::thread::sleep(Duration::from_millis(300));
    }

    /// Types `s`, then gives the program a moment to draw.
    pub(crate) fn keys(&mut self, s: &str) {
        self.writer.write_all(s.as_bytes()).unwrap();
        self.writer.flush().unwrap();
        std::thread::sleep(Duration::from_millis(200));
    }

    /// Types `text` and then Enter, as two keystrokes (a message, or a slash command).
    pub(crate) fn submit(&mut self, text: &str) {
        self.keys(text);
        self.keys("\r");
    }

    /// Types `keys`, then waits until the screen shows `what`; the screen then.
    pub(crate) fn press(&mut self, keys: &str, what: &str) -> String {
        self.keys(keys);
        self.wait_for(what)
    }

    /// Waits for `answer`, then for the turn's end (`Done in`); the screen at the end.
    pub(crate) fn answered(&self, answer: &str) -> String {
        self.wait_for(answer);
        self.wait_for("Done in")
    }

    /// Sends `text` and waits for `answer`, then for the turn's end (`Done in`); the screen
    /// at the end.
    pub(crate) fn exchange(&mut self, text: &str, answer: &str) -> String {
        self.submit(text);
        self.answered(answer)
    }

    /// A card's one-key answer as a person gives it: after a look at the card, alone.
    pub(crate) fn deliberately(&mut self, key: &str) {
        std::thread::sleep(Duration::from_millis(800));
        self.keys(key);
    }

    /// Ctrl-C, then the exit code within `secs` seconds.
    pub(crate) fn quit_within(&mut self, secs: u64) -> u32 {
        self.keys("\x03");
        self.wait_exit(Duration::from_secs(secs), "neocode did not quit on Ctrl-C")
    }

    /// Ctrl-C, then the exit code (within 30 s).
    pub(crate) fn quit(&mut self) -> u32 {
        self.quit_within(30)
    }

    /// Waits for the program to exit (panicking after `limit`), closes the pty and returns
    /// the exit code.
    pub(crate) fn wait_exit(&mut self, limit: Duration, what: &str) -> u32 {
        let start = Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(start.elapsed() < limit, "{what}");
            std::thread::sleep(Duration::from_millis(50));
        };
        self.master.take();
        if let Some(p) = self.pump.take() {
            let _ = p.join();
        }
        status.exit_code()
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}
