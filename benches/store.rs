//! Store benchmarks (issue 2): append latency at history 10 and 100,000, list first page and
//! whole list at 10,000 sessions, load a 10,000-message session, full-text search over
//! 200,000 messages, fork a 10,000-message session.
//!
//! `cargo bench --bench store` (add `-- <filter>` for one group). Big fixtures are built
//! once per run in temp dirs through the fast bulk path (many messages per append).
//! Besides criterion's figures, the append group prints exact p50/p90/p99 of single appends.
// Tests, benchmarks and examples may unwrap: a failure there is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use neocode::session::{
    AppendMeta, ListQuery, NewMessage, NewSession, Role, Store, ToolCall, Usage, WorkspacePaths,
};
use tempfile::TempDir;

/// Deterministic xorshift: the fixtures are the same every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// 5,000 pronounceable words.
fn vocabulary() -> &'static [String] {
    static V: OnceLock<Vec<String>> = OnceLock::new();
    V.get_or_init(|| {
        let syl = [
            "ka", "lo", "mi", "ter", "zan", "pu", "ve", "dor", "shi", "qua", "len", "bro", "fi",
            "gan", "hu", "jet", "ri", "sol", "tam", "wex",
        ];
        let mut out = Vec::new();
        for a in syl {
            for b in syl {
                for c in [
                    "", "x", "n", "s", "t", "m", "l", "r", "d", "k", "p", "z", "v",
                ] {
                    if out.len() < 5000 {
                        out.push(format!("{a}{b}{c}"));
                    }
                }
            }
        }
        out
    })
}

/// A message of about 25 words; 1% carry "needlework", 10% carry "frequent".
fn message(rng: &mut Rng, i: u64) -> NewMessage {
    let v = vocabulary();
    let mut words: Vec<&str> = (0..24)
        .map(|_| v[rng.below(v.len() as u64) as usize].as_str())
        .collect();
    if rng.below(100) == 0 {
        words.push("needlework");
    }
    if rng.below(10) == 0 {
        words.push("frequent");
    }
    let text = words.join(" ");
    let usage = Usage {
        input_tokens: 100 + i % 50,
        output_tokens: 20,
    };
    match i % 4 {
        0 => NewMessage {
            usage,
            ..NewMessage::text(Role::User, text)
        },
        1 => NewMessage {
            tool_calls: vec![ToolCall {
                id: format!("call{i}"),
                name: "shell".into(),
                arguments: format!(r#"{{"cmd":"grep -rn {} src"}}"#, words[0]),
            }],
            usage,
            ..NewMessage::text(Role::Assistant, text)
        },
        2 => NewMessage::tool_result(format!("call{}", i - 1), text, false),
        _ => NewMessage {
            usage,
            ..NewMessage::text(Role::Assistant, text)
        },
    }
}

fn meta() -> AppendMeta {
    AppendMeta {
        provider: Some("anthropic".into()),
        model: Some("claude-x".into()),
        workdir: Some("/src/app".into()),
        ..AppendMeta::default()
    }
}

fn new_store() -> (TempDir, Store) {
    let t = TempDir::new().unwrap();
    let ws = t.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let s = Store::open(WorkspacePaths::resolve(&t.path().join("home"), &ws).unwrap()).unwrap();
    (t, s)
}

/// Creates `id` with `n` messages, appended `batch` at a time.
fn fill(s: &Store, rng: &mut Rng, id: &str, n: u64, batch: u64) {
    s.create_session(NewSession {
        id: Some(id.into()),
        title: format!("session {id}"),
        ..NewSession::default()
    })
    .unwrap();
    let mut i = 0;
    while i < n {
        let k = batch.min(n - i);
        let msgs: Vec<NewMessage> = (i..i + k).map(|j| message(rng, j)).collect();
        s.append_messages(id, &msgs, &meta()).unwrap();
        i += k;
    }
}

fn timed<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let out = f();
    eprintln!("fixture: {what} in {:.1?}", t.elapsed());
    out
}

const SMALL_SESSIONS: usize = 2000;

/// One workspace: a 100,000-message session and 2,000 sessions of 10 messages.
fn append_fixture() -> &'static (TempDir, Store) {
    static F: OnceLock<(TempDir, Store)> = OnceLock::new();
    F.get_or_init(|| {
        timed("append fixture (100,000 + 2,000 x 10 messages)", || {
            let (t, s) = new_store();
            let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
            fill(&s, &mut rng, "big", 100_000, 1000);
            for i in 0..SMALL_SESSIONS {
                fill(&s, &mut rng, &format!("small{i}"), 10, 10);
            }
            (t, s)
        })
    })
}

fn one_message(i: u64) -> [NewMessage; 1] {
    [NewMessage::text(
        if i.is_multiple_of(2) {
            Role::User
        } else {
            Role::Assistant
        },
        format!("appended message {i} with a few words of text in it"),
    )]
}

fn percentiles(mut v: Vec<Duration>) -> (Duration, Duration, Duration) {
    v.sort_unstable();
    let at = |p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize];
    (at(0.5), at(0.9), at(0.99))
}

fn bench_append(c: &mut Criterion) {
    let (_, s) = append_fixture();
    let m = meta();
    let mut g = c.benchmark_group("append");
    // History 10: round-robin over 2,000 sessions so each stays near 10 messages.
    let mut n = 0u64;
    g.bench_function("history_10", |b| {
        b.iter(|| {
            n += 1;
            let id = format!("small{}", n as usize % SMALL_SESSIONS);
            black_box(s.append_messages(&id, &one_message(n), &m).unwrap())
        })
    });
    g.bench_function("history_100000", |b| {
        b.iter(|| {
            n += 1;
            black_box(s.append_messages("big", &one_message(n), &m).unwrap())
        })
    });
    g.finish();

    // Exact percentiles of single appends, alternating so both see the same conditions.
    let (mut small, mut big) = (Vec::new(), Vec::new());
    for _ in 0..3000 {
        n += 1;
        let id = format!("small{}", n as usize % SMALL_SESSIONS);
        let t = Instant::now();
        s.append_messages(&id, &one_message(n), &m).unwrap();
        small.push(t.elapsed());
        let t = Instant::now();
        s.append_messages("big", &one_message(n), &m).unwrap();
        big.push(t.elapsed());
    }
    let (s50, s90, s99) = percentiles(small);
    let (b50, b90, b99) = percentiles(big);
    eprintln!(
        "append single-call percentiles (3000 each): history 10: p50 {s50:.1?} p90 {s90:.1?} p99 {s99:.1?}; \
         history 100000: p50 {b50:.1?} p90 {b90:.1?} p99 {b99:.1?}; p50 ratio {:.2}",
        b50.as_secs_f64() / s50.as_secs_f64()
    );
}

fn bench_list(c: &mut Criterion) {
    let (_t, s) = timed("list fixture (10,000 sessions)", || {
        let (t, s) = new_store();
        let mut rng = Rng(0xD1B5_4A32_D192_ED03);
        for i in 0..10_000 {
            fill(&s, &mut rng, &format!("sess-{i:05}"), 2, 2);
        }
        (t, s)
    });
    let mut g = c.benchmark_group("list_10000_sessions");
    g.bench_function("first_page_50", |b| {
        b.iter(|| {
            let page = s
                .list(&ListQuery {
                    limit: 50,
                    ..ListQuery::default()
                })
                .unwrap();
            assert_eq!(page.items.len(), 50);
            black_box(page)
        })
    });
    g.bench_function("whole_list", |b| {
        b.iter(|| {
            let page = s.list(&ListQuery::default()).unwrap();
            assert_eq!(page.items.len(), 10_000);
            black_box(page)
        })
    });
    g.finish();
}

fn bench_load_and_fork(c: &mut Criterion) {
    let (_t, s) = timed("load/fork fixture (10,000 messages)", || {
        let (t, s) = new_store();
        let mut rng = Rng(0xA076_1D64_78BD_642F);
        fill(&s, &mut rng, "long", 10_000, 1000);
        // The same, compacted at its end: a summary whose kept tail is the last 8 messages
        // (what a turn reads of it: `load_context`).
        fill(&s, &mut rng, "compacted", 10_000, 1000);
        let mut summary = NewMessage::text(Role::System, "Summary of the earlier conversation.");
        summary.tool_metadata = Some(serde_json::json!({
            neocode::session::COMPACTION_MARK: true,
            neocode::session::CONTEXT_FROM: 9_993,
        }));
        s.append_messages("compacted", &[summary], &meta()).unwrap();
        (t, s)
    });
    let mut g = c.benchmark_group("session_10000_messages");
    g.bench_function("load", |b| {
        b.iter(|| {
            let loaded = s.load_session("long").unwrap();
            assert_eq!(loaded.messages.len(), 10_000);
            black_box(loaded)
        })
    });
    g.bench_function("load_context_compacted", |b| {
        b.iter(|| {
            let ctx = s.load_context("compacted").unwrap();
            assert_eq!(ctx.messages.len(), 9);
            black_box(ctx)
        })
    });
    g.bench_function("load_context_uncompacted", |b| {
        b.iter(|| {
            let ctx = s.load_context("long").unwrap();
            assert_eq!(ctx.messages.len(), 10_000);
            black_box(ctx)
        })
    });
    g.bench_function("fork", |b| {
        // Only the fork is timed; each fork is deleted again so the file does not grow.
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let t = Instant::now();
                let f = s.fork("long", None).unwrap();
                total += t.elapsed();
                assert_eq!(f.message_count, 10_000);
                s.delete(&f.id).unwrap();
            }
            total
        })
    });
    g.finish();
}

fn bench_search(c: &mut Criterion) {
    let (_t, s) = timed("search fixture (200 sessions x 1,000 messages)", || {
        let (t, s) = new_store();
        let mut rng = Rng(0xE703_7ED1_A0B4_28DB);
        for i in 0..200 {
            fill(&s, &mut rng, &format!("corpus-{i:03}"), 1000, 1000);
        }
        (t, s)
    });
    let mut g = c.benchmark_group("search_200000_messages");
    let rare = vocabulary()[1234].clone();
    for (name, q) in [
        ("word_in_0.5pct", rare.as_str()),
        ("word_in_1pct", "needlework"),
        ("word_in_10pct", "frequent"),
        ("two_words", "needlework frequent"),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| {
                let hits = s.search(q, 50).unwrap();
                assert!(!hits.is_empty(), "{q}: no hits");
                black_box(hits)
            })
        });
    }
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .without_plots()
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench_append, bench_list, bench_load_and_fork, bench_search
}
criterion_main!(benches);
