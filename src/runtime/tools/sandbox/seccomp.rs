//! The seccomp filter that denies the network (IP sockets, io_uring) to a command.

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

/// A seccomp filter: `socket()` of any family but AF_UNIX fails with EACCES (so UDP and
/// raw sockets are denied too, which Landlock below ABI 8 does not cover), io_uring
/// (which could open sockets past the filter) is refused, and syscalls of a foreign
/// architecture (32-bit `socketcall`) fail.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(super) fn deny_network() -> Result<(), String> {
    use libc::{
        BPF_ABS, BPF_JEQ, BPF_JGE, BPF_JMP, BPF_K, BPF_LD, BPF_RET, BPF_W, sock_filter, sock_fprog,
    };
    fn stmt(code: u32, k: u32) -> sock_filter {
        sock_filter {
            code: code as u16,
            jt: 0,
            jf: 0,
            k,
        }
    }
    fn jump(code: u32, k: u32, jt: u8, jf: u8) -> sock_filter {
        sock_filter {
            code: code as u16,
            jt,
            jf,
            k,
        }
    }
    let deny = libc::SECCOMP_RET_ERRNO | (libc::EACCES as u32 & 0xffff);
    let allow = libc::SECCOMP_RET_ALLOW;
    let filter = [
        stmt(BPF_LD | BPF_W | BPF_ABS, 4),                 // 0: arch
        jump(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH, 1, 0), // 1
        stmt(BPF_RET | BPF_K, deny),                       // 2
        stmt(BPF_LD | BPF_W | BPF_ABS, 0),                 // 3: syscall number
        // x32 syscalls carry bit 30 on x86_64.
        jump(BPF_JMP | BPF_JGE | BPF_K, 0x4000_0000, 4, 0), // 4 -> 9
        jump(
            BPF_JMP | BPF_JEQ | BPF_K,
            libc::SYS_io_uring_setup as u32,
            3,
            0,
        ), // 5 -> 9
        jump(BPF_JMP | BPF_JEQ | BPF_K, libc::SYS_socket as u32, 0, 3), // 6 -> 7 / 10
        stmt(BPF_LD | BPF_W | BPF_ABS, 16),                 // 7: low half of args[0] (family)
        jump(BPF_JMP | BPF_JEQ | BPF_K, libc::AF_UNIX as u32, 1, 0), // 8 -> 10 / 9
        stmt(BPF_RET | BPF_K, deny),                        // 9
        stmt(BPF_RET | BPF_K, allow),                       // 10
    ];
    let prog = sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr() as *mut sock_filter,
    };
    // SAFETY: plain prctl calls; `prog` and `filter` outlive them and the kernel copies
    // the program.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error().to_string());
        }
        if libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &prog as *const sock_fprog,
        ) != 0
        {
            return Err(std::io::Error::last_os_error().to_string());
        }
    }
    Ok(())
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(super) fn deny_network() -> Result<(), String> {
    Err("no seccomp filter for this CPU architecture".into())
}
