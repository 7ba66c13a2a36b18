//! Git as the tests run it: a test identity and no global or system config, so a developer's
//! own settings never change what a test sees.

use std::path::Path;
use std::process::Command;

/// Runs git in `dir` as the test identity, asserting it succeeds; its stdout.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Makes `dir` a repository with one commit (README.md).
pub(crate) fn repo(dir: &Path) {
    std::fs::write(dir.join("README.md"), "hello\n").unwrap();
    git(dir, &["init", "-q"]);
    git(dir, &["add", "README.md"]);
    git(dir, &["commit", "-qm", "first"]);
}
