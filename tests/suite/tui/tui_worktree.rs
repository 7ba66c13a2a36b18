//! `neocode --worktree`: the TUI opens with a fresh git worktree as the workspace of its new
//! sessions, says so on stderr before the screen opens, and at exit commits what changed on
//! the worktree's branch and says where both are. The real binary in a pty, a real repository.

use std::process::Command;

use crate::support::Env;
use neocode::session::ListQuery;
use neocode::testkit::scripted::{Reply, ScriptedServer};

fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn the_tui_with_worktree_works_in_a_fresh_worktree_and_says_so_before_and_after() {
    let env = Env::new();
    std::fs::write(env.workdir.join("README.md"), "hello\n").unwrap();
    git(&env.workdir, &["init", "-q"]);
    git(&env.workdir, &["add", "README.md"]);
    git(&env.workdir, &["commit", "-qm", "first"]);
    let srv = ScriptedServer::start(vec![Reply::text("Hi from the worktree.")]).unwrap();

    let mut pty = env.tui(&srv, &["--worktree", "--trust-workspace"], 40, 120);
    pty.wait_for("0 sessions");
    pty.keys("n");
    pty.submit("Say hi");
    pty.wait_for("Hi from the worktree.");
    assert_eq!(pty.quit(), 0);

    let out = String::from_utf8_lossy(&pty.bytes()).into_owned();
    let before = out
        .find("neocode: new sessions work in the worktree ")
        .unwrap_or_else(|| panic!("{out}"));
    let after = out
        .find("neocode: worktree ")
        .unwrap_or_else(|| panic!("{out}"));
    assert!(before < after, "{out}");
    assert!(out[after..].contains("on branch neocode/run-"), "{out}");
    // The conversation's session works in the worktree, not the workspace.
    let page = env.sessions().list(&ListQuery::default()).unwrap();
    let workdir = &page.items[0].workdir;
    assert!(workdir.contains(".neocode/worktrees/run-"), "{workdir}");
    assert!(git(&env.workdir, &["worktree", "list"]).contains(workdir.as_str()));
}
