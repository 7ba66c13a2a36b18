//! What the command box costs: `true` through `run_command` (helper start, namespaces and
//! mounts or the fallback, Landlock, seccomp, `sh -c true`, reaping), per sandbox setting.
//! The settings come from config text, so the same bench runs against older code (a setting
//! that code does not know is skipped).
//!
//! `cargo bench --bench sandbox` (the release binary is the helper).
// Tests, benchmarks and examples may unwrap: a failure there is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use neocode::runtime::config::{Overrides, Settings};
use neocode::runtime::tools::{self, ToolContext, sandbox};

fn settings(config: &str) -> Option<tools::SandboxSettings> {
    let home = tempfile::tempdir().ok()?;
    std::fs::write(home.path().join("config.toml"), config).ok()?;
    let s = Settings::load_with(home.path(), &Overrides::default(), &|_| None).ok()?;
    Some(s.sandbox)
}

fn bench(c: &mut Criterion) {
    sandbox::set_helper(env!("CARGO_BIN_EXE_neocode"));
    let ws = tempfile::tempdir().expect("workspace");
    let mut g = c.benchmark_group("run_command_true");
    g.sample_size(50);
    g.measurement_time(Duration::from_secs(8));
    for (name, config) in [
        ("default", "[sandbox]\nmode = \"workspace-write\"\n"),
        ("no_userns", "[sandbox]\nsimulate_no_userns = true\n"),
        ("off", "[sandbox]\nmode = \"off\"\n"),
    ] {
        let Some(sb) = settings(config) else {
            eprintln!(
                "{name}: this code does not know `{}`; skipped",
                config.trim()
            );
            continue;
        };
        let mut ctx = ToolContext::new(ws.path());
        ctx.sandbox = sb;
        eprintln!("{name}: {}", sandbox::status(&ctx.sandbox).describe());
        g.bench_function(name, |b| {
            b.iter(|| {
                let out = tools::run("run_command", r#"{"command":"true"}"#, &ctx);
                assert!(out.text.contains("[exit code 0"), "{}", out.text);
                black_box(out.text.len())
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
