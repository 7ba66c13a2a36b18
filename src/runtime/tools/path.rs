//! Confinement of the file tools' paths to the workspace root.
//!
//! A path is refused when, lexically or through any symlink on the way, it leaves the root.
//! Relative paths are taken from the root; absolute paths are accepted only when they lie
//! inside it. `..` is folded lexically first (so `a/../../x` is refused before touching the
//! disk), then the longest existing prefix is resolved with `canonicalize` (which follows
//! every symlink) and must still be inside the root. A dangling symlink cannot be checked
//! and is refused.
//!
//! The check gives the clear messages; it is not what keeps a tool inside. Between the check
//! and the open something else (a command left running, another program) may swap a folder
//! for a symlink to the outside. So every open goes through [`Beneath`]: a descriptor of the
//! root, and `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` of the checked relative path
//! from it (the kernel refuses any step that leaves the root, a `..`, an absolute or outward
//! symlink, a `/proc` magic link). Where `openat2` is missing (`ENOSYS`: kernels before 5.6,
//! some seccomp filters) the same path is walked one component at a time from the root
//! descriptor with `O_NOFOLLOW`. The checked path has its symlinks already resolved, so a
//! symlink met on the way can only be one that appeared after the check: refused. Writes go
//! to a temporary file created beneath the same folder descriptor and renamed over the name
//! (`renameat`), so they never follow a link either.

use std::cell::Cell;
use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A path checked to be inside the root.
#[derive(Debug, Clone)]
pub(crate) struct Confined {
    /// Absolute path to operate on (symlinks of the existing part resolved).
    pub abs: PathBuf,
    /// The path relative to the root, `/`-separated, for messages and metadata (`.` for the
    /// root itself).
    pub rel: String,
}

/// Why a tool may not use a path; the message is what the model reads.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PathError {
    #[error("path contains a NUL byte")]
    Nul,
    #[error("cannot resolve the workspace root {}: {source}", root.display())]
    Root { root: PathBuf, source: io::Error },
    #[error("cannot open the workspace root {}: {source}", root.display())]
    OpenRoot { root: PathBuf, source: io::Error },
    #[error(
        "refused: {user} is outside the workspace; tools only work inside {} (use a path relative to it)",
        root.display()
    )]
    Outside { user: String, root: PathBuf },
    #[error("cannot resolve {user}")]
    Unresolved { user: String },
    #[error("cannot resolve {user}: {source}")]
    UnresolvedIo { user: String, source: io::Error },
    #[error(
        "refused: {user} is a symlink whose target does not exist (cannot check it stays inside the workspace)"
    )]
    DanglingLink { user: String },
    #[error(
        "refused: {user} leads outside the workspace through a symlink (to {}); tools only work inside {}",
        target.display(),
        root.display()
    )]
    LinkOutside {
        user: String,
        target: PathBuf,
        root: PathBuf,
    },
    #[error(
        "refused: {} lies in neocode's home ({}), which the tools never change",
        path.display(),
        home.display()
    )]
    InHome { path: PathBuf, home: PathBuf },
    #[error("cannot check the folder: {0}")]
    Check(io::Error),
    #[error("refused: the folder left the workspace while it was checked")]
    LeftWorkspace,
    #[error("refused: the folder is nested too deep to check")]
    TooDeep,
    /// A protected path (a control file, neocode's home).
    #[error(transparent)]
    Protected(#[from] Refusal),
}

/// A protected path a tool met (a control file, neocode's home): the refusal a model reads.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum Refusal {
    #[error(
        "refused: {rel} is {who}'s control file: only the user changes it (the file tools never write in .git or .neocode)"
    )]
    ControlFile { rel: String, who: &'static str },
    #[error(
        "refused: that path lies in neocode's home ({}), which the tools never change",
        home.display()
    )]
    HomeWrite { home: PathBuf },
    #[error(
        "refused: that path lies in neocode's home ({}), which holds its configuration and keys: the tools do not read it",
        home.display()
    )]
    HomeRead { home: PathBuf },
}

impl From<PathError> for String {
    fn from(e: PathError) -> String {
        e.to_string()
    }
}

/// Checks `user` (as the model wrote it) against `root`.
pub(crate) fn confine(root: &Path, user: &str) -> Result<Confined, PathError> {
    if user.contains('\0') {
        return Err(PathError::Nul);
    }
    let root = root.canonicalize().map_err(|source| PathError::Root {
        root: root.to_path_buf(),
        source,
    })?;
    let given = Path::new(user);
    let joined = if given.is_absolute() {
        given.to_path_buf()
    } else {
        root.join(given)
    };
    let lexical = fold(&joined);
    if !lexical.starts_with(&root) {
        return Err(PathError::Outside {
            user: user.into(),
            root,
        });
    }
    // Walk up to the longest prefix that exists on disk; what lies below it does not exist
    // yet, so it cannot be a symlink.
    let mut existing = lexical;
    let mut tail: Vec<std::ffi::OsString> = Vec::new();
    loop {
        match std::fs::symlink_metadata(&existing) {
            Ok(_) => break,
            Err(_) => {
                let Some(name) = existing.file_name().map(OsStr::to_os_string) else {
                    return Err(PathError::Unresolved { user: user.into() });
                };
                tail.push(name);
                if !existing.pop() {
                    return Err(PathError::Unresolved { user: user.into() });
                }
            }
        }
    }
    let resolved = existing.canonicalize().map_err(|source| {
        let user = user.to_string();
        if existing
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
        {
            PathError::DanglingLink { user }
        } else {
            PathError::UnresolvedIo { user, source }
        }
    })?;
    if !resolved.starts_with(&root) {
        return Err(PathError::LinkOutside {
            user: user.into(),
            target: resolved,
            root,
        });
    }
    let mut abs = resolved;
    for name in tail.iter().rev() {
        abs.push(name);
    }
    let rel = match abs.strip_prefix(&root) {
        Ok(r) if r.as_os_str().is_empty() => ".".to_string(),
        Ok(r) => r.to_string_lossy().into_owned(),
        Err(_) => {
            return Err(PathError::Outside {
                user: user.into(),
                root,
            });
        }
    };
    Ok(Confined { abs, rel })
}

/// `openat2` answered `ENOSYS` once: use the walk from then on.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

thread_local! {
    static FORCE_WALK: Cell<bool> = const { Cell::new(false) };
}

/// Makes the file tools on this thread walk paths component by component as where `openat2`
/// is missing (tests prove the fallback with it).
#[doc(hidden)]
pub fn force_walk_fallback(on: bool) {
    FORCE_WALK.with(|f| f.set(on));
}

fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn cstr(s: &[u8]) -> io::Result<CString> {
    CString::new(s).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// The workspace root held open; every file tool opens through it.
#[derive(Debug)]
pub(crate) struct Beneath {
    root: OwnedFd,
}

impl Beneath {
    /// Opens `root` (a folder) as the anchor.
    pub(crate) fn open(root: &Path) -> io::Result<Beneath> {
        let c = cstr(root.as_os_str().as_bytes())?;
        // SAFETY: a NUL-terminated path; the returned descriptor is owned below.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Beneath {
            // SAFETY: `fd` is a fresh descriptor nobody else owns.
            root: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// The root descriptor.
    pub(crate) fn root_fd(&self) -> RawFd {
        self.root.as_raw_fd()
    }

    /// Opens `rel` (a checked path relative to the root, `.` for the root) with `flags`
    /// (`O_CLOEXEC` is added; pass `O_NOFOLLOW` to refuse a final symlink) without leaving
    /// the root on the way.
    pub(crate) fn open_rel(&self, rel: &str, flags: i32) -> io::Result<OwnedFd> {
        let comps = components(rel)?;
        let use_walk = FORCE_WALK.with(Cell::get) || NO_OPENAT2.load(Ordering::Relaxed);
        if !use_walk {
            match openat2(self.root_fd(), rel, flags) {
                Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
                    NO_OPENAT2.store(true, Ordering::Relaxed);
                }
                other => return other,
            }
        }
        walk(self.root_fd(), &comps, flags)
    }

    /// Opens the folder `rel` (an `O_PATH` descriptor), creating the missing folders on the
    /// way when `create`.
    pub(crate) fn dir(&self, rel: &str, create: bool) -> io::Result<OwnedFd> {
        let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW;
        let comps = components(rel)?;
        let mut cur = self.open_rel(".", flags)?;
        for i in 0..comps.len() {
            let prefix = comps[..=i].join("/");
            match self.open_rel(&prefix, flags) {
                Ok(fd) => cur = fd,
                Err(e) if create && e.raw_os_error() == Some(libc::ENOENT) => {
                    let name = cstr(comps[i].as_bytes())?;
                    // SAFETY: `cur` is an open folder descriptor, `name` one component.
                    let rc = unsafe { libc::mkdirat(cur.as_raw_fd(), name.as_ptr(), 0o777) };
                    if rc != 0 && errno() != libc::EEXIST {
                        return Err(io::Error::last_os_error());
                    }
                    cur = self.open_rel(&prefix, flags)?;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(cur)
    }
}

/// The root of a tool call held open (`root` canonicalised, as [`confine`] does).
pub(crate) fn anchor(root: &Path) -> Result<Beneath, PathError> {
    let canon = root.canonicalize().map_err(|source| PathError::Root {
        root: root.to_path_buf(),
        source,
    })?;
    Beneath::open(&canon).map_err(|source| PathError::OpenRoot {
        root: canon,
        source,
    })
}

/// The lexical half of the home refusal: a clear message before anything is touched.
pub(crate) fn in_home(abs: &Path, home: Option<&Path>) -> Result<(), PathError> {
    let Some(home) = home else { return Ok(()) };
    let canon = home.canonicalize().unwrap_or_else(|_| home.to_path_buf());
    if abs.starts_with(&canon) {
        return Err(PathError::InHome {
            path: abs.to_path_buf(),
            home: canon,
        });
    }
    Ok(())
}

/// The components of a checked relative path; anything but plain names is refused.
fn components(rel: &str) -> io::Result<Vec<String>> {
    let mut out = Vec::new();
    for c in Path::new(rel).components() {
        match c {
            Component::CurDir => {}
            Component::Normal(n) => out.push(n.to_string_lossy().into_owned()),
            _ => return Err(io::Error::from_raw_os_error(libc::EXDEV)),
        }
    }
    Ok(out)
}

fn openat2(dir: RawFd, rel: &str, flags: i32) -> io::Result<OwnedFd> {
    let c = cstr(rel.as_bytes())?;
    // SAFETY: open_how is plain integers; zero is a valid start.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;
    // A rename anywhere on the system during the lookup makes RESOLVE_BENEATH answer EAGAIN
    // (it cannot prove the result is beneath): try again a few times.
    for _ in 0..64 {
        // SAFETY: the syscall reads `how` (its size given) and the NUL-terminated path.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dir,
                c.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        if fd >= 0 {
            // SAFETY: a fresh descriptor nobody else owns.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) });
        }
        if errno() != libc::EAGAIN {
            return Err(io::Error::last_os_error());
        }
    }
    Err(io::Error::from_raw_os_error(libc::EAGAIN))
}

/// The fallback: one component at a time, never following a symlink.
fn walk(root: RawFd, comps: &[String], flags: i32) -> io::Result<OwnedFd> {
    let mut held: Option<OwnedFd> = None;
    let Some((last, dirs)) = comps.split_last() else {
        let dot = cstr(b".")?;
        // SAFETY: `root` is an open folder descriptor.
        let fd = unsafe { libc::openat(root, dot.as_ptr(), flags | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fresh descriptor.
        return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
    };
    for d in dirs {
        let at = held.as_ref().map_or(root, AsRawFd::as_raw_fd);
        let name = cstr(d.as_bytes())?;
        // SAFETY: `at` is an open folder descriptor, `name` one component.
        let fd = unsafe {
            libc::openat(
                at,
                name.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fresh descriptor.
        held = Some(unsafe { OwnedFd::from_raw_fd(fd) });
    }
    let at = held.as_ref().map_or(root, AsRawFd::as_raw_fd);
    let name = cstr(last.as_bytes())?;
    // SAFETY: as above; the mode is only read with O_CREAT.
    let fd = unsafe {
        libc::openat(
            at,
            name.as_ptr(),
            flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o666 as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `fstat` of a descriptor.
pub(crate) fn fstat(fd: RawFd) -> io::Result<libc::stat> {
    // SAFETY: `st` is written by the kernel before it is read.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open; `st` is a valid out pointer.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// `fstatat` of `name` in the folder `dir`, not following a final symlink.
pub(crate) fn stat_at(dir: RawFd, name: &str) -> Option<libc::stat> {
    let c = cstr(name.as_bytes()).ok()?;
    // SAFETY: `st` is written by the kernel before it is read.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `dir` is an open folder descriptor, `c` NUL-terminated, `st` a valid out pointer.
    let rc = unsafe { libc::fstatat(dir, c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    (rc == 0).then_some(st)
}

fn stat_path(p: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
}

/// A folder's identity on disk (device, inode).
pub(crate) type FileId = (u64, u64);

/// The identity of the folder `p` (following a final symlink), if it exists.
pub(crate) fn file_id(p: &Path) -> Option<FileId> {
    stat_path(p)
}

/// Refuses the folder `dir` (an open descriptor beneath the root) when it is, or lies
/// inside, one of the `protected` folders: the message of the first met, walking `..` from
/// `dir` up to the root on descriptors, so no path trick or race gets around it.
pub(crate) fn refuse_under(
    b: &Beneath,
    dir: &OwnedFd,
    protected: &[(FileId, Refusal)],
) -> Result<(), PathError> {
    if protected.is_empty() {
        return Ok(());
    }
    let root = fstat(b.root_fd()).map_err(PathError::Check)?;
    let root_id = (root.st_dev, root.st_ino);
    let dotdot = cstr(b"..").map_err(PathError::Check)?;
    let mut cur: Option<OwnedFd> = None;
    for _ in 0..4096 {
        let fd = cur.as_ref().map_or(dir.as_raw_fd(), AsRawFd::as_raw_fd);
        let st = fstat(fd).map_err(PathError::Check)?;
        let id = (st.st_dev, st.st_ino);
        if let Some((_, why)) = protected.iter().find(|(p, _)| *p == id) {
            return Err(why.clone().into());
        }
        if id == root_id {
            return Ok(());
        }
        // SAFETY: `fd` is an open folder descriptor.
        let up = unsafe {
            libc::openat(
                fd,
                dotdot.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if up < 0 {
            return Err(PathError::Check(io::Error::last_os_error()));
        }
        // SAFETY: fresh descriptor.
        let up = unsafe { OwnedFd::from_raw_fd(up) };
        let ust = fstat(up.as_raw_fd()).map_err(PathError::Check)?;
        if (ust.st_dev, ust.st_ino) == id {
            // The file system's top: the folder is not beneath the root any more.
            return Err(PathError::LeftWorkspace);
        }
        cur = Some(up);
    }
    Err(PathError::TooDeep)
}

/// Writes `bytes` as the file `name` of the folder `dir`: a temporary file beside it, then
/// `renameat` over the name (a symlink put there meanwhile is replaced, never followed).
/// `mode` keeps the permissions of the file replaced.
pub(crate) fn write_atomic(
    dir: &OwnedFd,
    name: &str,
    bytes: &[u8],
    mode: Option<u32>,
) -> io::Result<()> {
    use std::io::Write;
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let target = cstr(name.as_bytes())?;
    let mut attempt = 0;
    let (tmp, file) = loop {
        let tmp_name = format!(
            ".{}.neocode-{}-{}.tmp",
            name.chars().take(100).collect::<String>(),
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let tmp = cstr(tmp_name.as_bytes())?;
        // SAFETY: `dir` is an open folder descriptor; O_EXCL|O_NOFOLLOW never reuses or
        // follows anything there.
        let fd = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                tmp.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                mode.unwrap_or(0o666) as libc::c_uint,
            )
        };
        if fd >= 0 {
            // SAFETY: fresh descriptor, handed to the File.
            break (
                tmp,
                std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) }),
            );
        }
        attempt += 1;
        if errno() != libc::EEXIST || attempt > 16 {
            return Err(io::Error::last_os_error());
        }
    };
    let unlink = || {
        // SAFETY: removes the temporary name we created in `dir`.
        unsafe { libc::unlinkat(dir.as_raw_fd(), tmp.as_ptr(), 0) };
    };
    let mut file = file;
    let written = file.write_all(bytes).and_then(|()| {
        if let Some(m) = mode {
            // SAFETY: an open descriptor of ours.
            if unsafe { libc::fchmod(file.as_raw_fd(), m & 0o7777) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    });
    drop(file);
    if let Err(e) = written {
        unlink();
        return Err(e);
    }
    // SAFETY: both names are single components of the one folder descriptor.
    let rc = unsafe {
        libc::renameat(
            dir.as_raw_fd(),
            tmp.as_ptr(),
            dir.as_raw_fd(),
            target.as_ptr(),
        )
    };
    if rc != 0 {
        let e = io::Error::last_os_error();
        unlink();
        return Err(e);
    }
    Ok(())
}

/// Whether the existing file `name` of `dir` may be written by us (the rename in
/// [`write_atomic`] would replace even a read-only file): an open for writing, without
/// truncating, closed at once.
pub(crate) fn check_writable(dir: &OwnedFd, name: &str) -> io::Result<()> {
    open_one(dir, name, libc::O_WRONLY).map(drop)
}

/// Opens the file `name` of the folder `dir` for reading without following a symlink and
/// without blocking on a FIFO.
pub(crate) fn open_in(dir: &OwnedFd, name: &str) -> io::Result<std::fs::File> {
    open_one(dir, name, libc::O_RDONLY).map(std::fs::File::from)
}

/// Opens the file `name` of the folder `dir` with `access` (`O_RDONLY`, `O_WRONLY`), never
/// following a symlink nor blocking on a FIFO, and never truncating.
fn open_one(dir: &OwnedFd, name: &str, access: libc::c_int) -> io::Result<OwnedFd> {
    let c = cstr(name.as_bytes())?;
    // SAFETY: `dir` is an open folder descriptor, `c` one component; nothing is written.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c.as_ptr(),
            access | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh descriptor, closed on drop.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Where a walker (list_dir, grep) starts: the already opened folder `start` through
/// `/proc/self/fd`, so a swap of the path after it was opened cannot move the walk; the path
/// `fallback` where `/proc` is not mounted.
pub(crate) fn walk_root(start: &OwnedFd, fallback: &Path) -> PathBuf {
    let pinned = PathBuf::from(format!("/proc/self/fd/{}", start.as_raw_fd()));
    if std::fs::metadata(&pinned).is_ok_and(|m| m.is_dir()) {
        pinned
    } else {
        fallback.to_path_buf()
    }
}

/// Splits a checked relative path into its folder (`.` at the top) and its last name.
pub(crate) fn split(rel: &str) -> (String, String) {
    let p = Path::new(rel);
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let parent = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_string_lossy().into_owned(),
        _ => ".".to_string(),
    };
    (parent, name)
}

/// A message for an open that the kernel refused as leaving the root.
pub(crate) fn open_error(rel: &str, e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EXDEV) | Some(libc::ELOOP) => format!(
            "refused: {rel} leads outside the workspace (a link appeared on the way); tools only work inside it"
        ),
        Some(libc::ENOTDIR) => {
            format!("cannot open {rel}: a part of the path is not a folder (or became a link)")
        }
        _ => format!("cannot open {rel}: {e}"),
    }
}

/// Folds `.` and `..` without touching the disk; `..` at the top stays at `/`.
pub(crate) fn fold(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Prefix(x) => out.push(x.as_os_str()),
            Component::RootDir => out.push("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folding_keeps_inner_dotdot_and_refuses_escapes() {
        let dir = std::env::temp_dir().join(format!("neocode-path-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("a")).unwrap();
        let root = dir.canonicalize().unwrap();
        assert_eq!(confine(&root, "a/../b").unwrap().rel, "b");
        assert_eq!(confine(&root, ".").unwrap().rel, ".");
        assert!(confine(&root, "a/../../x").is_err());
        assert!(confine(&root, "/etc/passwd").is_err());
        let inside = root.join("a/new.txt");
        assert_eq!(
            confine(&root, inside.to_str().unwrap()).unwrap().rel,
            "a/new.txt"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
