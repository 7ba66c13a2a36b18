//! Inside a git work tree, the working tree before a command as a tree object, so a rewind
//! can restore what the command changed. Written with the `git` binary into the repository's
//! object store from a temporary index (a copy of the user's, for its stat cache): the user's
//! index, branches, stash and working tree are never touched. Without git (or when it fails)
//! there is no snapshot, and the command's changes stay "not restorable".

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `git` with the repository of `root` and the temporary index `index` (none: the user's).
fn git(root: &Path, index: Option<&Path>) -> Command {
    let mut c = Command::new("git");
    c.arg("-C")
        .arg(root)
        .args([
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    if let Some(i) = index {
        c.env("GIT_INDEX_FILE", i);
    }
    c
}

/// The temporary index file: removed when dropped.
struct TempIndex(PathBuf);

impl Drop for TempIndex {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        let _ = std::fs::remove_file(self.0.with_extension("lock"));
    }
}

/// The tree of `root`'s working tree now (ignored files left out), or `None` outside a git
/// work tree's top level or when git fails.
pub(crate) fn snapshot(root: &Path) -> Option<String> {
    if !root.join(".git").exists() || !safe_config(root) {
        return None;
    }
    let index = TempIndex(std::env::temp_dir().join(format!(
        "neocode-index-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    )));
    // The user's index as the start: git then rehashes only files whose stat changed.
    let user_index = git(root, None)
        .args(["rev-parse", "--git-path", "index"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())?;
    let user_index = root.join(user_index);
    if user_index.exists() {
        std::fs::copy(&user_index, &index.0).ok()?;
    }
    let added = git(root, Some(&index.0))
        .args(["add", "-A", "--", "."])
        .stdout(Stdio::null())
        .status()
        .ok()?;
    if !added.success() {
        return None;
    }
    let tree = git(root, Some(&index.0)).arg("write-tree").output().ok()?;
    let tree = String::from_utf8_lossy(&tree.stdout).trim().to_string();
    (tree.len() >= 40 && tree.bytes().all(|b| b.is_ascii_hexdigit())).then_some(tree)
}

/// Whether git may be run here outside the sandbox. A command may write the repository's
/// own config (the workspace is writable), and `git add` runs the clean filters and the
/// fsmonitor program a config names: a repository whose local config sets any of them (or
/// includes another file, which could) gets no snapshot, so no command can have code run
/// outside the sandbox this way.
fn safe_config(root: &Path) -> bool {
    let Ok(o) = git(root, None)
        .args([
            "config",
            "--local",
            "--name-only",
            "--get-regexp",
            r"^(filter\.|core\.fsmonitor|include)",
        ])
        .output()
    else {
        return false;
    };
    // Exit 1 with no output: no such key.
    o.status.code() == Some(1) && o.stdout.is_empty()
}

/// `path` in `tree`: its bytes and mode (`None`: not in the tree — the command created it),
/// or an error line when git cannot read it.
pub(crate) fn read(root: &Path, tree: &str, path: &str) -> Result<Option<(Vec<u8>, u32)>, String> {
    let listed = git(root, None)
        .args(["ls-tree", "-z", tree, "--", path])
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !listed.status.success() {
        return Err("git cannot read the snapshot taken before the command".into());
    }
    // `<mode> blob <object>\t<path>\0`
    let line = String::from_utf8_lossy(&listed.stdout);
    let Some(entry) = line.split('\0').find(|l| !l.is_empty()) else {
        return Ok(None);
    };
    let mut fields = entry.split_whitespace();
    let (Some(mode), Some("blob"), Some(object)) = (fields.next(), fields.next(), fields.next())
    else {
        return Err("the snapshot holds something other than a file there".into());
    };
    let mode = if mode == "100755" { 0o755 } else { 0o644 };
    let blob = git(root, None)
        .args(["cat-file", "blob", object])
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !blob.status.success() {
        return Err("git cannot read the file's content in the snapshot".into());
    }
    Ok(Some((blob.stdout, mode)))
}

/// The paths (relative to `root`) staged in the user's index — `git add`ed, differing from
/// `HEAD` — when `root` is a git work tree's top level; empty otherwise or when git fails.
/// Reads the index and `HEAD` only (no filter runs).
pub(crate) fn staged(root: &Path) -> Vec<String> {
    if !root.join(".git").exists() {
        return Vec::new();
    }
    let Ok(o) = git(root, None)
        .args(["diff", "--cached", "--name-only", "--no-renames", "-z"])
        .output()
    else {
        return Vec::new();
    };
    if !o.status.success() {
        return Vec::new();
    }
    String::from_utf8_lossy(&o.stdout)
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}
