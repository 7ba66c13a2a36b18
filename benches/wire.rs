//! Parser benchmarks of the Anthropic Messages and OpenAI Responses streams: SSE decode +
//! fold throughput over 10,000 text deltas, as a socket delivers them (16 KiB reads), to set
//! beside `provider_parse` (Chat Completions) in `benches/provider.rs`.
//!
//! `cargo bench --bench wire`.
// Tests, benchmarks and examples may unwrap: a failure there is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use neocode::runtime::provider::http::fold_wire_bytes;
use neocode::runtime::provider::{anthropic, responses};
use neocode::testkit::scripted_wire::{Messages, ResponsesStream};

const DELTAS: usize = 10_000;

fn text(i: usize) -> String {
    format!("word{i} and more ")
}

fn parse(c: &mut Criterion) {
    let mut m = Messages::start(1000, 0, 0);
    let mut r = ResponsesStream::start();
    // One block / item per delta would measure block bookkeeping; real replies stream many
    // deltas into one block, so the deltas go into one text block each.
    let all: String = (0..DELTAS).map(text).collect();
    m = m.text(&all, DELTAS);
    r = r.text(&all, DELTAS);
    let m = m.stop("end_turn", DELTAS as u64).body_bytes();
    let r = r.completed(1000, 0, DELTAS as u64, 0).body_bytes();
    let mut g = c.benchmark_group("wire_parse");
    g.throughput(Throughput::Elements(DELTAS as u64));
    g.bench_function("anthropic_10000_deltas_16k_reads", |b| {
        b.iter(|| {
            let pieces = m.chunks(16 * 1024).map(<[u8]>::to_vec).collect();
            let (ev, c) = fold_wire_bytes(pieces, anthropic::Fold::new("m")).unwrap();
            black_box((ev.len(), c.text.len()))
        })
    });
    g.bench_function("responses_10000_deltas_16k_reads", |b| {
        b.iter(|| {
            let pieces = r.chunks(16 * 1024).map(<[u8]>::to_vec).collect();
            let (ev, c) = fold_wire_bytes(pieces, responses::Fold::new("m")).unwrap();
            black_box((ev.len(), c.text.len()))
        })
    });
    g.finish();
}

criterion_group!(benches, parse);
criterion_main!(benches);
