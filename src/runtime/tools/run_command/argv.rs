//! What is exec'd: the sandbox helper wrapped around `bash -c`, with the scrubbed environment.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::runtime::tools::interpreter::Interpreter;
use crate::runtime::tools::sandbox::{self, SandboxStatus};
use crate::runtime::tools::spec::{SandboxMode, ToolContext};
use std::time::Duration;

/// The environment cleaner a front end's terminal execs first.
pub(super) const ENV_PROGRAM: &str = "/usr/bin/env";

/// How the helper confines: in the namespace box (else the fallback), hiding `home`;
/// `elsewhere`: another process (a front end's terminal) starts it.
pub(super) struct BoxPlan<'a> {
    pub(super) namespaced: bool,
    pub(super) home: Option<&'a Path>,
    pub(super) elsewhere: bool,
}

/// The neocode binary another process can exec as the helper: `/proc/self/exe` names
/// whoever reads it, so the file itself.
pub(super) fn helper_path(elsewhere: bool) -> Result<PathBuf, sandbox::HelperNotFound> {
    let helper = sandbox::helper()?;
    if elsewhere && helper == Path::new("/proc/self/exe") {
        return std::env::current_exe().map_err(sandbox::HelperNotFound::NoExe);
    }
    Ok(helper)
}

/// The argv that runs the job: the helper around the shell when the sandbox confines, the
/// shell alone otherwise.
pub(super) fn argv_for(
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
pub(super) fn command_env(ctx: &ToolContext, tmp: &Path) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = sandbox::scrubbed_env(&ctx.sandbox.env_allow)
        .into_iter()
        .filter(|(k, _)| k != "TMPDIR")
        .collect();
    env.push(("TMPDIR".into(), tmp.as_os_str().to_os_string()));
    env
}

pub(super) fn command_for(argv: &[OsString], ctx: &ToolContext, job: &Job<'_>) -> Command {
    let mut cmd = Command::new(argv.first().map_or_else(OsString::new, Clone::clone));
    cmd.args(argv.iter().skip(1));
    cmd.current_dir(&job.root)
        .env_clear()
        .envs(command_env(ctx, job.tmp))
        .stdin(Stdio::null());
    cmd
}

/// One command about to run: what the checks of the tool's run settled.
pub(super) struct Job<'a> {
    pub(super) command: &'a str,
    pub(super) status: SandboxStatus,
    /// The workspace root, canonical.
    pub(super) root: PathBuf,
    /// The command's private temporary folder (removed after the call).
    pub(super) tmp: &'a Path,
    /// neocode's home, canonical, when it exists.
    pub(super) home: Option<PathBuf>,
    pub(super) namespaced: bool,
    pub(super) timeout: Duration,
}

impl Job<'_> {
    pub(super) fn confined(&self) -> bool {
        matches!(
            self.status,
            SandboxStatus::Enforced { .. } | SandboxStatus::Partial { .. }
        )
    }

    pub(super) fn plan(&self, elsewhere: bool) -> BoxPlan<'_> {
        BoxPlan {
            namespaced: self.namespaced,
            home: self.home.as_deref(),
            elsewhere,
        }
    }
}
