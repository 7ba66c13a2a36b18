//! A git worktree neocode makes for a sub-agent (`task` with `worktree: true`) or a whole run
//! (`run --worktree`): a fresh checkout of the workspace's `HEAD` on a branch of its own,
//! made, committed to and removed by neocode's own `git` runs, hardened as the snapshot's
//! reads are ([`safe_git`]): no hook, no fsmonitor, no program a config names, and every
//! filter driver the repository's config declares turned off by name, so a hostile
//! repository's config runs no code when the worktree is checked out, diffed or removed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::git_snapshot::{SnapshotError, safe_git};

/// The author and committer of neocode's own commits.
const IDENTITY: [&str; 4] = [
    "-c",
    "user.name=neocode",
    "-c",
    "user.email=neocode@localhost",
];

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
    create_at(repo, under, name, branch, "HEAD")
}

/// [`create`] with the new branch starting at `start` (a commit) instead of `HEAD`.
pub(crate) fn create_at(
    repo: &Path,
    under: &Path,
    name: &str,
    branch: &str,
    start: &str,
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
    run(
        repo,
        &no_filters,
        [
            "worktree".as_ref(),
            "add".as_ref(),
            "--quiet".as_ref(),
            "-b".as_ref(),
            branch.as_ref(),
            path.as_os_str(),
            start.as_ref(),
        ],
        "worktree add",
    )?;
    Ok(Worktree {
        path,
        branch: branch.to_string(),
        repo: repo.to_path_buf(),
        no_filters,
    })
}

/// The worktree neocode made earlier at `path` on `branch` (of the repository whose work
/// tree is `repo`), to commit to or remove it.
pub(crate) fn open(repo: &Path, path: PathBuf, branch: &str) -> Result<Worktree, WorktreeError> {
    Ok(Worktree {
        no_filters: filters_off(repo)?,
        path,
        branch: branch.to_string(),
        repo: repo.to_path_buf(),
    })
}

impl Worktree {
    /// Commits everything changed in the worktree (new files too, ignore files honoured) on
    /// its branch with `message`, and returns the change as a unified diff (binary files as
    /// git's binary patches); `None` when nothing changed.
    pub(crate) fn commit(&self, message: &str) -> Result<Option<String>, WorktreeError> {
        run(&self.path, &self.no_filters, ["add", "--all"], "add")?;
        let diff = [
            "diff",
            "--cached",
            "--binary",
            "--no-color",
            "--no-textconv",
            "--no-ext-diff",
            "HEAD",
        ];
        let out = run(&self.path, &self.no_filters, diff, "diff")?;
        if out.stdout.is_empty() {
            return Ok(None);
        }
        let tail = [
            "-c",
            "commit.gpgSign=false",
            "commit",
            "--quiet",
            "--no-verify",
            "-m",
        ];
        let args = IDENTITY.iter().chain(&tail).chain([&message]);
        run(&self.path, &self.no_filters, args, "commit")?;
        Ok(Some(String::from_utf8_lossy(&out.stdout).into_owned()))
    }

    /// Removes the worktree's folder (its branch stays).
    pub(crate) fn remove(&self) -> Result<(), WorktreeError> {
        let args = [
            "worktree".as_ref(),
            "remove".as_ref(),
            "--force".as_ref(),
            self.path.as_os_str(),
        ];
        run(&self.repo, &self.no_filters, args, "worktree remove").map(drop)
    }
}

/// A worktree of a repository, as `git worktree list` says it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Listed {
    pub(crate) path: PathBuf,
    /// Its branch (`None` when its `HEAD` is detached).
    pub(crate) branch: Option<String>,
}

/// The linked worktrees of the repository whose work tree is `repo` (not `repo` itself),
/// after `git worktree prune` forgot those whose folder is gone.
pub(crate) fn list(repo: &Path) -> Result<Vec<Listed>, WorktreeError> {
    run(repo, &[], ["worktree", "prune"], "worktree prune")?;
    let out = run(
        repo,
        &[],
        ["worktree", "list", "--porcelain", "-z"],
        "worktree list",
    )?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut found: Vec<Listed> = Vec::new();
    for field in text.split('\0') {
        if let Some(path) = field.strip_prefix("worktree ") {
            found.push(Listed {
                path: PathBuf::from(path),
                branch: None,
            });
        } else if let (Some(b), Some(last)) = (field.strip_prefix("branch "), found.last_mut()) {
            last.branch = Some(b.strip_prefix("refs/heads/").unwrap_or(b).to_string());
        }
    }
    // The first is the main work tree.
    Ok(found.into_iter().skip(1).collect())
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

/// Runs the hardened git ([`git`]) in `dir` with `args`, checked ([`checked`]).
fn run<I, A>(
    dir: &Path,
    no_filters: &[String],
    args: I,
    what: &'static str,
) -> Result<Output, WorktreeError>
where
    I: IntoIterator<Item = A>,
    A: AsRef<std::ffi::OsStr>,
{
    let mut c = git(dir, no_filters)?;
    c.args(args);
    checked(c, what)
}

/// Runs `c`; its output when it succeeded, else its first line on stderr as the error.
fn checked(mut c: Command, what: &'static str) -> Result<Output, WorktreeError> {
    let out = c.output().map_err(WorktreeError::Run)?;
    if out.status.success() {
        return Ok(out);
    }
    Err(WorktreeError::Git {
        what,
        message: first_line(&out.stderr),
    })
}

/// The first line of what git said on stderr, cut at 300 characters.
fn first_line(stderr: &[u8]) -> String {
    String::from_utf8_lossy(stderr)
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("no message")
        .chars()
        .take(300)
        .collect()
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

/// Why a diff could not be applied to a work tree.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ApplyError {
    /// The diff does not apply to these files as they are now (a change of their lines was
    /// applied before, or they were changed since).
    #[error("it conflicts with the work tree in {}", .0.join(", "))]
    Conflict(Vec<String>),
    #[error(transparent)]
    Git(#[from] WorktreeError),
}

/// Whether `repo` is the work tree of a git repository with a commit to start from.
pub(crate) fn has_commit(repo: &Path) -> bool {
    if std::fs::symlink_metadata(repo.join(".git")).is_err() {
        return false;
    }
    let Ok(mut c) = git(repo, &[]) else {
        return false;
    };
    c.args(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"]);
    c.output().is_ok_and(|o| o.status.success())
}

/// A commit of the work tree `repo` as it is now (`HEAD` plus every change, new files that
/// are not ignored too) whose parent is `HEAD`; the repository's index, `HEAD` and branches
/// are left as they are (the tree is built in the index file `scratch`, removed after).
pub(crate) fn snapshot(
    repo: &Path,
    scratch: &Path,
    message: &str,
) -> Result<String, WorktreeError> {
    let no_filters = filters_off(repo)?;
    let with_index = |args: &[&str]| -> Result<Command, WorktreeError> {
        let mut c = git(repo, &no_filters)?;
        c.env("GIT_INDEX_FILE", scratch).args(args);
        Ok(c)
    };
    let _ = std::fs::remove_file(scratch);
    let made = (|| {
        checked(with_index(&["read-tree", "HEAD"])?, "read-tree")?;
        checked(with_index(&["add", "--all"])?, "add")?;
        let tree = checked(with_index(&["write-tree"])?, "write-tree")?;
        let tree = String::from_utf8_lossy(&tree.stdout).trim().to_string();
        let tail = ["commit-tree", &tree, "-p", "HEAD", "-m", message];
        let args = IDENTITY.iter().chain(&tail);
        let out = run(repo, &no_filters, args, "commit-tree")?;
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    })();
    let _ = std::fs::remove_file(scratch);
    made
}

/// Applies `diff` (as [`Worktree::commit`] returns it) to the work tree `repo`, all of it or
/// nothing; the index is not touched.
pub(crate) fn apply(repo: &Path, diff: &str) -> Result<(), ApplyError> {
    use std::io::Write as _;
    let no_filters = filters_off(repo)?;
    let mut c = git(repo, &no_filters)?;
    c.args(["apply", "--whitespace=nowarn", "-"])
        .stdin(Stdio::piped());
    let mut child = c.spawn().map_err(WorktreeError::Run)?;
    if let Some(mut stdin) = child.stdin.take() {
        // A write error shows as git's failure below.
        let _ = stdin.write_all(diff.as_bytes());
    }
    let out = child.wait_with_output().map_err(WorktreeError::Run)?;
    if out.status.success() {
        return Ok(());
    }
    let files = conflicting_files(&String::from_utf8_lossy(&out.stderr));
    if files.is_empty() {
        return Err(WorktreeError::Git {
            what: "apply",
            message: first_line(&out.stderr),
        }
        .into());
    }
    Err(ApplyError::Conflict(files))
}

/// The files `git apply` says it could not patch (`error: patch failed: <file>:<line>`,
/// `error: <file>: patch does not apply`, `error: <file>: already exists ...`).
fn conflicting_files(stderr: &str) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    for line in stderr.lines() {
        let Some(rest) = line.trim().strip_prefix("error: ") else {
            continue;
        };
        let file = match rest.strip_prefix("patch failed: ") {
            Some(at) => at.rsplit_once(':').map_or(at, |(f, _)| f),
            None => match rest.split_once(": ") {
                Some((f, _)) => f,
                None => continue,
            },
        };
        if !files.iter().any(|f| f == file) {
            files.push(file.to_string());
        }
    }
    files
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

    /// A folder holding `repo`, a repository that `script` (run in it) made.
    fn repo_after(script: &str) -> (tempfile::TempDir, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        sh(&repo, script);
        (t, repo)
    }

    #[test]
    fn a_worktree_is_made_committed_to_and_removed() {
        let (t, repo) =
            repo_after("git init -q && echo a > a.txt && git add a.txt && git commit -qm one");
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
    #[test]
    fn a_snapshot_carries_uncommitted_changes_and_diffs_apply_or_conflict() {
        let (t, repo) = repo_after(
            "git init -q && printf 'one\\ntwo\\n' > a.txt && git add a.txt && git commit -qm one",
        );
        assert!(has_commit(&repo));
        std::fs::write(repo.join("new.txt"), "uncommitted\n").unwrap();
        let base = snapshot(&repo, &t.path().join("scratch-index"), "base").unwrap();
        // The repository's own index and HEAD are untouched.
        sh(&repo, "test -z \"$(git diff --cached --name-only)\"");
        let under = t.path().join("wts");
        let w1 = create_at(&repo, &under, "s1", "s1", &base).unwrap();
        let w2 = create_at(&repo, &under, "s2", "s2", &base).unwrap();
        assert!(w1.path.join("new.txt").is_file());
        std::fs::write(w1.path.join("a.txt"), "ONE\ntwo\n").unwrap();
        std::fs::write(w2.path.join("a.txt"), "uno\ntwo\n").unwrap();
        let d1 = w1.commit("s1").unwrap().unwrap();
        let d2 = w2.commit("s2").unwrap().unwrap();
        apply(&repo, &d1).unwrap();
        assert_eq!(
            std::fs::read_to_string(repo.join("a.txt")).unwrap(),
            "ONE\ntwo\n"
        );
        match apply(&repo, &d2) {
            Err(ApplyError::Conflict(files)) => assert_eq!(files, vec!["a.txt".to_string()]),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            std::fs::read_to_string(repo.join("a.txt")).unwrap(),
            "ONE\ntwo\n"
        );
        assert!(!has_commit(t.path()));
    }
}
