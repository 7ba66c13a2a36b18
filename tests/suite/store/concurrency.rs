//! Concurrency: 8 writer processes append to one workspace at once (four to the same session,
//! four to sessions of their own) while a reader lists continuously through the real binary.
//! Zero errors, zero lost or duplicated messages, never `database is locked`.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::support::{Env, committed_seqs, integrity_ok};
use neocode::session::NewSession;

const PER_WRITER: u64 = 250;

#[test]
fn eight_writers_and_a_reader_never_collide() {
    let env = Env::new();
    let rt = env.sessions();
    let shared = crate::support::titled(&rt, "shared").id;
    let own: Vec<String> = (0..4)
        .map(|i| {
            rt.new_session(NewSession {
                title: format!("own {i}"),
                ..NewSession::default()
            })
            .unwrap()
            .id
        })
        .collect();
    let targets: Vec<String> = std::iter::repeat_n(shared.clone(), 4)
        .chain(own.iter().cloned())
        .collect();

    // The reader: `neocode --list --json` in a loop until the writers finish.
    let done = Arc::new(AtomicBool::new(false));
    let lists = Arc::new(AtomicU64::new(0));
    let reader = {
        let done = done.clone();
        let lists = lists.clone();
        let mut cmd: Command = env.neocode();
        cmd.args(["--list", "--json"]);
        std::thread::spawn(move || {
            let mut failures = Vec::new();
            while !done.load(Ordering::SeqCst) {
                let out = cmd.output().expect("run neocode --list");
                let stderr = String::from_utf8_lossy(&out.stderr).to_string();
                match serde_json::from_slice::<serde_json::Value>(&out.stdout) {
                    Ok(v) if out.status.success() && v.as_array().is_some_and(|a| a.len() == 5) => {
                    }
                    _ => failures.push(format!("exit {:?}: {stderr}", out.status.code())),
                }
                lists.fetch_add(1, Ordering::SeqCst);
            }
            failures
        })
    };

    let children: Vec<_> = targets
        .iter()
        .enumerate()
        .map(|(i, t)| {
            env.writer(t, PER_WRITER, 1 + (i as u64 % 3))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn writer")
        })
        .collect();
    let outputs: Vec<_> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    done.store(true, Ordering::SeqCst);
    let reader_failures = reader.join().unwrap();

    for (i, o) in outputs.iter().enumerate() {
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "writer {i} failed: {stderr}");
        assert!(!stderr.contains("locked"), "writer {i}: {stderr}");
    }
    assert!(
        reader_failures.is_empty(),
        "{} of {} listings failed, first: {}",
        reader_failures.len(),
        lists.load(Ordering::SeqCst),
        reader_failures[0]
    );
    assert!(lists.load(Ordering::SeqCst) > 0);

    // The shared session: every seq acknowledged exactly once across its four writers, and
    // exactly those seqs stored.
    let mut acked = BTreeSet::new();
    for o in &outputs[..4] {
        for seq in committed_seqs(&String::from_utf8_lossy(&o.stdout)) {
            assert!(acked.insert(seq), "seq {seq} acknowledged twice");
        }
    }
    let rt = env.sessions();
    let stored: Vec<i64> = rt
        .messages(&shared, 1, i64::MAX)
        .unwrap()
        .iter()
        .map(|m| m.seq)
        .collect();
    assert_eq!(
        stored.len() as u64,
        4 * PER_WRITER,
        "messages lost or duplicated"
    );
    assert_eq!(stored, (1..=(4 * PER_WRITER) as i64).collect::<Vec<_>>());
    assert_eq!(acked.len() as u64, 4 * PER_WRITER);
    assert_eq!(rt.header(&shared).unwrap().message_count, 4 * PER_WRITER);
    for id in &own {
        let h = rt.header(id).unwrap();
        assert_eq!(
            (h.message_count, h.last_seq),
            (PER_WRITER, PER_WRITER as i64)
        );
    }
    assert_eq!(integrity_ok(&env.db()), "ok");
}
