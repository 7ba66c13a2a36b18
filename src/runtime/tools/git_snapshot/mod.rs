//! Inside a git work tree, the working tree before a command as a tree object, so a rewind
//! can restore what the command changed.
//!
//! neocode writes the snapshot itself (`objects.rs`): it hashes the workspace's files (those
//! the change walk lists: ignore files honoured, `.git` and neocode's home left out) and
//! stores the blobs and trees as loose objects in the repository's object folder. No `git`
//! program runs for it, so nothing a repository or a command configures — filters named by
//! `.gitattributes`, `config.worktree`, fsmonitor, hooks, `core.*` programs, includes — can
//! run outside the box, whatever any config file says, and neocode's environment reaches no
//! program. The user's index, branches, stash and working tree are never touched; the
//! index is only read, as a stat cache (`index.rs`).
//!
//! A snapshot is written only when `<root>/.git` is a real folder (not a symlink, not a
//! `gitdir:` file) with no `commondir` redirecting its objects, in a SHA-1 repository;
//! every open goes beneath the root without following a symlink, so the objects land in
//! that folder or nowhere. Otherwise there is no snapshot, and the command's changes stay
//! "not restorable".
//!
//! Reading a snapshot back (a rewind, run by the user) uses `git ls-tree`/`cat-file` with a
//! clean environment and every program-running setting overridden ([`read`]).

mod index;
mod objects;
mod tree;

use std::io::Read as _;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use super::path::Beneath;
use objects::Store;

/// Config and index files are read up to this size.
const CONTROL_LIMIT: u64 = 256 << 20;

/// The repository's folder `<root>/.git`, when a snapshot may be written or read: a real
/// folder beneath the root whose objects are its own.
fn git_dir(b: &Beneath) -> Option<OwnedFd> {
    let git = b
        .open_rel(".git", libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .ok()?;
    let exists = |name: &std::ffi::CStr| {
        // SAFETY: `st` is written by the kernel; `git` is an open folder descriptor.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        unsafe {
            libc::fstatat(
                git.as_raw_fd(),
                name.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            ) == 0
        }
    };
    // A linked worktree's or redirected repository's common folder is elsewhere.
    (!exists(c"commondir")).then_some(git)
}

/// A control file of the repository (no symlink followed), up to [`CONTROL_LIMIT`] bytes,
/// and its stat.
fn control_file(git: &OwnedFd, name: &str) -> Option<(Vec<u8>, std::fs::Metadata)> {
    let mut f = super::path::open_in(git, name).ok()?;
    let meta = f.metadata().ok().filter(std::fs::Metadata::is_file)?;
    let mut data = Vec::new();
    (&mut f).take(CONTROL_LIMIT).read_to_end(&mut data).ok()?;
    Some((data, meta))
}

/// Whether git could store a file's content converted (so the index's blob is not its
/// bytes): attributes naming filters or line endings, or `autocrlf`/`eol` in a config.
fn may_convert(root: &Path, git: &OwnedFd, files: &[&str], config: &[u8]) -> bool {
    let words = |text: &[u8], list: &[&str]| {
        let t = String::from_utf8_lossy(text).to_ascii_lowercase();
        list.iter().any(|w| t.contains(w))
    };
    const ATTRIBUTES: &[&str] = &[
        "filter", "eol", "crlf", "ident", "encoding", " text", "\ttext",
    ];
    if words(config, &["autocrlf", "eol"]) {
        return true;
    }
    if control_file(git, "info/attributes").is_some_and(|(d, _)| words(&d, ATTRIBUTES)) {
        return true;
    }
    let global = std::env::var_os("HOME").map(|h| Path::new(&h).join(".gitconfig"));
    if global
        .and_then(|g| std::fs::read(g).ok())
        .is_some_and(|d| words(&d, &["autocrlf", "eol", "attributesfile"]))
    {
        return true;
    }
    files
        .iter()
        .filter(|f| **f == ".gitattributes" || f.ends_with("/.gitattributes"))
        .any(|f| std::fs::read(root.join(f)).map_or(true, |d| words(&d, ATTRIBUTES)))
}

/// The tree of `root`'s files `files` (relative, sorted, as the change walk lists them) now,
/// written into the repository's object folder; `None` outside a git work tree's top level,
/// in a repository neocode does not write into (see the module comment), or when a file
/// cannot be read. The caller, a watcher of the workspace (`watcher`, a number of its own;
/// 0: none), says which files (`file_changed`) and folders (`dir_changed`: something inside
/// it, at any depth) may have changed since its last snapshot of this root; what did not is
/// taken from that snapshot without even a `stat` (`tree.rs`).
pub(crate) fn snapshot(
    root: &Path,
    files: &[&str],
    watcher: u64,
    file_changed: &dyn Fn(&str) -> bool,
    dir_changed: &dyn Fn(&str) -> bool,
) -> Option<String> {
    let b = Beneath::open(root).ok()?;
    let git = git_dir(&b)?;
    let config = control_file(&git, "config")
        .map(|(d, _)| d)
        .unwrap_or_default();
    if String::from_utf8_lossy(&config)
        .to_ascii_lowercase()
        .contains("objectformat")
    {
        return None;
    }
    let objects = b
        .open_rel(
            ".git/objects",
            libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW,
        )
        .ok()?;
    let index = || read_index(root, &git, files, &config);
    let oid = tree::Snapshot {
        root,
        watcher,
        beneath: &b,
        store: &Store::new(objects),
        file_changed,
        dir_changed,
        index: &index,
    }
    .take(files)?;
    Some(objects::hex(&oid))
}

/// The user's index as a stat cache, unless git could convert a file's bytes.
fn read_index(root: &Path, git: &OwnedFd, files: &[&str], config: &[u8]) -> Option<index::Index> {
    if may_convert(root, git, files, config) {
        return None;
    }
    let (data, meta) = control_file(git, "index")?;
    index::parse(&data, (meta.mtime(), meta.mtime_nsec()))
}

/// The `git` program, looked up once on neocode's `PATH`.
pub(crate) fn git_program() -> Option<&'static Path> {
    static GIT: OnceLock<Option<PathBuf>> = OnceLock::new();
    GIT.get_or_init(|| {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .map(|d| d.join("git"))
            .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.mode() & 0o111 != 0))
    })
    .as_deref()
}

/// `git` reading the repository of `root` and nothing else: no environment but git's own
/// switches (no secret, no `PATH`, no `HOME`), no system or global config, the repository
/// and work tree named explicitly, no lazy fetch, no replace refs, and every setting that
/// names a program overridden on the command line (which beats every config file).
fn hardened_git(root: &Path) -> Result<Command, SnapshotError> {
    let b = Beneath::open(root).map_err(SnapshotError::Workspace)?;
    if git_dir(&b).is_none() {
        return Err(SnapshotError::GitDirMoved);
    }
    let mut c = safe_git(root)?;
    c.env("GIT_DIR", root.join(".git"))
        .env("GIT_WORK_TREE", root)
        .stderr(Stdio::null());
    Ok(c)
}

/// `git` run in `dir` (the repository found from there) with the hardening of
/// [`hardened_git`] but the repository not named: no environment but git's own switches, no
/// system or global config, and every setting that names a program overridden on the command
/// line. Filter drivers a repository's config names are not covered (their names are the
/// config's): a caller that writes or reads work-tree files turns them off by name.
pub(crate) fn safe_git(dir: &Path) -> Result<Command, SnapshotError> {
    let program = git_program().ok_or(SnapshotError::NoGit)?;
    let mut c = Command::new(program);
    c.env_clear()
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_NO_LAZY_FETCH", "1")
        .env("GIT_NO_REPLACE_OBJECTS", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("LC_ALL", "C")
        .current_dir(dir)
        .stdin(Stdio::null());
    for setting in [
        "core.fsmonitor=false",
        "core.hooksPath=/dev/null",
        "core.pager=cat",
        "core.sshCommand=false",
        "core.askPass=false",
        "core.editor=false",
        "core.alternateRefsCommand=false",
        "core.untrackedCache=false",
        "credential.helper=",
        "protocol.allow=never",
        "gc.auto=0",
        "maintenance.auto=false",
        "diff.external=",
    ] {
        c.arg("-c").arg(setting);
    }
    c.arg("--no-pager").arg("--literal-pathspecs");
    Ok(c)
}

/// Why a file could not be read from a snapshot; the message is one line of a rewind's
/// report.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SnapshotError {
    #[error("cannot open the workspace: {0}")]
    Workspace(std::io::Error),
    #[error("the workspace's .git is no longer a folder of its own, so git is not run there")]
    GitDirMoved,
    #[error("git is not installed (not on PATH)")]
    NoGit,
    #[error("cannot run git: {0}")]
    Run(std::io::Error),
    #[error("git cannot read the snapshot taken before the command")]
    Tree,
    #[error("the snapshot holds something other than a file there")]
    NotAFile,
    #[error("git cannot read the file's content in the snapshot")]
    Blob,
}

impl From<SnapshotError> for String {
    fn from(e: SnapshotError) -> String {
        e.to_string()
    }
}

/// `path` in `tree`: its bytes and mode (`None`: not in the tree — the command created it),
/// or why git cannot read it.
pub(crate) fn read(
    root: &Path,
    tree: &str,
    path: &str,
) -> Result<Option<(Vec<u8>, u32)>, SnapshotError> {
    let listed = hardened_git(root)?
        .args(["ls-tree", "-z", tree, "--", path])
        .output()
        .map_err(SnapshotError::Run)?;
    if !listed.status.success() {
        return Err(SnapshotError::Tree);
    }
    // `<mode> blob <object>\t<path>\0`
    let line = String::from_utf8_lossy(&listed.stdout);
    let Some(entry) = line.split('\0').find(|l| !l.is_empty()) else {
        return Ok(None);
    };
    let mut fields = entry.split_whitespace();
    let (Some(mode), Some("blob"), Some(object)) = (fields.next(), fields.next(), fields.next())
    else {
        return Err(SnapshotError::NotAFile);
    };
    let mode = if mode == "100755" { 0o755 } else { 0o644 };
    let blob = hardened_git(root)?
        .args(["cat-file", "blob", object])
        .output()
        .map_err(SnapshotError::Run)?;
    if !blob.status.success() {
        return Err(SnapshotError::Blob);
    }
    Ok(Some((blob.stdout, mode)))
}

/// The paths (relative to `root`) staged in the user's index — `git add`ed, differing from
/// `HEAD` — when `root` is a git work tree's top level; empty otherwise or when git fails.
/// Compares the index with `HEAD` only (no working-tree file is read, so no filter runs),
/// through the same hardened `git` as [`read`].
pub(crate) fn staged(root: &Path) -> Vec<String> {
    let Ok(mut c) = hardened_git(root) else {
        return Vec::new();
    };
    let Ok(o) = c
        .args([
            "diff",
            "--cached",
            "--name-only",
            "--no-renames",
            "--no-ext-diff",
            "--no-textconv",
            "-z",
        ])
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A new empty repository: the folder that holds it, and its path (canonical).
    fn repo() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        git(&root, None, &["init", "-q"]);
        (dir, root)
    }

    fn git(dir: &Path, index: Option<&Path>, args: &[&str]) -> String {
        let mut c = Command::new("git");
        c.arg("-C").arg(dir).args(args);
        if let Some(i) = index {
            c.env("GIT_INDEX_FILE", i);
        }
        let o = c
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
        String::from_utf8(o.stdout).unwrap().trim().to_string()
    }

    fn put(root: &Path, rel: &str, data: &str, mode: u32) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, data).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// Every file below `root` but `.git`, relative and sorted (what the change walk gives).
    fn files(root: &Path) -> Vec<String> {
        fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let p = e.path();
                if e.file_name() == ".git" {
                    continue;
                }
                if e.file_type().unwrap().is_dir() {
                    walk(root, &p, out);
                } else {
                    out.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
                }
            }
        }
        let mut out = Vec::new();
        walk(root, root, &mut out);
        out.sort();
        out
    }

    fn ours(root: &Path) -> Option<String> {
        let f = files(root);
        let refs: Vec<&str> = f.iter().map(String::as_str).collect();
        snapshot(root, &refs, 0, &|_: &str| true, &|_: &str| true)
    }

    #[test]
    fn the_tree_is_the_one_git_add_and_write_tree_make() {
        let (_dir, root) = repo();
        put(&root, "a.txt", "alpha\n", 0o644);
        put(&root, "a-b", "dash\n", 0o644);
        put(&root, "a.b/x", "dot folder\n", 0o644);
        put(&root, "a/b.sh", "#!/bin/sh\necho\n", 0o755);
        put(&root, "a/deep/c", "c\n", 0o600);
        std::os::unix::fs::symlink("a.txt", root.join("link")).unwrap();
        let big: String = (0..200_000).map(|i| format!("line {i}\n")).collect();
        put(&root, "big.txt", &big, 0o644);
        git(&root, None, &["add", "-A"]);
        git(&root, None, &["commit", "-qm", "one"]);
        // Changed after the commit (the index is stale for it), and a new untracked file.
        put(&root, "a.txt", "alpha two\n", 0o644);
        put(&root, "new/untracked", "u\n", 0o644);
        let index_before = std::fs::read(root.join(".git/index")).unwrap();
        let tree = ours(&root).expect("a snapshot");
        let elsewhere = tempfile::tempdir().unwrap();
        let scratch = elsewhere.path().join("scratch-index");
        std::fs::copy(root.join(".git/index"), &scratch).unwrap();
        git(&root, Some(&scratch), &["add", "-A"]);
        let theirs = git(&root, Some(&scratch), &["write-tree"]);
        assert_eq!(
            tree,
            theirs,
            "ours:\n{}\ngit's:\n{}",
            git(&root, None, &["ls-tree", "-r", "-t", &tree]),
            git(&root, None, &["ls-tree", "-r", "-t", &theirs])
        );
        assert_eq!(
            std::fs::read(root.join(".git/index")).unwrap(),
            index_before,
            "the user's index is untouched"
        );
        // The objects are whole: git checks and reads them.
        git(&root, None, &["fsck", "--no-dangling", "--strict"]);
        assert_eq!(
            read(&root, &tree, "a.txt").unwrap(),
            Some((b"alpha two\n".to_vec(), 0o644))
        );
        assert_eq!(
            read(&root, &tree, "big.txt").unwrap().unwrap().0,
            big.as_bytes()
        );
        assert_eq!(read(&root, &tree, "a/b.sh").unwrap().unwrap().1, 0o755);
        assert_eq!(read(&root, &tree, "absent").unwrap(), None);
        // A second snapshot of the same files is the same tree (hashed files are cached).
        assert_eq!(ours(&root).as_deref(), Some(tree.as_str()));
    }

    #[test]
    fn a_repository_elsewhere_or_redirected_gets_no_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let outside = base.join("outside");
        git(&base, None, &["init", "-q", "outside"]);
        let before = files(&outside.join(".git/objects"));
        // A `.git` file naming a repository outside.
        let ws = base.join("ws");
        put(&ws, "a.txt", "a\n", 0o644);
        std::fs::write(
            ws.join(".git"),
            format!("gitdir: {}\n", outside.join(".git").display()),
        )
        .unwrap();
        assert_eq!(ours(&ws), None);
        // A `.git` symlink to it.
        std::fs::remove_file(ws.join(".git")).unwrap();
        std::os::unix::fs::symlink(outside.join(".git"), ws.join(".git")).unwrap();
        assert_eq!(ours(&ws), None);
        // A repository whose `commondir` names it.
        std::fs::remove_file(ws.join(".git")).unwrap();
        git(&ws, None, &["init", "-q"]);
        std::fs::write(
            ws.join(".git/commondir"),
            outside.join(".git").display().to_string(),
        )
        .unwrap();
        assert_eq!(ours(&ws), None);
        // An objects folder that is a symlink to it.
        std::fs::remove_file(ws.join(".git/commondir")).unwrap();
        std::fs::rename(ws.join(".git/objects"), ws.join(".git/objects-real")).unwrap();
        std::os::unix::fs::symlink(outside.join(".git/objects"), ws.join(".git/objects")).unwrap();
        assert_eq!(ours(&ws), None);
        assert_eq!(
            files(&outside.join(".git/objects")),
            before,
            "nothing was written outside"
        );
    }

    #[test]
    fn converting_attributes_make_every_file_hashed_from_its_bytes() {
        let (_dir, root) = repo();
        put(&root, "a.txt", "crlf\r\n", 0o644);
        put(&root, ".gitattributes", "*.txt text eol=lf\n", 0o644);
        git(&root, None, &["add", "-A"]);
        git(&root, None, &["commit", "-qm", "one"]);
        // Make the index entry look clean and old enough to be trusted.
        let tree = ours(&root).unwrap();
        let (bytes, _) = read(&root, &tree, "a.txt").unwrap().unwrap();
        assert_eq!(
            bytes, b"crlf\r\n",
            "the snapshot holds the file's bytes, not git's"
        );
    }

    /// The index reader agrees with `git ls-files -s` for versions 2, 3 (an intent-to-add
    /// entry, left out) and 4 (compressed paths), and gives up on a split index.
    #[test]
    fn the_index_reads_as_git_lists_it() {
        let (_dir, root) = repo();
        for i in 0..40 {
            put(
                &root,
                &format!("dir{}/file-{i:02}.rs", i % 3),
                &format!("{i}\n"),
                0o644,
            );
        }
        put(&root, "run.sh", "x", 0o755);
        std::os::unix::fs::symlink("run.sh", root.join("link")).unwrap();
        git(&root, None, &["add", "-A"]);
        put(&root, "later.txt", "n", 0o644);
        git(&root, None, &["add", "-N", "later.txt"]);
        let listed = |root: &Path| -> Vec<(String, String)> {
            git(root, None, &["ls-files", "-s"])
                .lines()
                .filter(|l| !l.ends_with("later.txt"))
                .map(|l| {
                    let (meta, path) = l.split_once('\t').unwrap();
                    (
                        path.to_string(),
                        meta.split(' ').nth(1).unwrap().to_string(),
                    )
                })
                .collect()
        };
        for version in ["3", "4", "2"] {
            if version == "4" {
                git(&root, None, &["rm", "-q", "--cached", "later.txt"]);
            }
            if version != "3" {
                git(&root, None, &["update-index", "--index-version", version]);
            }
            let data = std::fs::read(root.join(".git/index")).unwrap();
            assert_eq!(
                u32::from_be_bytes([data[4], data[5], data[6], data[7]]).to_string(),
                version
            );
            let ix = index::parse(&data, (0, 0)).expect("a plain index");
            let mut got: Vec<(String, String)> = ix
                .entries
                .iter()
                .map(|(p, e)| (p.to_string(), objects::hex(&e.oid)))
                .collect();
            got.sort();
            assert_eq!(got, listed(&root), "index version {version}");
            assert_eq!(ix.entries["run.sh"].mode, 0o100755);
            assert_eq!(ix.entries["link"].mode, 0o120000);
        }
        git(&root, None, &["update-index", "--split-index"]);
        let data = std::fs::read(root.join(".git/index")).unwrap();
        assert!(
            index::parse(&data, (0, 0)).is_none(),
            "a split index is no cache"
        );
    }
}
