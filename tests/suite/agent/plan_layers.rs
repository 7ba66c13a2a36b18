//! Plan layers side by side in git worktrees, end to end against the scripted server on
//! 127.0.0.1: the steps of a layer ask the model at the same time (the server's records), each
//! writes in a worktree of its own and the layer's changes land in the workspace in step
//! order; two steps changing the same line stop the run with `plan_conflict`, the first one's
//! change merged and the second one's kept on its branch; a resume runs only what is left;
//! without git the steps work in the workspace itself.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::agent::Env;
use crate::support::finish;
use crate::support::flows::plan_run;
use crate::support::git::{git, repo};

use neocode::runtime::agent::{FailCode, FinishReason, PlanRequest, Target, TurnEvent};
use neocode::runtime::config::ApprovalPolicy;
use neocode::session::StepStatus;
use neocode::testkit::scripted::{Reply, ScriptedServer, Stream};
use serde_json::{Value, json};

const KEY: &str = "sk-plan-layers-KEY-5d21";
const DELAY: Duration = Duration::from_millis(300);
/// A delay long enough for every step of a layer to ask before the first is answered, even
/// on a loaded machine (each step's start makes its worktree first).
const SURE: Duration = Duration::from_millis(1000);

fn draft(plan: &Value) -> Vec<Reply> {
    vec![
        Reply::tool_calls(&[("p1", "update_plan", &plan.to_string())]),
        Reply::text("Plan stored."),
    ]
}

/// Three steps with no dependency: one layer.
fn three() -> Value {
    json!({"steps": [
        {"id": "a", "title": "Write a"},
        {"id": "b", "title": "Write b"},
        {"id": "c", "title": "Write c"},
    ]})
}

/// A `write_file` call of `path` with `content`, answered after [`DELAY`].
fn slow_write(id: &str, path: &str, content: &str) -> Reply {
    slower_write(id, path, content, DELAY)
}

/// A `write_file` call of `path` with `content`, answered after `delay`.
fn slower_write(id: &str, path: &str, content: &str, delay: Duration) -> Reply {
    let args = json!({"path": path, "content": content}).to_string();
    Stream::tool_calls(&[(id, "write_file", &args)])
        .delays(delay, Duration::ZERO)
        .reply()
}

fn req(goal: Option<&str>, width: usize) -> PlanRequest {
    PlanRequest {
        goal: goal.map(str::to_string),
        width,
        approved: true,
        approval: Some(ApprovalPolicy::NeverAsk),
        ..PlanRequest::default()
    }
}

/// Each step's child session, by step id, from the `StepStarted` events.
fn children(evs: &[TurnEvent]) -> Vec<(String, String)> {
    evs.iter()
        .filter_map(|e| match e {
            TurnEvent::StepStarted {
                step_id,
                session_id,
                ..
            } => Some((step_id.clone(), session_id.clone())),
            _ => None,
        })
        .collect()
}

fn branch_of(child: &str) -> String {
    let short: String = child
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(8)
        .collect();
    format!("neocode/step-{short}")
}

/// The three-step layer writing a.txt, b.txt and c.txt at `width`, each step's first reply
/// answered after `delay`; the layer's wall time and the server.
fn three_writes(width: usize, delay: Duration) -> (Env, ScriptedServer, Vec<TurnEvent>, Duration) {
    let (env, srv) = Env::new(KEY, "").with_server(draft(&three()));
    repo(&env.workdir);
    srv.push([
        slower_write("w1", "a.txt", "one\n", delay),
        slower_write("w2", "b.txt", "two\n", delay),
        slower_write("w3", "c.txt", "three\n", delay),
    ]);
    srv.push((0..3).map(|_| Reply::text("Written.")));
    let agent = env.agent(&srv);
    let (_, evs) = plan_run(&agent, Target::New, req(Some("write three files"), width));
    // The layer: from its first step's request to the end of the run (merge included).
    let took = srv.requests()[2].received.elapsed();
    (env, srv, evs, took)
}

#[test]
fn a_layer_of_three_steps_runs_side_by_side_and_all_three_changes_land() {
    // Long enough for the three worktrees to be made on a loaded machine.
    let delay = Duration::from_millis(1500);
    let (env, srv, evs, _) = three_writes(3, delay);
    assert_eq!(finish(&evs), FinishReason::Completed, "{evs:#?}");
    // The draft asked twice; then each step's first request came before any was answered.
    let reqs = srv.requests();
    assert_eq!(reqs.len(), 8);
    let firsts: Vec<Instant> = reqs[2..5].iter().map(|r| r.received).collect();
    let spread = *firsts.iter().max().unwrap() - *firsts.iter().min().unwrap();
    println!("three steps asked within {} ms", spread.as_millis());
    assert!(spread < delay, "the steps did not overlap: {spread:?}");
    // Every step's file is in the workspace (not committed there), no worktree is left.
    for (f, c) in [("a.txt", "one\n"), ("b.txt", "two\n"), ("c.txt", "three\n")] {
        assert_eq!(std::fs::read_to_string(env.workdir.join(f)).unwrap(), c);
    }
    let status = git(&env.workdir, &["status", "--porcelain"]);
    assert!(
        status.contains("?? a.txt") && status.contains("?? c.txt"),
        "{status}"
    );
    assert_eq!(git(&env.workdir, &["worktree", "list"]).lines().count(), 1);
    assert_eq!(git(&env.workdir, &["diff", "--cached", "--name-only"]), "");
    // Each step ran in its worktree, on its branch.
    for (_, child) in children(&evs) {
        let h = env.sessions().header(&child).unwrap();
        assert!(
            h.workdir.contains(".neocode/worktrees/step-"),
            "{}",
            h.workdir
        );
        git(&env.workdir, &["rev-parse", "--verify", &branch_of(&child)]);
    }
}

/// The figure of docs/PERFORMANCE.md (a measurement, not a check: timings are not asserted;
/// that the steps overlap is checked from the server's records above). Run it with
/// `cargo test a_layer_in_parallel -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement for docs/PERFORMANCE.md, not a check"]
fn a_layer_in_parallel_takes_less_wall_time_than_in_sequence() {
    let median = |width: usize| {
        let mut ms: Vec<u128> = (0..5)
            .map(|_| {
                let (_env, _, evs, took) = three_writes(width, DELAY);
                assert_eq!(finish(&evs), FinishReason::Completed);
                took.as_millis()
            })
            .collect();
        ms.sort_unstable();
        ms[2]
    };
    let parallel = median(3);
    let sequence = median(1);
    println!(
        "3-step layer (each step's first reply delayed {} ms): width 3 median {parallel} ms, width 1 median {sequence} ms (5 runs each)",
        DELAY.as_millis()
    );
}

#[test]
fn without_git_the_steps_of_a_layer_work_in_the_workspace_itself() {
    let (env, srv) = Env::new(KEY, "").with_server(draft(&three()));
    srv.push([
        slow_write("w1", "a.txt", "one\n"),
        slow_write("w2", "b.txt", "two\n"),
        slow_write("w3", "c.txt", "three\n"),
    ]);
    srv.push((0..3).map(|_| Reply::text("Written.")));
    let agent = env.agent(&srv);
    let (_, evs) = plan_run(&agent, Target::New, req(Some("write three files"), 3));
    assert_eq!(finish(&evs), FinishReason::Completed, "{evs:#?}");
    for f in ["a.txt", "b.txt", "c.txt"] {
        assert!(env.workdir.join(f).is_file(), "{f}");
    }
    // No worktree was made: each step worked in the workspace.
    assert!(!env.workdir.join(".neocode/worktrees").exists());
    for (_, child) in children(&evs) {
        let h = env.sessions().header(&child).unwrap();
        assert_eq!(Path::new(&h.workdir), env.workdir.as_path());
    }
}

/// A repository whose model drafts `plan`, then has its first two steps (together) write
/// README.md each its own way.
fn two_rewordings(plan: &Value) -> (Env, ScriptedServer) {
    let (env, srv) = Env::new(KEY, "").with_server(draft(plan));
    repo(&env.workdir);
    srv.push([
        slower_write("w1", "README.md", "hello from one\n", SURE),
        slower_write("w2", "README.md", "hello from two\n", SURE),
        Reply::text("Reworded."),
        Reply::text("Reworded."),
    ]);
    (env, srv)
}

#[test]
fn two_steps_changing_the_same_line_stop_the_run_and_a_resume_runs_what_is_left() {
    let plan = json!({"steps": [
        {"id": "a", "title": "Reword the readme"},
        {"id": "b", "title": "Reword it too"},
        {"id": "c", "title": "Check it", "depends_on": ["a", "b"]},
    ]});
    let (env, srv) = two_rewordings(&plan);
    let agent = env.agent(&srv);
    let (id, evs) = plan_run(&agent, Target::New, req(Some("reword"), 2));
    let message = match finish(&evs) {
        FinishReason::Failed {
            code: FailCode::PlanConflict,
            message,
        } => message,
        other => panic!("{other:?}"),
    };
    let kids = children(&evs);
    assert_eq!(kids.len(), 2, "c must not start: {kids:?}");
    let child = |s: &str| kids.iter().find(|(k, _)| k == s).unwrap().1.clone();
    let (branch_a, branch_b) = (branch_of(&child("a")), branch_of(&child("b")));
    assert!(message.contains("step b"), "{message}");
    assert!(message.contains("README.md"), "{message}");
    assert!(message.contains(&branch_b), "{message}");
    // Step a (first in order) is merged; b's change is on its branch, not in the workspace.
    let readme = std::fs::read_to_string(env.workdir.join("README.md")).unwrap();
    assert_eq!(
        readme,
        git(&env.workdir, &["show", &format!("{branch_a}:README.md")])
    );
    let theirs = git(&env.workdir, &["show", &format!("{branch_b}:README.md")]);
    assert_ne!(readme, theirs);
    assert!(theirs.starts_with("hello from"), "{theirs}");
    let progress = env.sessions().plan_progress(&id).unwrap();
    assert_eq!(progress.status("a"), StepStatus::Completed);
    assert_eq!(progress.status("b"), StepStatus::Failed);
    assert_eq!(progress.failures["b"].error_type, "plan_conflict");
    assert_eq!(progress.status("c"), StepStatus::Pending);

    // Fixed by hand (b's change taken instead); the resume skips a and runs b, then c.
    std::fs::write(env.workdir.join("README.md"), &theirs).unwrap();
    srv.push([Reply::text("Already reworded."), Reply::text("Checked.")]);
    let agent = env.agent(&srv);
    let (_, evs) = plan_run(&agent, Target::Resume(id.clone()), req(None, 2));
    assert_eq!(finish(&evs), FinishReason::Completed, "{evs:#?}");
    let again: Vec<String> = children(&evs).into_iter().map(|(s, _)| s).collect();
    assert_eq!(again, ["b", "c"]);
    let progress = env.sessions().plan_progress(&id).unwrap();
    assert_eq!(progress.status("b"), StepStatus::Completed);
    assert_eq!(srv.remaining(), 0);
}

#[test]
fn the_command_line_says_which_step_conflicts_and_how_to_go_on() {
    let plan = json!({"steps": [
        {"id": "one", "title": "Reword the readme"},
        {"id": "two", "title": "Reword it too"},
    ]});
    let (env, srv) = two_rewordings(&plan);
    let out = env.run_plan(&srv, &["--width", "2", "--approve", "auto-edit", "reword"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("plan run stopped on a conflict"),
        "{stderr}"
    );
    assert!(
        stderr.contains("step two") && stderr.contains("README.md"),
        "{stderr}"
    );
    assert!(stderr.contains("branch neocode/step-"), "{stderr}");
    assert!(stderr.contains("neocode run --resume"), "{stderr}");
}

#[test]
fn a_wide_layer_without_git_warns_that_its_steps_share_the_workspace() {
    let (env, srv) = Env::new(KEY, "").with_server(draft(&three()));
    srv.push([
        slower_write("w1", "a.txt", "one\n", Duration::ZERO),
        slower_write("w2", "b.txt", "two\n", Duration::ZERO),
        slower_write("w3", "c.txt", "three\n", Duration::ZERO),
    ]);
    srv.push((0..3).map(|_| Reply::text("Written.")));
    let agent = env.agent(&srv);
    let (_, evs) = plan_run(&agent, Target::New, req(Some("write three files"), 3));
    assert_eq!(finish(&evs), FinishReason::Completed, "{evs:#?}");
    let warned: Vec<&str> = evs
        .iter()
        .filter_map(|e| match e {
            TurnEvent::Warning { code, message } if code.as_str() == "layer_unisolated" => {
                Some(message.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(warned.len(), 1, "{evs:#?}");
    assert!(
        warned[0].contains("not a git repository")
            && warned[0].contains("side by side in the workspace itself, not isolated")
            && warned[0].contains("--width 1"),
        "{}",
        warned[0]
    );
    for (f, c) in [("a.txt", "one\n"), ("b.txt", "two\n"), ("c.txt", "three\n")] {
        assert_eq!(std::fs::read_to_string(env.workdir.join(f)).unwrap(), c);
    }
}
