//! The fast path of what a command changed (Linux `inotify`): before the command, one walk
//! that stats nothing (the folder entries' types are enough) lists the workspace's files and
//! puts a watch on every folder it walked; after the command, only the folders with events are
//! listed again (through the same `ignore` walk, pruned to them) and only their files are
//! compared, so an unchanged workspace costs no second walk at all.
//!
//! Whenever this cannot be sure, it says so or falls back to the two full fingerprints of
//! [`super::fingerprint`]: `inotify` unavailable, a watch refused (the user's watch limit),
//! more folders than [`Limits::watches`] or more files than the fingerprint limit -> the full
//! fingerprint is taken before the command instead. A lost event (the kernel's queue
//! overflowed, more events than [`Limits::events`], an event on an unknown watch, the
//! workspace folder itself moved) is only known after the command, when there is no full
//! "before" to compare with: the result then says the changes were too many to list, the way
//! a workspace over the fingerprint limit is reported, and records none.

use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Mutex;

use super::fingerprint::{self, FINGERPRINT_LIMIT, Fingerprint};
use crate::session::{CommandChange, FileChange};

/// When the fast path gives up.
pub(crate) struct Limits {
    /// Folders watched at most (more: the full fingerprint instead).
    pub(crate) watches: usize,
    /// Events read at most after one command (more: "too many changes to list").
    pub(crate) events: usize,
}

pub(crate) const LIMITS: Limits = Limits {
    watches: 20_000,
    events: 100_000,
};

/// What happens to a folder's entries that is reported.
const MASK: u32 = libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MODIFY
    | libc::IN_CLOSE_WRITE
    | libc::IN_ATTRIB
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF
    | libc::IN_ONLYDIR
    | libc::IN_DONT_FOLLOW;

/// The result's line when events were lost.
pub(crate) const TOO_MANY: &str = "[files changed by a command: too many changes to list, so what it changed was not recorded; a rewind cannot restore it]\n";

/// The workspace as it was before the command.
pub(crate) enum Before {
    /// Watched: its files' paths, and a watch per folder.
    Watched(Watched),
    /// The fast path could not be set up: today's full fingerprint.
    Full(Fingerprint),
}

pub(crate) struct Watched {
    fd: OwnedFd,
    /// Each watch's folder, relative to the root (`""`: the root).
    dirs: HashMap<i32, Box<str>>,
    /// Every file the walk saw, relative to the root, sorted.
    files: Vec<Box<str>>,
    events: usize,
}

impl Before {
    /// The workspace's files before the command (relative to the root, sorted).
    pub(crate) fn paths(&self) -> Vec<&str> {
        match self {
            Before::Watched(w) => w.files.iter().map(AsRef::as_ref).collect(),
            Before::Full(fp) => fp.paths(),
        }
    }
}

/// Takes the "before" of a command in `root`.
pub(crate) fn before(root: &Path, home: Option<&Path>) -> Before {
    before_with(root, home, &LIMITS)
}

pub(crate) fn before_with(root: &Path, home: Option<&Path>, limits: &Limits) -> Before {
    match watch(root, home, limits) {
        Some(w) => Before::Watched(w),
        None => Before::Full(fingerprint::take(root, home)),
    }
}

/// What the command changed since `before`, and the line the result ends with.
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
        Before::Watched(w) => {
            let out = match w.dirty() {
                None => (Vec::new(), TOO_MANY.to_string()),
                Some(d) => {
                    let changed = w.changes(root, home, &d, before_tree);
                    let line = fingerprint::named(&changed, before_tree.is_some());
                    (changed, line)
                }
            };
            // Closing an inotify descriptor waits for the kernel to free its watches (some
            // milliseconds): done on a thread of its own, so the result does not wait. If no
            // thread can be started, the closure is dropped (and the descriptor closed) here.
            let _ = std::thread::Builder::new()
                .name("inotify-close".into())
                .spawn(move || drop(w));
            out
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
    Some(Watched {
        fd,
        dirs: map,
        files,
        events: limits.events,
    })
}

type Lists = (Vec<Box<str>>, Vec<Box<str>>);

/// Every folder and file of the workspace (relative paths), from the entries' types only;
/// `None` over the fingerprint limit.
fn list(root: &Path, home: Option<&Path>) -> Option<Lists> {
    let all: Mutex<Vec<Lists>> = Mutex::new(Vec::new());
    let seen = std::sync::atomic::AtomicUsize::new(0);
    fingerprint::walk(root, home, |_| true)
        .threads(2)
        .build_parallel()
        .visit(&mut Listers {
            root,
            all: &all,
            seen: &seen,
        });
    if seen.into_inner() > FINGERPRINT_LIMIT {
        return None;
    }
    let (mut dirs, mut files) = (Vec::new(), Vec::new());
    for (d, f) in all
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
    {
        dirs.extend(d);
        files.extend(f);
    }
    Some((dirs, files))
}

struct Lister<'a> {
    root: &'a Path,
    found: Lists,
    all: &'a Mutex<Vec<Lists>>,
    seen: &'a std::sync::atomic::AtomicUsize,
}

impl Drop for Lister<'_> {
    fn drop(&mut self) {
        let found = std::mem::take(&mut self.found);
        self.all
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(found);
    }
}

impl ignore::ParallelVisitor for Lister<'_> {
    fn visit(&mut self, entry: Result<ignore::DirEntry, ignore::Error>) -> ignore::WalkState {
        use std::sync::atomic::Ordering;
        let Ok(entry) = entry else {
            return ignore::WalkState::Continue;
        };
        let Ok(rel) = entry.path().strip_prefix(self.root) else {
            return ignore::WalkState::Continue;
        };
        let rel: Box<str> = rel.to_string_lossy().into();
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            self.found.0.push(rel);
            return ignore::WalkState::Continue;
        }
        if self.seen.fetch_add(1, Ordering::Relaxed) >= FINGERPRINT_LIMIT {
            return ignore::WalkState::Quit;
        }
        self.found.1.push(rel);
        ignore::WalkState::Continue
    }
}

struct Listers<'a> {
    root: &'a Path,
    all: &'a Mutex<Vec<Lists>>,
    seen: &'a std::sync::atomic::AtomicUsize,
}

impl<'s> ignore::ParallelVisitorBuilder<'s> for Listers<'s> {
    fn build(&mut self) -> Box<dyn ignore::ParallelVisitor + 's> {
        Box::new(Lister {
            root: self.root,
            found: Lists::default(),
            all: self.all,
            seen: self.seen,
        })
    }
}

/// The folders whose entries the events name.
#[derive(Default, Debug)]
struct Dirty {
    /// Folders whose direct files are compared again.
    shallow: HashSet<Box<str>>,
    /// Folders compared whole; `true` when their content was not watched (created, moved,
    /// deleted), so a file there before and after is reported modified.
    deep: Vec<(Box<str>, bool)>,
    /// Files an event named.
    touched: HashSet<Box<str>>,
}

/// `path` is `dir` or inside it (`""` is the root).
fn under(path: &str, dir: &str) -> bool {
    dir.is_empty()
        || path
            .strip_prefix(dir)
            .is_some_and(|r| r.is_empty() || r.starts_with('/'))
}

fn parent(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

impl Dirty {
    fn holds(&self, file: &str) -> bool {
        self.shallow.contains(parent(file)) || self.deep.iter().any(|(d, _)| under(file, d))
    }

    /// A folder the pruned walk must enter: a dirty one, one inside a deep one, or one on
    /// the way to either.
    fn enters(&self, dir: &str) -> bool {
        self.deep
            .iter()
            .any(|(d, _)| under(dir, d) || under(d, dir))
            || self.shallow.iter().any(|s| under(s, dir))
    }

    fn unwatched(&self, file: &str) -> bool {
        self.deep.iter().any(|(d, u)| *u && under(file, d))
    }
}

impl Watched {
    /// Every event queued since the watches were set; `None` when one may be lost.
    fn dirty(&self) -> Option<Dirty> {
        const HEADER: usize = std::mem::size_of::<libc::inotify_event>();
        let mut d = Dirty::default();
        let mut buf = vec![0u8; 64 * 1024];
        let mut seen = 0usize;
        loop {
            // SAFETY: `buf` is writable for its length.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            let Ok(n) = usize::try_from(n) else {
                match std::io::Error::last_os_error().kind() {
                    std::io::ErrorKind::WouldBlock => break,
                    std::io::ErrorKind::Interrupted => continue,
                    _ => return None,
                }
            };
            if n == 0 {
                break;
            }
            let mut at = 0;
            while at + HEADER <= n {
                // SAFETY: `HEADER` bytes at `at` are inside `buf`; read unaligned.
                let ev: libc::inotify_event =
                    unsafe { std::ptr::read_unaligned(buf.as_ptr().add(at).cast()) };
                let len = usize::try_from(ev.len).ok()?;
                let name = buf.get(at + HEADER..at + HEADER + len)?;
                let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(len)];
                at += HEADER + len;
                seen += 1;
                if seen > self.events {
                    return None;
                }
                self.note(&mut d, ev.wd, ev.mask, name)?;
            }
        }
        Some(d)
    }

    fn note(&self, d: &mut Dirty, wd: i32, mask: u32, name: &[u8]) -> Option<()> {
        if mask & (libc::IN_Q_OVERFLOW | libc::IN_UNMOUNT) != 0 {
            return None;
        }
        if mask & libc::IN_IGNORED != 0 {
            return Some(());
        }
        let dir = self.dirs.get(&wd)?;
        if mask & (libc::IN_DELETE_SELF | libc::IN_MOVE_SELF) != 0 {
            if dir.is_empty() {
                return None;
            }
            d.deep.push((dir.clone(), true));
            return Some(());
        }
        if name.is_empty() {
            return Some(());
        }
        let name = String::from_utf8_lossy(name);
        let path: Box<str> = if dir.is_empty() {
            name.as_ref().into()
        } else {
            format!("{dir}/{name}").into()
        };
        if mask & libc::IN_ISDIR != 0 {
            d.deep.push((path, true));
        } else if name == ".gitignore" || name == ".ignore" {
            // What is ignored below may have changed: the whole folder is listed again.
            d.deep.push((dir.clone(), false));
            d.touched.insert(path);
        } else {
            d.shallow.insert(dir.clone());
            d.touched.insert(path);
        }
        Some(())
    }

    /// The dirty folders' files before and now, compared.
    fn changes(
        &self,
        root: &Path,
        home: Option<&Path>,
        d: &Dirty,
        before_tree: Option<&str>,
    ) -> Vec<FileChange> {
        use std::cmp::Ordering;
        if d.shallow.is_empty() && d.deep.is_empty() {
            return Vec::new();
        }
        let now = self.now(root, home, d);
        let was: Vec<&str> = self
            .files
            .iter()
            .map(AsRef::as_ref)
            .filter(|f| d.holds(f))
            .collect();
        let mut out = Vec::new();
        let (mut old, mut new) = (was.iter().peekable(), now.iter().peekable());
        let change = |p: &str, c| fingerprint::by_command(root, p, c, before_tree);
        loop {
            let order = match (old.peek(), new.peek()) {
                (None, None) => break,
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (Some(o), Some(n)) => (**o).cmp(n.as_ref()),
            };
            match order {
                Ordering::Less => {
                    if let Some(o) = old.next() {
                        out.push(change(o, CommandChange::Deleted));
                    }
                }
                Ordering::Greater => {
                    if let Some(n) = new.next() {
                        out.push(change(n, CommandChange::Created));
                    }
                }
                Ordering::Equal => {
                    if let (Some(_), Some(n)) = (old.next(), new.next())
                        && (d.touched.contains(n) || d.unwatched(n))
                    {
                        out.push(change(n, CommandChange::Modified));
                    }
                }
            }
        }
        out
    }

    /// The dirty folders' files now (the same walk, pruned to them), sorted.
    fn now(&self, root: &Path, home: Option<&Path>, d: &Dirty) -> Vec<Box<str>> {
        let scope = Dirty {
            shallow: d.shallow.clone(),
            deep: d.deep.clone(),
            touched: HashSet::new(),
        };
        let base = root.to_path_buf();
        let mut out: Vec<Box<str>> = Vec::new();
        let walker = fingerprint::walk(root, home, move |e| {
            let Ok(r) = e.path().strip_prefix(&base) else {
                return false;
            };
            let r = r.to_string_lossy();
            if e.file_type().is_some_and(|t| t.is_dir()) {
                scope.enters(&r)
            } else {
                scope.holds(&r)
            }
        })
        .build();
        for e in walker.flatten() {
            if e.depth() == 0 || e.file_type().is_some_and(|t| t.is_dir()) {
                continue;
            }
            if let Ok(r) = e.path().strip_prefix(root) {
                out.push(r.to_string_lossy().into());
            }
        }
        out.sort_unstable();
        out
    }
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
        let dir = workspace();
        let root = dir.path();
        let (got, line) = around(root, &LIMITS, || {
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
        let dir = workspace();
        let root = dir.path();
        let (got, line) = around(root, &LIMITS, || {
            let _ = std::fs::read(root.join("src/b")).unwrap();
        });
        assert!(got.is_empty(), "{got:?}");
        assert_eq!(line, "");
    }

    #[test]
    fn a_rename_is_a_deletion_and_a_creation() {
        let dir = workspace();
        let root = dir.path();
        let (got, _) = around(root, &LIMITS, || {
            std::fs::rename(root.join("src/b"), root.join("docs/b2")).unwrap();
        });
        assert_eq!(got, ["docs/b2 created", "src/b deleted"]);
    }

    #[test]
    fn a_new_nested_folder_and_a_moved_folder_are_listed_whole() {
        let dir = workspace();
        let root = dir.path();
        let (got, _) = around(root, &LIMITS, || {
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
        let dir = workspace();
        let root = dir.path();
        let (got, _) = around(root, &LIMITS, || {
            std::fs::remove_dir_all(root.join("src/deep")).unwrap();
            std::fs::create_dir(root.join("src/deep")).unwrap();
            std::fs::write(root.join("src/deep/c"), "2").unwrap();
        });
        assert_eq!(got, ["src/deep/c modified"]);
    }

    #[test]
    fn changes_in_ignored_paths_are_not_reported() {
        let dir = workspace();
        let root = dir.path();
        let (got, line) = around(root, &LIMITS, || {
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
        let dir = workspace();
        let root = dir.path();
        let (got, _) = around(root, &LIMITS, || {
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
}
