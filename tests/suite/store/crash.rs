//! Crash safety: a writer process appending messages is killed with SIGKILL at random moments,
//! again and again; after every kill the database opens, passes `integrity_check`, holds every
//! message the writer reported as committed, has contiguous seqs, and lists every session.
//!
//! `NEOCODE_CRASH_ITERATIONS` sets the number of kills (default 200).

use crate::support as common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use common::{Env, Rng, integrity_ok};
use neocode::session::{ListQuery, NewSession};

#[test]
fn sigkill_at_random_moments_loses_nothing_acknowledged() {
    let iterations: u64 = std::env::var("NEOCODE_CRASH_ITERATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let env = Env::new();
    let mut rng = Rng::from_time();
    let mut sessions: Vec<String> = Vec::new();
    let mut acked_total = 0i64;
    let mut kills_mid_write = 0u64;

    for i in 0..iterations {
        if i.is_multiple_of(25) {
            let h = env
                .sessions()
                .new_session(NewSession {
                    title: format!("crash target {i}"),
                    ..NewSession::default()
                })
                .unwrap();
            sessions.push(h.id);
        }
        let target = sessions[rng.below(sessions.len() as u64) as usize].clone();
        let before = env.sessions().header(&target).unwrap().last_seq;

        let batch = 1 + rng.below(8);
        let mut child = env
            .writer(&target, 1_000_000, batch)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn writer");
        let acked = Arc::new(AtomicI64::new(before));
        let reader = {
            let acked = acked.clone();
            let out = child.stdout.take().unwrap();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    if let Some(seq) = common::committed_seqs(&line).first() {
                        acked.fetch_max(*seq, Ordering::SeqCst);
                    }
                }
            })
        };
        std::thread::sleep(Duration::from_micros(2_000 + rng.below(40_000)));
        child.kill().expect("SIGKILL");
        let status = child.wait().unwrap();
        reader.join().unwrap();
        let acked = acked.load(Ordering::SeqCst);
        if status.code().is_none() && acked > before {
            kills_mid_write += 1;
        }
        acked_total += acked - before;

        // The database opens and is intact.
        assert_eq!(integrity_ok(&env.db()), "ok", "iteration {i}");
        let rt = env.sessions();
        let h = rt.header(&target).unwrap();
        assert!(
            h.last_seq >= acked,
            "iteration {i}: writer acknowledged seq {acked} but the session ends at {}",
            h.last_seq
        );
        let msgs = rt.messages(&target, 1, i64::MAX).unwrap();
        let seqs: Vec<i64> = msgs.iter().map(|m| m.seq).collect();
        let expect: Vec<i64> = (1..=h.last_seq).collect();
        assert_eq!(seqs, expect, "iteration {i}: seqs are not contiguous");
        assert_eq!(h.message_count, h.last_seq as u64, "iteration {i}");
        let listed = rt.list(&ListQuery::default()).unwrap().items;
        for s in &sessions {
            assert!(
                listed.iter().any(|l| &l.id == s),
                "iteration {i}: session {s} vanished from the list"
            );
        }
    }
    eprintln!(
        "{iterations} kills, {kills_mid_write} while writing, {acked_total} messages acknowledged"
    );
    assert!(
        acked_total > 0,
        "the writer never committed anything: the test exercised nothing"
    );
}
