//! TUI benchmarks (criterion) plus process-level measurements of the real binary in a pty.
//!
//! - one frame of the list with 10,000 sessions (first page loaded)
//! - key press → redrawn frame (the move is drawn; the detail loads off the loop)
//! - one frame of a 100,000-message transcript (visible window loaded), in the middle
//! - process start → first frame with rows, 10,000 sessions (pty, median of 5)
//! - resident memory with 10,000 sessions listed and a 10,000-message transcript open
//!
//! - the live conversation while a reply streams at ~1,000 chunks/s: key press → frame
//!   (in-process, p50/p99), and the real binary's CPU use and keystroke → screen latency
//!   against a scripted model server on 127.0.0.1
//!
//! `cargo bench --bench tui`. Set `TUI_BENCH_QUICK=1` to skip the process measurements,
//! `TUI_BENCH_LIVE=1` to run only the live-conversation measurements.
// Tests, benchmarks and examples may unwrap: a failure there is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::Criterion;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use neocode::runtime::{Location, Sessions};
use neocode::session::{AppendMeta, NewMessage, NewSession, Role, ToolCall, Usage};
use neocode::tui::app::{App, AppOptions, run_inline};
use neocode::tui::effect::Effect;
use neocode::tui::theme::Theme;
use neocode::tui::views;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

struct Fixture {
    _tmp: tempfile::TempDir,
    home: std::path::PathBuf,
    ws: std::path::PathBuf,
    rt: Sessions,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let loc = Location::scratch(tmp.path());
    let rt = Sessions::open(&loc).unwrap();
    Fixture {
        _tmp: tmp,
        home: loc.home.clone(),
        ws: loc.root().to_path_buf(),
        rt,
    }
}

fn many_sessions(rt: &Sessions, n: usize) {
    for i in 0..n {
        let s = rt
            .new_session(NewSession {
                title: format!("Session number {i} about refactoring module {}", i % 97),
                model: "gpt-4.1".into(),
                ..NewSession::default()
            })
            .unwrap();
        rt.append(
            &s.id,
            &[NewMessage::text(Role::User, format!("prompt {i}"))],
            &AppendMeta::default(),
        )
        .unwrap();
    }
}

fn long_session(rt: &Sessions, n: usize, title: &str) -> String {
    let s = rt
        .new_session(NewSession {
            title: title.into(),
            ..NewSession::default()
        })
        .unwrap();
    let mut batch = Vec::with_capacity(1000);
    for i in 0..n {
        let m = match i % 4 {
            0 => NewMessage::text(Role::User, format!("Question {i}: why does `foo` fail?")),
            1 => NewMessage {
                role: Some(Role::Assistant),
                parts: vec![neocode::session::Part::text(format!(
                    "Answer {i}. Let me **check** with a tool.\n\n```rust\nfn foo() -> u32 {{ {i} }}\n```"
                ))],
                tool_calls: vec![ToolCall {
                    id: format!("c{i}"),
                    name: "bash".into(),
                    arguments: format!("{{\"command\":\"cargo test foo_{i}\"}}"),
                }],
                usage: Usage {
                    input_tokens: 1000 + i as u64,
                    output_tokens: 50,
                },
                ..NewMessage::default()
            },
            2 => NewMessage::tool_result(
                format!("c{}", i - 1),
                "running 1 test\ntest foo ... ok\n\ntest result: ok.",
                false,
            ),
            _ => NewMessage::text(Role::Assistant, format!("All good at step {i}.")),
        };
        batch.push(m);
        if batch.len() == 1000 {
            rt.append(&s.id, &batch, &AppendMeta::default()).unwrap();
            batch.clear();
        }
    }
    if !batch.is_empty() {
        rt.append(&s.id, &batch, &AppendMeta::default()).unwrap();
    }
    s.id
}

fn app(f: &Fixture, resume: Option<String>) -> App {
    let (mut app, jobs) = App::new(AppOptions {
        theme: Theme::new(true),
        export_dir: f.ws.clone(),
        workdir: String::new(),
        root: f.ws.display().to_string(),
        size: (120, 35),
        now_ms: neocode::session::now_ms(),
        resume,
    });
    run(&f.rt, &mut app, jobs);
    app
}

fn run(rt: &Sessions, app: &mut App, effects: Vec<Effect>) {
    run_inline(app, rt, effects);
}

fn benches(c: &mut Criterion) {
    let f = fixture();
    many_sessions(&f.rt, 10_000);
    let long = long_session(&f.rt, 100_000, "A very long session");

    let mut term = Terminal::new(TestBackend::new(120, 35)).unwrap();
    let mut list_app = app(&f, None);
    c.bench_function("list frame, 10k sessions (first page)", |b| {
        b.iter(|| {
            term.draw(|fr| views::draw(fr, &list_app)).unwrap();
        })
    });

    let mut down = true;
    c.bench_function("key press -> redrawn frame", |b| {
        b.iter(|| {
            let code = if down { KeyCode::Down } else { KeyCode::Up };
            down = !down;
            let jobs = list_app.on_key(KeyEvent::new(code, KeyModifiers::NONE));
            term.draw(|fr| views::draw(fr, &list_app)).unwrap();
            jobs
        })
    });

    let mut t_app = app(&f, Some(long));
    // Jump to the middle of the transcript and load the window there.
    t_app.update(neocode::tui::action::Action::PageUp);
    let jobs = {
        let (w, h) = t_app.viewport();
        let theme = t_app.theme;
        let tr = t_app
            .browse
            .detail
            .as_mut()
            .unwrap()
            .transcript
            .as_mut()
            .unwrap();
        tr.select(50_000, w, h, theme);
        t_app.on_resize(120, 35)
    };
    run(&f.rt, &mut t_app, jobs);
    c.bench_function("100k-message transcript frame (middle)", |b| {
        b.iter(|| {
            term.draw(|fr| views::draw(fr, &t_app)).unwrap();
        })
    });
    c.bench_function("100k-message transcript: scroll one page + frame", |b| {
        let mut up = true;
        b.iter(|| {
            let a = if up {
                neocode::tui::action::Action::PageUp
            } else {
                neocode::tui::action::Action::PageDown
            };
            up = !up;
            let jobs = t_app.update(a);
            run(&f.rt, &mut t_app, jobs);
            term.draw(|fr| views::draw(fr, &t_app)).unwrap();
        })
    });
}

/// A running binary: child, screen, keyboard, start time.
type Spawned = (
    Box<dyn portable_pty::Child + Send + Sync>,
    Arc<Mutex<vt100::Parser>>,
    Box<dyn Write + Send>,
    Instant,
);

/// Spawns the binary in a 120x35 pty.
fn spawn(f: &Fixture, args: &[&str]) -> Spawned {
    spawn_with(f, args, &[])
}

/// [`spawn`] with extra environment variables.
fn spawn_with(f: &Fixture, args: &[&str], envs: &[(&str, &str)]) -> Spawned {
    use portable_pty::{CommandBuilder, PtySize, native_pty_system};
    let pair = native_pty_system()
        .openpty(PtySize {
            rows: 35,
            cols: 120,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_neocode"));
    cmd.arg("--workdir");
    cmd.arg(&f.ws);
    for a in args {
        cmd.arg(a);
    }
    cmd.env("NEOCODE_HOME", &f.home);
    cmd.env("TERM", "xterm-256color");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let start = Instant::now();
    let child = pair.slave.spawn_command(cmd).unwrap();
    drop(pair.slave);
    let parser = Arc::new(Mutex::new(vt100::Parser::new(
        std::num::NonZeroU16::new(35).unwrap(),
        std::num::NonZeroU16::new(120).unwrap(),
        0,
    )));
    let mut reader = pair.master.try_clone_reader().unwrap();
    let p = parser.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 16384];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            p.lock().unwrap().process(&buf[..n]);
        }
    });
    let w = pair.master.take_writer().unwrap();
    std::mem::forget(pair.master);
    (child, parser, w, start)
}

fn wait(parser: &Arc<Mutex<vt100::Parser>>, what: &str) -> Instant {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if parser.lock().unwrap().screen().contents().contains(what) {
            return Instant::now();
        }
        assert!(Instant::now() < deadline, "never saw {what:?}");
        std::thread::sleep(Duration::from_micros(500));
    }
}

fn rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn process_measurements() {
    let f = fixture();
    many_sessions(&f.rt, 10_000);
    long_session(&f.rt, 10_000, "Ten thousand messages");
    let mut times = Vec::new();
    for _ in 0..5 {
        let (mut child, parser, mut w, start) = spawn(&f, &[]);
        let shown = wait(&parser, "Ten thousand messages");
        times.push(shown - start);
        w.write_all(b"q").unwrap();
        w.flush().unwrap();
        let _ = child.wait();
    }
    times.sort();
    println!(
        "process start -> first frame with rows (10,000 sessions): median {:.1} ms (min {:.1}, max {:.1})",
        times[2].as_secs_f64() * 1000.0,
        times[0].as_secs_f64() * 1000.0,
        times[4].as_secs_f64() * 1000.0
    );
    let (mut child, parser, mut w, _) = spawn(&f, &[]);
    wait(&parser, "Ten thousand messages");
    // Open the 10,000-message session (top of the list) and scroll through part of it.
    w.write_all(b"\r").unwrap();
    w.flush().unwrap();
    wait(&parser, "Message");
    for _ in 0..20 {
        w.write_all(b"\x1b[5~").unwrap();
        w.flush().unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    let pid = child.process_id().unwrap();
    println!(
        "resident memory, 10,000 sessions listed + 10,000-message transcript open: {:.1} MiB",
        rss_kib(pid) as f64 / 1024.0
    );
    w.write_all(b"\x03").unwrap();
    w.flush().unwrap();
    let _ = child.wait();
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

/// CPU time (user + system) of a process so far, in seconds.
fn cpu_secs(pid: u32) -> f64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = s.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0)
        + f.get(12).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    ticks / hz
}

#[expect(clippy::too_many_lines)]
fn live_measurements() {
    use neocode::runtime::agent::TurnEvent;
    use neocode::testkit::scripted::{ScriptedServer, Stream};

    // In-process: one ms of stream per chunk, a key and a frame every 16 chunks (what
    // queues up between two frames at 1,000 chunks/s), the whole reply rendered each frame.
    let f = fixture();
    let id = long_session(&f.rt, 200, "Streaming here");
    let mut a = app(&f, Some(id.clone()));
    a.conv.set_provider(Ok("bench".into()));
    for c in "go".chars() {
        let e = a.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        run(&f.rt, &mut a, e);
    }
    let e = a.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    run(&f.rt, &mut a, e);
    let e = a.on_turn(TurnEvent::Started { session_id: id });
    run(&f.rt, &mut a, e);
    let mut term = Terminal::new(TestBackend::new(120, 35)).unwrap();
    let mut lat = Vec::new();
    for i in 0..8_000u32 {
        let chunk = if i % 40 == 39 {
            "\n\n".to_string()
        } else if i % 200 == 100 {
            "\n```rust\nfn f() {}\n```\n".to_string()
        } else {
            format!("word{i} ")
        };
        if i % 16 == 15 {
            let t = Instant::now();
            let e = a.on_turn(TurnEvent::TextDelta(chunk));
            run(&f.rt, &mut a, e);
            let e = a.on_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE));
            run(&f.rt, &mut a, e);
            term.draw(|fr| views::draw(fr, &a)).unwrap();
            lat.push(t.elapsed());
        } else {
            let e = a.on_turn(TurnEvent::TextDelta(chunk));
            run(&f.rt, &mut a, e);
        }
    }
    lat.sort();
    println!(
        "key press -> frame while a reply streams (in-process, 8,000 chunks, reply up to ~60 KB): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} frames)",
        pct(&lat, 0.5),
        pct(&lat, 0.99),
        lat.last().unwrap().as_secs_f64() * 1000.0,
        lat.len()
    );

    // The real binary against a scripted server sending a chunk every millisecond.
    let text: String = (0..6_000).map(|i| format!("w{i} ")).collect();
    let srv = ScriptedServer::start(vec![
        Stream::new()
            .role()
            .text_deltas(&text, 6_000)
            .finish("stop")
            .usage(10, 6_000)
            .delays(Duration::ZERO, Duration::from_millis(1))
            .reply(),
    ])
    .unwrap();
    let f = fixture();
    let base = srv.base_url();
    let (mut child, parser, mut w, _) = spawn_with(
        &f,
        &[],
        &[("NEOCODE_BASE_URL", &base), ("NEOCODE_MODEL", "bench")],
    );
    wait(&parser, "0 sessions");
    w.write_all(b"n").unwrap();
    w.flush().unwrap();
    wait(&parser, "New session");
    w.write_all(b"go\r").unwrap();
    w.flush().unwrap();
    let started = wait(&parser, "w10 ");
    let pid = child.process_id().unwrap();
    let cpu0 = cpu_secs(pid);
    // Keystrokes while it streams: each must reach the screen.
    let mut typed = String::new();
    let mut keys = Vec::new();
    for c in "abcdefghijklmnopqrst".chars() {
        typed.push(c);
        let t = Instant::now();
        w.write_all(&[c as u8]).unwrap();
        w.flush().unwrap();
        wait(&parser, &typed);
        keys.push(t.elapsed());
        std::thread::sleep(Duration::from_millis(100));
    }
    let cpu1 = cpu_secs(pid);
    let wall = started.elapsed().as_secs_f64();
    let streamed = parser.lock().unwrap().screen().contents().contains("w5999");
    keys.sort();
    println!(
        "real binary while a reply streams at ~1,000 chunks/s: CPU {:.0}% of one core over {:.1} s; keystroke -> on screen p50 {:.1} ms, max {:.1} ms (pty + vt100 included){}",
        (cpu1 - cpu0) / wall * 100.0,
        wall,
        pct(&keys, 0.5),
        keys.last().unwrap().as_secs_f64() * 1000.0,
        if streamed {
            ""
        } else {
            "; stream still running"
        }
    );
    w.write_all(b"\x03").unwrap();
    w.write_all(b"\x03").unwrap();
    w.flush().unwrap();
    let _ = child.wait();
}

fn main() {
    if std::env::var_os("TUI_BENCH_LIVE").is_some() {
        live_measurements();
        return;
    }
    let mut c = Criterion::default()
        .configure_from_args()
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
        .sample_size(30);
    benches(&mut c);
    c.final_summary();
    if std::env::var_os("TUI_BENCH_QUICK").is_none() {
        process_measurements();
        live_measurements();
    }
}
