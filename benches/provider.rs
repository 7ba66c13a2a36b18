//! Provider and turn benchmarks: SSE parse + fold throughput over a 10,000-chunk stream, the
//! commit of an assistant message (what follows the stream's last byte; single-call
//! percentiles are printed too) and the index follow-up of a long one, and whole turns
//! against the scripted server on 127.0.0.1 streaming 10,000 chunks (HTTP + parse + events +
//! persist).
//!
//! `cargo bench --bench provider` (add `-- <filter>` for one group).
// Tests, benchmarks and examples may unwrap: a failure there is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use neocode::runtime::agent::{Agent, Target, TurnEvent, TurnRequest};
use neocode::runtime::config::{Overrides, Settings};
use neocode::runtime::provider::sse::fold_sse_bytes;
use neocode::runtime::{Location, Sessions};
use neocode::session::{AppendMeta, NewMessage, Role, StateUpdate, Store, Usage, WorkspacePaths};
use neocode::testkit::scripted::{ScriptedServer, Stream};

const CHUNKS: usize = 10_000;

/// 10,000 content deltas of a few words each (about 0.5 MB of SSE).
fn big_stream() -> Stream {
    let mut s = Stream::new().role();
    for i in 0..CHUNKS {
        s = s.text_deltas(&format!("word{i} and more "), 1);
    }
    s.finish("stop").usage(1000, CHUNKS as u64)
}

fn parse(c: &mut Criterion) {
    let body = big_stream().body_bytes();
    let mut g = c.benchmark_group("provider_parse");
    g.throughput(Throughput::Elements(CHUNKS as u64));
    // As a socket delivers it: 16 KiB reads that cut events anywhere.
    g.bench_function("fold_10000_chunks_16k_reads", |b| {
        b.iter(|| {
            let pieces = body.chunks(16 * 1024).map(<[u8]>::to_vec).collect();
            let (ev, c) = fold_sse_bytes(pieces).unwrap();
            black_box((ev.len(), c.text.len()))
        })
    });
    g.finish();
}

struct Ws {
    _dir: tempfile::TempDir,
    home: std::path::PathBuf,
    paths: WorkspacePaths,
    sessions: Sessions,
}

fn workspace() -> Ws {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let paths = WorkspacePaths::resolve(&home, &ws).unwrap();
    let sessions = Sessions::open(&Location {
        home: home.clone(),
        paths: paths.clone(),
    })
    .unwrap();
    Ws {
        _dir: dir,
        home,
        paths,
        sessions,
    }
}

/// Exact percentiles of single calls; empty when the group was filtered out.
fn percentiles(mut v: Vec<Duration>) -> String {
    if v.is_empty() {
        return "not run".into();
    }
    v.sort();
    let p = |q: f64| v[((v.len() - 1) as f64 * q) as usize];
    format!(
        "p50 {:.0?} p90 {:.0?} p99 {:.0?} max {:.0?} ({} calls)",
        p(0.5),
        p(0.9),
        p(0.99),
        v[v.len() - 1],
        v.len()
    )
}

fn reply(text: &str) -> NewMessage {
    NewMessage {
        role: Some(Role::Assistant),
        parts: vec![neocode::session::Part::text(text)],
        usage: Usage {
            input_tokens: 1000,
            output_tokens: CHUNKS as u64,
        },
        ..NewMessage::default()
    }
}

fn commit(c: &mut Criterion) {
    let ws = workspace();
    // The store under `Sessions` (which only adds a per-session lock), so the bench can do the
    // background thread's work itself, untimed, between commits.
    let store = Store::open(ws.paths.clone()).unwrap();
    store.pause_background_index(true);
    let h = ws.sessions.new_session(Default::default()).unwrap();
    let ledger = StateUpdate {
        ledger: neocode::session::Change::Set(Default::default()),
        touch: true,
        ..StateUpdate::default()
    };
    let mut g = c.benchmark_group("provider_commit");
    // The write that follows the stream's last byte: the whole reply plus status and ledger,
    // for a typical reply (2 KB, indexed in the commit) and for the 10,000-chunk reply of the
    // turn benchmark (140 KB, whose indexing follows in a second transaction). Each commit
    // starts as a turn's does: the previous reply's follow-up (index + checkpoint, on the
    // background thread in the product) is over, done here untimed.
    for (name, text) in [
        (
            "assistant_message_2kb_with_ledger",
            "word and more ".repeat(140),
        ),
        (
            "assistant_message_140kb_with_ledger",
            "word and more ".repeat(CHUNKS),
        ),
    ] {
        let mut calls = Vec::new();
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let msg = reply(&text);
                    let t = Instant::now();
                    black_box(
                        store
                            .append_with_state(&h.id, &[msg], &AppendMeta::default(), &ledger)
                            .unwrap(),
                    );
                    let took = t.elapsed();
                    total += took;
                    calls.push(took);
                    store.catch_up_search_index().unwrap();
                }
                total
            })
        });
        println!("{name} single calls: {}", percentiles(calls));
    }
    // What left the commit: the follow-up that indexes the 140 KB reply and checkpoints.
    let mut calls = Vec::new();
    g.bench_function("index_follow_up_140kb", |b| {
        let text = "word and more ".repeat(CHUNKS);
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                store
                    .append_with_state(&h.id, &[reply(&text)], &AppendMeta::default(), &ledger)
                    .unwrap();
                let t = Instant::now();
                assert_eq!(store.catch_up_search_index().unwrap(), 1);
                let took = t.elapsed();
                total += took;
                calls.push(took);
            }
            total
        })
    });
    println!("index_follow_up_140kb single calls: {}", percentiles(calls));
    g.finish();
}

fn turn(c: &mut Criterion) {
    let ws = workspace();
    let srv = ScriptedServer::start(vec![]).unwrap();
    let url = srv.base_url();
    let env = move |k: &str| match k {
        "NEOCODE_BASE_URL" => Some(url.clone()),
        "NEOCODE_MODEL" => Some("bench".to_string()),
        _ => None,
    };
    let settings = Settings::load_with(&ws.home, &Overrides::default(), &env).unwrap();
    let agent = Agent::new(ws.sessions, settings);
    let stream = big_stream();
    let mut g = c.benchmark_group("provider_turn");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    g.throughput(Throughput::Elements(CHUNKS as u64));
    let mut last_to_commit = Vec::new();
    g.bench_function("turn_10000_chunks_over_http", |b| {
        b.iter(|| {
            srv.push([stream.clone().reply()]);
            let h = agent
                .watch(
                    Target::New,
                    TurnRequest {
                        prompt: Some("go".into()),
                        ..TurnRequest::default()
                    },
                )
                .unwrap();
            let mut last_delta = Instant::now();
            loop {
                match h.events.recv().unwrap() {
                    TurnEvent::TextDelta(_) => last_delta = Instant::now(),
                    TurnEvent::AssistantStored { .. } => {
                        last_to_commit.push(last_delta.elapsed());
                    }
                    TurnEvent::Finished { .. } => break,
                    _ => {}
                }
            }
            h.join();
        })
    });
    g.finish();
    last_to_commit.sort();
    if !last_to_commit.is_empty() {
        let p = |q: f64| last_to_commit[((last_to_commit.len() - 1) as f64 * q) as usize];
        println!(
            "last delta received -> assistant message committed: p50 {:?}, p90 {:?}, max {:?} ({} turns)",
            p(0.5),
            p(0.9),
            last_to_commit.last().unwrap(),
            last_to_commit.len()
        );
    }
}

criterion_group!(benches, parse, commit, turn);
criterion_main!(benches);
