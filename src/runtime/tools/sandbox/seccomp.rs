//! The seccomp filter every sandboxed command gets.
//!
//! Always: `chmod`, `fchmod`, `fchmodat`, `fchmodat2`, `mknod`, `mknodat`, and `open`/
//! `openat`/`creat` that create a file, fail with `EPERM` when the mode has the set-user-ID
//! or set-group-ID bit (a command cannot leave a set-uid program in the workspace), `openat2`
//! (whose mode the filter cannot read) answers `ENOSYS` so programs fall back to `openat`,
//! and system calls of a foreign architecture (32-bit, x32) fail.
//!
//! While the network is denied, also: `socket()` of every family fails with `EACCES` —
//! `AF_UNIX` too, so no path or abstract socket outside (a tmux server, D-Bus, Docker, an
//! SSH agent) can be reached, which Landlock and the read-only mounts do not stop —
//! `socketpair()` only makes connected `AF_UNIX` stream or seqpacket pairs (a datagram pair
//! could `sendto` any socket path), and `io_uring_setup` fails (io_uring could open sockets
//! past the filter).

use super::fault::BoxError;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

/// `fchmodat2` (Linux 6.6), the same number on every architecture.
const SYS_FCHMODAT2: u32 = 452;
/// The set-user-ID and set-group-ID bits of a mode.
const SET_ID_BITS: u32 = 0o6000;
/// Open flags that create a file, so the mode argument counts: `O_CREAT`, `__O_TMPFILE`.
const CREATING: u32 = 0o100 | 0o20000000;

/// Where a jump goes: the next instruction or a named block.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum To {
    Next,
    Allow,
    Deny,
    DenyPerm,
    NoSys,
    /// Check the mode in argument N.
    Mode(u8),
    /// Check the mode in argument N when the flags in argument F create a file.
    OpenMode(u8, u8),
    Pair,
}

/// One instruction before the jumps are resolved.
enum Op {
    Load(u32),
    And(u32),
    Ret(To),
    /// Jump to `t` when the accumulator equals `k`, else to `f`.
    Eq(u32, To, To),
    /// Jump to `t` when the accumulator is at least `k`, else to `f`.
    Ge(u32, To, To),
    /// Jump to `t` when the accumulator has a bit of `k`, else to `f`.
    Set(u32, To, To),
}

/// Offset of the low half of argument `n` in `struct seccomp_data`.
fn arg(n: u8) -> u32 {
    16 + 8 * u32::from(n)
}

/// The syscalls whose mode argument is checked: (number, where the mode is).
fn mode_calls() -> Vec<(u32, To)> {
    let mut v = vec![
        (libc::SYS_fchmod as u32, To::Mode(1)),
        (libc::SYS_fchmodat as u32, To::Mode(2)),
        (SYS_FCHMODAT2, To::Mode(2)),
        (libc::SYS_mknodat as u32, To::Mode(2)),
        (libc::SYS_openat as u32, To::OpenMode(3, 2)),
    ];
    #[cfg(target_arch = "x86_64")]
    v.extend([
        (libc::SYS_chmod as u32, To::Mode(1)),
        (libc::SYS_mknod as u32, To::Mode(1)),
        (libc::SYS_creat as u32, To::Mode(1)),
        (libc::SYS_open as u32, To::OpenMode(2, 1)),
    ]);
    v
}

/// The program, jumps still symbolic.
fn program(network: bool) -> Vec<(Option<To>, Op)> {
    let mut p: Vec<(Option<To>, Op)> = Vec::new();
    let mut op = |label: Option<To>, o: Op| p.push((label, o));
    op(None, Op::Load(4)); // arch
    op(None, Op::Eq(AUDIT_ARCH, To::Next, To::Deny));
    op(None, Op::Load(0)); // syscall number
    // x32 system calls carry bit 30 on x86_64.
    op(None, Op::Ge(0x4000_0000, To::Deny, To::Next));
    if !network {
        op(None, Op::Eq(libc::SYS_socket as u32, To::Deny, To::Next));
        op(
            None,
            Op::Eq(libc::SYS_socketpair as u32, To::Pair, To::Next),
        );
        op(
            None,
            Op::Eq(libc::SYS_io_uring_setup as u32, To::Deny, To::Next),
        );
    }
    op(None, Op::Eq(libc::SYS_openat2 as u32, To::NoSys, To::Next));
    for (nr, to) in mode_calls() {
        op(None, Op::Eq(nr, to, To::Next));
    }
    op(None, Op::Ret(To::Allow));
    // Jumps only go forward: the open checks come before the mode checks they lead to.
    for (mode, flags) in [(3, 2), (2, 1)] {
        op(Some(To::OpenMode(mode, flags)), Op::Load(arg(flags)));
        op(None, Op::Set(CREATING, To::Mode(mode), To::Allow));
    }
    for n in 1..=3 {
        op(Some(To::Mode(n)), Op::Load(arg(n)));
        op(None, Op::Set(SET_ID_BITS, To::DenyPerm, To::Allow));
    }
    if !network {
        op(Some(To::Pair), Op::Load(arg(0)));
        op(None, Op::Eq(libc::AF_UNIX as u32, To::Next, To::Deny));
        op(None, Op::Load(arg(1)));
        op(None, Op::And(0xf)); // the type without SOCK_NONBLOCK / SOCK_CLOEXEC
        op(None, Op::Eq(libc::SOCK_STREAM as u32, To::Allow, To::Next));
        op(
            None,
            Op::Eq(libc::SOCK_SEQPACKET as u32, To::Allow, To::Deny),
        );
    }
    op(Some(To::Allow), Op::Ret(To::Allow));
    op(Some(To::Deny), Op::Ret(To::Deny));
    op(Some(To::DenyPerm), Op::Ret(To::DenyPerm));
    op(Some(To::NoSys), Op::Ret(To::NoSys));
    p
}

/// Resolves the jumps; `None` when one is out of reach (a bug, caught by the unit test).
fn assemble(p: &[(Option<To>, Op)]) -> Option<Vec<libc::sock_filter>> {
    use libc::{
        BPF_ABS, BPF_ALU, BPF_AND, BPF_JEQ, BPF_JGE, BPF_JMP, BPF_JSET, BPF_K, BPF_LD, BPF_RET,
        BPF_W,
    };
    let at = |to: To, from: usize| -> Option<u8> {
        if to == To::Next {
            return Some(0);
        }
        let target = p.iter().position(|(l, _)| *l == Some(to))?;
        u8::try_from(target.checked_sub(from + 1)?).ok()
    };
    let ret = |to: To| match to {
        To::Deny => libc::SECCOMP_RET_ERRNO | libc::EACCES as u32,
        To::DenyPerm => libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
        To::NoSys => libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
        _ => libc::SECCOMP_RET_ALLOW,
    };
    let ins = |code: u32, jt: u8, jf: u8, k: u32| libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    let mut out = Vec::with_capacity(p.len());
    for (i, (_, o)) in p.iter().enumerate() {
        out.push(match *o {
            Op::Load(off) => ins(BPF_LD | BPF_W | BPF_ABS, 0, 0, off),
            Op::And(k) => ins(BPF_ALU | BPF_AND | BPF_K, 0, 0, k),
            Op::Ret(to) => ins(BPF_RET | BPF_K, 0, 0, ret(to)),
            Op::Eq(k, t, f) => ins(BPF_JMP | BPF_JEQ | BPF_K, at(t, i)?, at(f, i)?, k),
            Op::Ge(k, t, f) => ins(BPF_JMP | BPF_JGE | BPF_K, at(t, i)?, at(f, i)?, k),
            Op::Set(k, t, f) => ins(BPF_JMP | BPF_JSET | BPF_K, at(t, i)?, at(f, i)?, k),
        });
    }
    Some(out)
}

/// Installs the filter on this process (and every process it starts).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(super) fn install(network: bool) -> Result<(), BoxError> {
    let filter = assemble(&program(network))
        .ok_or(BoxError::Lacks("the seccomp program does not assemble"))?;
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: plain prctl calls; `prog` and `filter` outlive them and the kernel copies
    // the program.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(BoxError::System(std::io::Error::last_os_error()));
        }
        if libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &prog as *const libc::sock_fprog,
        ) != 0
        {
            return Err(BoxError::System(std::io::Error::last_os_error()));
        }
    }
    Ok(())
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(super) fn install(_network: bool) -> Result<(), BoxError> {
    Err(BoxError::Lacks(
        "no seccomp filter for this CPU architecture",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_programs_assemble_with_every_jump_in_reach() {
        for network in [false, true] {
            let p = program(network);
            let a = assemble(&p).expect("assembles");
            assert_eq!(a.len(), p.len());
            assert!(a.len() < 100, "{}", a.len());
        }
    }
}
