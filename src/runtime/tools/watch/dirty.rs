//! From `inotify` events to what changed: the folders to list again and the files an event
//! named ([`Dirty`]), the change list of a command, and the watcher's lists kept current.

use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::os::fd::AsRawFd;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::runtime::tools::fingerprint;
use crate::session::{CommandChange, FileChange};

/// When the fast path gives up.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    /// Folders watched at most (more: the full fingerprint instead).
    pub(crate) watches: usize,
    /// Events read at most at once (more: "too many changes to list", or a fresh walk).
    pub(crate) events: usize,
}

pub(crate) const LIMITS: Limits = Limits {
    watches: 20_000,
    events: 100_000,
};

/// What happens to a folder's entries that is reported.
pub(super) const MASK: u32 = libc::IN_CREATE
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

pub(crate) struct Watched {
    /// A number of its own (from 1), which the snapshot's state remembers.
    pub(super) id: u64,
    pub(super) root: PathBuf,
    pub(super) home: Option<PathBuf>,
    pub(super) fd: OwnedFd,
    /// Each watch's folder, relative to the root (`""`: the root).
    pub(super) dirs: HashMap<i32, Box<str>>,
    /// Watches taken off (their last events are ignored).
    pub(super) retired: HashSet<i32>,
    /// Every file of the workspace, relative to the root, sorted.
    pub(super) files: Vec<Box<str>>,
    pub(super) limits: Limits,
    /// What may have changed since the last snapshot (`None`: no snapshot yet).
    pub(super) since_snapshot: Option<Dirty>,
}

/// The folders whose entries the events name.
#[derive(Default, Debug, Clone)]
pub(crate) struct Dirty {
    /// Folders whose direct files are compared again.
    pub shallow: HashSet<Box<str>>,
    /// Folders compared whole; `true` when their content was not watched (created, moved,
    /// deleted), so a file there before and after is reported modified.
    pub deep: Vec<(Box<str>, bool)>,
    /// Files an event named.
    pub touched: HashSet<Box<str>>,
    /// Folders moved away (or renamed): their watches no longer see what their path holds.
    pub moved: Vec<Box<str>>,
}

/// `path` is `dir` or inside it (`""` is the root).
pub(crate) fn under(path: &str, dir: &str) -> bool {
    dir.is_empty()
        || path
            .strip_prefix(dir)
            .is_some_and(|r| r.is_empty() || r.starts_with('/'))
}

fn parent(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

impl Dirty {
    pub(crate) fn holds(&self, file: &str) -> bool {
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

    /// Whether the content of `file` may differ from what it was before these events: an
    /// event named it, or its folder was not watched through them.
    pub(crate) fn may_have_changed(&self, file: &str) -> bool {
        self.touched.contains(file) || self.deep.iter().any(|(d, _)| under(file, d))
    }

    /// Whether something inside the folder `dir` (at any depth; `""` is the root) may differ
    /// from what it was before these events.
    pub(crate) fn dir_may_have_changed(&self, dir: &str) -> bool {
        self.shallow.iter().any(|s| under(s, dir))
            || self
                .deep
                .iter()
                .any(|(d, _)| under(d, dir) || under(dir, d))
            || self.touched.iter().any(|t| under(t, dir))
    }

    /// Adds what `other` names.
    pub(crate) fn merge(&mut self, other: &Dirty) {
        self.shallow.extend(other.shallow.iter().cloned());
        self.deep.extend(other.deep.iter().cloned());
        self.touched.extend(other.touched.iter().cloned());
        self.moved.extend(other.moved.iter().cloned());
    }

    fn is_empty(&self) -> bool {
        self.shallow.is_empty() && self.deep.is_empty() && self.moved.is_empty()
    }
}

/// The files (and the folders inside deep ones) of the dirty folders now.
pub(crate) struct Listing {
    pub files: Vec<Box<str>>,
    pub dirs: Vec<Box<str>>,
}

impl Watched {
    /// Every event queued since the last look; `None` when one may be lost.
    pub(crate) fn dirty(&mut self) -> Option<Dirty> {
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
                if seen > self.limits.events {
                    return None;
                }
                self.note(&mut d, ev.wd, ev.mask, name)?;
            }
        }
        Some(d)
    }

    fn note(&mut self, d: &mut Dirty, wd: i32, mask: u32, name: &[u8]) -> Option<()> {
        if mask & (libc::IN_Q_OVERFLOW | libc::IN_UNMOUNT) != 0 {
            return None;
        }
        if mask & libc::IN_IGNORED != 0 {
            // The kernel dropped the watch (its folder is gone, or we removed it).
            self.dirs.remove(&wd);
            return Some(());
        }
        if self.retired.contains(&wd) {
            return Some(());
        }
        let dir = self.dirs.get(&wd)?.clone();
        if mask & (libc::IN_DELETE_SELF | libc::IN_MOVE_SELF) != 0 {
            if dir.is_empty() {
                return None;
            }
            d.deep.push((dir, true));
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
            if mask & libc::IN_MOVED_FROM != 0 {
                d.moved.push(path.clone());
            }
            d.deep.push((path, true));
        } else if name == ".gitignore" || name == ".ignore" {
            // What is ignored below may have changed: the whole folder is listed again.
            d.deep.push((dir, false));
            d.touched.insert(path);
        } else {
            d.shallow.insert(dir);
            d.touched.insert(path);
        }
        Some(())
    }

    /// The files of the dirty folders before (from the lists) and now, compared.
    pub(crate) fn changes(
        &self,
        root: &Path,
        d: &Dirty,
        now: &Listing,
        before_tree: Option<&str>,
    ) -> Vec<FileChange> {
        use std::cmp::Ordering;
        let was: Vec<&str> = self
            .files
            .iter()
            .map(AsRef::as_ref)
            .filter(|f| d.holds(f))
            .collect();
        let mut out = Vec::new();
        let (mut old, mut new) = (was.iter().peekable(), now.files.iter().peekable());
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

    /// The dirty folders' files now (the same walk, pruned to them), sorted, and the folders
    /// inside deep ones.
    pub(crate) fn now(&self, root: &Path, home: Option<&Path>, d: &Dirty) -> Listing {
        if d.is_empty() {
            return Listing {
                files: Vec::new(),
                dirs: Vec::new(),
            };
        }
        let scope = Dirty {
            shallow: d.shallow.clone(),
            deep: d.deep.clone(),
            touched: HashSet::new(),
            moved: Vec::new(),
        };
        let base = root.to_path_buf();
        let mut files: Vec<Box<str>> = Vec::new();
        let mut dirs: Vec<Box<str>> = Vec::new();
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
            let Ok(r) = e.path().strip_prefix(root) else {
                continue;
            };
            let r: Box<str> = r.to_string_lossy().into();
            if e.file_type().is_some_and(|t| t.is_dir()) {
                if e.depth() > 0 && d.deep.iter().any(|(p, _)| under(&r, p)) {
                    dirs.push(r);
                }
            } else if e.depth() > 0 {
                files.push(r);
            }
        }
        files.sort_unstable();
        Listing { files, dirs }
    }

    /// Makes the lists what the workspace holds now, given the events `d` and the dirty
    /// folders' listing `now`: files replaced in the dirty folders, watches taken off folders
    /// moved away and put on folders created or moved in. `None` when the watches cannot be
    /// kept (the limit, a watch refused): the watcher is then dropped.
    pub(crate) fn apply(&mut self, root: &Path, d: &Dirty, now: Listing) -> Option<()> {
        for m in &d.moved {
            let gone: Vec<i32> = self
                .dirs
                .iter()
                .filter(|(_, p)| under(p, m))
                .map(|(wd, _)| *wd)
                .collect();
            for wd in gone {
                // SAFETY: removes one of our watches from our descriptor.
                unsafe { libc::inotify_rm_watch(self.fd.as_raw_fd(), wd) };
                self.dirs.remove(&wd);
                self.retired.insert(wd);
            }
        }
        self.files.retain(|f| !d.holds(f));
        self.files.extend(now.files);
        self.files.sort_unstable();
        self.files.dedup();
        let mut paths: HashMap<Box<str>, i32> =
            self.dirs.iter().map(|(wd, p)| (p.clone(), *wd)).collect();
        for dir in now.dirs {
            if paths.contains_key(&dir) && !d.moved.iter().any(|m| under(&dir, m)) {
                continue;
            }
            let c = CString::new(root.join(&*dir).as_os_str().as_bytes()).ok()?;
            // SAFETY: `c` is a valid NUL-terminated path for the call's duration.
            let wd = unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), c.as_ptr(), MASK) };
            if wd < 0 {
                // Gone again since it was listed: its parent's events say so.
                if std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOENT) {
                    continue;
                }
                return None;
            }
            self.retired.remove(&wd);
            self.dirs.insert(wd, dir.clone());
            paths.insert(dir, wd);
        }
        (self.dirs.len() <= self.limits.watches).then_some(())
    }
}
