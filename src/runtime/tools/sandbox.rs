//! The command sandbox (issues #13 and #22; threat model in docs/SECURITY.md).
//!
//! neocode itself is never restricted. `run_command` starts the neocode binary again as a
//! small hidden helper, `neocode __sandbox-exec --root R --tmp T [--home H] [--read-only]
//! [--network] [--require-full] [--no-userns] -- /bin/sh -c CMD`. The helper (`helper.rs`)
//! puts the command in new user, mount and PID namespaces (and a network namespace while
//! the network is denied): everything read-only but the workspace root and the private
//! temporary folder, a fresh `/proc`, neocode's home hidden, the helper's child as PID 1 so
//! every process dies with the command. On top, the command restricts itself with Landlock
//! (writes only beneath the root, the temporary folder and a few harmless devices; TCP
//! bind/connect denied) and a seccomp filter (no IP sockets, no io_uring) unless the network
//! is allowed, drops every capability and execs. Without user namespaces (`--no-userns`) the
//! fallback is Landlock and seccomp under a subreaper helper that kills every descendant.
//!
//! [`status`] probes once per process what the kernel enforces (the helper runs in probe
//! mode), [`walls`] says exactly which walls stand; [`must_ask`] says whether a command has
//! to ask whatever the approval policy. [`trust`] keeps a workspace of `/` or the home
//! folder from running commands until the user trusts it.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{SandboxMode, SandboxSettings};

/// Name of the hidden subcommand the helper runs under.
pub const HELPER_SUBCOMMAND: &str = "__sandbox-exec";

/// Exit code of the helper when it refuses to run a command it cannot confine.
pub const REFUSED_EXIT: i32 = 125;

/// What confines commands on this machine with these settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxStatus {
    /// Every rule is enforced by the kernel.
    Enforced {
        /// Landlock ABI version in use.
        abi: i32,
    },
    /// Landlock works but cannot enforce every rule (older kernel): commands still run
    /// confined as far as the kernel allows, and every command asks.
    Partial {
        /// Landlock ABI version in use.
        abi: i32,
        /// What is not enforced.
        detail: String,
    },
    /// No confinement is possible; every command asks.
    Unavailable {
        /// Why (kernel without Landlock, helper not found, simulated by config ...).
        reason: String,
    },
    /// The user turned the sandbox off (mode `off`).
    Off,
}

impl SandboxStatus {
    /// Whether the kernel enforces every rule.
    pub fn is_enforced(&self) -> bool {
        matches!(self, SandboxStatus::Enforced { .. })
    }

    /// Short text for the status line: `sandbox` when enforced, `sandbox off` otherwise
    /// (the TUI shows `Off` in red).
    pub fn label(&self) -> &'static str {
        match self {
            SandboxStatus::Enforced { .. } => "sandbox",
            SandboxStatus::Partial { .. }
            | SandboxStatus::Unavailable { .. }
            | SandboxStatus::Off => "sandbox off",
        }
    }

    /// Stable machine-readable name: `enforced`, `partial`, `unavailable`, `off`.
    pub fn code(&self) -> &'static str {
        match self {
            SandboxStatus::Enforced { .. } => "enforced",
            SandboxStatus::Partial { .. } => "partial",
            SandboxStatus::Unavailable { .. } => "unavailable",
            SandboxStatus::Off => "off",
        }
    }

    /// One sentence for the user.
    pub fn describe(&self) -> String {
        match self {
            SandboxStatus::Enforced { abi } => {
                format!("sandbox enforced (Landlock ABI {abi})")
            }
            SandboxStatus::Partial { abi, detail } => format!(
                "sandbox only partially enforced (Landlock ABI {abi}: {detail}); every command asks"
            ),
            SandboxStatus::Unavailable { reason } => {
                format!("sandbox unavailable ({reason}); every command asks")
            }
            SandboxStatus::Off => "sandbox off (mode off): commands run unconfined".to_string(),
        }
    }

    /// The warning to show once when a session starts, if any.
    pub fn warning(&self) -> Option<String> {
        match self {
            SandboxStatus::Enforced { .. } => None,
            SandboxStatus::Partial { .. }
            | SandboxStatus::Unavailable { .. }
            | SandboxStatus::Off => Some(self.describe()),
        }
    }
}

static HELPER: Mutex<Option<PathBuf>> = Mutex::new(None);
/// Probe results by helper path and user-namespace switch (the kernel does not change while we
/// run).
type Probed = (PathBuf, bool, SandboxStatus, Walls);
static PROBED: Mutex<Vec<Probed>> = Mutex::new(Vec::new());

/// Which walls stand around a command on this machine with these settings (see
/// docs/SECURITY.md). Meant for `neocode doctor` and the status line ([`walls`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Walls {
    /// The confinement in use: `enforced`, `partial`, `unavailable` or `off`.
    pub status: &'static str,
    /// A user namespace (the command has no capabilities over anything outside).
    pub user_ns: bool,
    /// A mount namespace of its own (the mounts below).
    pub mount_ns: bool,
    /// A PID namespace with neocode's helper as PID 1: no other process is visible in `/proc`,
    /// and everything dies when the command ends.
    pub pid_ns: bool,
    /// A network namespace of its own when the network is denied (no loopback, no abstract
    /// UNIX sockets of the host).
    pub net_ns: bool,
    /// Everything outside the workspace and `$TMPDIR` is mounted read-only (contents and
    /// metadata).
    pub ro_root: bool,
    /// A fresh `/proc` for the command's PID namespace.
    pub fresh_proc: bool,
    /// neocode's home is hidden (an empty read-only folder in its place).
    pub home_hidden: bool,
    /// Landlock ABI in use (0: none).
    pub landlock_abi: i32,
    /// The seccomp network filter can be installed.
    pub seccomp: bool,
    /// The helper is a subreaper and kills every descendant when the command ends.
    pub subreaper: bool,
    /// A cgroup with `cgroup.kill` (not used yet: the PID namespace or the subreaper kills).
    pub cgroup_kill: bool,
    /// neocode's own process is not dumpable (`PR_SET_DUMPABLE` 0): other processes of the
    /// user cannot read its memory or environment through `/proc`.
    pub not_dumpable: bool,
}

impl std::fmt::Display for Walls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let yn = |v: bool| if v { "yes" } else { "no" };
        let mut ns = Vec::new();
        for (on, name) in [
            (self.user_ns, "user"),
            (self.mount_ns, "mount"),
            (self.pid_ns, "pid"),
            (self.net_ns, "net"),
        ] {
            if on {
                ns.push(name);
            }
        }
        let ns = if ns.is_empty() {
            "none".to_string()
        } else {
            ns.join(" ")
        };
        let landlock = if self.landlock_abi > 0 {
            format!("ABI {}", self.landlock_abi)
        } else {
            "no".to_string()
        };
        write!(
            f,
            "sandbox {}: namespaces: {ns}; read-only root: {}; fresh /proc: {}; home hidden: {}; landlock: {landlock}; seccomp: {}; subreaper: {}; cgroup kill: {}; neocode not dumpable: {}",
            self.status,
            yn(self.ro_root),
            yn(self.fresh_proc),
            yn(self.home_hidden),
            yn(self.seccomp),
            yn(self.subreaper),
            yn(self.cgroup_kill),
            yn(self.not_dumpable),
        )
    }
}

/// Whether this process is not dumpable (see [`protect_process`]).
fn not_dumpable() -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: plain prctl query.
        unsafe { libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// Defence in depth for neocode itself (called first thing by `neocode` but not by the
/// helper): not dumpable, so processes of the same user cannot read its memory or
/// `/proc/<pid>/environ` (root still can), and the initial environment block (what
/// `/proc/<pid>/environ` shows) wiped after the variables were copied to the heap.
///
/// # Safety
/// Call it before any other thread exists: it rewrites the process environment.
pub unsafe fn protect_process() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: plain prctl on this process.
        unsafe {
            libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        }
        wipe_initial_environment();
    }
}

/// Copies every variable to the heap (setenv replaces the pointers into the initial block),
/// then zeroes the initial block the kernel shows as `/proc/<pid>/environ`.
#[cfg(target_os = "linux")]
fn wipe_initial_environment() {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return;
    };
    // Fields after the command name; env_start and env_end are fields 50 and 51.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3.
    let (Some(start), Some(end)) = (
        fields.get(50 - 3).and_then(|v| v.parse::<usize>().ok()),
        fields.get(51 - 3).and_then(|v| v.parse::<usize>().ok()),
    ) else {
        return;
    };
    if end <= start || end - start > 16 << 20 {
        return;
    }
    let vars: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    for (k, v) in &vars {
        // SAFETY: the caller guarantees a single thread.
        unsafe { std::env::remove_var(k) };
        // SAFETY: as above.
        unsafe { std::env::set_var(k, v) };
    }
    // Only when no variable still points into the block.
    let inside = |p: *const libc::c_char| (p as usize) >= start && (p as usize) < end;
    // SAFETY: `environ` is the C environment array, NULL-terminated.
    unsafe {
        unsafe extern "C" {
            static environ: *const *const libc::c_char;
        }
        let mut p = environ;
        while !p.is_null() && !(*p).is_null() {
            if inside(*p) {
                return;
            }
            p = p.add(1);
        }
        std::ptr::write_bytes(start as *mut u8, 0, end - start);
    }
}

/// Sets the neocode binary that runs the helper. The binary finds itself; tests and
/// embedders that run tools from another executable set `CARGO_BIN_EXE_neocode` here.
pub fn set_helper(path: impl Into<PathBuf>) {
    if let Ok(mut h) = HELPER.lock() {
        *h = Some(path.into());
    }
}

/// The neocode binary to run as the helper.
pub fn helper() -> Result<PathBuf, String> {
    if let Some(p) = HELPER.lock().ok().and_then(|h| h.clone()) {
        return Ok(p);
    }
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find the neocode binary for the sandbox helper: {e}"))?;
    let name = exe.file_name().unwrap_or_default();
    if name == OsStr::new("neocode") || name == OsStr::new("neocode (deleted)") {
        // The running image itself, even when the file was replaced by an upgrade since.
        if cfg!(target_os = "linux") {
            return Ok(PathBuf::from("/proc/self/exe"));
        }
        return Ok(exe);
    }
    // A test binary (target/<profile>/deps/name-hash) next to the built neocode binary.
    if let Some(deps) = exe.parent() {
        for dir in [deps.parent(), Some(deps)].into_iter().flatten() {
            let candidate = dir.join("neocode");
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    Err(format!(
        "cannot find the neocode binary for the sandbox helper (running from {})",
        exe.display()
    ))
}

/// What confines commands under `settings` (probes the kernel once per process).
pub fn status(settings: &SandboxSettings) -> SandboxStatus {
    probed(settings).0
}

/// Exactly which walls stand around a command under `settings` (for `neocode doctor`, the
/// status line and tests); its `Display` is one line.
pub fn walls(settings: &SandboxSettings) -> Walls {
    let mut w = probed(settings).1;
    w.not_dumpable = not_dumpable();
    w.net_ns &= !settings.network;
    w.home_hidden &= settings.home.is_some();
    w
}

/// Whether commands run in the namespace box (else the fallback, or nothing).
pub fn namespaced(settings: &SandboxSettings) -> bool {
    walls(settings).mount_ns
}

fn probed(settings: &SandboxSettings) -> (SandboxStatus, Walls) {
    let plain = |status: SandboxStatus| {
        let w = Walls {
            status: status.code(),
            ..Walls::default()
        };
        (status, w)
    };
    match settings.mode {
        SandboxMode::Off => return plain(SandboxStatus::Off),
        SandboxMode::WorkspaceWrite | SandboxMode::ReadOnly => {}
    }
    if settings.simulate_unavailable {
        return plain(SandboxStatus::Unavailable {
            reason: "simulated by configuration (sandbox.simulate_unavailable)".to_string(),
        });
    }
    let helper = match helper() {
        Ok(h) => h,
        Err(reason) => return plain(SandboxStatus::Unavailable { reason }),
    };
    let no_userns = settings.simulate_no_userns;
    if let Ok(cache) = PROBED.lock()
        && let Some((_, _, s, w)) = cache
            .iter()
            .find(|(p, n, _, _)| *p == helper && *n == no_userns)
    {
        return (s.clone(), w.clone());
    }
    let probed = probe(&helper, no_userns);
    if let Ok(mut cache) = PROBED.lock() {
        cache.push((helper, no_userns, probed.0.clone(), probed.1.clone()));
    }
    probed
}

/// Whether a command must ask the user whatever the approval policy: the sandbox is not
/// fully enforced (or simulated unavailable). Mode `off` is the user's explicit choice and
/// follows the policy.
pub fn must_ask(settings: &SandboxSettings) -> bool {
    match status(settings) {
        SandboxStatus::Enforced { .. } | SandboxStatus::Off => false,
        SandboxStatus::Partial { .. } | SandboxStatus::Unavailable { .. } => true,
    }
}

fn probe(helper: &Path, no_userns: bool) -> (SandboxStatus, Walls) {
    let mut cmd = std::process::Command::new(helper);
    cmd.arg(HELPER_SUBCOMMAND).arg("--probe");
    if no_userns {
        cmd.arg("--no-userns");
    }
    let out = cmd.env_clear().stdin(std::process::Stdio::null()).output();
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            let s = SandboxStatus::Unavailable {
                reason: format!("cannot run the sandbox helper {}: {e}", helper.display()),
            };
            let w = Walls {
                status: s.code(),
                ..Walls::default()
            };
            return (s, w);
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let status = parse_probe(lines.next().unwrap_or("").trim()).unwrap_or_else(|| {
        SandboxStatus::Unavailable {
            reason: format!(
                "the sandbox helper answered unexpectedly: {}{}",
                text.trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        }
    });
    let mut walls = parse_walls(lines.next().unwrap_or(""));
    walls.status = status.code();
    (status, walls)
}

/// `walls userns=1 mountns=1 ... landlock=7 seccomp=1 subreaper=1`.
fn parse_walls(line: &str) -> Walls {
    let mut w = Walls::default();
    let Some(rest) = line.strip_prefix("walls ") else {
        return w;
    };
    for kv in rest.split_whitespace() {
        let Some((k, v)) = kv.split_once('=') else {
            continue;
        };
        let on = v == "1";
        match k {
            "userns" => w.user_ns = on,
            "mountns" => w.mount_ns = on,
            "pidns" => w.pid_ns = on,
            "netns" => w.net_ns = on,
            "roroot" => w.ro_root = on,
            "proc" => w.fresh_proc = on,
            "home" => w.home_hidden = on,
            "landlock" => w.landlock_abi = v.parse().unwrap_or(0),
            "seccomp" => w.seccomp = on,
            "subreaper" => w.subreaper = on,
            _ => {}
        }
    }
    w
}

fn parse_probe(line: &str) -> Option<SandboxStatus> {
    let mut it = line.splitn(3, ' ');
    match it.next()? {
        "enforced" => Some(SandboxStatus::Enforced {
            abi: it.next()?.parse().ok()?,
        }),
        "partial" => Some(SandboxStatus::Partial {
            abi: it.next()?.parse().ok()?,
            detail: it.next().unwrap_or("").to_string(),
        }),
        "unavailable" => {
            let rest: Vec<&str> = it.collect();
            Some(SandboxStatus::Unavailable {
                reason: rest.join(" "),
            })
        }
        _ => None,
    }
}

/// Whether an environment variable name looks like a secret (`*_KEY`, `*_TOKEN`,
/// `*_SECRET`, `*_PASSWORD`, ... in any segment), so commands do not see it.
pub fn is_secret_name(name: &str) -> bool {
    const WORDS: &[&str] = &[
        "KEY",
        "APIKEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIALS",
        "PRIVATE",
        // SSH_AUTH_SOCK, NPM_CONFIG__AUTH: the SSH agent signs with the user's keys.
        "AUTH",
    ];
    let upper = name.to_ascii_uppercase();
    upper.split('_').any(|seg| WORDS.contains(&seg))
}

/// The environment a command gets: neocode's own minus secret-looking names (unless allowed
/// in `allow`).
pub fn scrubbed_env(allow: &[String]) -> Vec<(OsString, OsString)> {
    std::env::vars_os()
        .filter(|(k, _)| {
            let name = k.to_string_lossy();
            !is_secret_name(&name) || allow.iter().any(|a| a == name.as_ref())
        })
        .collect()
}

/// Arguments of the hidden helper subcommand.
#[derive(Debug, Clone, Default)]
pub struct HelperArgs {
    /// Print what the kernel enforces and exit.
    pub probe: bool,
    /// Workspace root (writable unless `read_only`).
    pub root: Option<PathBuf>,
    /// Private temporary folder (writable unless `read_only`).
    pub tmp: Option<PathBuf>,
    /// Write nowhere (except harmless devices).
    pub read_only: bool,
    /// Leave the network open.
    pub network: bool,
    /// Refuse to run the command unless every rule is enforced.
    pub require_full: bool,
    /// Ask for the rights of this Landlock ABI instead of the default 5 (a higher one makes a
    /// current kernel look old: tests of the partial case).
    pub target_abi: Option<i32>,
    /// neocode's home, hidden from the command (an empty read-only folder in its place).
    pub home: Option<PathBuf>,
    /// Do not use user namespaces (the fallback: Landlock, seccomp and a subreaper only).
    pub no_userns: bool,
    /// The program and its arguments.
    pub command: Vec<OsString>,
}

/// Devices every command may write to.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Runs the helper: confines the command (namespaces, or the fallback), runs it and waits, or
/// prints the probe result. Returns the exit code.
#[cfg(target_os = "linux")]
pub fn helper_main(args: HelperArgs) -> i32 {
    if args.probe {
        let namespaces = if args.no_userns {
            Err("simulated by configuration (sandbox.simulate_no_userns)".to_string())
        } else {
            helper::probe_namespaces()
        };
        // SAFETY: plain prctl on this process.
        let subreaper = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } == 0;
        let outcome = linux::restrict(&[], false, args.target_abi);
        println!("{}", probe_lines(&outcome, &namespaces, subreaper));
        return 0;
    }
    if args.command.is_empty() {
        eprintln!("neocode sandbox: no command given");
        return 2;
    }
    let plan = helper::Plan {
        root: args.root,
        tmp: args.tmp,
        home: args.home,
        read_only: args.read_only,
        network: args.network,
        namespaces: !args.no_userns,
        require_full: args.require_full,
        target_abi: args.target_abi,
    };
    helper::run(&plan, &args.command)
}

/// The probe's answer: the status line, then the walls line.
#[cfg(target_os = "linux")]
fn probe_lines(
    outcome: &linux::Outcome,
    namespaces: &Result<(), String>,
    subreaper: bool,
) -> String {
    let status = match (outcome, namespaces) {
        (linux::Outcome::Full { abi }, Ok(())) => format!("enforced {abi}"),
        (linux::Outcome::Full { abi }, Err(why)) => format!(
            "partial {abi} no namespace box ({}): /proc of other processes is readable, metadata outside can change, neocode's home is not hidden",
            why.trim()
        ),
        (other, _) => other.probe_line(),
    };
    let ns = namespaces.is_ok();
    let (landlock, seccomp) = match outcome {
        linux::Outcome::Full { abi } => (*abi, true),
        linux::Outcome::Partial { abi, detail } => (*abi, !detail.contains("network filter")),
        linux::Outcome::None { .. } => (0, false),
    };
    let b = |v: bool| u8::from(v);
    format!(
        "{status}\nwalls userns={} mountns={} pidns={} netns={} roroot={} proc={} home={} landlock={landlock} seccomp={} subreaper={}",
        b(ns),
        b(ns),
        b(ns),
        b(ns),
        b(ns),
        b(ns),
        b(ns),
        b(seccomp),
        b(subreaper),
    )
}

#[cfg(target_os = "linux")]
mod helper;
pub mod trust;

#[cfg(target_os = "linux")]
mod linux {
    use std::path::PathBuf;

    use landlock::{
        ABI, Access, AccessFs, AccessNet, LandlockStatus, Ruleset, RulesetAttr, RulesetCreatedAttr,
        RulesetStatus, Scope, path_beneath_rules,
    };

    use super::DEVICES;

    /// The Landlock ABI whose rights we ask for: V5 covers truncate (V3), TCP (V4) and
    /// device ioctls (V5). A kernel below it enforces only part of the rules.
    const DEFAULT_TARGET: ABI = ABI::V5;

    pub(super) enum Outcome {
        Full { abi: i32 },
        Partial { abi: i32, detail: String },
        None { reason: String },
    }

    impl Outcome {
        pub(super) fn probe_line(&self) -> String {
            match self {
                Outcome::Full { abi } => format!("enforced {abi}"),
                Outcome::Partial { abi, detail } => format!("partial {abi} {detail}"),
                Outcome::None { reason } => format!("unavailable {reason}"),
            }
        }
    }

    pub(super) fn restrict(writable: &[PathBuf], network: bool, target: Option<i32>) -> Outcome {
        let target = target.map_or(DEFAULT_TARGET, ABI::from);
        let landlock = landlock(writable, network, target);
        let seccomp = if network { Ok(()) } else { deny_network() };
        match (landlock, seccomp) {
            (Err(reason), _) => Outcome::None { reason },
            (Ok((abi, true)), Ok(())) => Outcome::Full { abi },
            (Ok((abi, true)), Err(e)) => Outcome::Partial {
                abi,
                detail: format!("the network filter could not be installed: {e}"),
            },
            (Ok((abi, false)), _) => Outcome::Partial {
                abi,
                detail: format!("the kernel lacks rights of Landlock ABI {}", target as i32),
            },
        }
    }

    /// Applies the ruleset; `Ok((abi, fully_enforced))`.
    fn landlock(writable: &[PathBuf], network: bool, target: ABI) -> Result<(i32, bool), String> {
        let write = AccessFs::from_all(target) & !AccessFs::from_read(target);
        let mut ruleset = Ruleset::default()
            .handle_access(write)
            .map_err(|e| format!("Landlock: {e}"))?;
        let net = AccessNet::from_all(target);
        if !network && !net.is_empty() {
            ruleset = ruleset
                .handle_access(net)
                .map_err(|e| format!("Landlock: {e}"))?;
        }
        // Signals and abstract UNIX sockets that leave the sandbox (ABI 6): a command cannot
        // kill neocode or talk to a desktop bus. Asked only where the kernel has them, so an
        // ABI 5 kernel still counts as fully enforced.
        if kernel_abi() >= 6 {
            ruleset = ruleset
                .scope(Scope::from_all(ABI::V6))
                .map_err(|e| format!("Landlock: {e}"))?;
        }
        let status = ruleset
            .create()
            .map_err(|e| format!("Landlock: {e}"))?
            .add_rules(path_beneath_rules(writable, write))
            .map_err(|e| format!("Landlock rule: {e}"))?
            .add_rules(path_beneath_rules(DEVICES, write))
            .map_err(|e| format!("Landlock rule: {e}"))?
            .restrict_self()
            .map_err(|e| format!("Landlock: {e}"))?;
        let abi = match status.landlock {
            LandlockStatus::Available { effective_abi, .. } => effective_abi as i32,
            LandlockStatus::NotEnabled => {
                return Err("Landlock is not enabled in this kernel (lsm= boot parameter)".into());
            }
            LandlockStatus::NotImplemented => {
                return Err("this kernel has no Landlock (CONFIG_SECURITY_LANDLOCK)".into());
            }
        };
        match status.ruleset {
            RulesetStatus::FullyEnforced => Ok((abi, true)),
            RulesetStatus::PartiallyEnforced => Ok((abi, false)),
            RulesetStatus::NotEnforced => {
                Err(format!("Landlock could not enforce the rules (ABI {abi})"))
            }
        }
    }

    /// The kernel's Landlock ABI version (0 without Landlock).
    fn kernel_abi() -> i64 {
        const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
        // SAFETY: the documented version query: no ruleset, size 0, only the flag.
        let r = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                LANDLOCK_CREATE_RULESET_VERSION,
            )
        };
        r.max(0)
    }

    #[cfg(target_arch = "x86_64")]
    const AUDIT_ARCH: u32 = 0xC000_003E;
    #[cfg(target_arch = "aarch64")]
    const AUDIT_ARCH: u32 = 0xC000_00B7;

    /// A seccomp filter: `socket()` of any family but AF_UNIX fails with EACCES (so UDP and
    /// raw sockets are denied too, which Landlock below ABI 8 does not cover), io_uring
    /// (which could open sockets past the filter) is refused, and syscalls of a foreign
    /// architecture (32-bit `socketcall`) fail.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn deny_network() -> Result<(), String> {
        use libc::{
            BPF_ABS, BPF_JEQ, BPF_JGE, BPF_JMP, BPF_K, BPF_LD, BPF_RET, BPF_W, sock_filter,
            sock_fprog,
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
    fn deny_network() -> Result<(), String> {
        Err("no seccomp filter for this CPU architecture".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names() {
        for n in [
            "NEOCODE_API_KEY",
            "OPENAI_API_KEY",
            "FOO_TOKEN",
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "DB_PASSWORD",
            "api_key",
            "SSH_AUTH_SOCK",
        ] {
            assert!(is_secret_name(n), "{n}");
        }
        for n in [
            "PATH",
            "HOME",
            "KEYBOARD",
            "TOKENIZERS_PARALLELISM_X",
            "LANG",
        ] {
            assert!(!is_secret_name(n), "{n}");
        }
    }

    #[test]
    fn walls_lines_parse_and_print() {
        let w = parse_walls(
            "walls userns=1 mountns=1 pidns=1 netns=0 roroot=1 proc=1 home=1 landlock=7 seccomp=1 subreaper=1",
        );
        assert!(w.user_ns && w.mount_ns && w.pid_ns && !w.net_ns && w.ro_root);
        assert_eq!(w.landlock_abi, 7);
        let text = Walls {
            status: "enforced",
            ..w
        }
        .to_string();
        assert_eq!(
            text,
            "sandbox enforced: namespaces: user mount pid; read-only root: yes; fresh /proc: yes; home hidden: yes; landlock: ABI 7; seccomp: yes; subreaper: yes; cgroup kill: no; neocode not dumpable: no"
        );
        assert_eq!(parse_walls("garbage"), Walls::default());
    }

    #[test]
    fn probe_lines_parse() {
        assert_eq!(
            parse_probe("enforced 7"),
            Some(SandboxStatus::Enforced { abi: 7 })
        );
        assert_eq!(
            parse_probe("partial 3 the kernel lacks x"),
            Some(SandboxStatus::Partial {
                abi: 3,
                detail: "the kernel lacks x".into()
            })
        );
        assert!(matches!(
            parse_probe("unavailable no Landlock here"),
            Some(SandboxStatus::Unavailable { .. })
        ));
        assert_eq!(parse_probe("garbage"), None);
    }
}
