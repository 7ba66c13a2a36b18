//! `neocode --worktree`: the TUI opens with a fresh git worktree as the workspace of its new
//! sessions, says so on stderr before the screen opens, and at exit commits what changed on
//! the worktree's branch and says where both are. The real binary in a pty, a real repository.

use crate::support::Env;
use neocode::session::ListQuery;
use neocode::testkit::scripted::{Reply, ScriptedServer};

use crate::support::git::{git, repo};

#[test]
fn the_tui_with_worktree_works_in_a_fresh_worktree_and_says_so_before_and_after() {
    let env = Env::new();
    repo(&env.workdir);
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
