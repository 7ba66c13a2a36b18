//! Measures a big workspace (see `scripts/big-workspace.sh`) the way a user meets it, with the
//! real binary: `search` (warm and cold), `--list` (time and peak memory), and the TUI in a
//! pseudo-terminal (start → rows, `/` filter until the oldest session shows, `End`, memory).
//!
//! `bench_big --home H --workdir W [--bin target/release/neocode] [--runs 5]
//!  [--words please,inspect,flaky] [--filter '#0$'] [--fuzzy migaudt]`
//!
//! Prints one line per measure (medians); `scripts/bench-big.sh` runs it on workspace A, or
//! on B with `SESSIONS=100000 MESSAGES=10000000`.
// Tests, benchmarks and examples may unwrap: a failure there is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn arg(name: &str, default: Option<&str>) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
        .or_else(|| default.map(str::to_string))
        .unwrap_or_else(|| {
            eprintln!("bench_big: {name} is required");
            std::process::exit(2)
        })
}

struct Ctx {
    bin: PathBuf,
    home: PathBuf,
    work: PathBuf,
    db: PathBuf,
    runs: usize,
    /// The marker of the newest session's last message (`#<count>`).
    long_last: String,
}

impl Ctx {
    fn cmd(&self) -> Command {
        let mut c = Command::new(&self.bin);
        c.env("NEOCODE_HOME", &self.home)
            .arg("--workdir")
            .arg(&self.work);
        c
    }

    /// Wall time (ms) and peak resident memory (KiB) of one run, output discarded.
    fn timed(&self, args: &[&str]) -> (f64, u64) {
        let mut c = Command::new("/usr/bin/time");
        c.arg("-f")
            .arg("%M")
            .arg(&self.bin)
            .env("NEOCODE_HOME", &self.home)
            .arg("--workdir")
            .arg(&self.work)
            .args(args)
            .stdout(std::process::Stdio::null());
        let start = Instant::now();
        let out = c.output().expect("run neocode");
        let ms = start.elapsed().as_secs_f64() * 1000.0;
        let err = String::from_utf8_lossy(&out.stderr);
        let kib = err
            .lines()
            .last()
            .and_then(|l| l.trim().parse().ok())
            .unwrap_or(0);
        (ms, kib)
    }

    fn median(&self, args: &[&str]) -> (f64, u64) {
        self.timed(args); // warm
        let mut t: Vec<(f64, u64)> = (0..self.runs).map(|_| self.timed(args)).collect();
        t.sort_by(|a, b| a.0.total_cmp(&b.0));
        t[t.len() / 2]
    }

    /// Drops the database's pages from the page cache (this file only).
    fn evict(&self) {
        for f in [self.db.clone(), self.db.with_extension("db-wal")] {
            if !f.exists() {
                continue;
            }
            let _ = Command::new("dd")
                .arg(format!("if={}", f.display()))
                .args(["iflag=nocache", "count=0", "status=none"])
                .status();
        }
    }
}

type Screen = Arc<Mutex<vt100::Parser>>;
/// The bytes a program wrote, and when each read of them ended (with the length so far).
type Raw = Arc<Mutex<(Vec<u8>, Vec<(Instant, usize)>)>>;

struct Tui {
    child: Box<dyn portable_pty::Child + Send + Sync>,
    screen: Screen,
    w: Box<dyn Write + Send>,
    start: Instant,
    /// Everything the program wrote, with when each read of it ended.
    raw: Raw,
}

const ROWS: u16 = 40;
const COLS: u16 = 200;

fn spawn(ctx: &Ctx) -> Tui {
    use portable_pty::{CommandBuilder, PtySize, native_pty_system};
    let pair = native_pty_system()
        .openpty(PtySize {
            rows: ROWS,
            cols: COLS,
            pixel_width: 0,
            pixel_height: 0,
        })
        .expect("pty");
    let mut cmd = CommandBuilder::new(&ctx.bin);
    cmd.arg("--workdir");
    cmd.arg(&ctx.work);
    cmd.env("NEOCODE_HOME", &ctx.home);
    cmd.env("TERM", "xterm-256color");
    let child = pair.slave.spawn_command(cmd).expect("spawn");
    // From the exec (spawning returns once it succeeded): portable-pty's own preparation in
    // the forked child (it closes every descriptor up to the limit) is not the program's.
    let start = Instant::now();
    drop(pair.slave);
    let screen = Arc::new(Mutex::new(vt100::Parser::new(
        std::num::NonZeroU16::new(ROWS).unwrap(),
        std::num::NonZeroU16::new(COLS).unwrap(),
        0,
    )));
    let mut reader = pair.master.try_clone_reader().expect("reader");
    let p = screen.clone();
    let raw: Raw = Arc::new(Mutex::new((Vec::new(), Vec::new())));
    let r = raw.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 65536];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            {
                let mut r = r.lock().unwrap();
                r.0.extend_from_slice(&buf[..n]);
                let len = r.0.len();
                r.1.push((Instant::now(), len));
            }
            p.lock().unwrap().process(&buf[..n]);
        }
    });
    let w = pair.master.take_writer().expect("writer");
    std::mem::forget(pair.master);
    Tui {
        child,
        screen,
        w,
        start,
        raw,
    }
}

impl Tui {
    fn wait(&self, what: &str) -> Instant {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if self
                .screen
                .lock()
                .unwrap()
                .screen()
                .contents()
                .contains(what)
            {
                return Instant::now();
            }
            if Instant::now() > deadline {
                let screen = self.screen.lock().unwrap().screen().contents();
                panic!("never saw {what:?} on:\n{screen}");
            }
            std::thread::sleep(Duration::from_micros(300));
        }
    }

    /// Waits until the filter line shows `typed` with its answer (a count, not "…").
    fn wait_filtered(&self, typed: &str) -> Instant {
        let want = format!("/ {typed}  ");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.screen.lock().unwrap().screen().contents();
            if let Some(line) = screen.lines().find(|l| l.contains(&want)) {
                let line = line.trim_end().trim_end_matches(['┃', '│', '║']).trim_end();
                if line.contains(" match") && !line.ends_with('…') {
                    return Instant::now();
                }
            }
            assert!(
                Instant::now() <= deadline,
                "never saw the answer to {typed:?} on:\n{screen}"
            );
            std::thread::sleep(Duration::from_micros(300));
        }
    }

    /// When the program's output first held `what` as plain text (no escape sequence inside
    /// it): when the bytes were written, without the terminal emulator's parsing.
    fn written(&self, what: &str) -> Option<Instant> {
        let r = self.raw.lock().unwrap();
        let at = r.0.windows(what.len()).position(|w| w == what.as_bytes())? + what.len();
        r.1.iter().find(|(_, len)| *len >= at).map(|(t, _)| *t)
    }

    fn send(&mut self, b: &[u8]) -> Instant {
        self.w.write_all(b).unwrap();
        self.w.flush().unwrap();
        Instant::now()
    }

    /// Resident and peak resident memory, MiB.
    fn memory(&self) -> (f64, f64) {
        let pid = self.child.process_id().unwrap_or(0);
        let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let get = |k: &str| {
            s.lines()
                .find(|l| l.starts_with(k))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse::<f64>().ok())
                .unwrap_or(0.0)
                / 1024.0
        };
        (get("VmRSS:"), get("VmHWM:"))
    }

    fn quit(mut self) {
        // Back to the list first (Esc), then Ctrl-C; killed if it is still there after 2 s.
        self.send(b"\x1b");
        std::thread::sleep(Duration::from_millis(100));
        self.send(b"\x03");
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn med(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[expect(clippy::too_many_lines)]
fn main() {
    let home = PathBuf::from(arg("--home", None));
    let work = PathBuf::from(arg("--workdir", None));
    // Absolute: the pseudo-terminal's spawn looks a relative program up in PATH.
    let bin = PathBuf::from(arg("--bin", Some("target/release/neocode")));
    let bin = std::fs::canonicalize(&bin).unwrap_or(bin);
    let runs: usize = arg("--runs", Some("5")).parse().expect("--runs");
    let words = arg("--words", Some("please,inspect,flaky,step_4217"));
    let filter = arg("--filter", Some("#0$"));
    let fuzzy = arg("--fuzzy", Some("migaudt"));
    let db = std::fs::read_dir(home.join("projects"))
        .expect("home/projects")
        .filter_map(Result::ok)
        .map(|e| e.path().join("session.db"))
        .find(|p| p.exists())
        .expect("a session.db under home/projects");
    let mut ctx = Ctx {
        bin,
        home,
        work,
        db,
        runs,
        long_last: String::new(),
    };
    // The first open may migrate the database: do it before timing anything.
    let t = Instant::now();
    let out = ctx
        .cmd()
        .args(["--list", "--json", "--limit", "1"])
        .output()
        .expect("run");
    println!("first open (migration, if any): {:.0} ms", ms(t.elapsed()));
    let newest: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    ctx.long_last = format!("#{}", newest[0]["message_count"].as_u64().unwrap_or(0));
    let newest = newest[0]["title"].as_str().unwrap_or("").to_string();

    for w in words.split(',') {
        let (warm, _) = ctx.median(&["search", w, "--limit", "20"]);
        let mut cold = Vec::new();
        for _ in 0..ctx.runs.min(3) {
            ctx.evict();
            cold.push(ctx.timed(&["search", w, "--limit", "20"]).0);
        }
        let n = String::from_utf8_lossy(
            &ctx.cmd()
                .args(["search", w, "--limit", "20"])
                .output()
                .expect("run")
                .stdout,
        )
        .lines()
        .last()
        .unwrap_or("")
        .to_string();
        println!(
            "search {w:?}: warm {warm:.1} ms, cold {:.1} ms  [{n}]",
            med(cold)
        );
    }
    for args in [
        &["--list"][..],
        &["--list", "--json"][..],
        &["--list", "--limit", "20"][..],
    ] {
        let (t, kib) = ctx.median(args);
        println!(
            "{}: {t:.1} ms, peak {:.1} MiB",
            args.join(" "),
            kib as f64 / 1024.0
        );
    }

    // The TUI: start → rows, `/` filter until the oldest session shows, End.
    let oldest = {
        let out = ctx.cmd().args(["--list", "--json"]).output().expect("run");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        let rows = v.as_array().expect("array");
        rows[rows.len() - 1]["title"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    let newest_cut: String = newest.chars().take(40).collect();
    let oldest_cut: String = oldest.chars().take(60).collect();
    let (mut start, mut filter_ms, mut end_ms) = (Vec::new(), Vec::new(), Vec::new());
    let mut start_written = Vec::new();
    let mut mem_end = (0.0, 0.0);
    let mut mem_filter = (0.0, 0.0);
    for _ in 0..ctx.runs {
        let mut t = spawn(&ctx);
        let shown = t.wait(&newest_cut);
        start.push(ms(shown - t.start));
        if let Some(w) = t.written(&newest_cut) {
            start_written.push(ms(w - t.start));
        }
        std::thread::sleep(Duration::from_millis(300));
        t.send(b"/");
        t.wait("/ ");
        // A person takes longer than this between `/` and the first key.
        std::thread::sleep(Duration::from_millis(200));
        let typed = t.send(filter.as_bytes());
        filter_ms.push(ms(t.wait(&oldest_cut) - typed));
        std::thread::sleep(Duration::from_millis(300));
        mem_filter = t.memory();
        t.quit();

        let mut t = spawn(&ctx);
        t.wait(&newest_cut);
        std::thread::sleep(Duration::from_millis(300));
        let pressed = t.send(b"G");
        end_ms.push(ms(t.wait(&oldest_cut) - pressed));
        std::thread::sleep(Duration::from_millis(300));
        mem_end = t.memory();
        t.quit();
    }
    // Typing a fuzzy text one key at a time, as a person does: each key's answer on screen.
    let (mut first_key, mut keys) = (Vec::new(), Vec::new());
    let mut mem_fuzzy = (0.0, 0.0);
    for _ in 0..ctx.runs {
        let mut t = spawn(&ctx);
        t.wait(&newest_cut);
        std::thread::sleep(Duration::from_millis(300));
        t.send(b"/");
        t.wait("/ ");
        std::thread::sleep(Duration::from_millis(300));
        for (i, c) in fuzzy.char_indices() {
            let typed = &fuzzy[..i + c.len_utf8()];
            let sent = t.send(c.to_string().as_bytes());
            let ms = ms(t.wait_filtered(typed) - sent);
            if i == 0 {
                first_key.push(ms);
            } else {
                keys.push(ms);
            }
            std::thread::sleep(Duration::from_millis(120));
        }
        std::thread::sleep(Duration::from_millis(300));
        mem_fuzzy = t.memory();
        t.quit();
    }
    // The newest session holds the most messages (`populate --long`): open it, read the last
    // message, page up through 60 screens of it, then see what that cost in memory.
    let mut open_ms = Vec::new();
    let mut mem_long = (0.0, 0.0);
    for _ in 0..ctx.runs {
        let mut t = spawn(&ctx);
        t.wait(&newest_cut);
        std::thread::sleep(Duration::from_millis(300));
        let pressed = t.send(b"\r");
        // The conversation's key bar, then its last message (the list's preview shows it too).
        t.wait("Esc back");
        open_ms.push(ms(t.wait(ctx.long_last.as_str()) - pressed));
        for _ in 0..60 {
            t.send(b"\x1b[5~");
            std::thread::sleep(Duration::from_millis(15));
        }
        std::thread::sleep(Duration::from_millis(500));
        mem_long = t.memory();
        t.quit();
    }
    // Scrolling the whole list a page at a time, once: memory after it (the list keeps a
    // window of rows, so this stays what a few pages cost).
    let mem_scroll = {
        let mut t = spawn(&ctx);
        t.wait(&newest_cut);
        // Keys pressed while a page loads do not queue up: press on until the end shows.
        let deadline = Instant::now() + Duration::from_secs(120);
        while !t
            .screen
            .lock()
            .unwrap()
            .screen()
            .contents()
            .contains(&oldest_cut)
        {
            assert!(Instant::now() < deadline, "never reached the end");
            for _ in 0..10 {
                t.send(b"\x1b[6~");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(500));
        let m = t.memory();
        t.quit();
        m
    };
    let worst = keys.iter().copied().fold(0.0, f64::max);
    println!(
        "TUI start -> rows visible: {:.1} ms (written by the program: {:.1} ms)",
        med(start),
        if start_written.is_empty() {
            f64::NAN
        } else {
            med(start_written)
        }
    );
    println!(
        "TUI `/` then {fuzzy:?} key by key: first key {:.1} ms, later keys median {:.1} ms (max {worst:.1}); RSS {:.1} MiB (peak {:.1})",
        med(first_key),
        med(keys),
        mem_fuzzy.0,
        mem_fuzzy.1
    );
    println!(
        "TUI `/{filter}` until the oldest session shows: {:.1} ms; RSS {:.1} MiB (peak {:.1})",
        med(filter_ms),
        mem_filter.0,
        mem_filter.1
    );
    println!(
        "TUI Enter on the newest session until its conversation shows its last message ({}): {:.1} ms; RSS after 60 pages up {:.1} MiB (peak {:.1})",
        ctx.long_last,
        med(open_ms),
        mem_long.0,
        mem_long.1
    );
    println!(
        "TUI PgDn through the whole list to the oldest session: RSS {:.1} MiB (peak {:.1})",
        mem_scroll.0, mem_scroll.1
    );
    println!(
        "TUI End until the oldest session shows: {:.1} ms; RSS {:.1} MiB (peak {:.1})",
        med(end_ms),
        mem_end.0,
        mem_end.1
    );
}
