//! A bulk import killed with SIGKILL leaves whole sessions only, and re-running it finishes
//! the rest: `neocode import --from claude-code` is killed again and again (at once, or soon
//! after it committed something); after every kill the database passes `integrity_check` and
//! every session in it is exactly what an uninterrupted import writes; the run finally left
//! alone imports what is missing, skips what is there, and ends with the same sessions as the
//! uninterrupted import. Then every file grows and the re-import (an update of every session)
//! is killed the same way: each session is always either the old one or the new one, whole.

use crate::support::text::has;
use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::{Env, Rng, integrity_ok};
use neocode::session::ListQuery;
use serde_json::{Value, json};

const FILES: usize = 48;

/// A Claude Code transcript of about `kb` KB: prompts, a tool call and a large tool result a
/// turn, so a file is several messages and several index entries.
fn transcript(path: &Path, n: usize, kb: usize) {
    let mut w = BufWriter::new(fs::File::create(path).unwrap());
    let sid = format!("00000000-0000-4000-8000-{n:012}");
    let (mut bytes, mut turn) = (0, 0);
    let mut parent = Value::Null;
    while bytes < kb * 1024 {
        let base = |uuid: String, parent: Value| {
            json!({"uuid": uuid, "parentUuid": parent, "sessionId": sid, "cwd": "/crash",
                "version": "2.1.39", "timestamp": "2026-02-12T16:02:25.284Z", "isSidechain": false})
        };
        let mut u = base(format!("u{turn}"), parent.clone());
        u["type"] = json!("user");
        u["message"] = json!({"role": "user", "content": format!("file {n} turn {turn}")});
        let mut a = base(format!("a{turn}"), json!(format!("u{turn}")));
        a["type"] = json!("assistant");
        a["message"] = json!({"id": format!("msg_{n}_{turn}"), "model": "claude-opus-4-6",
            "role": "assistant", "content": [{"type": "tool_use", "id": format!("toolu_{n}_{turn}"),
            "name": "Bash", "input": {"command": "cargo test"}}]});
        let mut r = base(format!("r{turn}"), json!(format!("a{turn}")));
        r["type"] = json!("user");
        let out: String = (0..700)
            .map(|k| format!("w{} ", (n * 31 + turn * 7 + k) % 997))
            .collect();
        r["message"] = json!({"role": "user", "content": [{"type": "tool_result",
            "tool_use_id": format!("toolu_{n}_{turn}"), "content": out}]});
        for l in [u, a, r] {
            let s = serde_json::to_string(&l).unwrap();
            bytes += s.len() + 1;
            writeln!(w, "{s}").unwrap();
        }
        parent = json!(format!("r{turn}"));
        turn += 1;
    }
}

fn session_count(db: &Path) -> Option<i64> {
    let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .ok()?;
    c.query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))
        .ok()
}

/// Every session of a workspace as its exported file, by id.
fn exports(env: &Env) -> Vec<(String, Value)> {
    let rt = env.sessions();
    let mut ids: Vec<String> = rt
        .list(&ListQuery {
            limit: 10_000,
            ..ListQuery::default()
        })
        .unwrap()
        .items
        .into_iter()
        .map(|s| s.id)
        .collect();
    ids.sort();
    ids.into_iter()
        .map(|id| {
            let doc = serde_json::to_value(rt.export(&id).unwrap()).unwrap();
            (id, doc)
        })
        .collect()
}

fn import(env: &Env, dir: &Path) -> std::process::Command {
    let mut c = env.neocode();
    c.args(["import", "--from", "claude-code"]).arg(dir);
    c
}

/// Runs the import into `env` again and again, killing it at random moments (at once, or a
/// little after it committed something), until a run is left to finish; after every kill,
/// `check` sees the workspace. Returns the kills that left the workspace between the states
/// before and after, the number of sessions before the last run, and that run's summary.
fn kill_until_done(
    env: &Env,
    dir: &Path,
    rng: &mut Rng,
    mut check: impl FnMut(usize, &[(String, Value)]) -> bool,
) -> (usize, i64, String) {
    let db = env.db();
    let (mut kills, mut between) = (0, 0);
    loop {
        let before = session_count(&db).unwrap_or(0);
        let last_seq = stored_messages(&db);
        let mut child = import(env, dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // After a dozen kills the run is left alone, so the test always ends.
        let hurry = rng.below(3) == 0;
        let deadline =
            Instant::now() + Duration::from_millis(if hurry { rng.below(60) } else { 120_000 });
        let exited = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if kills < 12 && (Instant::now() > deadline || stored_messages(&db) != last_seq) {
                std::thread::sleep(Duration::from_millis(rng.below(100)));
                break None;
            }
            std::thread::sleep(Duration::from_millis(3));
        };
        let status = match exited {
            Some(status) => status,
            None => {
                child.kill().unwrap();
                child.wait().unwrap()
            }
        };
        if status.code().is_some() {
            let mut stdout = String::new();
            std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut stdout).unwrap();
            assert!(status.success(), "{stdout}");
            return (between, before, stdout);
        }
        kills += 1;
        assert_eq!(integrity_ok(&db), "ok", "after kill {kills}");
        if check(kills, &exports(env)) {
            between += 1;
        }
    }
}

/// Messages in the store (moves with every commit of an import, new or updated sessions).
fn stored_messages(db: &Path) -> i64 {
    let Ok(c) =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
    else {
        return -1;
    };
    c.query_row(
        "SELECT count(*), coalesce(sum(last_seq), 0) FROM sessions",
        [],
        |r| Ok(r.get::<_, i64>(0)? * 1_000_000 + r.get::<_, i64>(1)?),
    )
    .unwrap_or(-1)
}

fn write_all(dir: &Path, kb: usize) {
    for n in 0..FILES {
        transcript(
            &dir.join(format!("00000000-0000-4000-8000-{n:012}.jsonl")),
            n,
            kb,
        );
    }
}

fn import_whole(env: &Env, dir: &Path) -> String {
    let out = import(env, dir).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn sigkill_mid_import_leaves_whole_sessions_and_a_rerun_finishes() {
    let src = tempfile::tempdir().unwrap();
    let dir = src.path().join("projects/-crash");
    fs::create_dir_all(&dir).unwrap();
    write_all(&dir, 400);

    // What an import that is left alone writes.
    let reference = Env::new();
    let out = import_whole(&reference, &dir);
    has(
        &out,
        &format!("imported {FILES}, updated 0, skipped 0 unchanged, failed 0"),
    );
    let want = exports(&reference);
    assert_eq!(want.len(), FILES);

    let env = Env::new();
    let mut rng = Rng::from_time();
    let (partial, before, out) = kill_until_done(&env, &dir, &mut rng, |kill, got| {
        for (id, doc) in got {
            let w = want
                .iter()
                .find(|(i, _)| i == id)
                .unwrap_or_else(|| panic!("kill {kill}: unexpected session {id}"));
            assert_eq!(doc, &w.1, "kill {kill}: session {id} is not whole");
        }
        !got.is_empty() && got.len() < FILES
    });
    let missing = FILES as i64 - before;
    assert!(
        out.contains(&format!(
            "imported {missing}, updated 0, skipped {before} unchanged, failed 0"
        )),
        "the last run should import the {missing} missing files and skip the rest: {out}"
    );
    assert_eq!(exports(&env), want, "after the re-runs");
    assert!(
        partial > 0,
        "no kill landed mid-import: the test exercised nothing"
    );

    // Every file grows (a session continued in Claude Code): the re-import replaces each
    // session, and a kill leaves every one of them either as it was or wholly updated.
    std::thread::sleep(Duration::from_millis(20));
    write_all(&dir, 520);
    let out = import_whole(&reference, &dir);
    has(
        &out,
        &format!("imported 0, updated {FILES}, skipped 0 unchanged, failed 0"),
    );
    let grown = exports(&reference);
    let (mixed, _, _) = kill_until_done(&env, &dir, &mut rng, |kill, got| {
        assert_eq!(
            got.len(),
            FILES,
            "kill {kill}: a session went missing mid-update"
        );
        let mut new = 0;
        for ((id, doc), (old, grown)) in got.iter().zip(want.iter().zip(&grown)) {
            assert_eq!(id, &old.0);
            if doc == &grown.1 {
                new += 1;
            } else {
                assert_eq!(doc, &old.1, "kill {kill}: session {id} is half updated");
            }
        }
        new > 0 && new < FILES
    });
    assert_eq!(integrity_ok(&env.db()), "ok");
    assert_eq!(exports(&env), grown, "after the updates");
    assert!(
        mixed > 0,
        "no kill landed mid-update: the test exercised nothing"
    );
}
