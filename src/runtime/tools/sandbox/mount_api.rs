//! The new mount API (Linux 5.12+) the box uses, by number: `libc` has no wrappers for
//! `open_tree`, `move_mount` and `mount_setattr`. Each call reports the OS error it met.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const SYS_OPEN_TREE: libc::c_long = 428;
const SYS_MOVE_MOUNT: libc::c_long = 429;
const SYS_MOUNT_SETATTR: libc::c_long = 442;
/// `open_tree`: a detached copy of the tree, not the mount itself.
pub(super) const OPEN_TREE_CLONE: libc::c_uint = 1;
pub(super) const OPEN_TREE_CLOEXEC: libc::c_uint = libc::O_CLOEXEC as libc::c_uint;
/// The whole tree below the path, not only its top mount.
pub(super) const AT_RECURSIVE: libc::c_uint = 0x8000;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
const MOUNT_ATTR_RDONLY: u64 = 0x1;

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// `open_tree(AT_FDCWD, path, flags)`: the tree at `path` as a descriptor we own.
pub(super) fn open_tree(path: &CStr, flags: libc::c_uint) -> io::Result<OwnedFd> {
    // SAFETY: `path` is a NUL-terminated string that outlives the call; the kernel reads
    // nothing else from us.
    let fd = unsafe { libc::syscall(SYS_OPEN_TREE, libc::AT_FDCWD, path.as_ptr(), flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor, returned by the kernel and owned by nobody else; a file
    // descriptor always fits an i32.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// `mount_setattr(dirfd, path, flags)` making the tree read-only.
pub(super) fn set_read_only(
    dirfd: libc::c_int,
    path: &CStr,
    flags: libc::c_uint,
) -> io::Result<()> {
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: `path` is NUL-terminated and `attr` a `repr(C)` struct of the size given,
    // both alive for the call; the kernel only reads them.
    let r = unsafe {
        libc::syscall(
            SYS_MOUNT_SETATTR,
            dirfd,
            path.as_ptr(),
            flags,
            &raw const attr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `move_mount` of the detached `tree` onto `target`.
pub(super) fn move_onto(tree: &OwnedFd, target: &CStr) -> io::Result<()> {
    // SAFETY: `tree` is an open descriptor we own and `target` a NUL-terminated string, both
    // alive for the call.
    let r = unsafe {
        libc::syscall(
            SYS_MOVE_MOUNT,
            tree.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_FDCWD,
            target.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
