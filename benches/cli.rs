//! The whole process of `neocode --list` and `neocode --list --json` on a workspace with
//! 10,000 sessions: spawn, open the store, list, format, print (to /dev/null), exit.
// Tests, benchmarks and examples may unwrap: a failure there is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};

use criterion::{Criterion, criterion_group, criterion_main};
use neocode::runtime::{Location, Sessions};
use neocode::session::{AppendMeta, NewMessage, NewSession, Plan, Role, StateUpdate, Step, Usage};

const SESSIONS: usize = 10_000;

fn populate(loc: &Location) {
    let rt = Sessions::open(loc).unwrap();
    let plan = Plan {
        steps: (0..4)
            .map(|i| Step {
                id: format!("s{i}"),
                title: format!("step {i}"),
                depends_on: Vec::new(),
            })
            .collect(),
    };
    for i in 0..SESSIONS {
        let h = rt
            .new_session(NewSession {
                title: format!("Session {i}: refactor the parser and fix the flaky tests"),
                provider: "openai".into(),
                model: "gpt-4.1".into(),
                workdir: loc.root().to_string_lossy().into(),
                ..NewSession::default()
            })
            .unwrap();
        rt.append(
            &h.id,
            &[
                NewMessage::text(Role::User, format!("question {i}")),
                NewMessage {
                    usage: Usage {
                        input_tokens: 1_000 + i as u64,
                        output_tokens: 100,
                    },
                    ..NewMessage::text(Role::Assistant, "answer")
                },
            ],
            &AppendMeta::default(),
        )
        .unwrap();
        if i % 10 == 0 {
            rt.update_state(
                &h.id,
                &StateUpdate {
                    plan: neocode::session::Change::Set(plan.clone()),
                    ..StateUpdate::default()
                },
            )
            .unwrap();
        }
    }
    assert_eq!(rt.count().unwrap(), SESSIONS as u64);
}

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let loc = Location::scratch(tmp.path());
    populate(&loc);
    let bin = env!("CARGO_BIN_EXE_neocode");
    let run = |args: &[&str]| {
        let status = Command::new(bin)
            .env("NEOCODE_HOME", &loc.home)
            .arg("--workdir")
            .arg(loc.root())
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .status()
            .unwrap();
        assert!(status.success());
    };
    let mut g = c.benchmark_group("process");
    g.sample_size(40);
    g.bench_function("list_10k_sessions", |b| b.iter(|| run(&["--list"])));
    g.bench_function("list_json_10k_sessions", |b| {
        b.iter(|| run(&["--list", "--json"]))
    });
    g.bench_function("list_limit_20_of_10k", |b| {
        b.iter(|| run(&["--list", "--limit", "20"]))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
