//! TUI benchmarks (criterion) plus process-level measurements of the real binary in a pty.
//!
//! - one frame of the list with 10,000 sessions (first page loaded)
//! - key press → redrawn frame (the move is drawn; the detail loads off the loop)
//! - one frame of a 100,000-message transcript (visible window loaded), in the middle
//! - process start → first frame with rows, 10,000 sessions (pty, median of 5)
//! - resident memory with 10,000 sessions listed and a 10,000-message transcript open
//!
//! `cargo bench --bench tui`. Set `TUI_BENCH_QUICK=1` to skip the process measurements.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::Criterion;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use neocode::runtime::{Location, Sessions};
use neocode::session::{AppendMeta, NewMessage, NewSession, Role, ToolCall, Usage, WorkspacePaths};
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
    let home = tmp.path().join("home");
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let loc = Location {
        paths: WorkspacePaths::resolve(&home, &ws).unwrap(),
        home: home.clone(),
    };
    let rt = Sessions::open(&loc).unwrap();
    Fixture {
        _tmp: tmp,
        home,
        ws,
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

    let mut t_app = app(&f, Some(long.clone()));
    // Jump to the middle of the transcript and load the window there.
    t_app.update(neocode::tui::action::Action::PageUp);
    let jobs = {
        let (w, h) = t_app.viewport();
        let theme = t_app.theme;
        let tr = t_app.detail.as_mut().unwrap().transcript.as_mut().unwrap();
        tr.select(50_000, w, h, &theme);
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

fn main() {
    let mut c = Criterion::default()
        .configure_from_args()
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
        .sample_size(30);
    benches(&mut c);
    c.final_summary();
    if std::env::var_os("TUI_BENCH_QUICK").is_none() {
        process_measurements();
    }
}
