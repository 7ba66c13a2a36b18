//! Sub-agents in git worktrees (`task` with `worktree: true`) and `run --worktree`, end to
//! end against the scripted server on 127.0.0.1: the child's file lands on its branch, not in
//! the parent's workspace; the diff and branch come back in the result; the worktree is gone
//! afterwards; a hostile repository's config runs nothing; without git it is refused.

use std::path::Path;

use super::subagents::{calls, child_of, child_writes, listed_children, results};
use crate::support::agent::{Env, drive, watch};
use crate::support::git::{git, repo};
use crate::support::{Succeeds, finish};

use neocode::runtime::agent::{FinishReason, Target, TurnCommand, TurnEvent};
use neocode::testkit::scripted::Reply;
use serde_json::json;

const KEY: &str = "sk-worktree-test-KEY-81c3";

/// Approves every question (the turn's own and its sub-agents').
fn approve(e: &TurnEvent) -> Option<TurnCommand> {
    match e {
        TurnEvent::Subagent { event, .. } => approve(event),
        TurnEvent::ApprovalNeeded { call, .. } => Some(TurnCommand::Approve {
            call_id: call.id.clone(),
            always: false,
        }),
        _ => None,
    }
}

/// The replies of a parent whose one worktree child writes `out.txt`.
fn worktree_child_writes() -> Vec<Reply> {
    child_writes(json!({"prompt": "Write the file", "worktree": true}))
}

/// Runs a parent through [`worktree_child_writes`]; its id and its `task` result.
fn run_parent(env: &Env, srv: &neocode::testkit::scripted::ScriptedServer) -> (String, String) {
    let agent = env.agent(srv);
    let h = watch(&agent, Target::New, "Have it written");
    let parent = h.handle.session_id.clone();
    let evs = drive(&h, approve);
    assert_eq!(finish(&evs), FinishReason::Completed);
    h.join();
    let res = results(env, &parent);
    assert!(!res[0].2, "{res:?}");
    (parent, res[0].1.clone())
}

fn short(id: &str) -> String {
    id.chars()
        .filter(char::is_ascii_alphanumeric)
        .take(8)
        .collect()
}

/// The folder of child `child`'s worktree.
fn worktree_of(env: &Env, child: &str) -> std::path::PathBuf {
    env.sessions()
        .root()
        .join(".neocode/worktrees")
        .join(format!("task-{}", short(child)))
}

#[test]
fn a_worktree_child_writes_on_its_branch_and_its_diff_comes_back() {
    let (env, srv) = Env::new(KEY, "").with_server(worktree_child_writes());
    repo(&env.workdir);
    let (parent, text) = run_parent(&env, &srv);
    let reqs = srv.requests();
    // The parent's request to the child's: the start of a child with its worktree made.
    println!(
        "worktree child asked {} ms after the parent's request",
        (reqs[1].received - reqs[0].received).as_millis()
    );

    // The parent's workspace is untouched: no file, nothing for `git status`.
    assert!(!env.workdir.join("out.txt").exists());
    assert_eq!(git(&env.workdir, &["status", "--porcelain"]), "");
    // The result carries the branch and the diff.
    let child = child_of(&text);
    let branch = format!("neocode/task-{}", short(&child));
    assert!(text.contains(&format!("Branch: {branch}.")), "{text}");
    assert!(text.contains("+++ b/out.txt"), "{text}");
    assert!(text.contains("+from the child"), "{text}");
    // The worktree is gone; the branch holds the child's file.
    let wt = worktree_of(&env, &child);
    assert!(!wt.exists(), "{}", wt.display());
    assert_eq!(
        git(&env.workdir, &["show", &format!("{branch}:out.txt")]),
        "from the child\n"
    );
    assert_eq!(git(&env.workdir, &["worktree", "list"]).lines().count(), 1);
    // The child is stored in the parent's workspace, listed under it, its workdir the
    // worktree it ran in.
    let h = env.sessions().header(&child).unwrap();
    assert_eq!(h.workdir, wt.display().to_string());
    assert_eq!(listed_children(&env, &parent).len(), 1);
}

#[test]
fn with_keep_worktrees_the_worktree_stays_and_the_result_says_where() {
    let (env, srv) =
        Env::new(KEY, "\n[agents]\nkeep_worktrees = true\n").with_server(worktree_child_writes());
    repo(&env.workdir);
    let (_, text) = run_parent(&env, &srv);
    let child = child_of(&text);
    let wt = worktree_of(&env, &child);
    assert!(
        text.contains(&format!("(worktree kept at {})", wt.display())),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("out.txt")).unwrap(),
        "from the child\n"
    );
}

#[test]
fn a_worktree_child_outside_a_repository_is_refused() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![
        calls(&[("t1", "task", json!({"prompt": "Write", "worktree": true}))]),
        Reply::text("No worktree then."),
    ]);
    let agent = env.agent(&srv);
    let h = watch(&agent, Target::New, "Have it written");
    let parent = h.handle.session_id.clone();
    let evs = drive(&h, approve);
    assert_eq!(finish(&evs), FinishReason::Completed);
    h.join();
    let res = results(&env, &parent);
    assert!(res[0].2, "{res:?}");
    assert!(res[0].1.contains("is not a git repository"), "{res:?}");
    // No child session was left behind.
    assert!(listed_children(&env, &parent).is_empty());
}

#[test]
fn a_hostile_repository_config_runs_nothing_when_the_worktree_is_made_and_removed() {
    let (env, srv) = Env::new(KEY, "").with_server(worktree_child_writes());
    let ws = &env.workdir;
    std::fs::write(ws.join(".gitattributes"), "* filter=evil\n").unwrap();
    repo(ws);
    git(ws, &["add", ".gitattributes"]);
    git(ws, &["commit", "-qm", "attributes"]);
    let marker = env.tmp.path().join("ran");
    let script = env.tmp.path().join("evil.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\ntouch '{}'\ncat\n", marker.display()),
    )
    .unwrap();
    git(
        ws,
        &["config", "core.fsmonitor", &script.display().to_string()],
    );
    for (k, v) in [
        ("filter.evil.smudge", script.display().to_string()),
        ("filter.evil.clean", script.display().to_string()),
        ("filter.evil.required", "true".to_string()),
    ] {
        git(ws, &["config", k, &v]);
    }
    let hook = ws.join(".git/hooks/post-checkout");
    std::fs::write(&hook, format!("#!/bin/sh\ntouch '{}'\n", marker.display())).unwrap();
    for f in [&script, &hook] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    let (_, text) = run_parent(&env, &srv);
    assert!(text.contains("+from the child"), "{text}");
    assert!(!marker.exists(), "the repository's config ran a program");
    // The config is hostile indeed: git as the user runs it does run the script.
    git(ws, &["status", "--porcelain"]);
    assert!(
        marker.exists(),
        "the hostile config did not run under plain git"
    );
}

#[test]
fn run_worktree_outside_a_repository_fails_in_one_line() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![Reply::text("never asked")]);
    let o = env
        .cmd(Some(&srv), &["run", "--worktree", "Write a file"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--worktree:") && err.contains("is not a git repository"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(srv.requests().is_empty());
}

#[test]
fn run_worktree_runs_in_a_worktree_and_says_its_branch_and_folder() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![
        calls(&[(
            "c1",
            "write_file",
            json!({"path": "out.txt", "content": "from the run\n"}),
        )]),
        Reply::text("Wrote it."),
    ]);
    repo(&env.workdir);
    let o = env
        .cmd(
            Some(&srv),
            &[
                "run",
                "--worktree",
                "--approve",
                "auto-edit",
                "Write a file",
            ],
        )
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(!env.workdir.join("out.txt").exists());
    let line = err
        .lines()
        .find(|l| l.starts_with("neocode: worktree "))
        .unwrap_or_else(|| panic!("{err}"));
    let branch = line
        .split(" on branch ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap();
    assert!(branch.starts_with("neocode/run-"), "{line}");
    let folder = line
        .strip_prefix("neocode: worktree ")
        .and_then(|r| r.split(" on branch ").next())
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(Path::new(folder).join("out.txt")).unwrap(),
        "from the run\n"
    );
    assert_eq!(
        git(&env.workdir, &["show", &format!("{branch}:out.txt")]),
        "from the run\n"
    );
}

#[test]
fn a_worktree_childs_rewind_goes_back_in_its_worktree_never_in_the_workspace() {
    let (env, srv) =
        Env::new(KEY, "\n[agents]\nkeep_worktrees = true\n").with_server(worktree_child_writes());
    repo(&env.workdir);
    // The workspace has a file of the same name: the child's rewind must not touch it.
    std::fs::write(env.workdir.join("out.txt"), "mine\n").unwrap();
    let (_, text) = run_parent(&env, &srv);
    let child = child_of(&text);
    let wt = worktree_of(&env, &child);
    assert!(wt.join("out.txt").exists());
    env.cmd(
        None,
        &["rewind", &child, "--to", "2", "--files-only", "--yes"],
    )
    .succeeds();
    // The child's own write is gone from its worktree; the workspace's file is as it was.
    assert!(!wt.join("out.txt").exists());
    assert_eq!(
        std::fs::read_to_string(env.workdir.join("out.txt")).unwrap(),
        "mine\n"
    );
}

#[test]
fn a_worktree_childs_files_are_not_rewound_once_its_worktree_is_gone() {
    let (env, srv) = Env::new(KEY, "").with_server(worktree_child_writes());
    repo(&env.workdir);
    std::fs::write(env.workdir.join("out.txt"), "from the child\n").unwrap();
    let (_, text) = run_parent(&env, &srv);
    let child = child_of(&text);
    let o = env
        .cmd(None, &["rewind", &child, "--to", "2", "--yes", "--force"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("which is gone"), "{err}");
    assert!(err.contains("conversation"), "{err}");
    // Even forced, the workspace's file (the same text as the child's write) is untouched.
    assert_eq!(
        std::fs::read_to_string(env.workdir.join("out.txt")).unwrap(),
        "from the child\n"
    );
    env.cmd(
        None,
        &[
            "rewind",
            &child,
            "--to",
            "2",
            "--conversation-only",
            "--yes",
        ],
    )
    .succeeds();
}
