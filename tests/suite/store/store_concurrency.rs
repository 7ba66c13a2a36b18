//! Concurrent writers: threads sharing one `Store`, and separate processes (the `writer`
//! example) on one workspace. Zero errors, zero gaps, zero duplicate seqs.

use crate::support::Env;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier};

use neocode::session::{AppendMeta, Message, NewMessage, NewSession, Role, Store};

#[test]
fn thirty_two_threads_appending_to_one_session_get_contiguous_distinct_seqs() {
    const THREADS: usize = 32;
    const EACH: usize = 25;
    let t = Env::new();
    let s = Store::open(t.paths()).unwrap();
    s.create_session(NewSession {
        id: Some("hot".into()),
        ..NewSession::default()
    })
    .unwrap();
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|th| {
            let s = s.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                let mut mine = Vec::new();
                for i in 0..EACH {
                    // Mix single and double appends.
                    let n = if i % 5 == 0 { 2 } else { 1 };
                    let msgs: Vec<NewMessage> = (0..n)
                        .map(|k| NewMessage::text(Role::User, format!("t{th} m{i} k{k}")))
                        .collect();
                    let seqs = s
                        .append_messages("hot", &msgs, &AppendMeta::default())
                        .unwrap_or_else(|e| panic!("thread {th}: {e}"));
                    assert_eq!(seqs.len(), n);
                    assert!(
                        seqs.windows(2).all(|w| w[1] == w[0] + 1),
                        "one batch is contiguous"
                    );
                    mine.extend(seqs);
                }
                mine
            })
        })
        .collect();
    let mut all = Vec::new();
    for h in handles {
        all.extend(h.join().expect("writer thread panicked"));
    }
    let per_thread = EACH + EACH.div_ceil(5);
    let n = (THREADS * per_thread) as i64;
    let distinct: BTreeSet<i64> = all.iter().copied().collect();
    assert_eq!(distinct.len(), all.len(), "duplicate seqs handed out");
    assert_eq!(distinct, (1..=n).collect::<BTreeSet<i64>>());
    let h = s.load_header("hot").unwrap();
    assert_eq!((h.message_count as i64, h.last_seq), (n, n));
    let loaded = s.load_session("hot").unwrap();
    assert_eq!(
        loaded.messages.iter().map(|m| m.seq).collect::<Vec<_>>(),
        (1..=n).collect::<Vec<_>>()
    );
    // Every message text written is stored exactly once.
    let texts: BTreeSet<String> = loaded.messages.iter().map(Message::text).collect();
    assert_eq!(texts.len() as i64, n);
}

/// The `writer` example next to the binary under test. `cargo test --test <name>` does not
/// build examples, so build it first (a no-op when it is up to date) to never run a stale one.
fn writer_path() -> PathBuf {
    static BUILT: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    let bin = Path::new(env!("CARGO_BIN_EXE_neocode"));
    let dir = bin.parent().expect("binary folder");
    BUILT.get_or_init(|| {
        if let Ok(cargo) = std::env::var("CARGO") {
            let mut cmd = Command::new(cargo);
            cmd.current_dir(env!("CARGO_MANIFEST_DIR")).args([
                "build",
                "--quiet",
                "--example",
                "writer",
            ]);
            if dir.file_name().is_some_and(|n| n == "release") {
                cmd.arg("--release");
            }
            let out = cmd.output().expect("run cargo build --example writer");
            assert!(
                out.status.success(),
                "cargo build --example writer failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    });
    let p = dir.join("examples").join("writer");
    assert!(
        p.is_file(),
        "{} is missing: build it with `cargo build --example writer`",
        p.display()
    );
    p
}

#[test]
fn four_processes_append_to_one_workspace_without_errors_or_gaps() {
    const COUNT: i64 = 500;
    let t = Env::new();
    let (home, ws) = (&t.home, &t.workdir);
    let writer = writer_path();
    // Two on the same session, two on their own; all start on a workspace with no database
    // yet, so they also race to create and migrate it.
    let plan = [("shared", 1), ("shared", 3), ("solo-a", 1), ("solo-b", 7)];
    let children: Vec<_> = plan
        .iter()
        .map(|(session, batch)| {
            Command::new(&writer)
                .arg("--home")
                .arg(home)
                .arg("--workdir")
                .arg(ws)
                .args(["--session", session])
                .args(["--count", &COUNT.to_string()])
                .args(["--batch", &batch.to_string()])
                .env_remove("NEOCODE_HOME")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start writer")
        })
        .collect();
    let mut committed: Vec<(String, Vec<i64>)> = Vec::new();
    for (child, (session, _)) in children.into_iter().zip(plan) {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stderr.is_empty(),
            "writer for {session} failed ({}): {stderr}",
            out.status
        );
        let seqs: Vec<i64> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| {
                l.strip_prefix("committed ")
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| panic!("unexpected writer line {l:?}"))
            })
            .collect();
        assert_eq!(seqs.len() as i64, COUNT, "{session}: commits reported");
        assert!(
            seqs.windows(2).all(|w| w[0] < w[1]),
            "{session}: one writer's seqs increase"
        );
        committed.push((session.to_string(), seqs));
    }

    let s = t.store();
    assert_eq!(s.count().unwrap(), 3);
    let mut shared: Vec<i64> = committed
        .iter()
        .filter(|(id, _)| id == "shared")
        .flat_map(|(_, s)| s.iter().copied())
        .collect();
    shared.sort_unstable();
    assert_eq!(
        shared,
        (1..=2 * COUNT).collect::<Vec<_>>(),
        "shared: gaps or duplicates"
    );
    for (id, n) in [("shared", 2 * COUNT), ("solo-a", COUNT), ("solo-b", COUNT)] {
        let h = s.load_header(id).unwrap();
        assert_eq!((h.message_count as i64, h.last_seq), (n, n), "{id}");
        let seqs: Vec<i64> = s
            .load_session(id)
            .unwrap()
            .messages
            .iter()
            .map(|m| m.seq)
            .collect();
        assert_eq!(seqs, (1..=n).collect::<Vec<_>>(), "{id}: stored seqs");
    }
    for (id, seqs) in &committed {
        if id != "shared" {
            assert_eq!(seqs, &(1..=COUNT).collect::<Vec<_>>(), "{id}");
        }
    }
}

#[test]
fn writer_reports_errors_with_a_non_zero_exit() {
    let t = Env::new();
    let out = Command::new(writer_path())
        .arg("--home")
        .arg(t.tmp.path().join("home"))
        .arg("--workdir")
        .arg(t.tmp.path().join("missing"))
        .args(["--session", "x", "--count", "1"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("writer: ") && err.contains("missing"),
        "{err}"
    );
}

#[test]
fn opening_waits_for_a_reader_holding_the_file_while_switching_to_wal() {
    // Another process reading a still rollback-journal database blocks the switch to WAL
    // for a while; opening must wait for it, not fail.
    let t = Env::new();
    let paths = t.paths();
    paths.create_dirs().unwrap();
    let reader = rusqlite::Connection::open(paths.db()).unwrap();
    reader
        .execute_batch("BEGIN; SELECT count(*) FROM sqlite_master;")
        .unwrap();
    let release = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        reader.execute_batch("COMMIT").unwrap();
        drop(reader);
    });
    let s = Store::open(paths).expect("open while another connection reads");
    release.join().unwrap();
    s.create_session(NewSession::default()).unwrap();
    let p: std::collections::HashMap<String, String> = s.pragmas().unwrap().into_iter().collect();
    assert_eq!(p["journal_mode"], "wal");
}

#[test]
fn processes_opening_a_new_workspace_together_never_see_database_is_locked() {
    // Creating the database and switching it to WAL races between processes; before that
    // was retried, about one round in ten failed with "database is locked".
    let writer = writer_path();
    for round in 0..30 {
        let t = Env::new();
        let children: Vec<_> = (0..4)
            .map(|i| {
                Command::new(&writer)
                    .arg("--home")
                    .arg(&t.home)
                    .arg("--workdir")
                    .arg(&t.workdir)
                    .args(["--session", &format!("s{}", i % 3), "--count", "20"])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("start writer")
            })
            .collect();
        for c in children {
            let out = c.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "round {round}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let s = t.store();
        for i in 0..3 {
            assert_eq!(
                s.load_header(&format!("s{i}")).unwrap().last_seq,
                if i < 1 { 40 } else { 20 }
            );
        }
    }
}
