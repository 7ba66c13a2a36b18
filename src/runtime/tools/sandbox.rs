//! The command sandbox (issue #13; threat model in docs/SECURITY.md).
//!
//! neocode itself is never restricted. `run_command` starts the neocode binary again as a
//! small hidden helper, `neocode __sandbox-exec --root R --tmp T [--read-only] [--network]
//! [--require-full] -- /bin/sh -c CMD`, which restricts itself with Landlock (writes only
//! beneath the workspace root, the private temporary folder and a few harmless devices; TCP
//! bind/connect denied) and a seccomp filter (no IP sockets, no io_uring) unless the network
//! is allowed, and then execs the command. Reads and execution stay allowed everywhere.
//!
//! [`status`] probes once per process what the kernel enforces (the helper runs in probe
//! mode); [`must_ask`] says whether a command has to ask whatever the approval policy.

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
/// Probe results by helper path (the kernel does not change while we run).
static PROBED: Mutex<Vec<(PathBuf, SandboxStatus)>> = Mutex::new(Vec::new());

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
    if exe.file_name() == Some(OsStr::new("neocode")) {
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
    match settings.mode {
        SandboxMode::Off => return SandboxStatus::Off,
        SandboxMode::WorkspaceWrite | SandboxMode::ReadOnly => {}
    }
    if settings.simulate_unavailable {
        return SandboxStatus::Unavailable {
            reason: "simulated by configuration (sandbox.simulate_unavailable)".to_string(),
        };
    }
    let helper = match helper() {
        Ok(h) => h,
        Err(reason) => return SandboxStatus::Unavailable { reason },
    };
    if let Ok(cache) = PROBED.lock()
        && let Some((_, s)) = cache.iter().find(|(p, _)| *p == helper)
    {
        return s.clone();
    }
    let probed = probe(&helper);
    if let Ok(mut cache) = PROBED.lock() {
        cache.push((helper, probed.clone()));
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

fn probe(helper: &Path) -> SandboxStatus {
    let out = std::process::Command::new(helper)
        .arg(HELPER_SUBCOMMAND)
        .arg("--probe")
        .env_clear()
        .stdin(std::process::Stdio::null())
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            return SandboxStatus::Unavailable {
                reason: format!("cannot run the sandbox helper {}: {e}", helper.display()),
            };
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    parse_probe(text.trim()).unwrap_or_else(|| SandboxStatus::Unavailable {
        reason: format!(
            "the sandbox helper answered unexpectedly: {}{}",
            text.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    })
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

/// Runs the helper: restricts this process, then execs the command (or prints the probe
/// result). Returns an exit code only when it did not exec.
#[cfg(target_os = "linux")]
pub fn helper_main(args: HelperArgs) -> i32 {
    let writable: Vec<PathBuf> = if args.probe || args.read_only {
        Vec::new()
    } else {
        args.root.iter().chain(args.tmp.iter()).cloned().collect()
    };
    let outcome = linux::restrict(&writable, args.network);
    if args.probe {
        println!("{}", outcome.probe_line());
        return 0;
    }
    let Some((program, rest)) = args.command.split_first() else {
        eprintln!("neocode sandbox: no command given");
        return 2;
    };
    match &outcome {
        linux::Outcome::Full { .. } => {}
        linux::Outcome::Partial { .. } if !args.require_full => {}
        linux::Outcome::Partial { .. } | linux::Outcome::None { .. } => {
            // Never run unconfined (or less confined than promised) silently.
            eprintln!(
                "neocode sandbox: the command was not run: {}",
                outcome.probe_line()
            );
            return REFUSED_EXIT;
        }
    }
    use std::os::unix::process::CommandExt;
    let err = std::process::Command::new(program).args(rest).exec();
    eprintln!(
        "neocode sandbox: cannot run {}: {err}",
        program.to_string_lossy()
    );
    127
}

/// Runs the helper: without Landlock there is nothing to confine with.
#[cfg(not(target_os = "linux"))]
pub fn helper_main(args: HelperArgs) -> i32 {
    if args.probe {
        println!("unavailable this operating system has no Landlock");
        return 0;
    }
    eprintln!("neocode sandbox: the command was not run: no sandbox on this operating system");
    REFUSED_EXIT
}

#[cfg(target_os = "linux")]
mod linux {
    use std::path::PathBuf;

    use landlock::{
        ABI, Access, AccessFs, AccessNet, LandlockStatus, Ruleset, RulesetAttr, RulesetCreatedAttr,
        RulesetStatus, path_beneath_rules,
    };

    use super::DEVICES;

    /// The Landlock ABI whose rights we ask for: V5 covers truncate (V3), TCP (V4) and
    /// device ioctls (V5). A kernel below it enforces only part of the rules.
    const TARGET: ABI = ABI::V5;

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

    pub(super) fn restrict(writable: &[PathBuf], network: bool) -> Outcome {
        let landlock = landlock(writable, network);
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
                detail: format!("the kernel lacks rights of Landlock ABI {}", TARGET as i32),
            },
        }
    }

    /// Applies the ruleset; `Ok((abi, fully_enforced))`.
    fn landlock(writable: &[PathBuf], network: bool) -> Result<(i32, bool), String> {
        let write = AccessFs::from_all(TARGET) & !AccessFs::from_read(TARGET);
        let mut ruleset = Ruleset::default()
            .handle_access(write)
            .map_err(|e| format!("Landlock: {e}"))?;
        if !network {
            ruleset = ruleset
                .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
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
