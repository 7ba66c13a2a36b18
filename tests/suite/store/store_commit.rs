//! The commit after a long reply: the message, its status and ledger land in one transaction,
//! and its search indexing follows in a second one. As a user checks it: the reply is found by
//! search as soon as the commit returns, it is indexed soon after without anyone searching,
//! a process killed between the two transactions loses nothing (the next search, or just the
//! next open, finds it), counts and ranking are those of a message indexed at once, and forks,
//! compaction and deletion leave no stray index rows.

use crate::support::Env;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::process::Command;
use std::time::{Duration, Instant};

use neocode::session::{
    AppendMeta, NewMessage, NewSession, Part, Replacement, Role, RuntimeLedger, StateUpdate,
    Status, Store, WorkspacePaths,
};
use rusqlite::Connection;

/// Set in the child process of the crash test: the folder to write in.
const CHILD_ENV: &str = "NEOCODE_STORE_COMMIT_CHILD";

/// The workspace of the [`Env`] whose temp dir is `dir` (a child process gets only the path).
fn workspace(dir: &std::path::Path) -> WorkspacePaths {
    neocode::runtime::Location::scratch(dir).paths
}

fn store_with_session(dir: &std::path::Path, id: &str) -> Store {
    let s = Store::open(workspace(dir)).unwrap();
    s.create_session(NewSession {
        id: Some(id.into()),
        title: format!("session {id}"),
        ..NewSession::default()
    })
    .unwrap();
    s
}

/// A reply the size of the 10,000-chunk benchmark's (140 KB), with `word` once in the middle.
fn long_reply(word: &str) -> String {
    let half = "word and more ".repeat(5_000);
    format!("{half}{word} {half}")
}

fn assistant(text: String) -> NewMessage {
    NewMessage {
        role: Some(Role::Assistant),
        parts: vec![Part::text(text)],
        ..NewMessage::default()
    }
}

/// What the agent commits with a finished reply: status and ledger.
fn finished() -> StateUpdate {
    StateUpdate {
        status: Some(Status::Completed),
        ledger: neocode::session::Change::Set(RuntimeLedger {
            termination: Some("done".into()),
            ..RuntimeLedger::default()
        }),
        touch: true,
        ..StateUpdate::default()
    }
}

/// Messages whose index row is reserved but not filled in yet, read straight from the file.
/// 0 when the child was killed before it made the database (a slow start on a loaded machine).
fn pending(db: &std::path::Path) -> i64 {
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY;
    let Ok(c) = Connection::open_with_flags(db, flags) else {
        return 0;
    };
    c.query_row("SELECT count(*) FROM messages WHERE fts_id < 0", [], |r| {
        r.get(0)
    })
    .unwrap_or(0)
}

/// Index rows matching `word`, read straight from the index (no catch-up on the way).
fn indexed(db: &std::path::Path, word: &str) -> i64 {
    let c = Connection::open(db).unwrap();
    c.query_row(
        "SELECT count(*) FROM message_fts WHERE message_fts MATCH ?1",
        [format!("\"{word}\"")],
        |r| r.get(0),
    )
    .unwrap()
}

/// Index rows no message points at.
fn orphans(db: &std::path::Path) -> i64 {
    let c = Connection::open(db).unwrap();
    c.query_row(
        "SELECT count(*) FROM message_fts
         WHERE rowid NOT IN (SELECT abs(fts_id) FROM messages WHERE fts_id IS NOT NULL)",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

/// Waits (up to a generous bound, not a timing claim) for nothing to be pending.
fn wait_until_indexed(db: &std::path::Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while pending(db) > 0 {
        assert!(
            Instant::now() < deadline,
            "a long message was still not indexed after a minute"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn hits(s: &Store, q: &str) -> Vec<(String, i64)> {
    s.search(q, 50)
        .unwrap()
        .into_iter()
        .map(|h| (h.session_id, h.seq))
        .collect()
}

#[test]
fn a_long_reply_is_found_by_search_once_its_commit_returns() {
    let t = Env::new();
    let s = store_with_session(t.tmp.path(), "s");
    // Nothing indexes in the background here: the search alone must find it.
    s.pause_background_index(true);
    s.append_messages(
        "s",
        &[NewMessage::text(Role::User, "tell me about the quokka")],
        &AppendMeta::default(),
    )
    .unwrap();
    let seqs = s
        .append_with_state(
            "s",
            &[assistant(long_reply("quokka"))],
            &AppendMeta::default(),
            &finished(),
        )
        .unwrap();
    assert_eq!(seqs, vec![2]);
    let db = s.paths().db();
    // The short prompt was indexed in its own commit; the long reply waits for its follow-up.
    assert_eq!(indexed(&db, "quokka"), 1, "the prompt is indexed at once");
    assert_eq!(pending(&db), 1, "the reply's indexing follows its commit");
    // Message, status and ledger are there together.
    let h = s.load_header("s").unwrap();
    assert_eq!(h.message_count, 2);
    assert_eq!(h.status, Status::Completed);
    assert_eq!(h.ledger.unwrap().termination.as_deref(), Some("done"));

    let found = s.search_counted("quokka", 10).unwrap();
    assert_eq!(found.matched, 2);
    let mut got: Vec<i64> = found.hits.iter().map(|h| h.seq).collect();
    got.sort();
    assert_eq!(got, vec![1, 2]);
    let reply = found.hits.iter().find(|h| h.seq == 2).unwrap();
    assert_eq!(reply.role, Role::Assistant);
    assert!(reply.snippet.contains("quokka"), "{}", reply.snippet);
    assert_eq!(pending(&db), 0);
    // Its other words are found too, and the reply loads as written.
    assert!(hits(&s, "more").contains(&("s".into(), 2)));
    let m = &s.load_messages("s", 2, 2).unwrap()[0];
    assert_eq!(m.parts, vec![Part::text(long_reply("quokka"))]);
}

#[test]
fn a_long_reply_is_indexed_soon_after_its_commit_without_a_search() {
    let t = Env::new();
    let s = store_with_session(t.tmp.path(), "s");
    s.append_with_state(
        "s",
        &[assistant(long_reply("wombat"))],
        &AppendMeta::default(),
        &finished(),
    )
    .unwrap();
    let db = s.paths().db();
    wait_until_indexed(&db);
    assert_eq!(indexed(&db, "wombat"), 1);
    assert_eq!(hits(&s, "wombat"), vec![("s".into(), 1)]);
}

#[test]
fn a_burst_of_long_tool_results_is_all_found_and_counted() {
    let t = Env::new();
    let s = store_with_session(t.tmp.path(), "s");
    s.pause_background_index(true);
    // More than one follow-up transaction's worth, some in one append, some alone.
    let body = |i: usize| format!("{} numbat{i} dingo", "x".repeat(17 * 1024));
    let batch: Vec<NewMessage> = (0..30)
        .map(|i| NewMessage::text(Role::Tool, body(i)))
        .collect();
    s.append_messages("s", &batch, &AppendMeta::default())
        .unwrap();
    for i in 30..45 {
        s.append_messages(
            "s",
            &[NewMessage::text(Role::Tool, body(i))],
            &AppendMeta::default(),
        )
        .unwrap();
    }
    assert_eq!(pending(&s.paths().db()), 45);
    let found = s.search_counted("dingo", 100).unwrap();
    assert_eq!(found.matched, 45);
    assert_eq!(found.hits.len(), 45);
    assert_eq!(hits(&s, "numbat44"), vec![("s".into(), 45)]);
    assert_eq!(hits(&s, "numbat0"), vec![("s".into(), 1)]);
    assert_eq!(s.load_header("s").unwrap().message_count, 45);
}

#[test]
fn ties_still_go_to_the_newest_when_the_older_reply_was_indexed_later() {
    let t = Env::new();
    let s = store_with_session(t.tmp.path(), "older");
    s.pause_background_index(true);
    s.append_messages(
        "older",
        &[assistant(long_reply("platypus"))],
        &AppendMeta::default(),
    )
    .unwrap();
    // The same text committed later and indexed at once (compaction indexes in place).
    s.create_session(NewSession {
        id: Some("newer".into()),
        ..NewSession::default()
    })
    .unwrap();
    s.replace_transcript(
        "newer",
        &Replacement {
            messages: vec![assistant(long_reply("platypus"))],
            ..Replacement::default()
        },
    )
    .unwrap();
    // Equal scores: the newer message first, although the older one was indexed last.
    assert_eq!(
        hits(&s, "platypus"),
        vec![("newer".into(), 1), ("older".into(), 1)]
    );
}

#[test]
fn a_fork_of_a_pending_reply_shares_its_index_row_and_deleting_leaves_nothing_behind() {
    let t = Env::new();
    let s = store_with_session(t.tmp.path(), "src");
    s.pause_background_index(true);
    s.append_messages(
        "src",
        &[
            NewMessage::text(Role::User, "go"),
            assistant(long_reply("echidna")),
        ],
        &AppendMeta::default(),
    )
    .unwrap();
    let f = s.fork("src", None).unwrap();
    let db = s.paths().db();
    assert_eq!(pending(&db), 2, "the copy waits with the source");
    let mut found = hits(&s, "echidna");
    found.sort();
    let mut want = vec![("src".to_string(), 2), (f.id.clone(), 2)];
    want.sort();
    assert_eq!(found, want);
    assert_eq!(indexed(&db, "echidna"), 1, "one index row, shared");
    assert_eq!(s.search_counted("echidna", 10).unwrap().matched, 1);

    // A pending reply deleted before its indexing takes its reserved row with it, and so
    // does compaction.
    s.append_messages(
        &f.id,
        &[assistant(long_reply("bilby"))],
        &AppendMeta::default(),
    )
    .unwrap();
    s.append_messages(
        "src",
        &[assistant(long_reply("cassowary"))],
        &AppendMeta::default(),
    )
    .unwrap();
    assert_eq!(pending(&db), 2);
    s.delete(&f.id).unwrap();
    s.replace_transcript(
        "src",
        &Replacement {
            messages: vec![NewMessage::text(Role::System, "compacted")],
            ..Replacement::default()
        },
    )
    .unwrap();
    assert_eq!(pending(&db), 0);
    assert!(hits(&s, "bilby").is_empty());
    assert!(hits(&s, "cassowary").is_empty());
    assert!(hits(&s, "echidna").is_empty());
    assert_eq!(hits(&s, "compacted"), vec![("src".into(), 1)]);
    assert_eq!(orphans(&db), 0);
}

/// Runs only as the crash test's child: appends a long reply with its status and ledger,
/// reports the commit, and is killed with SIGKILL before the index follow-up can run.
#[test]
fn child_commits_a_long_reply_then_is_killed() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let s = store_with_session(std::path::Path::new(&dir), "s");
    s.pause_background_index(true);
    let seqs = s
        .append_with_state(
            "s",
            &[assistant(long_reply("kookaburra"))],
            &AppendMeta::default(),
            &finished(),
        )
        .unwrap();
    let mut out = std::io::stdout();
    writeln!(out, "committed {}", seqs[0]).unwrap();
    out.flush().unwrap();
    // SAFETY: signalling our own process; nothing runs after it.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    unreachable!("SIGKILL did not end the process");
}

/// Starts the child above in `dir`; returns after it died of SIGKILL having committed.
fn commit_and_kill(dir: &std::path::Path) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            crate::support::rerun::test_name(
                module_path!(),
                "child_commits_a_long_reply_then_is_killed",
            )
            .as_str(),
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGKILL),
        "child: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("committed 1"), "child: {stdout}");
}

#[test]
fn a_process_killed_between_the_commit_and_the_indexing_loses_nothing() {
    let t = Env::new();
    commit_and_kill(t.tmp.path());
    let db = t.paths().db();
    // The kill hit the window: committed, not indexed.
    assert_eq!(pending(&db), 1);
    assert_eq!(indexed(&db, "kookaburra"), 0);

    let s = Store::open(t.paths()).unwrap();
    s.pause_background_index(true);
    let h = s.load_header("s").unwrap();
    assert_eq!(h.message_count, 1);
    assert_eq!(h.status, Status::Completed);
    assert_eq!(h.ledger.unwrap().termination.as_deref(), Some("done"));
    let found = s.search_counted("kookaburra", 10).unwrap();
    assert_eq!(found.matched, 1);
    assert_eq!(found.hits.len(), 1);
    assert_eq!(
        (found.hits[0].session_id.as_str(), found.hits[0].seq),
        ("s", 1)
    );
    assert!(found.hits[0].snippet.contains("kookaburra"));
    assert_eq!(pending(&db), 0);
    assert_eq!(orphans(&db), 0);
}

#[test]
fn after_a_kill_the_next_open_indexes_the_reply_without_a_search() {
    let t = Env::new();
    commit_and_kill(t.tmp.path());
    let db = t.paths().db();
    assert_eq!(pending(&db), 1);
    let s = Store::open(t.paths()).unwrap();
    wait_until_indexed(&db);
    assert_eq!(indexed(&db, "kookaburra"), 1);
    assert_eq!(hits(&s, "kookaburra"), vec![("s".into(), 1)]);
}

/// Set in the child of the random-kill test: the folder to write in.
const LOOP_ENV: &str = "NEOCODE_STORE_COMMIT_LOOP";

/// Runs only as the random-kill test's child: commits long replies, each with its own word
/// (`kiwi<seq>x`: no other reply's word starts with it), with the background indexing on,
/// reporting each commit, until killed.
#[test]
fn child_commits_long_replies_until_killed() {
    let Some(dir) = std::env::var_os(LOOP_ENV) else {
        return;
    };
    let s = Store::open(workspace(std::path::Path::new(&dir))).unwrap();
    if s.load_header("s").is_err() {
        s.create_session(NewSession {
            id: Some("s".into()),
            ..NewSession::default()
        })
        .unwrap();
    }
    let mut out = std::io::stdout();
    loop {
        let seq = s.load_header("s").unwrap().last_seq + 1;
        let got = s
            .append_with_state(
                "s",
                &[assistant(long_reply(&format!("kiwi{seq}x")))],
                &AppendMeta::default(),
                &finished(),
            )
            .unwrap();
        assert_eq!(got, vec![seq]);
        writeln!(out, "committed {seq}").unwrap();
        out.flush().unwrap();
    }
}

#[test]
fn sigkill_at_random_moments_leaves_every_committed_reply_findable() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let t = Env::new();
    let mut acked = 0i64;
    let mut kills_before_indexing = 0;
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64;
    for round in 0..8 {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                crate::support::rerun::test_name(
                    module_path!(),
                    "child_commits_long_replies_until_killed",
                )
                .as_str(),
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(LOOP_ENV, t.tmp.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            BufReader::new(out)
                .lines()
                .map_while(Result::ok)
                .filter_map(|l| l.strip_prefix("committed ")?.parse::<i64>().ok())
                .max()
        });
        std::thread::sleep(Duration::from_millis(20 + (seed >> 33) % 200));
        child.kill().unwrap();
        child.wait().unwrap();
        if let Some(seq) = reader.join().unwrap() {
            acked = acked.max(seq);
        }
        if pending(&t.paths().db()) > 0 {
            kills_before_indexing += 1;
        }
        // Every reply the child reported as committed is found, by its own word, once.
        let s = Store::open(t.paths()).unwrap();
        if acked == 0 && s.load_header("s").is_err() {
            // Killed before its first commit (the machine was slow to start it): nothing
            // was acknowledged, so nothing can be missing.
            continue;
        }
        assert!(
            s.load_header("s").unwrap().last_seq >= acked,
            "round {round}"
        );
        for seq in 1..=acked {
            assert_eq!(
                hits(&s, &format!("kiwi{seq}x")),
                vec![("s".into(), seq)],
                "round {round}: reply {seq}"
            );
        }
        assert_eq!(orphans(&s.paths().db()), 0, "round {round}");
    }
    assert!(acked > 0, "the child never committed a reply");
    eprintln!("{acked} replies committed; {kills_before_indexing} of 8 kills left one unindexed");
}
