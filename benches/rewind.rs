//! What rewind (issue 26) costs: the before-image snapshot added to a 100 KB `edit_file`
//! (the tool call and its stored result, with and without the snapshot), the workspace
//! fingerprint a command pays (`run_command true` in an empty workspace and in one of 10,000
//! files), a rewind of 100 files (plan, blobs of what it overwrites, journal, 100 atomic
//! replacements) and the store's growth over a 1,000-edit session.
//!
//! `cargo bench --bench rewind`.
// Tests, benchmarks and examples may unwrap: a failure there is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use neocode::runtime::rewind::{self, Scope};
use neocode::runtime::tools::{self, SandboxMode, ToolContext, sandbox};
use neocode::runtime::{Location, Sessions};
use neocode::session::{AppendMeta, FileChange, Image, NewMessage, NewSession, Role, StateUpdate};

fn session(sessions: &Sessions) -> String {
    let id = sessions.new_session(NewSession::default()).unwrap().id;
    sessions
        .append(
            &id,
            &[NewMessage::text(Role::User, "change the files")],
            &AppendMeta::default(),
        )
        .unwrap();
    id
}

/// A 100 KB file edited again and again (each before-image is new, so each snapshot writes
/// a blob), its result stored with or without the snapshot.
fn edit(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let loc = Location::scratch(tmp.path());
    let sessions = Sessions::open(&loc).unwrap();
    let id = session(&sessions);
    let ctx = ToolContext::new(loc.root());
    let line = "a line of an ordinary source file, about sixty bytes long\n";
    let body: String = line.repeat(100 * 1024 / line.len());
    std::fs::write(loc.root().join("big.rs"), format!("v0\n{body}")).unwrap();
    let mut g = c.benchmark_group("edit_file_100kb");
    g.sample_size(60);
    g.measurement_time(Duration::from_secs(8));
    let mut n = 0u64;
    for snapshot in [false, true] {
        let name = if snapshot {
            "with_snapshot"
        } else {
            "without_snapshot"
        };
        g.bench_function(name, |b| {
            b.iter(|| {
                let args = format!(
                    r#"{{"path":"big.rs","old_string":"v{n}\n","new_string":"v{}\n"}}"#,
                    n + 1
                );
                n += 1;
                let out = tools::run("edit_file", &args, &ctx);
                assert!(!out.is_error, "{}", out.text);
                let msg = NewMessage::tool_result(format!("c{n}"), out.text, false);
                let update = StateUpdate::default();
                let files = if snapshot { out.files } else { Vec::new() };
                black_box(
                    sessions
                        .append_with_files(&id, &[msg], &AppendMeta::default(), &update, &files)
                        .unwrap(),
                )
            })
        });
    }
    g.finish();
}

/// `run_command true` (sandbox off): the difference between the two workspaces is the two
/// fingerprints of 10,000 files.
fn fingerprint(c: &mut Criterion) {
    sandbox::set_helper(env!("CARGO_BIN_EXE_neocode"));
    let empty = tempfile::tempdir().unwrap();
    let full = tempfile::tempdir().unwrap();
    for d in 0..100 {
        let dir = full.path().join(format!("d{d:02}"));
        std::fs::create_dir(&dir).unwrap();
        for f in 0..100 {
            std::fs::write(dir.join(format!("f{f:02}.txt")), "x").unwrap();
        }
    }
    let mut g = c.benchmark_group("run_command_true");
    g.sample_size(40);
    g.measurement_time(Duration::from_secs(8));
    for (name, ws) in [("empty", &empty), ("10k_files", &full)] {
        let mut ctx = ToolContext::new(ws.path());
        ctx.sandbox.mode = SandboxMode::Off;
        g.bench_function(name, |b| {
            b.iter(|| {
                let out = tools::run("run_command", r#"{"command":"true"}"#, &ctx);
                assert!(out.text.contains("[exit code 0"), "{}", out.text);
                black_box(out.files.len())
            })
        });
    }
    g.finish();
}

/// A turn that changed 100 files of 4 KB, rewound (files only); the undo between samples
/// puts them back and is not timed.
fn rewind_100(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let loc = Location::scratch(tmp.path());
    let sessions = Sessions::open(&loc).unwrap();
    let id = session(&sessions);
    let old = "old ".repeat(1024);
    let new = "new ".repeat(1024);
    for i in 0..100 {
        let rel = format!("src/f{i:03}.rs");
        std::fs::create_dir_all(loc.root().join("src")).unwrap();
        std::fs::write(loc.root().join(&rel), &new).unwrap();
        let change = FileChange::Written {
            path: rel,
            before: Image::Bytes {
                data: old.clone().into_bytes(),
                mode: 0o644,
            },
            after: Image::Bytes {
                data: new.clone().into_bytes(),
                mode: 0o644,
            },
        };
        let msg = NewMessage::tool_result(format!("w{i}"), "wrote", false);
        sessions
            .append_with_files(
                &id,
                &[msg],
                &AppendMeta::default(),
                &StateUpdate::default(),
                &[change],
            )
            .unwrap();
    }
    let mut g = c.benchmark_group("rewind");
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(10));
    g.bench_function("100_files", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let t = Instant::now();
                let plan = rewind::plan(&sessions, &id, 1, Scope::FilesOnly, false).unwrap();
                assert_eq!(
                    plan.files
                        .iter()
                        .filter(|f| f.action.changes_file())
                        .count(),
                    100
                );
                rewind::apply(&sessions, &plan).unwrap();
                total += t.elapsed();
                let undo = rewind::plan_undo(&sessions, &id, false).unwrap();
                rewind::apply(&sessions, &undo).unwrap();
            }
            total
        })
    });
    g.finish();
}

/// Store growth: a 1,000-edit session of one 10 KB file (each edit a new before-image).
fn growth(_c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let loc = Location::scratch(tmp.path());
    let sessions = Sessions::open(&loc).unwrap();
    let id = session(&sessions);
    let ctx = ToolContext::new(loc.root());
    let body = "x".repeat(10 * 1024);
    std::fs::write(loc.root().join("f.txt"), format!("v0\n{body}")).unwrap();
    let size = |p: &std::path::Path| -> u64 {
        fn walk(p: &std::path::Path) -> u64 {
            std::fs::read_dir(p).map_or(0, |d| {
                d.flatten()
                    .map(|e| {
                        let m = e.metadata().unwrap();
                        if m.is_dir() { walk(&e.path()) } else { m.len() }
                    })
                    .sum()
            })
        }
        walk(p)
    };
    let start = size(&loc.paths.dir);
    for n in 0..1000 {
        let args = format!(
            r#"{{"path":"f.txt","old_string":"v{n}\n","new_string":"v{}\n"}}"#,
            n + 1
        );
        let out = tools::run("edit_file", &args, &ctx);
        let msg = NewMessage::tool_result(format!("c{n}"), out.text, false);
        sessions
            .append_with_files(
                &id,
                &[msg],
                &AppendMeta::default(),
                &StateUpdate::default(),
                &out.files,
            )
            .unwrap();
    }
    let blobs = size(&loc.paths.files());
    let all = size(&loc.paths.dir) - start;
    eprintln!(
        "store growth over 1,000 edits of a 10 KB file: {} KB in total, {} KB of it blobs ({} per edit)",
        all / 1024,
        blobs / 1024,
        blobs / 1000
    );
}

criterion_group!(benches, edit, fingerprint, rewind_100, growth);
criterion_main!(benches);
