//! `run_command`: `bash -c` (`sh -c` where bash is missing: [`Interpreter`]) in the
//! workspace root, confined by the sandbox helper, with a time limit, an output cap (head
//! and tail kept), cancellation, and every process it started killed when it ends, times
//! out, is cancelled, or neocode dies (the helper's PID namespace or subreaper; the process
//! group as a last resort).

use std::ffi::OsString;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Value, json};

use super::interpreter::Interpreter;
use super::sandbox::{self, SandboxStatus};
use super::spec::{SandboxMode, ToolContext, ToolKind, ToolOutput, ToolSpec, parse_args};
use super::terminal::{CommandTerminal, TerminalCommand};
use super::watch;

pub(super) const SPEC: ToolSpec = ToolSpec {
    name: "run_command",
    description: "Run a command with `bash -c` in the workspace root; returns exit code and output (stdout and stderr together; long output keeps its start and end). Sandboxed: writes only inside the workspace and $TMPDIR, no network unless the user allowed it. Background processes are killed at the end.",
    parameters: schema,
    kind: ToolKind::Command,
    run,
    summary: Some(summary),
    preview: None,
};

fn summary(v: &Value) -> String {
    match super::spec::arg(v, "command") {
        Some(c) => format!("run_command {}", super::spec::one_line(c)),
        None => "run_command".to_string(),
    }
}

/// How often the loop looks at the clock and the cancel flag.
const TICK_MS: i32 = 50;
/// Reads (of up to 64 KiB) between two looks at the clock.
const READS_PER_TICK: usize = 64;
/// How long output is still read after the command's group was killed (a process that left
/// the group may hold the pipe open).
const DRAIN: Duration = Duration::from_secs(2);

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "Shell command line."},
            "timeout_secs": {"type": "integer", "minimum": 1, "description": "Seconds (capped by the session's limit)."}
        },
        "required": ["command"]
    })
}

#[derive(Deserialize)]
struct Args {
    command: String,
    timeout_secs: Option<u64>,
}

/// Keeps the first and the last `cap / 2` bytes of a stream and counts the rest.
struct Capture {
    half: usize,
    head: Vec<u8>,
    tail: Vec<u8>,
    total: usize,
}

impl Capture {
    fn new(cap: usize) -> Capture {
        let half = (cap / 2).max(256);
        Capture {
            half,
            head: Vec::new(),
            tail: Vec::new(),
            total: 0,
        }
    }

    fn push(&mut self, mut bytes: &[u8]) {
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
    fn cut(&self) -> usize {
        self.total
            .saturating_sub(self.head.len() + self.tail.len().min(self.half))
    }

    fn text(&self) -> String {
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

/// Names of the command folders: `neocode-cmd-<pid>-<n>-<nanos>`.
const TEMP_PREFIX: &str = "neocode-cmd-";

/// A private temporary folder, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> std::io::Result<TempDir> {
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
fn owner_pid(name: &str) -> Option<i32> {
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
fn may_be_alive(pid: i32) -> bool {
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
fn sweep_stale(base: &Path) {
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

fn run(arguments: &str, ctx: &ToolContext) -> ToolOutput {
    let args: Args = match parse_args("run_command", arguments) {
        Ok(a) => a,
        Err(e) => return e,
    };
    if args.command.trim().is_empty() {
        return ToolOutput::error("run_command: the command is empty");
    }
    if args.command.contains('\0') {
        return ToolOutput::error("run_command: the command contains a NUL byte");
    }
    if let Some(why) = Interpreter::detect().refusal(&args.command) {
        return ToolOutput::error(why);
    }
    let root = match ctx.root.canonicalize() {
        Ok(r) => r,
        Err(e) => return ToolOutput::error(format!("cannot resolve the workspace root: {e}")),
    };
    let limit = ctx.command_timeout.max(Duration::from_secs(1));
    let timeout = match args.timeout_secs {
        Some(s) => Duration::from_secs(s.max(1)).min(limit),
        None => limit,
    };
    if let Some(why) = sandbox::trust::refusal(ctx.sandbox.home.as_deref(), &root) {
        return ToolOutput::error(why);
    }
    let status = sandbox::status(&ctx.sandbox);
    let namespaced = sandbox::namespaced(&ctx.sandbox);
    let home = ctx
        .sandbox
        .home
        .as_ref()
        .and_then(|h| h.canonicalize().ok());
    if let Some(h) = &home
        && h.starts_with(&root)
        && !namespaced
        && status != SandboxStatus::Off
    {
        // Landlock rules only allow: without a mount namespace the home cannot be kept out of
        // a writable workspace, so a command could switch the sandbox off through it.
        return ToolOutput::error(format!(
            "run_command: not run: neocode's home {} lies inside the workspace {} and this sandbox cannot protect it (no user namespaces: {}). Set NEOCODE_HOME to a folder outside the workspace, or run neocode from another folder.",
            h.display(),
            root.display(),
            status.describe()
        ));
    }
    let tmp = match TempDir::new() {
        Ok(t) => t,
        Err(e) => {
            return ToolOutput::error(format!("cannot create a temporary folder: {e}"));
        }
    };
    let job = Job {
        command: &args.command,
        status,
        root,
        tmp: &tmp.0,
        home,
        namespaced,
        timeout,
    };
    match &ctx.terminal {
        Some(terminal) => in_terminal(terminal.as_ref(), ctx, &job),
        None => spawned(ctx, &job),
    }
}

/// One command about to run: what the checks of [`run`] settled.
struct Job<'a> {
    command: &'a str,
    status: SandboxStatus,
    /// The workspace root, canonical.
    root: PathBuf,
    /// The command's private temporary folder (removed after the call).
    tmp: &'a Path,
    /// neocode's home, canonical, when it exists.
    home: Option<PathBuf>,
    namespaced: bool,
    timeout: Duration,
}

impl Job<'_> {
    fn confined(&self) -> bool {
        matches!(
            self.status,
            SandboxStatus::Enforced { .. } | SandboxStatus::Partial { .. }
        )
    }

    fn plan(&self, elsewhere: bool) -> BoxPlan<'_> {
        BoxPlan {
            namespaced: self.namespaced,
            home: self.home.as_deref(),
            elsewhere,
        }
    }

    /// What the workspace looked like before the command (for [`Job::ended`]).
    fn before(&self) -> (watch::Before, Option<String>) {
        let mut watched = watch::before(&self.root, self.home.as_deref());
        let tree = watched.snapshot(&self.root);
        (watched, tree)
    }

    /// The result of the command: its report, and what it changed in the workspace
    /// (recorded with the result, never restored).
    fn ended(
        &self,
        ctx: &ToolContext,
        outcome: Outcome,
        elapsed: Duration,
        (watched, tree): (watch::Before, Option<String>),
    ) -> ToolOutput {
        let mut out = report(
            self.command,
            &self.status,
            ctx,
            &self.root,
            outcome,
            elapsed,
            self.timeout,
        );
        let (changed, line) =
            watch::finish(watched, &self.root, self.home.as_deref(), tree.as_deref());
        out.text.push_str(&line);
        out.files = changed;
        out
    }
}

/// Runs the job as neocode's own child.
fn spawned(ctx: &ToolContext, job: &Job<'_>) -> ToolOutput {
    // The helper starts (and builds the box) while the workspace's "before" is taken; the
    // command itself waits for the gate to open.
    let gate = if job.confined() {
        match pipe() {
            Ok(p) => Some(p),
            Err(e) => return ToolOutput::error(format!("cannot start the command: {e}")),
        }
    } else {
        None
    };
    let gate_fd = gate.as_ref().map(|(r, _)| r.as_raw_fd());
    let argv = match argv_for(job, ctx, &job.plan(false), gate_fd) {
        Ok(a) => a,
        Err(e) => return ToolOutput::error(e.to_string()),
    };
    let mut cmd = command_for(&argv, ctx, job);
    let (outcome, started, before) =
        match execute(&mut cmd, job.timeout, ctx, ctx.output_cap, gate, || {
            job.before()
        }) {
            Ok(o) => o,
            Err(e) => return ToolOutput::error(format!("cannot start the command: {e}")),
        };
    drop(cmd);
    job.ended(ctx, outcome, started.elapsed(), before)
}

/// Runs the job in the front end's terminal: the same argv the tool would exec (the helper
/// around the shell), under `env -i` with the same scrubbed environment, so the front end
/// starts the same confined command. No gate (a descriptor cannot be handed over), and no
/// `--parent` (the front end is the helper's parent).
fn in_terminal(terminal: &dyn CommandTerminal, ctx: &ToolContext, job: &Job<'_>) -> ToolOutput {
    let argv = match argv_for(job, ctx, &job.plan(true), None) {
        Ok(a) => a,
        Err(e) => return ToolOutput::error(e.to_string()),
    };
    let mut args = vec!["-i".to_string()];
    let env = command_env(ctx, job.tmp);
    for part in env
        .iter()
        .map(|(k, v)| {
            let mut kv = k.clone();
            kv.push("=");
            kv.push(v);
            kv
        })
        .chain(argv)
    {
        match part.into_string() {
            Ok(p) => args.push(p),
            Err(p) => {
                return ToolOutput::error(format!(
                    "run_command: not run in the editor's terminal: {} is not UTF-8 text",
                    p.to_string_lossy()
                ));
            }
        }
    }
    let request = TerminalCommand {
        call_id: ctx.call_id.clone(),
        program: ENV_PROGRAM.to_string(),
        args,
        cwd: job.root.clone(),
        output_limit: ctx.output_cap.max(1024) as u64,
        timeout: job.timeout,
        cancel: ctx.cancel.clone(),
    };
    let before = job.before();
    let started = Instant::now();
    let exit = match terminal.run(&request) {
        Ok(x) => x,
        Err(e) => {
            return ToolOutput::error(format!(
                "run_command: the editor's terminal failed: {}",
                crate::sanitize::line(&e.0)
            ));
        }
    };
    let elapsed = started.elapsed();
    let mut output = Capture::new(ctx.output_cap.max(1024));
    output.push(exit.output.as_bytes());
    let status = match (exit.exit_code, exit.signal) {
        (Some(c), _) => Some(std::process::ExitStatus::from_raw((c & 0xff) << 8)),
        (None, Some(s)) => Some(std::process::ExitStatus::from_raw(s & 0x7f)),
        (None, None) => None,
    };
    let outcome = Outcome {
        status,
        timed_out: exit.timed_out,
        cancelled: exit.cancelled,
        output,
        start_cut: exit.truncated,
    };
    job.ended(ctx, outcome, elapsed, before)
}

/// The environment cleaner a front end's terminal execs first.
const ENV_PROGRAM: &str = "/usr/bin/env";

/// How the helper confines: in the namespace box (else the fallback), hiding `home`;
/// `elsewhere`: another process (a front end's terminal) starts it.
struct BoxPlan<'a> {
    namespaced: bool,
    home: Option<&'a Path>,
    elsewhere: bool,
}

/// The neocode binary another process can exec as the helper: `/proc/self/exe` names
/// whoever reads it, so the file itself.
fn helper_path(elsewhere: bool) -> Result<PathBuf, sandbox::HelperNotFound> {
    let helper = sandbox::helper()?;
    if elsewhere && helper == Path::new("/proc/self/exe") {
        return std::env::current_exe().map_err(sandbox::HelperNotFound::NoExe);
    }
    Ok(helper)
}

/// The argv that runs the job: the helper around the shell when the sandbox confines, the
/// shell alone otherwise.
fn argv_for(
    job: &Job<'_>,
    ctx: &ToolContext,
    box_: &BoxPlan<'_>,
    gate: Option<i32>,
) -> Result<Vec<OsString>, sandbox::HelperNotFound> {
    let shell = Interpreter::detect().argv(job.command);
    if !job.confined() {
        return Ok(shell);
    }
    let mut a: Vec<OsString> = vec![
        helper_path(box_.elsewhere)?.into_os_string(),
        sandbox::HELPER_SUBCOMMAND.into(),
        "--root".into(),
        job.root.clone().into_os_string(),
        "--tmp".into(),
        job.tmp.as_os_str().to_os_string(),
    ];
    if ctx.sandbox.mode == SandboxMode::ReadOnly {
        a.push("--read-only".into());
    }
    if ctx.sandbox.network {
        a.push("--network".into());
    }
    if job.status.is_enforced() {
        a.push("--require-full".into());
    }
    if !box_.namespaced {
        a.push("--no-userns".into());
    }
    if let Some(h) = box_.home {
        a.push("--home".into());
        a.push(h.as_os_str().to_os_string());
    }
    if let Some(g) = gate {
        a.push("--gate-fd".into());
        a.push(g.to_string().into());
    }
    if !box_.elsewhere {
        a.push("--parent".into());
        a.push(std::process::id().to_string().into());
    }
    a.push("--".into());
    a.extend(shell);
    Ok(a)
}

/// The command's environment: neocode's without the secrets, and its private `TMPDIR`.
fn command_env(ctx: &ToolContext, tmp: &Path) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = sandbox::scrubbed_env(&ctx.sandbox.env_allow)
        .into_iter()
        .filter(|(k, _)| k != "TMPDIR")
        .collect();
    env.push(("TMPDIR".into(), tmp.as_os_str().to_os_string()));
    env
}

fn command_for(argv: &[OsString], ctx: &ToolContext, job: &Job<'_>) -> Command {
    let mut cmd = Command::new(argv.first().map_or_else(OsString::new, Clone::clone));
    cmd.args(argv.iter().skip(1));
    cmd.current_dir(&job.root)
        .env_clear()
        .envs(command_env(ctx, job.tmp))
        .stdin(Stdio::null());
    cmd
}

struct Outcome {
    status: Option<std::process::ExitStatus>,
    timed_out: bool,
    cancelled: bool,
    output: Capture,
    /// The start of the output was dropped before it reached us (a front end's terminal
    /// keeps only its last bytes).
    start_cut: bool,
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors we then own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both are fresh descriptors owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn kill_group(pgid: i32) {
    // SAFETY: plain syscall; a group that is gone gives ESRCH, which is fine.
    unsafe {
        libc::killpg(pgid, libc::SIGKILL);
    }
}

/// Stops the command: the helper (`helper`) is asked first with SIGTERM, so it kills every
/// process the command started (also those that left the group) before it exits; then the
/// whole group gets SIGKILL.
fn stop(
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
fn execute<T>(
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
fn spawn(cmd: &mut Command) -> std::io::Result<std::process::Child> {
    let spawned = cmd.spawn();
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    spawned
}

/// The child (a shell run without the helper) gets its own session and process group and
/// dies with neocode.
fn own_session(cmd: &mut Command) {
    // SAFETY: getpid before the fork; the closure only makes async-signal-safe syscalls and
    // allocates nothing.
    let parent = unsafe { libc::getpid() };
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
fn supervise(
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

/// Signs in the output that the sandbox refused something: a denied write or socket is
/// EACCES/EPERM; tools that hide the errno (curl, resolvers) fail to connect or resolve.
fn looks_blocked(text: &str, network_denied: bool) -> bool {
    const DENIED: &[&str] = &[
        "Permission denied",
        "Operation not permitted",
        "EACCES",
        "EPERM",
        "Errno 13",
        "Errno 1]",
        "Read-only file system",
        "EROFS",
        "Errno 30",
        // Renaming or removing a protected control file (a mount point in the box).
        "Device or resource busy",
        "EBUSY",
        "Errno 16",
    ];
    const NETWORK: &[&str] = &[
        "Couldn't connect",
        "Could not connect",
        "Failed to connect",
        "Could not resolve",
        "Temporary failure in name resolution",
        "Name or service not known",
        "Network is unreachable",
    ];
    DENIED.iter().any(|s| text.contains(s))
        || (network_denied && NETWORK.iter().any(|s| text.contains(s)))
}

fn report(
    command: &str,
    status: &SandboxStatus,
    ctx: &ToolContext,
    root: &Path,
    outcome: Outcome,
    elapsed: Duration,
    timeout: Duration,
) -> ToolOutput {
    let mut text = outcome.output.text();
    if outcome.start_cut {
        text.insert_str(0, "… the start of the output was cut …\n");
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    let code = outcome.status.and_then(|s| s.code());
    let signal = outcome.status.and_then(|s| s.signal());
    let secs = elapsed.as_secs_f64();
    if outcome.timed_out {
        text.push_str(&format!(
            "[timed out after {} s; the command and everything it started were killed]\n",
            timeout.as_secs()
        ));
    } else if outcome.cancelled {
        text.push_str(
            "[cancelled by the user; the command and everything it started were killed]\n",
        );
    } else if code == Some(sandbox::REFUSED_EXIT) && text.contains("neocode sandbox:") {
        text.push_str("[the sandbox could not confine the command, so it was not run]\n");
        // Probed again next time: the kernel may have changed since.
        sandbox::forget_probe(&ctx.sandbox);
    } else {
        match (code, signal) {
            (Some(c), _) => text.push_str(&format!("[exit code {c}, {secs:.1} s]\n")),
            (None, Some(s)) => text.push_str(&format!("[killed by signal {s}, {secs:.1} s]\n")),
            (None, None) => text.push_str(&format!("[ended, {secs:.1} s]\n")),
        }
    }
    let confined = matches!(
        status,
        SandboxStatus::Enforced { .. } | SandboxStatus::Partial { .. }
    );
    let blocked = confined && looks_blocked(&text, !ctx.sandbox.network);
    if blocked {
        let writes = match ctx.sandbox.mode {
            SandboxMode::ReadOnly => "commands may not write anywhere (read-only mode)".to_string(),
            SandboxMode::WorkspaceWrite | SandboxMode::Off => format!(
                "commands may write only inside the workspace {} and $TMPDIR, not its control files (.neocode/, .git/config, .git/hooks, .git/info), and may not set set-uid bits",
                root.display()
            ),
        };
        let net = if ctx.sandbox.network {
            String::new()
        } else {
            " and may not open network connections or unix sockets".to_string()
        };
        text.push_str(&format!(
            "[sandbox: a \"permission denied\" or \"read-only file system\" above is probably the sandbox blocking it: {writes}{net}. If the task needs it, ask the user (they can allow the network with /approve network, or change the sandbox mode).]\n"
        ));
    }
    if let Some(w) = status.warning() {
        text.push_str(&format!("[{w}]\n"));
    }
    let mut metadata = json!({
            "command": command,
            "exit_code": code,
            "signal": signal,
            "duration_ms": elapsed.as_millis() as u64,
            "timed_out": outcome.timed_out,
            "cancelled": outcome.cancelled,
            "output_bytes": outcome.output.total,
            "cut_bytes": outcome.output.cut(),
            "sandbox": status.code(),
            "sandbox_blocked": blocked,
    });
    let ended = super::verification::Ended {
        exit_code: code,
        timed_out: outcome.timed_out,
        cancelled: outcome.cancelled,
        truncated: outcome.output.cut() > 0 || outcome.start_cut,
        timeout_secs: timeout.as_secs(),
    };
    let cwd = root.display().to_string();
    super::verification::attach(&mut metadata, command, &cwd, &text, ended);
    ToolOutput {
        text,
        is_error: false,
        metadata: Some(metadata),
        files: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::{Capture, owner_pid, sweep_stale};

    #[test]
    fn only_exact_command_folder_names_have_an_owner() {
        assert_eq!(owner_pid("neocode-cmd-1234-0-0badf00d"), Some(1234));
        assert_eq!(owner_pid("neocode-cmd-77-12-1a2b3c4d"), Some(77));
        for name in [
            "neocode-cmd-",
            "neocode-cmd-1234",
            "neocode-cmd-1234-0",
            "neocode-cmd-1234-0-",
            "neocode-cmd-0-0-00000000",
            "neocode-cmd--1-0-00000000",
            "neocode-cmd-12x-0-00000000",
            "neocode-cmd-1234-0-0badf00d-extra",
            "neocode-cmd-1234-0-nothex",
            "neocode-cmd-99999999999-0-00000000",
            "other-1234-0-00000000",
        ] {
            assert_eq!(owner_pid(name), None, "{name}");
        }
    }

    #[test]
    fn sweep_removes_folders_of_dead_owners_only() {
        let base = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let mkdir = |name: String| {
            let p = base.path().join(name);
            std::fs::create_dir(&p).unwrap();
            std::fs::write(p.join("left.txt"), "x").unwrap();
            p
        };
        let gone = mkdir(format!("neocode-cmd-{dead}-0-00000000"));
        let mine = mkdir(format!("neocode-cmd-{}-0-00000000", std::process::id()));
        // pid 1 is alive and, for a test user, not ours to signal (EPERM): kept.
        let init = mkdir("neocode-cmd-1-0-00000000".into());
        let other = mkdir(format!("neocode-cmd-{dead}-notes"));
        let file = base.path().join(format!("neocode-cmd-{dead}-1-00000000"));
        std::fs::write(&file, "a file, not a folder").unwrap();
        let link = base.path().join(format!("neocode-cmd-{dead}-2-00000000"));
        std::os::unix::fs::symlink(&mine, &link).unwrap();
        sweep_stale(base.path());
        assert!(!gone.exists(), "the dead owner's folder stays");
        for kept in [&mine, &init, &other, &file, &link] {
            assert!(
                kept.symlink_metadata().is_ok(),
                "{} was removed",
                kept.display()
            );
        }
        assert!(mine.join("left.txt").exists());
    }

    #[test]
    fn capture_keeps_head_and_tail() {
        let mut c = Capture::new(1024);
        for i in 0..1000 {
            c.push(format!("line {i:04}\n").as_bytes());
        }
        let t = c.text();
        assert!(t.starts_with("line 0000\n"), "{t}");
        assert!(t.ends_with("line 0999\n"), "{t}");
        assert!(t.contains("bytes cut"));
        assert_eq!(c.total, 10_000);
        assert_eq!(c.cut(), 10_000 - 1024);
    }
}
