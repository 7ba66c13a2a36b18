//! Paired whole-process timings of two neocode binaries on the same workloads, run
//! interleaved (old, new, new, old, ...), for `scripts/perf-pair.sh`:
//!
//! ```text
//! perf_pair --old BIN --new BIN [--runs N] [--only NAME,...] [--list10k DIR] [--list100k DIR]
//! perf_pair serve chat|responses|anthropic [--deltas N] [--tools N]
//! ```
//!
//! Every process is timed from just before its spawn to its exit: wall time, and CPU time
//! (user + system, from `wait4`'s resource usage, children included), and for the turns the
//! time from the spawn to the model request reaching the scripted server (in this process, on
//! 127.0.0.1). Each binary gets its own home, workspace and copy of the list workspaces, so
//! neither sees what the other wrote. The table (markdown) gives, per workload, each binary's
//! min / median / max and the ratio new / old taken pair by pair (min / median / max).
//!
//! Workloads: `--list` of the 10,000- and 100,000-session workspaces built by `populate
//! --spread-days` (and the SQLite shell reading the same columns from the same database, for
//! reference); a one-delta `run` turn per wire API; a 10,000-delta turn; 20 `run_command true`
//! round trips in one turn; a 50-turn session (one `run`, then 49 `run --continue`: each turn
//! is a pair); 50 turns in one `neocode bridge` process (CPU per turn); the TUI in a
//! pseudo-terminal while a reply streams at ~1,000 chunks/s (its CPU time from start to quit).
//!
//! `serve` stands up the scripted server alone (its URL on the first line of standard output)
//! for profiling one process by hand; it serves until standard input closes.
// Tests, benchmarks and examples may unwrap: a failure there is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use neocode::session::WorkspacePaths;
use neocode::testkit::scripted::{Reply, ScriptedServer, Stream};
use neocode::testkit::scripted_wire::{Messages, ResponsesStream};

/// One timed process.
#[derive(Debug, Clone, Copy)]
struct Sample {
    wall_ms: f64,
    cpu_ms: f64,
    /// Spawn to the first model request (POST) the server received.
    first_ms: Option<f64>,
}

/// Both binaries' samples of one workload, pair by pair.
struct Row {
    name: String,
    old: Vec<Sample>,
    new: Vec<Sample>,
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn tv_ms(t: libc::timeval) -> f64 {
    t.tv_sec as f64 * 1e3 + t.tv_usec as f64 / 1e3
}

/// Waits for `pid` and returns its exit status and CPU time (user + system, ms), its waited
/// children included.
fn wait_rusage(pid: u32) -> (i32, f64) {
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting for our own child with valid out-pointers.
    let r = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut ru) };
    assert_eq!(r, pid as libc::pid_t, "wait4 failed");
    (status, tv_ms(ru.ru_utime) + tv_ms(ru.ru_stime))
}

/// Runs `cmd` to its end, its standard output drained through a pipe (as `| cat` would).
fn timed(cmd: &mut Command) -> (Sample, Instant, Vec<u8>) {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd.spawn().expect("spawn");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let drain = std::thread::spawn(move || {
        let mut v = Vec::new();
        out.read_to_end(&mut v).unwrap();
        v
    });
    let errs = std::thread::spawn(move || {
        let mut v = Vec::new();
        err.read_to_end(&mut v).unwrap();
        v
    });
    let (status, cpu_ms) = wait_rusage(child.id());
    let wall = start.elapsed();
    std::mem::forget(child);
    let out = drain.join().unwrap();
    let err = errs.join().unwrap();
    assert!(
        status == 0,
        "{:?} exited with status {status}: {}",
        cmd,
        String::from_utf8_lossy(&err)
    );
    (
        Sample {
            wall_ms: ms(wall),
            cpu_ms,
            first_ms: None,
        },
        start,
        out,
    )
}

/// Old then new on even pairs, new then old on odd ones.
fn pairs(runs: usize, mut one: impl FnMut(bool, usize) -> Sample) -> (Vec<Sample>, Vec<Sample>) {
    // One unrecorded run each first (page cache, the server's threads).
    one(false, usize::MAX);
    one(true, usize::MAX);
    let (mut old, mut new) = (Vec::new(), Vec::new());
    for i in 0..runs {
        let order = if i % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for is_new in order {
            let s = one(is_new, i);
            if is_new { new.push(s) } else { old.push(s) }
        }
    }
    (old, new)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), &t).unwrap();
        }
    }
}

/// A scratch folder per binary: `home`, `ws`.
struct Place {
    home: PathBuf,
    ws: PathBuf,
}

fn place(root: &Path, name: &str) -> Place {
    let p = root.join(name);
    let _ = std::fs::remove_dir_all(&p);
    let home = p.join("home");
    let ws = p.join("ws");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    Place { home, ws }
}

fn neocode(bin: &Path, home: &Path, ws: &Path) -> Command {
    let mut c = Command::new(bin);
    c.current_dir(ws);
    for k in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "NEOCODE_API_KEY",
        "NEOCODE_BASE_URL",
        "NEOCODE_MODEL",
        "NEOCODE_API",
        "NEOCODE_PROVIDER",
        "NO_COLOR",
    ] {
        c.env_remove(k);
    }
    c.env("NEOCODE_HOME", home);
    c
}

fn with_server(c: &mut Command, srv: &ScriptedServer, api: &str) {
    c.env("NEOCODE_BASE_URL", srv.base_url())
        .env("NEOCODE_MODEL", "scripted")
        .env("NEOCODE_API", api)
        .env("NEOCODE_API_KEY", "sk-bench");
}

/// A reply of `deltas` text deltas in the wire format of `api`.
fn text_reply(api: &str, deltas: usize) -> Reply {
    let text: String = (0..deltas).map(|i| format!("word{i} and more ")).collect();
    match api {
        "chat" => Stream::new()
            .role()
            .text_deltas(&text, deltas)
            .finish("stop")
            .usage(10, deltas as u64)
            .reply(),
        "responses" => ResponsesStream::start()
            .text(&text, deltas)
            .completed(10, 0, deltas as u64, 0)
            .reply(),
        "anthropic" => Messages::start(10, 0, 0)
            .text(&text, deltas)
            .stop("end_turn", deltas as u64)
            .reply(),
        other => panic!("unknown api {other}: chat, responses or anthropic"),
    }
}

/// A chat reply calling `run_command true`.
fn command_call(i: usize) -> Reply {
    Stream::tool_calls(&[(&format!("call_{i}"), "run_command", r#"{"command":"true"}"#)]).reply()
}

/// The spawn → first POST time, from the server's record.
fn first_post(srv: &ScriptedServer, since: Instant) -> Option<f64> {
    srv.requests()
        .iter()
        .filter(|r| r.method == "POST" && r.received >= since)
        .map(|r| ms(r.received - since))
        .reduce(f64::min)
}

struct Ctx {
    old: PathBuf,
    new: PathBuf,
    runs: usize,
    work: PathBuf,
}

impl Ctx {
    fn bin(&self, is_new: bool) -> &Path {
        if is_new { &self.new } else { &self.old }
    }

    fn side(is_new: bool) -> &'static str {
        if is_new { "new" } else { "old" }
    }
}

fn list_rows(ctx: &Ctx, label: &str, src: &Path, sqlite: Option<&str>) -> Vec<Row> {
    let runs = ctx.runs * 2;
    // Each binary its own copy: the database moves to the folder the copy's workspace path
    // hashes to.
    let from = std::fs::read_dir(src.join("home/projects"))
        .unwrap()
        .next()
        .expect("no workspace under DIR/home/projects")
        .unwrap()
        .path();
    let copies: Vec<PathBuf> = [false, true]
        .iter()
        .map(|&n| {
            let to = ctx.work.join(format!("{label}-{}", Ctx::side(n)));
            let _ = std::fs::remove_dir_all(&to);
            std::fs::create_dir_all(to.join("work")).unwrap();
            let paths = WorkspacePaths::resolve(&to.join("home"), &to.join("work")).unwrap();
            copy_dir(&from, paths.db().parent().unwrap());
            to
        })
        .collect();
    let run = |is_new: bool, _: usize| {
        let dir = &copies[usize::from(is_new)];
        let mut c = neocode(ctx.bin(is_new), &dir.join("home"), &dir.join("work"));
        c.arg("--list");
        timed(&mut c).0
    };
    let (old, new) = pairs(runs, run);
    let mut rows = vec![Row {
        name: format!("`--list`, {label} sessions"),
        old,
        new,
    }];
    // The SQLite shell dumping the same columns (old = the shell, new = neocode's new binary).
    if let Some(sqlite) = sqlite {
        let dir = &copies[1];
        let db = std::fs::read_dir(dir.join("home/projects"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path()
            .join("session.db");
        let q = "SELECT id, title, first_prompt, updated_at_ms, model, parent_id, subagent_of, \
                 message_count, token_input_total, token_output_total, plan_done, plan_failed, \
                 plan_total, source_tool, branch, cost_usd FROM sessions INDEXED BY \
                 sessions_listed ORDER BY updated_at_ms DESC, insert_order DESC";
        let run = |is_new: bool, _: usize| {
            if is_new {
                let mut c = neocode(&ctx.new, &dir.join("home"), &dir.join("work"));
                c.arg("--list");
                timed(&mut c).0
            } else {
                let mut c = Command::new(sqlite);
                c.arg("-readonly").arg(&db).arg(q);
                timed(&mut c).0
            }
        };
        let (old, new) = pairs(runs, run);
        rows.push(Row {
            name: format!("`--list`, {label}: new binary / SQLite shell, same columns"),
            old,
            new,
        });
    }
    rows
}

/// A one-`run` workload: `replies` pushed before each run, `args` after `run`.
fn turn_row(
    ctx: &Ctx,
    name: &str,
    api: &str,
    replies: &dyn Fn() -> Vec<Reply>,
    args: &[&str],
) -> Row {
    let srv = ScriptedServer::start(Vec::new()).unwrap();
    let places = [
        place(&ctx.work, &format!("{api}-old")),
        place(&ctx.work, &format!("{api}-new")),
    ];
    let run = |is_new: bool, _: usize| {
        let p = &places[usize::from(is_new)];
        srv.push(replies());
        let mut c = neocode(ctx.bin(is_new), &p.home, &p.ws);
        with_server(&mut c, &srv, api);
        c.arg("run").args(args);
        let (mut s, start, _) = timed(&mut c);
        s.first_ms = first_post(&srv, start);
        s
    };
    let (old, new) = pairs(ctx.runs, run);
    Row {
        name: name.to_string(),
        old,
        new,
    }
}

/// 50 turns in one session per binary: `run`, then `run --continue`; turn i of each is a pair.
fn session_row(ctx: &Ctx, turns: usize) -> Row {
    let srv = ScriptedServer::start(Vec::new()).unwrap();
    let places = [place(&ctx.work, "s50-old"), place(&ctx.work, "s50-new")];
    let (mut old, mut new) = (Vec::new(), Vec::new());
    for i in 0..turns {
        let order = if i % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for is_new in order {
            let p = &places[usize::from(is_new)];
            srv.push([text_reply("chat", 60)]);
            let mut c = neocode(ctx.bin(is_new), &p.home, &p.ws);
            with_server(&mut c, &srv, "chat");
            c.arg("run");
            if i > 0 {
                c.arg("--continue");
            }
            c.arg(format!("turn {i}: go on with the next step"));
            let (mut s, start, _) = timed(&mut c);
            s.first_ms = first_post(&srv, start);
            if is_new { new.push(s) } else { old.push(s) }
        }
    }
    Row {
        name: format!("{turns}-turn session (`run --continue`), per turn"),
        old,
        new,
    }
}

/// `turns` chats in one `neocode bridge` process (what an editor plugin runs), each with the
/// whole conversation so far; the process's CPU divided by the turns is one sample.
fn bridge_row(ctx: &Ctx, turns: usize) -> Row {
    let srv = ScriptedServer::start(Vec::new()).unwrap();
    let places = [
        place(&ctx.work, "bridge-old"),
        place(&ctx.work, "bridge-new"),
    ];
    let run = |is_new: bool, _: usize| {
        let p = &places[usize::from(is_new)];
        srv.push((0..turns).map(|_| text_reply("chat", 60)));
        let mut c = neocode(ctx.bin(is_new), &p.home, &p.ws);
        with_server(&mut c, &srv, "chat");
        c.arg("bridge")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let start = Instant::now();
        let mut child = c.spawn().expect("spawn the bridge");
        let mut to = child.stdin.take().unwrap();
        let mut from = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut history: Vec<serde_json::Value> = Vec::new();
        let mut session = String::new();
        let mut line = String::new();
        for i in 0..turns {
            history.push(serde_json::json!({"role": "user", "content": format!("turn {i}")}));
            let mut chat = serde_json::json!({"type": "chat", "request_id": format!("r{i}"),
                "messages": history});
            if !session.is_empty() {
                chat["session_id"] = serde_json::json!(session);
            }
            writeln!(to, "{chat}").unwrap();
            to.flush().unwrap();
            let mut reply = String::new();
            loop {
                line.clear();
                assert!(from.read_line(&mut line).unwrap() > 0, "the bridge ended");
                let v: serde_json::Value = serde_json::from_str(&line).unwrap();
                match v["type"].as_str() {
                    Some("session_init") => session = v["session_id"].as_str().unwrap().into(),
                    Some("text_delta") => reply.push_str(v["text"].as_str().unwrap()),
                    Some("finish") => {
                        assert_eq!(v["reason"], "completed", "{line}");
                        break;
                    }
                    Some("error") => panic!("the bridge said {line}"),
                    _ => {}
                }
            }
            history.push(serde_json::json!({"role": "assistant", "content": reply}));
        }
        drop(to);
        let mut rest = Vec::new();
        from.read_to_end(&mut rest).unwrap();
        let (status, cpu_ms) = wait_rusage(child.id());
        std::mem::forget(child);
        assert_eq!(status, 0, "the bridge exited with {status}");
        Sample {
            wall_ms: ms(start.elapsed()) / turns as f64,
            cpu_ms: cpu_ms / turns as f64,
            first_ms: None,
        }
    };
    let (old, new) = pairs(ctx.runs.div_ceil(3).max(2), run);
    Row {
        name: format!("{turns} turns in one `neocode bridge` process, per turn"),
        old,
        new,
    }
}

/// The TUI in a pseudo-terminal: a new conversation, one prompt, a reply of `chunks` chunks
/// one millisecond apart; CPU from start to quit.
fn tui_row(ctx: &Ctx, chunks: usize) -> Row {
    let text: String = (0..chunks).map(|i| format!("w{i} ")).collect();
    let last = format!("w{} ", chunks - 1);
    let srv = ScriptedServer::start(Vec::new()).unwrap();
    let places = [place(&ctx.work, "tui-old"), place(&ctx.work, "tui-new")];
    let run = |is_new: bool, _: usize| {
        let p = &places[usize::from(is_new)];
        let _ = std::fs::remove_dir_all(&p.home);
        std::fs::create_dir_all(&p.home).unwrap();
        srv.push([Stream::new()
            .role()
            .text_deltas(&text, chunks)
            .finish("stop")
            .usage(10, chunks as u64)
            .delays(Duration::ZERO, Duration::from_millis(1))
            .reply()]);
        let mut c = neocode(ctx.bin(is_new), &p.home, &p.ws);
        with_server(&mut c, &srv, "chat");
        c.env("TERM", "xterm-256color");
        let mut t = Pty::spawn(c);
        t.wait_for("0 sessions");
        t.send(b"n");
        t.wait_for("New session");
        t.send(b"go\r");
        t.wait_for(last.trim_end());
        t.send(b"\x03");
        std::thread::sleep(Duration::from_millis(100));
        t.send(b"\x03");
        t.finish()
    };
    let (old, new) = pairs(ctx.runs.div_ceil(3).max(2), run);
    Row {
        name: format!("TUI: start, a {chunks}-chunk reply at ~1,000 chunks/s, quit"),
        old,
        new,
    }
}

/// A child on a pseudo-terminal (120x35) whose screen is kept by a vt100 parser.
struct Pty {
    pid: u32,
    start: Instant,
    master: std::fs::File,
    screen: Arc<Mutex<vt100::Parser>>,
}

impl Pty {
    fn spawn(mut cmd: Command) -> Pty {
        let (mut m, mut s) = (0, 0);
        let ws = libc::winsize {
            ws_row: 35,
            ws_col: 120,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: out-pointers to two ints; name and termios may be null.
        let r =
            unsafe { libc::openpty(&mut m, &mut s, std::ptr::null_mut(), std::ptr::null(), &ws) };
        assert_eq!(r, 0, "openpty");
        // SAFETY: openpty returned two fresh descriptors we own.
        let (master, slave) = unsafe { (OwnedFd::from_raw_fd(m), OwnedFd::from_raw_fd(s)) };
        cmd.stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let start = Instant::now();
        let child = cmd.spawn().expect("spawn in a pty");
        let pid = child.id();
        std::mem::forget(child);
        let master = std::fs::File::from(master);
        let screen = Arc::new(Mutex::new(vt100::Parser::new(
            std::num::NonZeroU16::new(35).unwrap(),
            std::num::NonZeroU16::new(120).unwrap(),
            0,
        )));
        let mut reader = master.try_clone().unwrap();
        let sc = screen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 16384];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sc.lock().unwrap().process(&buf[..n]);
            }
        });
        Pty {
            pid,
            start,
            master,
            screen,
        }
    }

    fn wait_for(&self, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self
            .screen
            .lock()
            .unwrap()
            .screen()
            .contents()
            .contains(what)
        {
            assert!(
                Instant::now() < deadline,
                "the TUI never showed {what:?}; screen:\n{}",
                self.screen.lock().unwrap().screen().contents()
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn send(&mut self, b: &[u8]) {
        self.master.write_all(b).unwrap();
        self.master.flush().unwrap();
    }

    fn finish(self) -> Sample {
        let (_, cpu_ms) = wait_rusage(self.pid);
        Sample {
            wall_ms: ms(self.start.elapsed()),
            cpu_ms,
            first_ms: None,
        }
    }
}

fn stats(v: &[f64]) -> (f64, f64, f64) {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let med = if v.len() % 2 == 1 {
        v[v.len() / 2]
    } else {
        f64::midpoint(v[v.len() / 2 - 1], v[v.len() / 2])
    };
    (v[0], med, v[v.len() - 1])
}

fn fmt3(v: &[f64], digits: usize) -> String {
    let (a, b, c) = stats(v);
    format!("{a:.digits$} / {b:.digits$} / {c:.digits$}")
}

fn ratios(row: &Row, f: impl Fn(&Sample) -> f64) -> Vec<f64> {
    row.old
        .iter()
        .zip(&row.new)
        .map(|(o, n)| f(n) / f(o))
        .collect()
}

fn print_table(rows: &[Row]) {
    println!(
        "| workload | pairs | wall old, ms | wall new, ms | wall new/old | CPU old, ms | CPU new, ms | CPU new/old | to first request old → new, ms (median) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        let wall = |v: &[Sample]| v.iter().map(|s| s.wall_ms).collect::<Vec<_>>();
        let cpu = |v: &[Sample]| v.iter().map(|s| s.cpu_ms).collect::<Vec<_>>();
        let first = |v: &[Sample]| v.iter().filter_map(|s| s.first_ms).collect::<Vec<_>>();
        let (fo, fnew) = (first(&r.old), first(&r.new));
        let first = if fo.is_empty() || fnew.is_empty() {
            "—".to_string()
        } else {
            format!("{:.1} → {:.1}", stats(&fo).1, stats(&fnew).1)
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.name,
            r.old.len(),
            fmt3(&wall(&r.old), 1),
            fmt3(&wall(&r.new), 1),
            fmt3(&ratios(r, |s| s.wall_ms), 2),
            fmt3(&cpu(&r.old), 1),
            fmt3(&cpu(&r.new), 1),
            fmt3(&ratios(r, |s| s.cpu_ms), 2),
            first
        );
    }
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    format!("{cores} cores ({cpu}), Linux {}", kernel.trim())
}

fn serve(args: &[String]) {
    let api = args.get(1).map_or("chat", String::as_str);
    let deltas: usize = arg(args, "--deltas").map_or(1, |n| n.parse().unwrap());
    let tools: usize = arg(args, "--tools").map_or(0, |n| n.parse().unwrap());
    let srv = ScriptedServer::start(Vec::new()).unwrap();
    println!("{}", srv.base_url());
    std::io::stdout().flush().unwrap();
    // Keeps a few turns' replies queued until standard input closes.
    let feeder = std::thread::spawn(move || for _ in std::io::stdin().lock().lines() {});
    while !feeder.is_finished() {
        if srv.remaining() < 4 {
            let mut v: Vec<Reply> = (0..tools).map(command_call).collect();
            v.push(text_reply(api, deltas));
            srv.push(v);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "serve") {
        serve(&args);
        return;
    }
    let need = |n: &str| {
        arg(&args, n).unwrap_or_else(|| {
            eprintln!("perf_pair: {n} is required (see the comment at the top of the file)");
            std::process::exit(2)
        })
    };
    let work = tempfile::tempdir().unwrap();
    let ctx = Ctx {
        old: std::fs::canonicalize(need("--old")).expect("--old: no such binary"),
        new: std::fs::canonicalize(need("--new")).expect("--new: no such binary"),
        runs: arg(&args, "--runs").map_or(10, |n| n.parse().unwrap()),
        work: work.path().to_path_buf(),
    };
    let only: Option<Vec<String>> =
        arg(&args, "--only").map(|s| s.split(',').map(str::to_string).collect());
    let wanted = |n: &str| only.as_ref().is_none_or(|o| o.iter().any(|x| x == n));
    let sqlite = arg(&args, "--sqlite");
    let load0 = loadavg();
    let started = Instant::now();
    let mut rows = Vec::new();
    for (key, label) in [("--list10k", "10k"), ("--list100k", "100k")] {
        let name = format!("list{label}");
        if let Some(dir) = arg(&args, key)
            && wanted(&name)
        {
            eprintln!("perf_pair: {name}");
            rows.extend(list_rows(&ctx, label, Path::new(&dir), sqlite.as_deref()));
        }
    }
    for api in ["chat", "responses", "anthropic"] {
        if wanted(&format!("turn-{api}")) {
            eprintln!("perf_pair: turn-{api}");
            rows.push(turn_row(
                &ctx,
                &format!("one-delta `run` turn, {api}"),
                api,
                &|| vec![text_reply(api, 1)],
                &["say ok"],
            ));
        }
    }
    if wanted("turn-10k") {
        eprintln!("perf_pair: turn-10k");
        rows.push(turn_row(
            &ctx,
            "10,000-delta `run` turn, chat",
            "chat",
            &|| vec![text_reply("chat", 10_000)],
            &["say a lot"],
        ));
    }
    if wanted("tools-20") {
        eprintln!("perf_pair: tools-20");
        rows.push(turn_row(
            &ctx,
            "20 `run_command true` round trips in one `run`",
            "chat",
            &|| {
                let mut v: Vec<Reply> = (0..20).map(command_call).collect();
                v.push(text_reply("chat", 1));
                v
            },
            &["--approve", "never-ask", "run true 20 times"],
        ));
    }
    if wanted("session-50") {
        eprintln!("perf_pair: session-50");
        rows.push(session_row(&ctx, 50));
    }
    if wanted("bridge-50") {
        eprintln!("perf_pair: bridge-50");
        rows.push(bridge_row(&ctx, 50));
    }
    if wanted("tui") {
        eprintln!("perf_pair: tui");
        rows.push(tui_row(&ctx, 2_000));
    }
    println!(
        "{}; load average {load0} at the start, {} at the end; {:.0} s; {} pairs per workload unless the row says otherwise",
        machine(),
        loadavg(),
        started.elapsed().as_secs_f64(),
        ctx.runs
    );
    println!();
    print_table(&rows);
}
