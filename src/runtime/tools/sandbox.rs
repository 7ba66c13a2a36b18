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
use std::path::PathBuf;
use std::sync::Mutex;

mod abi;
mod env;
#[cfg(target_os = "linux")]
mod fault;
#[cfg(target_os = "linux")]
mod helper;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
mod mount_api;
mod probe;
#[cfg(target_os = "linux")]
mod protect;
mod report;
#[cfg(target_os = "linux")]
mod seccomp;
pub mod trust;

pub use abi::{HELPER_SUBCOMMAND, REFUSED_EXIT};
pub(crate) use env::{protect_process, scrubbed_env};
pub use probe::{forget_probe, must_ask, namespaced, status, walls};
pub use report::{SandboxStatus, Walls};

static HELPER: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Sets the neocode binary that runs the helper. The binary finds itself; tests and
/// embedders that run tools from another executable set `CARGO_BIN_EXE_neocode` here.
pub fn set_helper(path: impl Into<PathBuf>) {
    if let Ok(mut h) = HELPER.lock() {
        *h = Some(path.into());
    }
}

/// Why no neocode binary could be found to run as the sandbox helper.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HelperNotFound {
    #[error("cannot find the neocode binary for the sandbox helper: {0}")]
    NoExe(std::io::Error),
    #[error(
        "cannot find the neocode binary for the sandbox helper (running from {})",
        .0.display()
    )]
    NotBeside(PathBuf),
}

/// The neocode binary to run as the helper.
pub(crate) fn helper() -> Result<PathBuf, HelperNotFound> {
    if let Some(p) = HELPER.lock().ok().and_then(|h| h.clone()) {
        return Ok(p);
    }
    let exe = std::env::current_exe().map_err(HelperNotFound::NoExe)?;
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
    Err(HelperNotFound::NotBeside(exe))
}

/// Arguments of the hidden helper subcommand.
#[derive(Debug, Clone, Default)]
pub(crate) struct HelperArgs {
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
    /// An inherited descriptor the helper reads one byte from before it starts the command.
    pub gate_fd: Option<i32>,
    /// The process that started the helper (neocode): when it is no longer the helper's
    /// parent at start, it died meanwhile and nothing is run.
    pub parent: Option<i32>,
    /// The program and its arguments.
    pub command: Vec<OsString>,
}

/// Why the helper's arguments were refused (it exits with code 2 and this line).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum HelperArgsError {
    /// An option the helper does not know.
    #[error("unknown option {0}")]
    Unknown(String),
    /// An option given without its value, or with a value it cannot read.
    #[error("{0} needs a value")]
    Value(&'static str),
}

impl HelperArgs {
    /// Parses the helper's arguments (those after `__sandbox-exec`). By hand, not with the
    /// command line parser of the CLI: the helper starts for every command, and this keeps
    /// its start to the few pages it needs.
    pub(crate) fn parse(
        args: impl IntoIterator<Item = OsString>,
    ) -> Result<HelperArgs, HelperArgsError> {
        let mut a = HelperArgs::default();
        let mut it = args.into_iter();
        while let Some(arg) = it.next() {
            let mut value = |name: &'static str| it.next().ok_or(HelperArgsError::Value(name));
            match arg.to_str() {
                Some("--") => {
                    a.command = it.collect();
                    break;
                }
                Some("--probe") => a.probe = true,
                Some("--read-only") => a.read_only = true,
                Some("--network") => a.network = true,
                Some("--require-full") => a.require_full = true,
                Some("--no-userns") => a.no_userns = true,
                Some("--root") => a.root = Some(value("--root")?.into()),
                Some("--tmp") => a.tmp = Some(value("--tmp")?.into()),
                Some("--home") => a.home = Some(value("--home")?.into()),
                Some("--target-abi") => a.target_abi = Some(number(it.next(), "--target-abi")?),
                Some("--gate-fd") => a.gate_fd = Some(number(it.next(), "--gate-fd")?),
                Some("--parent") => a.parent = Some(number(it.next(), "--parent")?),
                _ => return Err(HelperArgsError::Unknown(arg.to_string_lossy().into_owned())),
            }
        }
        Ok(a)
    }
}

/// The whole number given as the value of option `name`.
fn number(value: Option<OsString>, name: &'static str) -> Result<i32, HelperArgsError> {
    value
        .as_deref()
        .and_then(std::ffi::OsStr::to_str)
        .and_then(|v| v.parse().ok())
        .ok_or(HelperArgsError::Value(name))
}

/// Runs the helper: confines the command (namespaces, or the fallback), runs it and waits, or
/// prints the probe result. Returns the exit code.
#[cfg(target_os = "linux")]
pub(crate) fn helper_main(args: HelperArgs) -> i32 {
    if args.probe {
        let namespaces = if args.no_userns {
            Err(fault::BoxError::Lacks(
                "simulated by configuration (sandbox.simulate_no_userns)",
            ))
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
        gate: args.gate_fd,
        parent: args.parent,
    };
    helper::run(&plan, &args.command)
}

/// The probe's answer: the status line, then the walls line.
#[cfg(target_os = "linux")]
fn probe_lines(
    outcome: &linux::Outcome,
    namespaces: &Result<(), fault::BoxError>,
    subreaper: bool,
) -> String {
    let status = match (outcome, namespaces) {
        (linux::Outcome::Full { abi }, Ok(())) => format!("enforced {abi}"),
        (linux::Outcome::Full { abi }, Err(why)) => format!(
            "partial {abi} no namespace box ({}): /proc of other processes is readable, metadata outside can change, neocode's home is not hidden",
            why.to_string().trim()
        ),
        (other, _) => other.probe_line(),
    };
    let ns = namespaces.is_ok();
    let (landlock, seccomp) = match outcome {
        linux::Outcome::Full { abi } => (*abi, true),
        linux::Outcome::Partial { abi, detail } => (*abi, !detail.contains("seccomp filter")),
        linux::Outcome::None { .. } => (0, false),
    };
    let b = |v: bool| u8::from(v);
    format!(
        "{status}\nwalls userns={} mountns={} pidns={} netns={} roroot={} proc={} home={} protect={} landlock={landlock} seccomp={} subreaper={}",
        b(ns),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<HelperArgs, HelperArgsError> {
        HelperArgs::parse(args.iter().map(OsString::from))
    }

    #[test]
    fn helper_arguments_parse_and_refuse_what_they_do_not_know() {
        let a = parse(&[
            "--root",
            "/w",
            "--tmp",
            "/t",
            "--home",
            "/h",
            "--read-only",
            "--network",
            "--require-full",
            "--no-userns",
            "--target-abi",
            "9",
            "--gate-fd",
            "7",
            "--parent",
            "42",
            "--",
            "/bin/sh",
            "-c",
            "echo --root",
        ])
        .unwrap();
        assert_eq!(a.root, Some(PathBuf::from("/w")));
        assert_eq!(a.tmp, Some(PathBuf::from("/t")));
        assert_eq!(a.home, Some(PathBuf::from("/h")));
        assert!(a.read_only && a.network && a.require_full && a.no_userns && !a.probe);
        assert_eq!(
            (a.target_abi, a.gate_fd, a.parent),
            (Some(9), Some(7), Some(42))
        );
        assert_eq!(a.command, ["/bin/sh", "-c", "echo --root"]);
        assert!(parse(&["--probe"]).unwrap().probe);
        assert_eq!(
            parse(&["--bogus", "--", "true"]).unwrap_err().to_string(),
            "unknown option --bogus"
        );
        assert_eq!(
            parse(&["--root"]).unwrap_err(),
            HelperArgsError::Value("--root")
        );
        assert_eq!(
            parse(&["--gate-fd", "x"]).unwrap_err(),
            HelperArgsError::Value("--gate-fd")
        );
    }
}
