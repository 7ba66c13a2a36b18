//! `neocode worktree list|prune` on a real git repository: a `run --worktree` that completed
//! and one SIGKILLed leave their worktrees behind; the list names each one's branch, session
//! and state, and prune removes the completed one (what was left in it committed on its
//! branch), keeps the killed one until `--all`, and never touches one whose session runs.

use std::path::PathBuf;
use std::time::Duration;

use crate::support::agent::Env;
use crate::support::flows::{kill_once_asked, stalled};
use crate::support::git::{git, repo};
use crate::support::{stderr, stdout};

use neocode::runtime::agent::Lease;
use neocode::testkit::scripted::{Reply, ScriptedServer};
use serde_json::Value;

const KEY: &str = "sk-worktree-prune-KEY-0b7d";

fn worktrees(env: &Env) -> Vec<Value> {
    let o = env
        .cmd(None, &["worktree", "list", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice::<Value>(&o.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn prune(env: &Env, args: &[&str]) -> String {
    let o = env
        .cmd(None, &[&["worktree", "prune"], args].concat())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
}

/// Runs `run --worktree` to its end, then one killed while it waits for the model; returns
/// the sessions of both (completed, killed).
fn completed_and_killed(env: &Env, srv: &ScriptedServer) -> (String, String) {
    let o = env
        .cmd(Some(srv), &["run", "--worktree", "first"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let done = env.sessions().resolve("last").unwrap();
    let mut run = env.spawn(srv, &["run", "--worktree", "second"]);
    kill_once_asked(srv, 2, &mut run, "the second run never asked");
    let killed = env.sessions().resolve("last").unwrap();
    assert_ne!(done, killed);
    (done, killed)
}

fn entry<'a>(list: &'a [Value], session: &str) -> &'a Value {
    list.iter()
        .find(|w| w["session"] == session)
        .unwrap_or_else(|| panic!("no worktree of {session} in {list:?}"))
}

#[test]
fn stale_worktrees_are_listed_and_pruned_the_unfinished_kept_until_all() {
    let env = Env::new(KEY, "");
    repo(&env.workdir);
    let srv =
        ScriptedServer::start(vec![Reply::text("done"), stalled(Duration::from_secs(60))]).unwrap();
    let (done, killed) = completed_and_killed(&env, &srv);

    let list = worktrees(&env);
    assert_eq!(list.len(), 2, "{list:?}");
    let (a, b) = (entry(&list, &done), entry(&list, &killed));
    assert_eq!(
        (&a["state"], &a["status"]),
        (&"stale".into(), &"completed".into())
    );
    assert_eq!(
        (&b["state"], &b["status"]),
        (&"stale".into(), &"interrupted".into())
    );
    assert!(a["branch"].as_str().unwrap().starts_with("neocode/run-"));
    let (a_path, b_path) = (
        PathBuf::from(a["path"].as_str().unwrap()),
        PathBuf::from(b["path"].as_str().unwrap()),
    );
    let a_branch = a["branch"].as_str().unwrap().to_string();
    // Something left in the completed run's worktree after its end.
    std::fs::write(a_path.join("left.txt"), "left behind\n").unwrap();
    let text = stdout(&env.cmd(None, &["worktree", "list"]).output().unwrap());
    assert!(
        text.contains(&format!("stale  {a_branch}  session {}", &done[..8])),
        "{text}"
    );

    // While a process holds the killed session's lease, its worktree runs and stays.
    let lease = Lease::acquire(env.sessions().data_dir(), &killed).unwrap();
    assert_eq!(entry(&worktrees(&env), &killed)["state"], "running");
    let said = prune(&env, &["--all"]);
    assert!(said.contains("its session is running"), "{said}");
    assert!(b_path.is_dir());
    drop(lease);
    // The removal above took the completed one: its leftover is committed on its branch.
    assert!(
        said.contains(&format!("removed {}", a_path.display())),
        "{said}"
    );
    assert!(!a_path.exists());
    assert_eq!(
        git(&env.workdir, &["show", &format!("{a_branch}:left.txt")]),
        "left behind\n"
    );

    // Without --all the killed one is kept, and the reason said.
    let said = prune(&env, &[]);
    assert!(
        said.contains(&format!("kept {}", b_path.display()))
            && said.contains("is interrupted")
            && said.contains("--all removes it"),
        "{said}"
    );
    assert!(b_path.is_dir());
    let said = prune(&env, &["--all"]);
    assert!(said.contains("removed"), "{said}");
    assert!(!b_path.exists());
    assert!(worktrees(&env).is_empty());
    // Branches stay; git knows no worktree of them any more.
    assert_eq!(
        git(&env.workdir, &["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
}
