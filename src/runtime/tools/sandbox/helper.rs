//! The helper's process work on Linux (issue #22): the namespace box, the fallback's
//! subreaper, and killing whatever a command left behind.
//!
//! This runs in `neocode __sandbox-exec`, a fresh exec with a single thread, so it may fork
//! and allocate freely (nothing here runs in a `pre_exec` closure).
//!
//! Namespace box (user namespaces available):
//!
//! ```text
//! neocode ── helper (subreaper; dies after cleaning up when neocode dies)
//!              └─ init: PID 1 of a new user+mount+pid(+net) namespace; mounts, then reaps
//!                   └─ command: Landlock + seccomp + no capabilities, then exec sh -c CMD
//! ```
//!
//! When the command ends, init exits and the kernel kills every process left in the PID
//! namespace; when neocode dies or asks (SIGTERM), the helper kills init. Init dies with the
//! helper (`PR_SET_PDEATHSIG`). Fallback (no user namespaces): the helper forks the command
//! itself, is its subreaper, and kills every descendant when it ends.

use std::ffi::{CString, OsString};
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::abi::REFUSED_EXIT;
use super::fault::BoxError;
use super::linux::{self, Outcome};
use super::mount_api::{
    AT_RECURSIVE, OPEN_TREE_CLOEXEC, OPEN_TREE_CLONE, move_onto, open_tree, set_read_only,
};
use super::protect::Protected;

/// What one helper run confines.
pub(super) struct Plan {
    pub root: Option<PathBuf>,
    pub tmp: Option<PathBuf>,
    pub home: Option<PathBuf>,
    pub read_only: bool,
    pub network: bool,
    pub namespaces: bool,
    pub require_full: bool,
    pub target_abi: Option<i32>,
    /// A descriptor to read one byte from before the command starts (neocode takes the
    /// workspace's "before" meanwhile); end of file: the command is not run.
    pub gate: Option<i32>,
    /// neocode's pid: the helper runs nothing when it is no longer its parent.
    pub parent: Option<i32>,
}

impl Plan {
    fn writable(&self) -> Vec<PathBuf> {
        if self.read_only {
            Vec::new()
        } else {
            self.root.iter().chain(self.tmp.iter()).cloned().collect()
        }
    }
}

fn errno_text(what: &str) -> BoxError {
    BoxError::last_os(what)
}

fn cstr(p: &Path) -> Result<CString, BoxError> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| BoxError::NulPath(p.to_path_buf()))
}

fn pipe() -> Result<(OwnedFd, OwnedFd), BoxError> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors we then own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(errno_text("pipe"));
    }
    // SAFETY: both are fresh descriptors owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The signals the helper waits for instead of dying of them.
fn helper_signals() -> libc::sigset_t {
    // SAFETY: a zeroed sigset is then initialised by sigemptyset.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: plain libc calls on a local set.
    unsafe {
        libc::sigemptyset(&mut set);
        for s in [
            libc::SIGCHLD,
            libc::SIGTERM,
            libc::SIGHUP,
            libc::SIGINT,
            libc::SIGQUIT,
        ] {
            libc::sigaddset(&mut set, s);
        }
    }
    set
}

/// Enters new user, mount and PID namespaces (and a network namespace when the network is
/// denied), mapping the caller's own uid and gid. The next child is PID 1 of the new one.
fn enter_namespaces(network: bool) -> Result<(), BoxError> {
    // SAFETY: plain syscalls.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let mut flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID;
    if !network {
        flags |= libc::CLONE_NEWNET;
    }
    // SAFETY: unshare only changes this (single-threaded) process's namespaces.
    if unsafe { libc::unshare(flags) } != 0 {
        return Err(errno_text("unshare"));
    }
    let write = |file: &str, text: String| -> Result<(), BoxError> {
        std::fs::write(file, text).map_err(|e| BoxError::os(file, e))
    };
    match std::fs::write("/proc/self/setgroups", "deny") {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(BoxError::os("/proc/self/setgroups", e)),
    }
    write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
    Ok(())
}

fn mount(
    src: &str,
    target: &Path,
    fstype: &str,
    flags: libc::c_ulong,
    data: &str,
) -> Result<(), BoxError> {
    let s = CString::new(src)?;
    let t = cstr(target)?;
    let f = CString::new(fstype)?;
    let d = CString::new(data)?;
    // SAFETY: valid C strings that outlive the call.
    let r = unsafe {
        libc::mount(
            s.as_ptr(),
            t.as_ptr(),
            if fstype.is_empty() {
                std::ptr::null()
            } else {
                f.as_ptr()
            },
            flags,
            if data.is_empty() {
                std::ptr::null()
            } else {
                d.as_ptr().cast()
            },
        )
    };
    if r != 0 {
        return Err(errno_text(&format!(
            "mount {fstype} on {}",
            target.display()
        )));
    }
    Ok(())
}

/// The mount tree of the new namespace: everything read-only but the writable folders (which
/// keep their own mounts and flags), the workspace's control files read-only again
/// (`protect.rs`), a fresh `/proc` of the new PID namespace, neocode's home hidden under an
/// empty read-only tmpfs. Runs in init, inside the namespaces; returns what must be put back
/// after the command.
fn setup_mounts(plan: &Plan) -> Result<Protected, BoxError> {
    let root = Path::new("/");
    mount("none", root, "", libc::MS_REC | libc::MS_PRIVATE, "")?;
    let writable = plan.writable();
    let all_writable = writable.iter().any(|w| w == root);
    // Detached copies of the writable trees, taken before anything turns read-only.
    let mut clones = Vec::new();
    if !all_writable {
        for w in &writable {
            let p = cstr(w)?;
            let tree = open_tree(&p, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE)
                .map_err(|e| BoxError::os(format!("open_tree {}", w.display()), e))?;
            clones.push((w.clone(), tree));
        }
    }
    mount(
        "proc",
        Path::new("/proc"),
        "proc",
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        "",
    )?;
    if !all_writable {
        set_read_only(libc::AT_FDCWD, c"/", AT_RECURSIVE)
            .map_err(|e| BoxError::os("mount_setattr / read-only", e))?;
    }
    for (w, fd) in &clones {
        let p = cstr(w)?;
        move_onto(fd, &p)
            .map_err(|e| BoxError::os(format!("move_mount onto {}", w.display()), e))?;
    }
    let protected = match (&plan.root, plan.read_only) {
        (Some(root), false) => {
            let p = Protected::find(root);
            p.mount()?;
            p
        }
        _ => Protected::default(),
    };
    if let Some(home) = &plan.home {
        // A home that holds the workspace cannot be hidden without hiding the workspace; it is
        // read-only like everything outside the writable folders.
        let holds_writable = writable.iter().any(|w| w.starts_with(home));
        if home.is_dir() && !holds_writable {
            mount(
                "tmpfs",
                home,
                "tmpfs",
                libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                "size=4k,mode=555",
            )?;
        }
    }
    // The working folder was looked up before the mounts: enter the new one.
    let cwd = plan.root.clone().unwrap_or_else(|| PathBuf::from("/"));
    std::env::set_current_dir(&cwd)
        .map_err(|e| BoxError::os(format!("chdir {}", cwd.display()), e))?;
    Ok(protected)
}

/// Waits for neocode's go (one byte on `gate`); `false` when it closed the gate instead.
fn wait_gate(gate: Option<i32>) -> bool {
    let Some(fd) = gate else { return true };
    let mut byte = 0u8;
    let open = loop {
        // SAFETY: reads one byte into a local from a descriptor we were given.
        let n = unsafe { libc::read(fd, (&mut byte as *mut u8).cast(), 1) };
        if n < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        break n == 1;
    };
    // SAFETY: our copy of the gate, not used again.
    unsafe { libc::close(fd) };
    open
}

/// In PID 1 of the namespace: kills every other process of it and reaps them all.
fn end_all() {
    // SAFETY: PID 1 signals every process of its namespace (never itself).
    unsafe { libc::kill(-1, libc::SIGKILL) };
    loop {
        let mut st = 0;
        // SAFETY: waitpid with a valid status pointer.
        let r = unsafe { libc::waitpid(-1, &mut st, 0) };
        if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

/// No capability is left, and none comes back on exec (bounding and ambient sets empty).
fn drop_capabilities() {
    // SAFETY: plain prctl/capset calls on this process.
    unsafe {
        for cap in 0..64 {
            libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
        }
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
        #[repr(C)]
        struct Header {
            version: u32,
            pid: i32,
        }
        #[repr(C)]
        struct Data {
            effective: u32,
            permitted: u32,
            inheritable: u32,
        }
        let mut header = Header {
            version: 0x2008_0522,
            pid: 0,
        };
        let data = [
            Data {
                effective: 0,
                permitted: 0,
                inheritable: 0,
            },
            Data {
                effective: 0,
                permitted: 0,
                inheritable: 0,
            },
        ];
        libc::syscall(libc::SYS_capset, &mut header as *mut Header, data.as_ptr());
    }
}

/// In the command's own process: confine, then exec. Never returns.
fn exec_command(plan: &Plan, command: &[OsString]) -> ! {
    use std::os::unix::process::CommandExt;
    // SAFETY: plain prctl; the helper (or init) is our parent.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
    }
    if plan.namespaces {
        drop_capabilities();
    }
    let outcome = linux::restrict(&plan.writable(), plan.network, plan.target_abi);
    let ok = match &outcome {
        Outcome::Full { .. } => true,
        Outcome::Partial { .. } => !plan.require_full,
        Outcome::None { .. } => false,
    };
    if !ok {
        // Never run unconfined (or less confined than promised) silently.
        eprintln!(
            "neocode sandbox: the command was not run: {}",
            outcome.probe_line()
        );
        exit_now(REFUSED_EXIT);
    }
    let Some((program, rest)) = command.split_first() else {
        exit_now(2);
    };
    let err = std::process::Command::new(program).args(rest).exec();
    eprintln!(
        "neocode sandbox: cannot run {}: {err}",
        program.to_string_lossy()
    );
    exit_now(127)
}

fn exit_now(code: i32) -> ! {
    let _ = std::io::stderr().flush();
    // SAFETY: ends this process without running the parent's atexit handlers twice.
    unsafe { libc::_exit(code) }
}

/// PID 1 of the namespace: set up the mounts, start the command, reap everything, and hand
/// the command's raw wait status to the helper. Its exit kills the rest of the namespace.
fn init(plan: &Plan, command: &[OsString], status: OwnedFd) -> ! {
    // SAFETY: plain prctl calls; the helper is our parent. Not dumpable: the command (same
    // uid, no capabilities) cannot ptrace init, which holds the namespace's capabilities.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
    let protected = match setup_mounts(plan) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("neocode sandbox: the command was not run: {e}");
            exit_now(REFUSED_EXIT);
        }
    };
    if !wait_gate(plan.gate) {
        eprintln!("neocode sandbox: the command was not run: neocode did not start it");
        exit_now(REFUSED_EXIT);
    }
    // SAFETY: fork in a single-threaded process.
    let cmd = unsafe { libc::fork() };
    if cmd < 0 {
        eprintln!(
            "neocode sandbox: the command was not run: {}",
            errno_text("fork")
        );
        exit_now(REFUSED_EXIT);
    }
    if cmd == 0 {
        drop(status);
        exec_command(plan, command);
    }
    loop {
        let mut st = 0;
        // SAFETY: waitpid with a valid status pointer.
        let r = unsafe { libc::waitpid(-1, &mut st, 0) };
        if r == cmd {
            if protected.needs_restore()
                && let Some(root) = &plan.root
            {
                end_all();
                for note in protected.restore(root) {
                    eprintln!("[sandbox: {note}]");
                }
            }
            // SAFETY: writing 4 bytes from a local to a descriptor we own.
            unsafe {
                libc::write(status.as_raw_fd(), (&st as *const i32).cast(), 4);
            }
            exit_now(0);
        }
        if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            exit_now(1);
        }
    }
}

/// The helper's children (threads of a single-threaded process: its own task).
fn children() -> Vec<i32> {
    // SAFETY: plain syscall.
    let me = unsafe { libc::getpid() };
    if let Ok(text) = std::fs::read_to_string(format!("/proc/{me}/task/{me}/children")) {
        return text
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
    }
    // Without CONFIG_PROC_CHILDREN: every process whose parent we are.
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<i32>().ok());
        if ppid == Some(me) {
            out.push(pid);
        }
    }
    out
}

/// Kills every descendant: as subreaper the helper inherits every orphan, so killing its
/// children round after round until none is left reaches the whole tree, including processes
/// that left the process group or the session.
fn kill_descendants() {
    loop {
        let kids = children();
        if kids.is_empty() {
            let mut st = 0;
            // SAFETY: waitpid with a valid status pointer.
            let r = unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) };
            if r > 0 {
                continue;
            }
            if r < 0 {
                return; // ECHILD: nothing left
            }
            // A child not listed yet (just reparented): look again shortly.
            std::thread::sleep(std::time::Duration::from_millis(2));
            continue;
        }
        for k in &kids {
            // SAFETY: signalling our own child.
            unsafe {
                libc::kill(*k, libc::SIGKILL);
            }
        }
        let mut st = 0;
        // SAFETY: waitpid with a valid status pointer.
        unsafe {
            libc::waitpid(-1, &mut st, 0);
            while libc::waitpid(-1, &mut st, libc::WNOHANG) > 0 {}
        }
    }
}

/// Waits for `pid` or a signal asking the helper to stop; `Some(raw status)` when it ended.
fn supervise(pid: i32, set: &libc::sigset_t) -> Option<i32> {
    loop {
        // SAFETY: a zeroed siginfo is filled by sigwaitinfo.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: the set is initialised and its signals are blocked.
        let sig = unsafe { libc::sigwaitinfo(set, &mut info) };
        if sig == libc::SIGCHLD || sig < 0 {
            loop {
                let mut st = 0;
                // SAFETY: waitpid with a valid status pointer.
                let r = unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) };
                if r == pid {
                    return Some(st);
                }
                if r <= 0 {
                    break;
                }
            }
        } else {
            // SIGTERM from neocode (timeout, cancel), or neocode died (parent-death signal).
            // SAFETY: signalling our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
            return None;
        }
    }
}

/// Ends the helper the way the command ended: its exit code, or death by its signal.
fn finish(raw: i32) -> i32 {
    if libc::WIFEXITED(raw) {
        return libc::WEXITSTATUS(raw);
    }
    if libc::WIFSIGNALED(raw) {
        let sig = libc::WTERMSIG(raw);
        // SAFETY: default action for that signal, no core file, unblocked, then raised.
        unsafe {
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            libc::signal(sig, libc::SIG_DFL);
            let mut one: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut one);
            libc::sigaddset(&mut one, sig);
            libc::sigprocmask(libc::SIG_UNBLOCK, &one, std::ptr::null_mut());
            libc::raise(sig);
        }
        return 128 + sig;
    }
    1
}

/// Runs `command` confined by `plan`; the helper's exit code.
pub(super) fn run(plan: &Plan, command: &[OsString]) -> i32 {
    let set = helper_signals();
    // SAFETY: plain libc/prctl calls on this single-threaded process.
    unsafe {
        // Its own session and process group, which neocode kills as a last resort, with no
        // controlling terminal (nothing in the box can write over the TUI through /dev/tty).
        libc::setsid();
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        // neocode's death becomes a SIGTERM the helper waits for, so it cleans up first.
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGTERM as libc::c_ulong,
            0,
            0,
            0,
        );
        // neocode died before the signal was set: it would never come.
        let parent = libc::getppid();
        if parent == 1 || plan.parent.is_some_and(|p| p != parent) {
            return 1;
        }
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        // The gate is ours and init's, never the command's.
        if let Some(g) = plan.gate {
            libc::fcntl(g, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
    let (status_r, status_w) = match pipe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("neocode sandbox: the command was not run: {e}");
            return REFUSED_EXIT;
        }
    };
    if plan.namespaces
        && let Err(e) = enter_namespaces(plan.network)
    {
        eprintln!("neocode sandbox: the command was not run: cannot create the namespaces: {e}");
        return REFUSED_EXIT;
    }
    if !plan.namespaces && !wait_gate(plan.gate) {
        eprintln!("neocode sandbox: the command was not run: neocode did not start it");
        return REFUSED_EXIT;
    }
    // SAFETY: fork in a single-threaded process.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        eprintln!(
            "neocode sandbox: the command was not run: {}",
            errno_text("fork")
        );
        return REFUSED_EXIT;
    }
    if pid == 0 {
        drop(status_r);
        if plan.namespaces {
            init(plan, command, status_w);
        }
        drop(status_w);
        exec_command(plan, command);
    }
    drop(status_w);
    let ended = supervise(pid, &set);
    kill_descendants();
    let Some(raw) = ended else {
        return 128 + libc::SIGKILL;
    };
    if !plan.namespaces {
        return finish(raw);
    }
    // Init ended: its own exit code unless it passed on the command's status.
    let mut buf = [0u8; 4];
    let mut f = std::fs::File::from(status_r);
    match std::io::Read::read(&mut f, &mut buf) {
        Ok(4) => finish(i32::from_ne_bytes(buf)),
        _ => finish(raw),
    }
}

/// What the namespace box holds here: `Ok` when a trial run in a scratch folder set up every
/// namespace and mount and the writes landed where they should.
pub(super) fn probe_namespaces() -> Result<(), BoxError> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    // SAFETY: plain syscall.
    let me = unsafe { libc::getpid() };
    let base = std::env::temp_dir().join(format!("neocode-probe-{me}-{nanos:08x}"));
    let ws = base.join("ws");
    let home = base.join("home");
    let tmp = base.join("tmp");
    for d in [&ws, &home, &tmp] {
        std::fs::create_dir_all(d).map_err(|e| BoxError::os(d.display().to_string(), e))?;
    }
    let _ = std::fs::write(home.join("secret"), "x");
    let result = probe_in(&base, &ws, &home, &tmp);
    let _ = std::fs::remove_dir_all(&base);
    result
}

fn probe_in(base: &Path, ws: &Path, home: &Path, tmp: &Path) -> Result<(), BoxError> {
    let (r, w) = pipe()?;
    // SAFETY: fork in a single-threaded process.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(errno_text("fork"));
    }
    if pid == 0 {
        drop(r);
        let mut out = std::fs::File::from(w);
        let plan = Plan {
            root: Some(ws.to_path_buf()),
            tmp: Some(tmp.to_path_buf()),
            home: Some(home.to_path_buf()),
            read_only: false,
            network: false,
            namespaces: true,
            require_full: false,
            target_abi: None,
            gate: None,
            parent: None,
        };
        if let Err(e) = enter_namespaces(false) {
            let _ = out.write_all(e.to_string().as_bytes());
            exit_now(1);
        }
        // SAFETY: fork in a single-threaded process.
        let init = unsafe { libc::fork() };
        if init == 0 {
            let check = || -> Result<(), BoxError> {
                setup_mounts(&plan)?;
                // SAFETY: plain syscall.
                if unsafe { libc::getpid() } != 1 {
                    return Err(BoxError::Lacks("not PID 1 in the new PID namespace"));
                }
                std::fs::write(ws.join("probe"), "x")
                    .map_err(|e| BoxError::os("the workspace is not writable", e))?;
                std::fs::write(tmp.join("probe"), "x")
                    .map_err(|e| BoxError::os("TMPDIR is not writable", e))?;
                if std::fs::write(base.join("outside"), "x").is_ok() {
                    return Err(BoxError::Lacks("the root did not turn read-only"));
                }
                if home.join("secret").exists() {
                    return Err(BoxError::Lacks("the home could not be hidden"));
                }
                Ok(())
            };
            match check() {
                Ok(()) => exit_now(0),
                Err(e) => {
                    let _ = out.write_all(e.to_string().as_bytes());
                    exit_now(1);
                }
            }
        }
        let mut st = 0;
        // SAFETY: waitpid with a valid status pointer.
        unsafe { libc::waitpid(init, &mut st, 0) };
        exit_now(if init > 0 && libc::WIFEXITED(st) {
            libc::WEXITSTATUS(st)
        } else {
            1
        });
    }
    drop(w);
    let mut text = String::new();
    let _ = std::io::Read::read_to_string(&mut std::fs::File::from(r), &mut text);
    let mut st = 0;
    // SAFETY: waitpid with a valid status pointer.
    unsafe { libc::waitpid(pid, &mut st, 0) };
    if libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0 {
        Ok(())
    } else if text.is_empty() {
        Err(BoxError::Lacks("the namespace trial run failed"))
    } else {
        Err(BoxError::Trial(text))
    }
}
