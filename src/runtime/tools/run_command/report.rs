//! The result the model reads: exit, output, time, and what the sandbox probably blocked.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::time::Duration;

use serde_json::json;

use super::child::Outcome;
use crate::runtime::tools::sandbox::{self, SandboxStatus};
use crate::runtime::tools::spec::{SandboxMode, ToolContext, ToolOutput};

/// Signs in the output that the sandbox refused something: a denied write or socket is
/// EACCES/EPERM; tools that hide the errno (curl, resolvers) fail to connect or resolve.
pub(super) fn looks_blocked(text: &str, network_denied: bool) -> bool {
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

pub(super) fn report(
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
    let ended = crate::runtime::tools::verification::Ended {
        exit_code: code,
        timed_out: outcome.timed_out,
        cancelled: outcome.cancelled,
        truncated: outcome.output.cut() > 0 || outcome.start_cut,
        timeout_secs: timeout.as_secs(),
    };
    let cwd = root.display().to_string();
    crate::runtime::tools::verification::attach(&mut metadata, command, &cwd, &text, ended);
    ToolOutput {
        text,
        is_error: false,
        metadata: Some(metadata),
        files: Vec::new(),
    }
}
