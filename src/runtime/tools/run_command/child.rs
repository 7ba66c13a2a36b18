//! The child: spawned in its own session, its output captured head and tail, supervised
//! until it ends, times out or is cancelled, and its process group killed.

use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::runtime::tools::spec::ToolContext;

/// How often the loop looks at the clock and the cancel flag.
pub(super) const TICK_MS: i32 = 50;
/// Reads (of up to 64 KiB) between two looks at the clock.
pub(super) const READS_PER_TICK: usize = 64;
/// How long output is still read after the command's group was killed (a process that left
/// the group may hold the pipe open).
pub(super) const DRAIN: Duration = Duration::from_secs(2);

/// Keeps the first and the last `cap / 2` bytes of a stream and counts the rest.
pub(super) struct Capture {
    pub(super) half: usize,
    pub(super) head: Vec<u8>,
    pub(super) tail: Vec<u8>,
    pub(super) total: usize,
}

impl Capture {
    pub(super) fn new(cap: usize) -> Capture {
        let half = (cap / 2).max(256);
        Capture {
            half,
            head: Vec::new(),
            tail: Vec::new(),
            total: 0,
        }
    }

    pub(super) fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len();
        if self.head.len() < self.half {
            let n = (self.half - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > 2 * self.half {
            let cut = self.tail.len() - self.half;
            self.tail.drain(..cut);
        }
    }

    /// Kept bytes dropped in the middle.
    pub(super) fn cut(&self) -> usize {
        self.total
            .saturating_sub(self.head.len() + self.tail.len().min(self.half))
    }

    pub(super) fn text(&self) -> String {
        let tail = &self.tail[self.tail.len().saturating_sub(self.half)..];
        let cut = self.cut();
        let mut out = String::from_utf8_lossy(&self.head).into_owned();
        if cut > 0 {
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&format!("… {cut} bytes cut …\n"));
        }
        out.push_str(&String::from_utf8_lossy(tail));
        out
    }
}

pub(super) struct Outcome {
    pub(super) status: Option<std::process::ExitStatus>,
    pub(super) timed_out: bool,
    pub(super) cancelled: bool,
    pub(super) output: Capture,
    /// The start of the output was dropped before it reached us (a front end's terminal
    /// keeps only its last bytes).
    pub(super) start_cut: bool,
}

pub(super) fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors we then own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both are fresh descriptors owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

pub(super) fn kill_group(pgid: i32) {
    // SAFETY: plain syscall; a group that is gone gives ESRCH, which is fine.
    unsafe {
        libc::killpg(pgid, libc::SIGKILL);
    }
}

/// Stops the command: the helper (`helper`) is asked first with SIGTERM, so it kills every
/// process the command started (also those that left the group) before it exits; then the
/// whole group gets SIGKILL.
pub(super) fn stop(
    child: &mut std::process::Child,
    pgid: i32,
    helper: bool,
) -> std::io::Result<std::process::ExitStatus> {
    if helper {
        // SAFETY: signalling our own child.
        unsafe {
            libc::kill(pgid, libc::SIGTERM);
        }
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until {
            if let Some(st) = child.try_wait()? {
                kill_group(pgid);
                return Ok(st);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    kill_group(pgid);
    child.wait()
}

/// Runs `cmd` to its end (or the time limit, or a cancel). `prepare` is run before the
/// command starts: with a gate (the helper waits on it), while the helper starts, then the
/// gate opens; without one, before the spawn. Returns the outcome, when the command was let
/// go, and what `prepare` returned.
pub(super) fn execute<T>(
    cmd: &mut Command,
    timeout: Duration,
    ctx: &ToolContext,
    cap: usize,
    gate: Option<(OwnedFd, OwnedFd)>,
    prepare: impl FnOnce() -> T,
) -> std::io::Result<(Outcome, Instant, T)> {
    let helper = gate.is_some();
    let (read_end, write_end) = pipe()?;
    cmd.stdout(Stdio::from(write_end.try_clone()?))
        .stderr(Stdio::from(write_end));
    let (mut child, prepared) = match gate {
        None => {
            own_session(cmd);
            let prepared = prepare();
            (spawn(cmd)?, prepared)
        }
        Some((gate_read, gate_write)) => {
            // The helper makes its own session and checks its parent itself, so it is
            // spawned without a closure run between fork and exec (which lets the standard
            // library use `posix_spawn`, no copy of neocode's page tables). It inherits the
            // gate's reading end; another process spawned in this instant may inherit it
            // too, which is harmless (it never reads it).
            // SAFETY: fcntl on a descriptor we own.
            unsafe { libc::fcntl(gate_read.as_raw_fd(), libc::F_SETFD, 0) };
            let child = spawn(cmd);
            drop(gate_read);
            let child = child?;
            let prepared = prepare();
            // SAFETY: one byte from a local to the gate's writing end, which we own.
            unsafe { libc::write(gate_write.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
            (child, prepared)
        }
    };
    let started = Instant::now();
    let outcome = supervise(&mut child, read_end, started + timeout, ctx, cap, helper)?;
    Ok((outcome, started, prepared))
}

/// Spawns `cmd`, then lets go of our copies of its output pipe (or it never reaches EOF).
pub(super) fn spawn(cmd: &mut Command) -> std::io::Result<std::process::Child> {
    let spawned = cmd.spawn();
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    spawned
}

/// The child (a shell run without the helper) gets its own session and process group and
/// dies with neocode.
pub(super) fn own_session(cmd: &mut Command) {
    // SAFETY: getpid has no preconditions and cannot fail (read here, before the fork).
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the child between fork and exec, where only
    // async-signal-safe calls are sound: it makes syscalls only and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            // Own session and process group: the whole tree can be killed at once and has
            // no controlling terminal (cannot write over the TUI through /dev/tty).
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Die with neocode (the spawning thread waits for us until we end).
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

/// Reads the command's output until it ends (and its pipe closes, or [`DRAIN`] after), the
/// `deadline` passes or the user cancels; then stops it (through the helper when `helper`).
pub(super) fn supervise(
    child: &mut std::process::Child,
    read_end: OwnedFd,
    deadline: Instant,
    ctx: &ToolContext,
    cap: usize,
    helper: bool,
) -> std::io::Result<Outcome> {
    let pgid = child.id() as i32;
    let mut reader = std::fs::File::from(read_end);
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        let fd = reader.as_raw_fd();
        let flags = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
    let mut output = Capture::new(cap.max(1024));
    let mut timed_out = false;
    let mut cancelled = false;
    let mut buf = vec![0u8; 64 * 1024];
    let mut exited: Option<std::process::ExitStatus> = None;
    let mut drain_until: Option<Instant> = None;
    loop {
        let mut pfd = libc::pollfd {
            fd: reader.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe {
            libc::poll(&mut pfd, 1, TICK_MS);
        }
        let mut eof = false;
        // Bounded, so a command that writes faster than we read (`yes`) cannot keep us from
        // looking at the clock and the cancel flag.
        for _ in 0..READS_PER_TICK {
            match reader.read(&mut buf) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => output.push(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        if exited.is_none() {
            if let Some(st) = child.try_wait()? {
                exited = Some(st);
                // Background processes the command left behind die with it.
                kill_group(pgid);
                drain_until = Some(Instant::now() + DRAIN);
            } else if ctx.cancel.is_cancelled() || Instant::now() >= deadline {
                if ctx.cancel.is_cancelled() {
                    cancelled = true;
                } else {
                    timed_out = true;
                }
                exited = Some(stop(child, pgid, helper)?);
                drain_until = Some(Instant::now() + DRAIN);
            }
        }
        if eof && exited.is_none() {
            // The output closed before the command was seen to end: a program that closes
            // its output at exit (coreutils do, and bash execs a lone command) is still
            // exiting. Wait for its end (the deadline and cancel still apply), not kill it.
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        if eof || drain_until.is_some_and(|d| Instant::now() >= d) {
            break;
        }
    }
    if exited.is_none() {
        exited = Some(stop(child, pgid, helper)?);
    }
    Ok(Outcome {
        status: exited,
        timed_out,
        cancelled,
        output,
        start_cut: false,
    })
}
