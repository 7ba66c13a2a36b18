//! The tool: its spec and arguments, and one call from its checks to the result, run by
//! neocode or in an editor's terminal.

use std::os::fd::AsRawFd;
use std::os::unix::process::ExitStatusExt;

use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Value, json};

use super::argv::{ENV_PROGRAM, Job, argv_for, command_env, command_for};
use super::child::{Capture, Outcome, execute, pipe};
use super::report::report;
use super::temp::TempDir;
use crate::runtime::tools::interpreter::Interpreter;
use crate::runtime::tools::sandbox::{self, SandboxStatus};
use crate::runtime::tools::spec::{ToolContext, ToolKind, ToolOutput, ToolSpec, parse_args};
use crate::runtime::tools::terminal::{CommandTerminal, TerminalCommand};
use crate::runtime::tools::watch;

pub(in crate::runtime::tools) const SPEC: ToolSpec = ToolSpec {
    name: "run_command",
    description: "Run a command with `bash -c` in the workspace root; returns exit code and output (stdout and stderr together; long output keeps its start and end). Sandboxed: writes only inside the workspace and $TMPDIR, no network unless the user allowed it. Background processes are killed at the end.",
    parameters: schema,
    kind: ToolKind::Command,
    run,
    summary: Some(summary),
    preview: None,
};

pub(super) fn summary(v: &Value) -> String {
    match crate::runtime::tools::spec::arg(v, "command") {
        Some(c) => format!("run_command {}", crate::runtime::tools::spec::one_line(c)),
        None => "run_command".to_string(),
    }
}

pub(super) fn schema() -> Value {
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
pub(super) struct Args {
    pub(super) command: String,
    pub(super) timeout_secs: Option<u64>,
}

pub(super) fn run(arguments: &str, ctx: &ToolContext) -> ToolOutput {
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

impl Job<'_> {
    /// What the workspace looked like before the command (for [`Job::ended`]).
    pub(super) fn before(&self) -> (watch::Before, Option<String>) {
        let mut watched = watch::before(&self.root, self.home.as_deref());
        let tree = watched.snapshot(&self.root);
        (watched, tree)
    }

    /// The result of the command: its report, and what it changed in the workspace
    /// (recorded with the result, never restored).
    pub(super) fn ended(
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
pub(super) fn spawned(ctx: &ToolContext, job: &Job<'_>) -> ToolOutput {
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
pub(super) fn in_terminal(
    terminal: &dyn CommandTerminal,
    ctx: &ToolContext,
    job: &Job<'_>,
) -> ToolOutput {
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
