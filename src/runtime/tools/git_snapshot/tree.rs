//! The snapshot's tree, built folder by folder: a folder in which nothing changed since the
//! last snapshot of this root (the watcher says so) keeps its tree id, so a command in an
//! unchanged workspace of 10,000 files hashes nothing; in a changed folder, a file keeps its
//! blob id when an earlier snapshot or the user's index says its `lstat` is the same, and is
//! read and hashed otherwise.

use std::collections::{HashMap, HashSet};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::index::{self, Index};
use super::objects::{self, Oid, Store, TreeEntry};
use crate::runtime::tools::path::Beneath;

/// Bytes hashed for one snapshot at most: past it there is no snapshot (the command's
/// changes are "not restorable") rather than a command that waits on gigabytes.
const HASH_BUDGET: u64 = 256 << 20;

/// What `lstat` said about a file, as far as a cache compares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stat {
    mtime: (i64, i64),
    ctime: (i64, i64),
    ino: u64,
    size: u64,
    mode: u32,
}

impl Stat {
    /// The git mode of a regular file or symlink (`None`: neither, not snapshotted).
    pub(super) fn git_mode(&self) -> Option<u32> {
        match self.mode & libc::S_IFMT {
            libc::S_IFLNK => Some(0o120000),
            libc::S_IFREG if self.mode & 0o100 != 0 => Some(0o100755),
            libc::S_IFREG => Some(0o100644),
            _ => None,
        }
    }

    /// Whether the index `entry` describes this file (the comparison `git add` makes).
    fn matches(&self, e: &index::Entry) -> bool {
        let low = |v: i64| v as u32;
        low(self.mtime.0) == e.mtime.0
            && low(self.mtime.1) == e.mtime.1
            && low(self.ctime.0) == e.ctime.0
            && low(self.ctime.1) == e.ctime.1
            && self.ino as u32 == e.ino
            && self.size as u32 == e.size
            && self.git_mode() == Some(e.mode)
    }
}

/// What earlier snapshots of this process learnt about one workspace root: each file's stat
/// and blob id with when its content was known (a file whose stat is unchanged, and was at
/// least a second old then, is not read again), each folder's tree, and the trees known to
/// be stored.
#[derive(Default)]
struct Known {
    /// The watcher whose snapshot this is (0: none): only its "what may have changed" is
    /// measured from this state.
    watcher: u64,
    files: HashMap<Box<str>, (Stat, Oid, (i64, i64))>,
    trees: HashMap<Box<str>, Oid>,
    stored: HashSet<Oid>,
}

static KNOWN: Mutex<Vec<(PathBuf, Known)>> = Mutex::new(Vec::new());

/// One snapshot of `root`: how to read and where to write, and what may have changed since
/// the last one taken for the same `watcher` (`file_changed`: this file; `dir_changed`:
/// something inside this folder, at any depth). For any other watcher (or none, 0) every
/// file is looked at again (`lstat`, still no read when it is unchanged).
pub(super) struct Snapshot<'a> {
    pub root: &'a Path,
    pub watcher: u64,
    pub beneath: &'a Beneath,
    pub store: &'a Store,
    pub file_changed: &'a dyn Fn(&str) -> bool,
    pub dir_changed: &'a dyn Fn(&str) -> bool,
    /// The user's index as a stat cache (read only when a file needs it).
    pub index: &'a dyn Fn() -> Option<Index>,
}

/// `p` lies inside the folder `dir` (not the root).
fn inside(p: &str, dir: &str) -> bool {
    p.len() > dir.len() && p.starts_with(dir) && p.as_bytes()[dir.len()] == b'/'
}

impl Snapshot<'_> {
    /// The tree of the sorted relative paths `files`.
    pub(super) fn take(&self, files: &[&str]) -> Option<Oid> {
        let mut known = KNOWN
            .lock()
            .ok()
            .and_then(|mut all| {
                let i = all.iter().position(|(r, _)| r == self.root)?;
                Some(all.swap_remove(i).1)
            })
            .unwrap_or_default();
        if self.watcher == 0 || known.watcher != self.watcher {
            // What the caller says changed is measured from another state: every folder
            // and file is looked at again.
            known.trees.clear();
            return Snapshot {
                file_changed: &|_: &str| true,
                dir_changed: &|_: &str| true,
                ..*self
            }
            .finish(files, known);
        }
        self.finish(files, known)
    }

    fn finish(&self, files: &[&str], mut known: Known) -> Option<Oid> {
        let mut look = Vec::new();
        self.collect(files, "", &known, &mut look);
        let resolved = self.resolve(&look, &mut known)?;
        let oid = self.build(files, "", &resolved, &mut known).ok()?;
        known.watcher = self.watcher;
        if let Ok(mut all) = KNOWN.lock() {
            // One state per root: the newest.
            all.retain(|(r, _)| r != self.root);
            all.push((self.root.to_path_buf(), known));
        }
        Some(oid)
    }

    /// The files to look at: in folders where something may have changed (or whose tree is
    /// not known), those that may have changed or that no snapshot knows.
    fn collect<'f>(&self, files: &[&'f str], dir: &str, known: &Known, out: &mut Vec<&'f str>) {
        if !(self.dir_changed)(dir) && known.trees.contains_key(dir) {
            return;
        }
        let skip = if dir.is_empty() { 0 } else { dir.len() + 1 };
        let mut i = 0;
        while i < files.len() {
            let f = files[i];
            match f[skip..].find('/') {
                None => {
                    if (self.file_changed)(f) || !known.files.contains_key(f) {
                        out.push(f);
                    }
                    i += 1;
                }
                Some(k) => {
                    let sub = &f[..skip + k];
                    let n = files[i..].partition_point(|p| inside(p, sub));
                    self.collect(&files[i..i + n], sub, known, out);
                    i += n;
                }
            }
        }
    }

    /// Each looked-at file's stat and blob id: known, from the index, or hashed now (`None`:
    /// a file cannot be read, or the hash budget is spent). A file that is gone, or neither
    /// a regular file nor a symlink, is left out.
    fn resolve<'f>(
        &self,
        look: &[&'f str],
        known: &mut Known,
    ) -> Option<HashMap<&'f str, (Stat, Oid)>> {
        let stats = stat_all(self.beneath, look);
        let mut out = HashMap::with_capacity(look.len());
        let mut index: Option<Option<Index>> = None;
        let now = now();
        let mut budget = HASH_BUDGET;
        for (f, st) in look.iter().zip(stats) {
            let Some(st) = st.filter(|s| s.git_mode().is_some()) else {
                continue;
            };
            let cached = known
                .files
                .get(*f)
                .filter(|(s, _, at)| *s == st && (st.mtime.0 + 1, st.mtime.1) <= *at)
                .map(|(_, o, _)| *o);
            let oid = match cached {
                Some(o) => o,
                None => {
                    let ix = index.get_or_insert_with(self.index);
                    match ix
                        .as_ref()
                        .and_then(|ix| Some((ix.entries.get(*f)?, ix.written)))
                    {
                        Some((e, written)) if st.matches(e) && st.mtime < written => {
                            known.files.insert((*f).into(), (st, e.oid, written));
                            e.oid
                        }
                        _ => {
                            budget = budget.checked_sub(st.size)?;
                            let o = hash_file(self.beneath, f, &st, self.store)?;
                            known.files.insert((*f).into(), (st, o, now));
                            o
                        }
                    }
                }
            };
            out.insert(*f, (st, oid));
        }
        Some(out)
    }

    /// Writes the tree of the folder `dir` holding `files` (unless nothing changed in it and
    /// its tree is known) and returns its id.
    fn build(
        &self,
        files: &[&str],
        dir: &str,
        resolved: &HashMap<&str, (Stat, Oid)>,
        known: &mut Known,
    ) -> std::io::Result<Oid> {
        if !(self.dir_changed)(dir)
            && let Some(o) = known.trees.get(dir)
        {
            return Ok(*o);
        }
        let skip = if dir.is_empty() { 0 } else { dir.len() + 1 };
        let mut entries = Vec::new();
        let mut i = 0;
        while i < files.len() {
            let f = files[i];
            let name = &f[skip..];
            match name.find('/') {
                None => {
                    let found = resolved
                        .get(f)
                        .copied()
                        .or_else(|| known.files.get(f).map(|(s, o, _)| (*s, *o)));
                    if let Some((st, oid)) = found
                        && let Some(mode) = st.git_mode()
                    {
                        entries.push(TreeEntry {
                            name,
                            mode: match mode {
                                0o120000 => "120000",
                                0o100755 => "100755",
                                _ => "100644",
                            },
                            oid,
                        });
                    }
                    i += 1;
                }
                Some(k) => {
                    let sub = &f[..skip + k];
                    let n = files[i..].partition_point(|p| inside(p, sub));
                    let oid = self.build(&files[i..i + n], sub, resolved, known)?;
                    entries.push(TreeEntry {
                        name: &name[..k],
                        mode: "40000",
                        oid,
                    });
                    i += n;
                }
            }
        }
        let body = objects::tree_body(&mut entries);
        let oid = objects::hash("tree", &body);
        if !known.stored.contains(&oid) {
            self.store.put("tree", &body)?;
            known.stored.insert(oid);
        }
        known.trees.insert(dir.into(), oid);
        Ok(oid)
    }
}

/// The coarse time now, as `(seconds, nanoseconds)`.
fn now() -> (i64, i64) {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (d.as_secs() as i64, i64::from(d.subsec_nanos()))
}

/// `lstat` of every file (on two threads for a large workspace), each from a descriptor of
/// its folder (one path component to look up, not the whole path).
fn stat_all(b: &Beneath, files: &[&str]) -> Vec<Option<Stat>> {
    let chunk = |files: &[&str]| {
        let mut dir: Option<(&str, OwnedFd)> = None;
        files
            .iter()
            .map(|f| {
                let (d, name) = f.rsplit_once('/').unwrap_or(("", f));
                if dir.as_ref().is_none_or(|(p, _)| *p != d) {
                    let rel = if d.is_empty() { "." } else { d };
                    let fd = b
                        .open_rel(rel, libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW)
                        .ok()?;
                    dir = Some((d, fd));
                }
                let (_, fd) = dir.as_ref()?;
                lstat_at(fd, name)
            })
            .collect::<Vec<_>>()
    };
    if files.len() < 512 {
        return chunk(files);
    }
    let (a, rest) = files.split_at(files.len() / 2);
    std::thread::scope(|s| {
        let first = s.spawn(|| chunk(a));
        let mut second = chunk(rest);
        let mut out = first.join().unwrap_or_else(|_| vec![None; a.len()]);
        out.append(&mut second);
        out
    })
}

/// `lstat` of the entry `name` of the folder `dir`.
fn lstat_at(dir: &OwnedFd, name: &str) -> Option<Stat> {
    let c = std::ffi::CString::new(name).ok()?;
    // SAFETY: `st` is written by the kernel before it is read.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: an open folder descriptor, one component, a valid out pointer.
    let rc = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            c.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    (rc == 0).then_some(Stat {
        mtime: (st.st_mtime, st.st_mtime_nsec),
        ctime: (st.st_ctime, st.st_ctime_nsec),
        ino: st.st_ino,
        size: st.st_size as u64,
        mode: st.st_mode,
    })
}

/// Stores the content of file `rel` (a symlink: its target) as a blob.
fn hash_file(b: &Beneath, rel: &str, st: &Stat, store: &Store) -> Option<Oid> {
    if st.git_mode() == Some(0o120000) {
        let (dir, name) = crate::runtime::tools::path::split(rel);
        let dir = b
            .open_rel(&dir, libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .ok()?;
        let c = std::ffi::CString::new(name).ok()?;
        let mut buf = vec![0u8; libc::PATH_MAX as usize];
        // SAFETY: an open folder descriptor, one component, a buffer of the length given.
        let n = unsafe {
            libc::readlinkat(
                dir.as_raw_fd(),
                c.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        let n = usize::try_from(n).ok()?;
        return store.put("blob", &buf[..n]).ok();
    }
    let fd = b
        .open_rel(rel, libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .ok()?;
    let mut file = std::fs::File::from(fd);
    let len = file
        .metadata()
        .ok()
        .filter(std::fs::Metadata::is_file)?
        .len();
    store.put_file(&mut file, len).ok()
}
