//! The `@` file picker on a 100,000-file workspace: key press → redrawn frame with the picker
//! open, and key press → the new matches on screen (the ranking runs on the worker; typing a
//! character narrows the last matches; erasing one ranks every file again),
//! drawn to a `TestBackend`. The tree is built once in a temp dir; listing it (the worker's
//! `ignore` walk, once per conversation) is timed once and printed.
//!
//! `cargo bench --bench picker`.
// Tests, benchmarks and examples may unwrap: a failure there is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use criterion::Criterion;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use neocode::runtime::{Location, Sessions};
use neocode::session::{AppendMeta, NewMessage, NewSession, Role};
use neocode::tui::app::{App, AppOptions, run_inline};
use neocode::tui::theme::Theme;
use neocode::tui::views;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// Files in the tree: 100 top folders x 10 subfolders x 100 files.
const FILES: usize = 100_000;

/// Writes `FILES` empty files under `root`, named like a source tree.
fn tree(root: &std::path::Path) {
    let names = [
        "mod", "lib", "main", "util", "parser", "render", "store", "config",
    ];
    for a in 0..100 {
        for b in 0..10 {
            let dir = root.join(format!("crate{a}/src/module{b}"));
            std::fs::create_dir_all(&dir).unwrap();
            for c in 0..100 {
                let name = names[(a + b + c) % names.len()];
                std::fs::write(dir.join(format!("{name}_{c}.rs")), b"").unwrap();
            }
        }
    }
}

fn key(app: &mut App, rt: &Sessions, code: KeyCode) {
    let jobs = app.on_key(KeyEvent::new(code, KeyModifiers::NONE));
    run_inline(app, rt, jobs);
}

/// Times `timed` (then presses `undo`, untimed): key → frame, or with `with_rank` key → the
/// ranking run inline → the frame showing its matches.
fn edit(
    c: &mut Criterion,
    (app, rt, term): (&mut App, &Sessions, &mut Terminal<TestBackend>),
    name: &str,
    timed: KeyCode,
    undo: KeyCode,
    with_rank: bool,
) {
    c.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let t = Instant::now();
                let jobs = app.on_key(KeyEvent::new(timed, KeyModifiers::NONE));
                if with_rank {
                    run_inline(app, rt, jobs);
                    term.draw(|fr| views::draw(fr, app)).unwrap();
                    total += t.elapsed();
                } else {
                    term.draw(|fr| views::draw(fr, app)).unwrap();
                    total += t.elapsed();
                    run_inline(app, rt, jobs);
                }
                key(app, rt, undo);
            }
            total
        })
    });
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let loc = Location::scratch(tmp.path());
    let ws = loc.root().to_path_buf();
    tree(&ws);
    let rt = Sessions::open(&loc).unwrap();
    let s = rt
        .new_session(NewSession {
            title: "picker".into(),
            ..NewSession::default()
        })
        .unwrap();
    rt.append(
        &s.id,
        &[NewMessage::text(Role::User, "hello")],
        &AppendMeta::default(),
    )
    .unwrap();
    let (mut app, jobs) = App::new(AppOptions {
        theme: Theme::new(true),
        export_dir: ws.clone(),
        workdir: ws.display().to_string(),
        root: ws.display().to_string(),
        size: (120, 35),
        now_ms: neocode::session::now_ms(),
        resume: Some(s.id),
    });
    run_inline(&mut app, &rt, jobs);
    let mut term = Terminal::new(TestBackend::new(120, 35)).unwrap();

    // The first `@` lists the workspace (once); the picker opens on the answer.
    let start = Instant::now();
    key(&mut app, &rt, KeyCode::Char('@'));
    let listed = start.elapsed();
    let n = app.conv.files().map_or(0, |f| f.len());
    assert_eq!(n, FILES, "every file listed");
    assert!(app.conv.picker_open(), "the picker is open");
    println!("listing {n} files (ignore walk, first @): {listed:.1?}");
    for c in "mod".chars() {
        key(&mut app, &rt, KeyCode::Char(c));
    }
    term.draw(|fr| views::draw(fr, &app)).unwrap();
    assert!(app.conv.picker_open());

    let mut c = Criterion::default()
        .configure_from_args()
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
        .sample_size(30);
    // Each edit is timed twice: key → frame (what the key's own thread does: the editor and
    // the picker's frame, the ranking handed to the worker) and key → matches on screen (the
    // worker's ranking run inline, then the frame that shows them).
    // "@mod" → "@modu": narrows the last matches; the erase (untimed) puts "@mod" back.
    edit(
        &mut c,
        (&mut app, &rt, &mut term),
        "@ picker, 100k files: type a char -> frame",
        KeyCode::Char('u'),
        KeyCode::Backspace,
        false,
    );
    edit(
        &mut c,
        (&mut app, &rt, &mut term),
        "@ picker, 100k files: type a char -> matches on screen",
        KeyCode::Char('u'),
        KeyCode::Backspace,
        true,
    );
    // "@modu" → "@mod": every file ranked again; the retype (untimed) puts "@modu" back.
    key(&mut app, &rt, KeyCode::Char('u'));
    edit(
        &mut c,
        (&mut app, &rt, &mut term),
        "@ picker, 100k files: erase a char -> frame",
        KeyCode::Backspace,
        KeyCode::Char('u'),
        false,
    );
    edit(
        &mut c,
        (&mut app, &rt, &mut term),
        "@ picker, 100k files: erase a char (full rank) -> matches on screen",
        KeyCode::Backspace,
        KeyCode::Char('u'),
        true,
    );
    // Down in the open picker: no ranking, the frame only.
    let mut down = true;
    c.bench_function("@ picker, 100k files: move -> frame", |b| {
        b.iter(|| {
            key(
                &mut app,
                &rt,
                if down { KeyCode::Down } else { KeyCode::Up },
            );
            down = !down;
            term.draw(|fr| views::draw(fr, &app)).unwrap();
        })
    });
    assert!(app.conv.picker_open(), "still open at the end");
    c.final_summary();
}
