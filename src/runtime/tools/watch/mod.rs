//! The fast path of what a command changed (Linux `inotify`): one walk that stats nothing
//! (the folder entries' types are enough) lists the workspace's files and puts a watch on
//! every folder it walked; after a command, only the folders with events are listed again
//! (through the same `ignore` walk, pruned to them) and only their files are compared, so an
//! unchanged workspace costs no second walk at all.
//!
//! The watcher outlives the command: it is kept (one per workspace root and home) for the
//! next command of the process, which first reads the events that came in between (the
//! user's edits, the file tools) and lists again only the folders they name. So only the
//! first command of a process walks the whole workspace, and the rewind snapshot
//! ([`Before::snapshot`]) looks again only at the files an event named since the last one.
//!
//! Whenever this cannot be sure, it says so or falls back to the two full fingerprints of
//! [`super::fingerprint`]: `inotify` unavailable, a watch refused (the user's watch limit),
//! more folders than [`Limits::watches`] or more files than the fingerprint limit -> the full
//! fingerprint is taken before the command instead. A lost event (the kernel's queue
//! overflowed, more events than [`Limits::events`], an event on an unknown watch, the
//! workspace folder itself moved) between commands means a fresh walk; during a command it is
//! only known after it, when there is no full "before" to compare with: the result then says
//! the changes were too many to list, the way a workspace over the fingerprint limit is
//! reported, records none, and the watcher is dropped.

mod dirty;

use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Mutex;

use super::fingerprint::{self, FINGERPRINT_LIMIT, Fingerprint, Found};
use super::git_snapshot;
use crate::session::FileChange;
use dirty::{Dirty, MASK, Watched};
pub(crate) use dirty::{LIMITS, Limits};

/// The result's line when events were lost.
pub(crate) const TOO_MANY: &str = "[files changed by a command: too many changes to list, so what it changed was not recorded; a rewind cannot restore it]\n";

/// The workspace as it was before the command.
pub(crate) enum Before {
    /// Watched: its files' paths, and a watch per folder.
    Watched(Box<Watched>),
    /// The fast path could not be set up: today's full fingerprint.
    Full(Fingerprint),
}

/// Watchers kept between commands, one per workspace root and home.
static KEPT: Mutex<Vec<Watched>> = Mutex::new(Vec::new());

fn take_kept(root: &Path, home: Option<&Path>) -> Option<Watched> {
    let mut kept = KEPT.lock().ok()?;
    let i = kept
        .iter()
        .position(|w| w.root == root && w.home.as_deref() == home)?;
    Some(kept.swap_remove(i))
}

fn keep(w: Watched) {
    if let Ok(mut kept) = KEPT.lock() {
        kept.retain(|k| !(k.root == w.root && k.home == w.home));
        kept.push(w);
    }
}

/// Drops a watcher without waiting: closing an `inotify` descriptor waits for the kernel to
/// free its watches (some milliseconds), so it is done on a thread of its own. If no thread
/// can be started, the watcher is dropped (and the descriptor closed) here.
fn let_go(w: Watched) {
    let _ = std::thread::Builder::new()
        .name("inotify-close".into())
        .spawn(move || drop(w));
}

impl Before {
    /// The rewind snapshot of the workspace now (see [`git_snapshot::snapshot`]): a kept
    /// watcher lets it look again only at the folders and files events named since the
    /// last one.
    pub(crate) fn snapshot(&mut self, root: &Path) -> Option<String> {
        let all = |_: &str| true;
        match self {
            Before::Full(fp) => git_snapshot::snapshot(root, &fp.paths(), 0, &all, &all),
            Before::Watched(w) => {
                let files: Vec<&str> = w.files.iter().map(AsRef::as_ref).collect();
                let tree = match &w.since_snapshot {
                    None => git_snapshot::snapshot(root, &files, w.id, &all, &all),
                    Some(d) => git_snapshot::snapshot(
                        root,
                        &files,
                        w.id,
                        &|f: &str| d.may_have_changed(f),
                        &|dir: &str| d.dir_may_have_changed(dir),
                    ),
                };
                if tree.is_some() {
                    w.since_snapshot = Some(Dirty::default());
                }
                tree
            }
        }
    }
}

/// Takes the "before" of a command in `root`.
pub(crate) fn before(root: &Path, home: Option<&Path>) -> Before {
    before_with(root, home, &LIMITS)
}

pub(crate) fn before_with(root: &Path, home: Option<&Path>, limits: &Limits) -> Before {
    if let Some(mut w) = take_kept(root, home) {
        // What changed since the last command (the user, the file tools): the lists are
        // brought up to date from the events alone.
        if let Some(d) = w.dirty() {
            let now = w.now(root, home, &d);
            if w.apply(root, &d, now).is_some() {
                if let Some(s) = &mut w.since_snapshot {
                    s.merge(&d);
                }
                return Before::Watched(Box::new(w));
            }
        }
        let_go(w);
    }
    match watch(root, home, limits) {
        Some(w) => Before::Watched(Box::new(w)),
        None => Before::Full(fingerprint::take(root, home)),
    }
}

/// What the command changed since `before`, and the line the result ends with. The watcher
/// is kept for the next command unless events were lost.
pub(crate) fn finish(
    before: Before,
    root: &Path,
    home: Option<&Path>,
    before_tree: Option<&str>,
) -> (Vec<FileChange>, String) {
    match before {
        Before::Full(fp) => {
            let after = fingerprint::take(root, home);
            let changed = fingerprint::changes(root, &fp, &after, before_tree);
            let line = fingerprint::report(&fp, &after, &changed, before_tree.is_some());
            (changed, line)
        }
        Before::Watched(mut w) => {
            let Some(d) = w.dirty() else {
                let_go(*w);
                return (Vec::new(), TOO_MANY.to_string());
            };
            let now = w.now(root, home, &d);
            let changed = w.changes(root, &d, &now, before_tree);
            let line = fingerprint::named(&changed, before_tree.is_some());
            if w.apply(root, &d, now).is_some() {
                if let Some(s) = &mut w.since_snapshot {
                    s.merge(&d);
                }
                keep(*w);
            } else {
                let_go(*w);
            }
            (changed, line)
        }
    }
}

/// The walk without stat, then a watch per folder; `None` when any of it fails.
fn watch(root: &Path, home: Option<&Path>, limits: &Limits) -> Option<Watched> {
    let (dirs, mut files) = list(root, home)?;
    if dirs.len() > limits.watches {
        return None;
    }
    files.sort_unstable();
    // SAFETY: plain system call; the descriptor is owned right after.
    let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` is a fresh descriptor nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut map = HashMap::with_capacity(dirs.len());
    for d in dirs {
        let path = root.join(&*d);
        let c = CString::new(path.as_os_str().as_bytes()).ok()?;
        // SAFETY: `c` is a valid NUL-terminated path for the call's duration.
        let wd = unsafe { libc::inotify_add_watch(fd.as_raw_fd(), c.as_ptr(), MASK) };
        if wd < 0 || map.insert(wd, d).is_some() {
            return None;
        }
    }
    static IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    Some(Watched {
        id: IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        root: root.to_path_buf(),
        home: home.map(Path::to_path_buf),
        fd,
        dirs: map,
        retired: HashSet::new(),
        files,
        limits: limits.clone(),
        since_snapshot: None,
    })
}

type Lists = (Vec<Box<str>>, Vec<Box<str>>);

/// Every folder and file of the workspace (relative paths), from the entries' types only;
/// `None` over the fingerprint limit.
fn list(root: &Path, home: Option<&Path>) -> Option<Lists> {
    let (found, seen) = fingerprint::collect(root, home, |entry, rel| {
        let rel: Box<str> = rel.to_string_lossy().into();
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            Found::Kept((true, rel))
        } else {
            Found::Counted((false, rel))
        }
    });
    if seen > FINGERPRINT_LIMIT {
        return None;
    }
    let (dirs, files): (Vec<_>, Vec<_>) = found.into_iter().partition(|(dir, _)| *dir);
    Some((
        dirs.into_iter().map(|(_, p)| p).collect(),
        files.into_iter().map(|(_, p)| p).collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `command` run between the "before" and `finish` in `root`: each change as
    /// "path change", and the result's line.
    fn around(root: &Path, limits: &Limits, command: impl FnOnce()) -> (Vec<String>, String) {
        let before = before_with(root, None, limits);
        command();
        let (changed, line) = finish(before, root, None, None);
        let got = changed
            .iter()
            .map(|c| match c {
                FileChange::ByCommand { path, change, .. } => {
                    format!("{path} {}", change.as_str())
                }
                FileChange::Written { path, .. } => format!("{path} written"),
            })
            .collect();
        (got, line)
    }

    /// `command` run in a fresh [`workspace`] given its root, watched with [`LIMITS`]: what
    /// [`around`] says.
    fn in_workspace(command: impl FnOnce(&Path)) -> (Vec<String>, String) {
        let dir = workspace();
        let root = dir.path();
        around(root, &LIMITS, || command(root))
    }

    /// A workspace of a few folders and files, one folder ignored.
    fn workspace() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in ["src", "src/deep", "ignored", "docs"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join(".gitignore"), "ignored/\n*.log\n").unwrap();
        for f in ["a", "src/b", "src/deep/c", "docs/d", "docs/e", "ignored/i"] {
            std::fs::write(root.join(f), "1").unwrap();
        }
        dir
    }

    #[test]
    fn the_fast_path_is_taken_on_a_small_workspace() {
        let dir = workspace();
        assert!(matches!(
            before_with(dir.path(), None, &LIMITS),
            Before::Watched(_)
        ));
    }

    #[test]
    fn created_modified_in_the_same_second_and_deleted_files_are_told_apart() {
        let (got, line) = in_workspace(|root| {
            // Same size, written right after the walk: only the event tells.
            std::fs::write(root.join("src/b"), "2").unwrap();
            std::fs::remove_file(root.join("docs/d")).unwrap();
            std::fs::write(root.join("src/deep/new"), "n").unwrap();
        });
        assert_eq!(
            got,
            ["docs/d deleted", "src/b modified", "src/deep/new created"]
        );
        assert!(line.contains("not restorable"), "{line}");
        assert!(line.contains("src/b (modified)"), "{line}");
    }

    #[test]
    fn nothing_changed_reports_nothing() {
        let (got, line) = in_workspace(|root| {
            let _ = std::fs::read(root.join("src/b")).unwrap();
        });
        assert!(got.is_empty(), "{got:?}");
        assert_eq!(line, "");
    }

    #[test]
    fn a_rename_is_a_deletion_and_a_creation() {
        let (got, _) = in_workspace(|root| {
            std::fs::rename(root.join("src/b"), root.join("docs/b2")).unwrap();
        });
        assert_eq!(got, ["docs/b2 created", "src/b deleted"]);
    }

    #[test]
    fn a_new_nested_folder_and_a_moved_folder_are_listed_whole() {
        let (got, _) = in_workspace(|root| {
            std::fs::create_dir_all(root.join("new/x/y")).unwrap();
            std::fs::write(root.join("new/top"), "t").unwrap();
            std::fs::write(root.join("new/x/y/z"), "z").unwrap();
            std::fs::rename(root.join("src/deep"), root.join("moved")).unwrap();
            std::fs::write(root.join("moved/later"), "l").unwrap();
            std::fs::remove_dir_all(root.join("docs")).unwrap();
        });
        assert_eq!(
            got,
            [
                "docs/d deleted",
                "docs/e deleted",
                "moved/c created",
                "moved/later created",
                "new/top created",
                "new/x/y/z created",
                "src/deep/c deleted",
            ]
        );
    }

    /// A folder deleted and made again: its new content was not watched, so a file there
    /// before and after is reported modified (it may differ), never missed.
    #[test]
    fn a_folder_made_again_reports_its_files_modified() {
        let (got, _) = in_workspace(|root| {
            std::fs::remove_dir_all(root.join("src/deep")).unwrap();
            std::fs::create_dir(root.join("src/deep")).unwrap();
            std::fs::write(root.join("src/deep/c"), "2").unwrap();
        });
        assert_eq!(got, ["src/deep/c modified"]);
    }

    #[test]
    fn changes_in_ignored_paths_are_not_reported() {
        let (got, line) = in_workspace(|root| {
            std::fs::write(root.join("ignored/i"), "22").unwrap();
            std::fs::write(root.join("ignored/j"), "j").unwrap();
            std::fs::write(root.join("src/run.log"), "log").unwrap();
            std::fs::create_dir(root.join("ignored/sub")).unwrap();
        });
        assert!(got.is_empty(), "{got:?}");
        assert_eq!(line, "");
    }

    #[test]
    fn an_edited_gitignore_lists_its_folder_again() {
        let (got, _) = in_workspace(|root| {
            std::fs::write(root.join(".gitignore"), "docs/\n").unwrap();
        });
        assert_eq!(
            got,
            [
                ".gitignore modified",
                "docs/d deleted",
                "docs/e deleted",
                "ignored/i created"
            ]
        );
    }

    #[test]
    fn too_many_folders_fall_back_to_the_full_fingerprint() {
        let dir = workspace();
        let root = dir.path();
        let tiny = Limits {
            watches: 2,
            events: 10,
        };
        assert!(matches!(before_with(root, None, &tiny), Before::Full(_)));
        let (got, line) = around(root, &tiny, || {
            std::fs::write(root.join("src/b"), "22").unwrap();
            std::fs::write(root.join("docs/new"), "n").unwrap();
        });
        assert_eq!(got, ["docs/new created", "src/b modified"]);
        assert!(line.contains("docs/new (created)"), "{line}");
    }

    #[test]
    fn lost_events_say_too_many_changes_and_record_none() {
        let dir = workspace();
        let root = dir.path();
        let tiny = Limits {
            watches: 100,
            events: 3,
        };
        let (got, line) = around(root, &tiny, || {
            for i in 0..10 {
                std::fs::write(root.join(format!("f{i}")), "x").unwrap();
            }
        });
        assert!(got.is_empty(), "{got:?}");
        assert_eq!(line, TOO_MANY);
    }

    #[test]
    fn the_workspace_itself_moved_says_too_many_changes() {
        let top = tempfile::tempdir().unwrap();
        let root = top.path().join("ws");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(root.join("a"), "1").unwrap();
        let before = before_with(&root, None, &LIMITS);
        std::fs::rename(&root, top.path().join("elsewhere")).unwrap();
        std::fs::create_dir(&root).unwrap();
        let (changed, line) = finish(before, &root, None, None);
        assert!(changed.is_empty());
        assert_eq!(line, TOO_MANY);
    }

    /// The watcher is kept between commands: what the user (or a file tool) changes in
    /// between is not the next command's, and the lists stay right for the commands after.
    #[test]
    fn a_kept_watcher_tells_the_users_changes_from_the_commands() {
        let dir = workspace();
        let root = dir.path();
        let (got, _) = around(root, &LIMITS, || {
            std::fs::write(root.join("src/first"), "1").unwrap();
        });
        assert_eq!(got, ["src/first created"]);
        // Between the commands: the user edits, deletes, makes folders and moves one.
        std::fs::write(root.join("a"), "user").unwrap();
        std::fs::remove_file(root.join("docs/e")).unwrap();
        std::fs::create_dir_all(root.join("made/inner")).unwrap();
        std::fs::write(root.join("made/inner/x"), "x").unwrap();
        std::fs::rename(root.join("src/deep"), root.join("moved")).unwrap();
        let (got, _) = around(root, &LIMITS, || {
            std::fs::write(root.join("docs/d"), "2").unwrap();
        });
        assert_eq!(
            got,
            ["docs/d modified"],
            "the user's changes are not the command's"
        );
        // The lists followed: files the user made or moved are known, by their new paths.
        let (got, _) = around(root, &LIMITS, || {
            std::fs::write(root.join("moved/c"), "3").unwrap();
            std::fs::write(root.join("made/inner/x"), "y").unwrap();
            std::fs::write(root.join("made/inner/new"), "n").unwrap();
            std::fs::remove_file(root.join("a")).unwrap();
        });
        assert_eq!(
            got,
            [
                "a deleted",
                "made/inner/new created",
                "made/inner/x modified",
                "moved/c modified"
            ]
        );
        // A folder moved out of the workspace is not watched any more.
        let out = tempfile::tempdir().unwrap();
        std::fs::rename(root.join("made"), out.path().join("made")).unwrap();
        let (got, _) = around(root, &LIMITS, || {
            std::fs::write(out.path().join("made/inner/x"), "outside").unwrap();
            std::fs::write(root.join("src/b"), "4").unwrap();
        });
        assert_eq!(got, ["src/b modified"]);
    }

    /// The snapshot of a kept watcher looks again at the files events named, and only at
    /// them: a file changed between commands is in the next snapshot with its new bytes.
    #[test]
    fn a_kept_watchers_snapshot_has_the_changes_made_between_commands() {
        let dir = workspace();
        let root = dir.path();
        let git = |args: &[&str]| {
            let o = std::process::Command::new("git")
                .arg("-C")
                .arg(root)
                .args(args)
                .output()
                .unwrap();
            assert!(o.status.success(), "{args:?}");
        };
        git(&["init", "-q"]);
        let mut before = before_with(root, None, &LIMITS);
        let first = before.snapshot(root).unwrap();
        let (_, _) = finish(before, root, None, Some(&first));
        std::fs::write(root.join("src/b"), "between").unwrap();
        std::fs::write(root.join("docs/new"), "new").unwrap();
        std::fs::remove_file(root.join("docs/e")).unwrap();
        std::fs::create_dir_all(root.join("src/deep/deeper")).unwrap();
        std::fs::write(root.join("src/deep/deeper/z"), "z").unwrap();
        let mut before = before_with(root, None, &LIMITS);
        assert!(matches!(before, Before::Watched(ref w) if w.since_snapshot.is_some()));
        let second = before.snapshot(root).unwrap();
        finish(before, root, None, Some(&second));
        assert_ne!(first, second);
        let read = |tree: &str, p: &str| git_snapshot::read(root, tree, p).unwrap().map(|(d, _)| d);
        assert_eq!(read(&second, "src/b"), Some(b"between".to_vec()));
        assert_eq!(read(&second, "docs/new"), Some(b"new".to_vec()));
        assert_eq!(read(&first, "src/b"), Some(b"1".to_vec()));
        assert_eq!(read(&first, "docs/new"), None);
        assert_eq!(read(&second, "src/deep/c"), Some(b"1".to_vec()));
        // The whole tree is the one git makes of the same files (the folders nothing
        // changed in were taken from the first snapshot, the others built again).
        let scratch = tempfile::tempdir().unwrap();
        let theirs = std::process::Command::new("sh")
            .arg("-c")
            .arg("git add -A && git write-tree")
            .current_dir(root)
            .env("GIT_INDEX_FILE", scratch.path().join("index"))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&theirs.stdout).trim(), second);
    }
}
