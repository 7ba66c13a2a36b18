//! What the command box costs: `true` through `run_command` (helper start, namespaces and
//! mounts or the fallback, Landlock, seccomp, `sh -c true`, reaping), per sandbox setting,
//! and in git repositories of a few files and of 10,000 (the rewind snapshot, the protected
//! control files). The settings come from config text, so the same bench runs against older
//! code (a setting that code does not know is skipped). Each iteration is a command of a
//! process that ran commands before: a process's first command walks the workspace once
//! (`scripts/command-turn-bench.py` times whole processes).
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

/// A git repository of `files` files in 100 folders, committed.
fn repository(files: usize) -> tempfile::TempDir {
    let ws = tempfile::tempdir().expect("workspace");
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .arg("-C")
            .arg(ws.path())
            .args(args)
            .env("GIT_AUTHOR_NAME", "b")
            .env("GIT_AUTHOR_EMAIL", "b@example.com")
            .env("GIT_COMMITTER_NAME", "b")
            .env("GIT_COMMITTER_EMAIL", "b@example.com")
            .output()
            .expect("git")
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    let per = (files / 100).max(1);
    for i in 0..files {
        let dir = ws.path().join(format!("src/d{:03}", i / per));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i:05}.rs")), format!("// {i}\n")).unwrap();
    }
    git(&["add", "-A"]);
    git(&["commit", "-qm", "start"]);
    ws
}

fn bench(c: &mut Criterion) {
    sandbox::set_helper(env!("CARGO_BIN_EXE_neocode"));
    let ws = tempfile::tempdir().expect("workspace");
    let small = repository(3);
    let big = repository(10_000);
    let mut g = c.benchmark_group("run_command_true");
    g.sample_size(50);
    g.measurement_time(Duration::from_secs(8));
    for (name, root, config) in [
        (
            "default",
            ws.path(),
            "[sandbox]\nmode = \"workspace-write\"\n",
        ),
        (
            "git_small",
            small.path(),
            "[sandbox]\nmode = \"workspace-write\"\n",
        ),
        (
            "git_10k_files",
            big.path(),
            "[sandbox]\nmode = \"workspace-write\"\n",
        ),
        (
            "no_userns",
            ws.path(),
            "[sandbox]\nsimulate_no_userns = true\n",
        ),
        ("off", ws.path(), "[sandbox]\nmode = \"off\"\n"),
    ] {
        let Some(sb) = settings(config) else {
            eprintln!(
                "{name}: this code does not know `{}`; skipped",
                config.trim()
            );
            continue;
        };
        let mut ctx = ToolContext::new(root);
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
