//! One running turn per session across processes. The lease is an exclusive `flock` on
//! `<workspace data>/leases/<session>.lock` holding the owner's pid: the kernel drops the lock
//! when its process dies, however it dies, so a dead owner's lease is simply taken over and no
//! heartbeat can go stale.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

/// A held lease; released when dropped.
#[derive(Debug)]
pub struct Lease {
    file: File,
}

/// Why a lease could not be taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseError {
    /// Another live turn holds it.
    Busy {
        /// Its pid, when readable.
        pid: Option<u32>,
    },
    /// The lease file could not be opened.
    Io(String),
}

impl Lease {
    /// Takes the lease of `session_id` under `data_dir`, without waiting.
    pub fn acquire(data_dir: &Path, session_id: &str) -> Result<Lease, LeaseError> {
        let dir = data_dir.join("leases");
        crate::session::private_dir(&dir)
            .map_err(|e| LeaseError::Io(format!("cannot create {}: {e}", dir.display())))?;
        let path = dir.join(format!("{session_id}.lock"));
        let mut file = crate::session::private_file(&path, false)
            .map_err(|e| LeaseError::Io(format!("cannot open {}: {e}", path.display())))?;
        // SAFETY: flock on a file descriptor we own; no memory is involved.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let mut s = String::new();
            let _ = file.read_to_string(&mut s);
            return Err(LeaseError::Busy {
                pid: s.trim().parse().ok(),
            });
        }
        let _ = file.set_len(0);
        let _ = file.rewind();
        let _ = write!(file, "{}", std::process::id());
        let _ = file.flush();
        Ok(Lease { file })
    }
}

/// Whether a live process holds the lease of `session_id` under `data_dir`: one try-lock of
/// the lease file (a shared lock, released at once), never creating anything, so it works in
/// a read-only home. A missing file means nobody holds it; an error that says nothing is
/// taken as "held" (the stored status is then shown as it is).
pub(crate) fn is_held(data_dir: &Path, session_id: &str) -> bool {
    let path = data_dir.join("leases").join(format!("{session_id}.lock"));
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return false,
        Err(_) => return true,
    };
    // SAFETY: flock on a descriptor we own.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) };
    if rc == 0 {
        // SAFETY: as above.
        unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) };
        return false;
    }
    true
}

impl Drop for Lease {
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
        // Closing the file releases the lock; unlocking first makes it visible at once.
        // SAFETY: as above.
        unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_UN) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_holder_is_told_the_pid_and_can_take_over_after_release() {
        let d = tempfile::tempdir().unwrap();
        let a = Lease::acquire(d.path(), "s1").unwrap();
        match Lease::acquire(d.path(), "s1") {
            Err(LeaseError::Busy { pid }) => assert_eq!(pid, Some(std::process::id())),
            other => panic!("{other:?}"),
        }
        let other = Lease::acquire(d.path(), "s2");
        assert!(other.is_ok(), "other sessions are independent");
        drop(a);
        assert!(Lease::acquire(d.path(), "s1").is_ok());
    }
}
