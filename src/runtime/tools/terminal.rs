//! Where `run_command` runs its command when a front end offers a terminal: an editor over
//! ACP (`terminal/create`, `terminal/wait_for_exit`, `terminal/output`, `terminal/kill`,
//! `terminal/release`), so the user watches it live in the editor. The front end is handed
//! the exact argv the tool would exec itself (the sandbox helper around the shell, under a
//! cleared environment), so the confinement is the same; the tool's checks, time limit,
//! output cap, workspace record and result text stay the tool's. Without one
//! ([`ToolContext`]'s `terminal` is `None`) the tool spawns the command itself.
//!
//! [`ToolContext`]: super::ToolContext

use std::path::PathBuf;
use std::time::Duration;

use crate::runtime::cancel::CancelFlag;

/// One command for the front end's terminal to run.
#[derive(Debug, Clone)]
pub struct TerminalCommand {
    /// The id of the model's call being run (the front end shows the terminal on it).
    pub call_id: String,
    /// The program to exec (the environment cleaner, `env`).
    pub program: String,
    /// Its arguments: `-i`, the command's environment as `NAME=value`, then the sandbox
    /// helper and the shell with the user's command.
    pub args: Vec<String>,
    /// Where it runs: the workspace root (absolute).
    pub cwd: PathBuf,
    /// Bytes of output the front end keeps (it drops the start beyond them).
    pub output_limit: u64,
    /// How long it may run before it is killed.
    pub timeout: Duration,
    /// Raised when the user cancels: the terminal is killed.
    pub cancel: CancelFlag,
}

/// How the front end's terminal ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TerminalExit {
    /// What it printed (stdout and stderr together), at most the output limit.
    pub output: String,
    /// The front end dropped the start of the output to keep within the limit.
    pub truncated: bool,
    /// The exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal number that killed it, when one did.
    pub signal: Option<i32>,
    /// It ran past its time limit and was killed.
    pub timed_out: bool,
    /// The user cancelled it and it was killed.
    pub cancelled: bool,
}

/// Why the front end could not run the command (its words, one line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TerminalError(pub String);

/// A front end that runs commands in its own terminal.
pub trait CommandTerminal: std::fmt::Debug + Send + Sync {
    /// Runs `command` to its end (or its time limit, or a cancel, which kill it) and
    /// releases the terminal; blocks the calling thread meanwhile.
    fn run(&self, command: &TerminalCommand) -> Result<TerminalExit, TerminalError>;
}

/// The number of a signal the front end names (`SIGKILL`, `KILL` or `9`).
pub(crate) fn signal_number(name: &str) -> Option<i32> {
    let bare = name.trim().trim_start_matches("SIG");
    if let Ok(n) = bare.parse() {
        return Some(n);
    }
    let known = [
        ("HUP", libc::SIGHUP),
        ("INT", libc::SIGINT),
        ("QUIT", libc::SIGQUIT),
        ("ILL", libc::SIGILL),
        ("ABRT", libc::SIGABRT),
        ("BUS", libc::SIGBUS),
        ("FPE", libc::SIGFPE),
        ("KILL", libc::SIGKILL),
        ("SEGV", libc::SIGSEGV),
        ("PIPE", libc::SIGPIPE),
        ("ALRM", libc::SIGALRM),
        ("TERM", libc::SIGTERM),
        ("SYS", libc::SIGSYS),
    ];
    known
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(bare))
        .map(|&(_, s)| s)
}

#[cfg(test)]
mod tests {
    use super::signal_number;

    #[test]
    fn signals_are_read_by_name_or_number() {
        assert_eq!(signal_number("SIGKILL"), Some(9));
        assert_eq!(signal_number("TERM"), Some(15));
        assert_eq!(signal_number("9"), Some(9));
        assert_eq!(signal_number("SIGWHAT"), None);
    }
}
