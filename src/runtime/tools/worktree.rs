//! A git worktree neocode makes for a sub-agent (`task` with `worktree: true`) or a whole run
//! (`run --worktree`): a fresh checkout of the workspace's `HEAD` on a branch of its own,
//! made, committed to and removed by neocode's own `git` runs, hardened as the snapshot's
//! reads are ([`safe_git`]): no hook, no fsmonitor, no program a config names, and every
//! filter driver the repository's config declares turned off by name, so a hostile
//! repository's config runs no code when the worktree is checked out, diffed or removed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::git_snapshot::{SnapshotError, safe_git};

/// A worktree neocode made.
#[derive(Debug, Clone)]
pub(crate) struct Worktree {
    /// Its folder.
    pub(crate) path: PathBuf,
    /// Its branch (`neocode/task-<id>`, `neocode/run-<id>`).
    pub(crate) branch: String,
    /// The repository's work tree it was made from.
    repo: PathBuf,
    /// `-c` settings turning off the repository's filter drivers.
    no_filters: Vec<String>,
}

/// Why a worktree could not be made, committed to or removed: one line for the user.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WorktreeError {
    #[error(
        "{} is not a git repository: a worktree needs one (run without a worktree, or `git init` and commit first)",
        .0.display()
    )]
    NotARepo(PathBuf),
    #[error("git is not installed (not on PATH): a worktree needs it")]
    NoGit,
    #[error("cannot run git: {0}")]
    Run(std::io::Error),
    #[error("cannot make the folder {}: {source}", path.display())]
    Folder {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("git {what} failed: {message}")]
    Git { what: &'static str, message: String },
}

impl From<SnapshotError> for WorktreeError {
    fn from(e: SnapshotError) -> WorktreeError {
        match e {
            SnapshotError::NoGit => WorktreeError::NoGit,
            SnapshotError::Run(e) | SnapshotError::Workspace(e) => WorktreeError::Run(e),
            other => WorktreeError::Git {
                what: "start",
                message: other.to_string(),
            },
        }
    }
}

/// Makes a worktree of the repository whose work tree is `repo`, at `under/<name>` on a new
/// branch `branch` from `HEAD` (what is not committed in `repo` is not in it). `under` gets
/// a `.gitignore` of `*` (when it has none), so a folder inside the repository stays out of
/// its status.
pub(crate) fn create(
    repo: &Path,
    under: &Path,
    name: &str,
    branch: &str,
) -> Result<Worktree, WorktreeError> {
    if std::fs::symlink_metadata(repo.join(".git")).is_err() {
        return Err(WorktreeError::NotARepo(repo.to_path_buf()));
    }
    let folder = |source| WorktreeError::Folder {
        path: under.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(under).map_err(folder)?;
    // The folder ignores itself: the repository's `git status` and the walks never list it.
    let ignore = under.join(".gitignore");
    if !ignore.exists() {
        std::fs::write(&ignore, "*\n").map_err(folder)?;
    }
    let no_filters = filters_off(repo)?;
    let path = under.join(name);
    let mut c = git(repo, &no_filters)?;
    c.args(["worktree", "add", "--quiet", "-b", branch])
        .arg(&path)
        .arg("HEAD");
    checked(c, "worktree add")?;
    Ok(Worktree {
        path,
        branch: branch.to_string(),
        repo: repo.to_path_buf(),
        no_filters,
    })
}

impl Worktree {
    /// Commits everything changed in the worktree (new files too, ignore files honoured) on
    /// its branch with `message`, and returns the change as a unified diff (binary files as
    /// git's binary patches); `None` when nothing changed.
    pub(crate) fn commit(&self, message: &str) -> Result<Option<String>, WorktreeError> {
        let mut add = git(&self.path, &self.no_filters)?;
        add.args(["add", "--all"]);
        checked(add, "add")?;
        let mut diff = git(&self.path, &self.no_filters)?;
        diff.args([
            "diff",
            "--cached",
            "--binary",
            "--no-color",
            "--no-textconv",
            "--no-ext-diff",
            "HEAD",
        ]);
        let out = checked(diff, "diff")?;
        if out.stdout.is_empty() {
            return Ok(None);
        }
        let mut commit = git(&self.path, &self.no_filters)?;
        commit
            .args([
                "-c",
                "user.name=neocode",
                "-c",
                "user.email=neocode@localhost",
            ])
            .args(["-c", "commit.gpgSign=false"])
            .args(["commit", "--quiet", "--no-verify", "-m", message]);
        checked(commit, "commit")?;
        Ok(Some(String::from_utf8_lossy(&out.stdout).into_owned()))
    }

    /// Removes the worktree's folder (its branch stays).
    pub(crate) fn remove(&self) -> Result<(), WorktreeError> {
        let mut c = git(&self.repo, &self.no_filters)?;
        c.args(["worktree", "remove", "--force"]).arg(&self.path);
        checked(c, "worktree remove").map(drop)
    }
}

/// [`safe_git`] in `dir` with `no_filters`.
fn git(dir: &Path, no_filters: &[String]) -> Result<Command, WorktreeError> {
    let mut c = safe_git(dir)?;
    for s in no_filters {
        c.arg("-c").arg(s);
    }
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    Ok(c)
}

/// Runs `c`; its output when it succeeded, else its first line on stderr as the error.
fn checked(mut c: Command, what: &'static str) -> Result<Output, WorktreeError> {
    let out = c.output().map_err(WorktreeError::Run)?;
    if out.status.success() {
        return Ok(out);
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let message = err
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("no message")
        .chars()
        .take(300)
        .collect();
    Err(WorktreeError::Git { what, message })
}

/// `-c` settings emptying every filter driver the repository's config (with its includes)
/// names: an empty `clean`, `smudge` and `process` is no filter, and none is required.
fn filters_off(repo: &Path) -> Result<Vec<String>, WorktreeError> {
    let mut c = git(repo, &[])?;
    c.args(["config", "--null", "--get-regexp", r"^filter\."]);
    let out = c.output().map_err(WorktreeError::Run)?;
    let listed = String::from_utf8_lossy(&out.stdout);
    let mut names: Vec<&str> = listed
        .split('\0')
        .filter_map(|entry| entry.split('\n').next())
        .filter_map(|key| key.strip_prefix("filter."))
        .filter_map(|rest| rest.rsplit_once('.').map(|(name, _)| name))
        .collect();
    names.sort_unstable();
    names.dedup();
    Ok(names
        .iter()
        .flat_map(|n| {
            [
                format!("filter.{n}.clean="),
                format!("filter.{n}.smudge="),
                format!("filter.{n}.process="),
                format!("filter.{n}.required=false"),
            ]
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(dir: &Path, script: &str) {
        let ok = Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .status()
            .unwrap()
            .success();
        assert!(ok, "{script}");
    }

    #[test]
    fn a_worktree_is_made_committed_to_and_removed() {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        sh(
            &repo,
            "git init -q && echo a > a.txt && git add a.txt && git commit -qm one",
        );
        let wt = create(&repo, &t.path().join("wts"), "x1", "neocode/task-x1").unwrap();
        assert!(wt.path.join("a.txt").is_file());
        assert_eq!(wt.commit("nothing").unwrap(), None);
        std::fs::write(wt.path.join("b.txt"), "new\n").unwrap();
        let diff = wt.commit("b").unwrap().unwrap();
        assert!(
            diff.contains("+++ b/b.txt") && diff.contains("+new"),
            "{diff}"
        );
        wt.remove().unwrap();
        assert!(!wt.path.exists());
        assert!(!repo.join("b.txt").exists());
        sh(
            &repo,
            "git rev-parse --verify -q neocode/task-x1 >/dev/null",
        );
    }

    /// The cost of making a worktree (a repository of 200 small files): the median of 10.
    #[test]
    fn making_a_worktree_costs_milliseconds() {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("repo");
        std::fs::create_dir_all(repo.join("src")).unwrap();
        for i in 0..200 {
            std::fs::write(
                repo.join(format!("src/f{i}.rs")),
                format!("fn f{i}() {{}}\n"),
            )
            .unwrap();
        }
        sh(&repo, "git init -q && git add -A && git commit -qm one");
        let mut ms: Vec<f64> = (0..10)
            .map(|i| {
                let start = std::time::Instant::now();
                let wt = create(
                    &repo,
                    &t.path().join("wts"),
                    &format!("m{i}"),
                    &format!("m{i}"),
                )
                .unwrap();
                let took = start.elapsed().as_secs_f64() * 1000.0;
                assert!(wt.path.join("src/f199.rs").is_file());
                took
            })
            .collect();
        ms.sort_by(f64::total_cmp);
        println!(
            "worktree creation: median {:.1} ms of 10 (200 files)",
            ms[5]
        );
        assert!(ms[5] < 5000.0, "{ms:?}");
    }

    #[test]
    fn outside_a_repository_it_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let e = create(t.path(), &t.path().join("wts"), "x", "b").unwrap_err();
        assert!(e.to_string().contains("not a git repository"), "{e}");
    }
}
