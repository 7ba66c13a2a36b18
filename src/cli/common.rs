//! What every command shares: the failure it reports and opening a session by id.

use crate::runtime::{Location, Sessions};
use crate::sanitize;
use crate::session::StoreError;

/// A failure with its exit code and the lines to print on stderr.
#[derive(Debug)]
pub struct Failure {
    /// 1 runtime failure, 2 bad usage.
    pub code: u8,
    /// First line (prefixed with `neocode: `), then any further lines printed as they are.
    pub lines: Vec<String>,
}

impl Failure {
    /// A bad-usage failure (exit 2).
    pub(crate) fn usage(msg: impl Into<String>) -> Failure {
        Failure {
            code: 2,
            lines: vec![msg.into()],
        }
    }

    /// Ends the command quietly with success (stdout was closed: `| head`).
    pub(crate) fn quiet() -> Failure {
        Failure {
            code: 0,
            lines: Vec::new(),
        }
    }

    /// A runtime failure (exit 1).
    pub(crate) fn runtime(msg: impl Into<String>) -> Failure {
        Failure {
            code: 1,
            lines: vec![msg.into()],
        }
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Failure {
        let code = if e.is_usage() { 2 } else { 1 };
        let mut lines = vec![sanitize::line(&e.to_string()).into_owned()];
        if let StoreError::Ambiguous { candidates, .. } = &e {
            for (id, title) in candidates {
                lines.push(format!(
                    "  {}  {}",
                    sanitize::line(id),
                    sanitize::line(title)
                ));
            }
        }
        Failure { code, lines }
    }
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Failure {
        Failure::runtime(sanitize::line(&format!("{e:#}")).into_owned())
    }
}

/// Result of a command.
pub(crate) type CmdResult = Result<(), Failure>;

/// Asks `question` on `err` (no newline: the answer follows it) and reads the answer from the
/// terminal, trimmed and lowercased.
pub(crate) fn ask(
    stdin: &std::io::Stdin,
    err: &mut impl std::io::Write,
    question: std::fmt::Arguments<'_>,
) -> Result<String, Failure> {
    use std::io::BufRead;
    let _ = err.write_fmt(question);
    let _ = err.flush();
    let mut answer = String::new();
    stdin
        .lock()
        .read_line(&mut answer)
        .map_err(|e| Failure::runtime(format!("cannot read the answer: {e}")))?;
    Ok(answer.trim().to_ascii_lowercase())
}

/// Opens an existing workspace and resolves `key` in it; a workspace without a database has
/// no sessions, and nothing is created.
pub(crate) fn open_for_id(loc: &Location, key: &str) -> Result<(Sessions, String), Failure> {
    match Sessions::open_existing(loc)? {
        Some(sessions) => {
            let id = sessions.resolve(key)?;
            Ok((sessions, id))
        }
        None => Err(not_found(loc, key)),
    }
}

fn not_found(loc: &Location, key: &str) -> Failure {
    StoreError::NotFound {
        what: "session",
        key: key.to_string(),
        scope: loc.root().display().to_string(),
    }
    .into()
}
