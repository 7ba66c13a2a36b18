//! The private temporary folder of one command, and the sweep of folders whose owner died.

use std::path::{Path, PathBuf};
use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};

/// Names of the command folders: `neocode-cmd-<pid>-<n>-<nanos>`.
pub(super) const TEMP_PREFIX: &str = "neocode-cmd-";

/// A private temporary folder, removed when dropped.
pub(super) struct TempDir(pub(super) PathBuf);

impl TempDir {
    pub(super) fn new() -> std::io::Result<TempDir> {
        use std::os::unix::fs::DirBuilderExt;
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        static SWEPT: Once = Once::new();
        let base = std::env::temp_dir();
        // A neocode killed mid-command (SIGKILL, OOM) never ran the drop: its folder stays
        // until someone notices the owner is gone. Once per process keeps it cheap.
        SWEPT.call_once(|| sweep_stale(&base));
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!(
            "{TEMP_PREFIX}{}-{n}-{nanos:08x}",
            std::process::id()
        ));
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        Ok(TempDir(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The pid in the name of a command folder, if `name` is exactly one.
pub(super) fn owner_pid(name: &str) -> Option<i32> {
    let mut parts = name.strip_prefix(TEMP_PREFIX)?.split('-');
    let (pid, n, nanos) = (parts.next()?, parts.next()?, parts.next()?);
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    if parts.next().is_some()
        || !digits(pid)
        || !digits(n)
        || nanos.is_empty()
        || !nanos.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return None;
    }
    pid.parse().ok().filter(|&p| p > 0)
}

/// Whether `pid` may still be running. Only ESRCH says it is gone: a process of another user
/// (EPERM) or a zombie not yet reaped counts as alive.
pub(super) fn may_be_alive(pid: i32) -> bool {
    if u32::try_from(pid).is_ok_and(|p| p == std::process::id()) {
        return true;
    }
    // SAFETY: signal 0 only checks that the process exists; nothing is sent.
    if unsafe { libc::kill(pid, 0) } == 0 {
        return true;
    }
    std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Removes, best effort, the command folders in `base` that belong to this user and whose
/// neocode is no longer alive. A folder of a live process is never touched, nor anything that
/// is not a real folder of ours with exactly our name pattern.
pub(super) fn sweep_stale(base: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    // SAFETY: plain syscall without arguments.
    let me = unsafe { libc::geteuid() };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(owner_pid) else {
            continue;
        };
        // `DirEntry::metadata` does not follow a symlink: a link named like ours is skipped.
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        if !meta.is_dir() || meta.uid() != me || may_be_alive(pid) {
            continue;
        }
        let _ = std::fs::remove_dir_all(entry.path());
    }
}
