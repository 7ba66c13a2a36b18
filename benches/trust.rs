//! What workspace trust (issue 34) costs a turn: the check every turn makes before it reads
//! rules and hooks ([`Admission::check`]) in a workspace that declares nothing (a `stat` or
//! three, the record not read), in one that declares a typical `.neocode/` (hooks, rules,
//! two skills) untrusted and trusted, and for the trusted one what the gate then loads: its
//! rules, its hooks, and the whole gate load (check, rules, hooks).
//!
//! `cargo bench --bench trust`.
// Tests, benchmarks and examples may unwrap: a failure there is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use neocode::runtime::Location;
use neocode::runtime::trust::{self, Admission};

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A `.neocode/` as a project commits it: two hooks, five rules, two skills with a file each.
fn typical(root: &Path) {
    write(
        root,
        ".neocode/hooks.json",
        r#"{"hooks": {"PostToolUse": [{"matcher": "edit_file|write_file", "hooks": [{"type": "command", "command": "cargo fmt"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "cargo check -q"}]}]}}"#,
    );
    write(
        root,
        ".neocode/permissions.toml",
        "allow = [\"run_command(cargo test *)\", \"run_command(git diff *)\", \"edit_file(src/**)\"]\nask = [\"run_command(git push *)\"]\ndeny = [\"read_file(.env)\"]\n",
    );
    for name in ["deploy", "review"] {
        write(
            root,
            &format!(".neocode/skills/{name}/SKILL.md"),
            &format!(
                "---\nname: {name}\ndescription: How to {name}.\n---\n{}",
                "A line of instructions.\n".repeat(40)
            ),
        );
        write(
            root,
            &format!(".neocode/skills/{name}/run.sh"),
            "#!/bin/sh\necho ok\n",
        );
    }
}

fn check(c: &mut Criterion) {
    let mut g = c.benchmark_group("trust_check");
    g.sample_size(200);
    g.measurement_time(Duration::from_secs(4));

    let empty = tempfile::tempdir().unwrap();
    let loc = Location::scratch(empty.path());
    g.bench_function("nothing_declared", |b| {
        b.iter(|| black_box(Admission::check(&loc.home, loc.root()).uses_workspace()))
    });

    let ws = tempfile::tempdir().unwrap();
    let loc = Location::scratch(ws.path());
    typical(loc.root());
    g.bench_function("typical_untrusted", |b| {
        b.iter(|| black_box(Admission::check(&loc.home, loc.root()).uses_workspace()))
    });
    trust::trust(&loc.home, loc.root()).unwrap();
    assert!(Admission::check(&loc.home, loc.root()).uses_workspace());
    g.bench_function("typical_trusted", |b| {
        b.iter(|| black_box(Admission::check(&loc.home, loc.root()).uses_workspace()))
    });
    let admission = Admission::check(&loc.home, loc.root());
    g.bench_function("rules_of_typical_trusted", |b| {
        b.iter(|| black_box(admission.rules(&loc.home).unwrap().rules().len()))
    });
    g.bench_function("hooks_of_typical_trusted", |b| {
        b.iter(|| black_box(admission.hooks(&loc.home).unwrap().commands().len()))
    });
    g.bench_function("gate_load_typical_trusted", |b| {
        b.iter(|| {
            let mut gate = trust::gate(&loc.home, loc.root(), "bench");
            gate.load().unwrap();
            black_box(gate.left_out.is_none())
        })
    });
    g.finish();
}

criterion_group!(benches, check);
criterion_main!(benches);
