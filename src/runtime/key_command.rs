//! `api_key_command`: a command whose standard output is the API key (for password
//! managers). It runs at most once per process, when a request first needs the key; its
//! output is kept in memory only and is never logged, and a failure says how it failed, never
//! what it printed.

use std::process::{Command, Stdio};
use std::sync::{Mutex, PoisonError};

/// The command that ran and what it gave: the key (kept for the life of the process, so
/// redaction can borrow it) or why there is none.
type Ran = Option<(String, Result<&'static str, KeyCommandError>)>;
static RAN: Mutex<Ran> = Mutex::new(None);

/// Why `api_key_command` gave no key: how it failed, never what it printed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyCommandError {
    /// `sh` could not be started (the I/O error, in words).
    #[error("api_key_command cannot be started: {0}")]
    Start(String),
    /// The command exited unsuccessfully: with this status, or (`None`) by a signal.
    #[error("api_key_command failed with {}; run it yourself to see why, or set NEOCODE_API_KEY", exit_how(*.0))]
    Failed(Option<i32>),
    /// The output is empty or is not one word.
    #[error("api_key_command printed no key (its output must be the key alone, on one line)")]
    NoKey,
}

fn exit_how(code: Option<i32>) -> String {
    match code {
        Some(c) => format!("exit status {c}"),
        None => "a signal".to_string(),
    }
}

fn lock() -> std::sync::MutexGuard<'static, Ran> {
    RAN.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The key `cmd` gives: its trimmed standard output. Runs `cmd` with `sh -c` the first time
/// only; later calls (another turn, another provider) get the same answer.
pub(crate) fn run_once(cmd: &str) -> Result<String, KeyCommandError> {
    let mut ran = lock();
    if let Some((c, out)) = ran.as_ref()
        && c == cmd
    {
        return out.clone().map(str::to_string);
    }
    let out = run(cmd).map(|k| &*Box::leak(k.into_boxed_str()));
    *ran = Some((cmd.to_string(), out.clone()));
    out.map(str::to_string)
}

/// The key `cmd` gave, if it already ran and gave one.
pub(crate) fn cached(cmd: &str) -> Option<&'static str> {
    match lock().as_ref() {
        Some((c, Ok(k))) if c == cmd => Some(*k),
        _ => None,
    }
}

fn run(cmd: &str) -> Result<String, KeyCommandError> {
    let out = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| KeyCommandError::Start(crate::session::io_error(&e)))?;
    if !out.status.success() {
        return Err(KeyCommandError::Failed(out.status.code()));
    }
    let key = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if key.is_empty() || key.contains(char::is_whitespace) {
        return Err(KeyCommandError::NoKey);
    }
    Ok(key)
}
