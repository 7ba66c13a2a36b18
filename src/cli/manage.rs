//! `neocode fork`, `rename` and `delete`.

use std::io::{IsTerminal, Write};

use super::common::{CmdResult, Failure, ask, open_for_id};
use super::out::Out;
use crate::runtime::Location;
use crate::sanitize;

/// `neocode fork <ID> [--at SEQ]`: prints the new id.
pub(super) fn fork(loc: &Location, key: &str, at: Option<i64>) -> CmdResult {
    let (sessions, id) = open_for_id(loc, key)?;
    let header = sessions.fork(&id, at)?;
    let mut out = Out::stdout();
    out.line(&sanitize::line(&header.id))?;
    out.finish()
}

/// `neocode rename <ID> <TITLE>`.
pub(super) fn rename(loc: &Location, key: &str, title: &str) -> CmdResult {
    if title.trim().is_empty() {
        return Err(Failure::usage("the new title is empty"));
    }
    let (sessions, id) = open_for_id(loc, key)?;
    sessions.rename(&id, title)?;
    let mut out = Out::stdout();
    out.line(&format!(
        "renamed {}: {}",
        sanitize::line(&id),
        sanitize::line(title)
    ))?;
    out.finish()
}

/// `neocode delete <ID> [--yes]`: asks on a terminal, needs `--yes` otherwise.
pub(super) fn delete(loc: &Location, key: &str, yes: bool) -> CmdResult {
    let (sessions, id) = open_for_id(loc, key)?;
    if !yes {
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            return Err(Failure::usage(
                "refusing to delete without --yes when standard input is not a terminal",
            ));
        }
        let s = sessions.summary(&id)?;
        let mut err = std::io::stderr().lock();
        let answer = ask(
            &stdin,
            &mut err,
            format_args!(
                "delete session {} \"{}\" ({} messages, {} assets)? This cannot be undone. [y/N] ",
                sanitize::line(&id),
                sanitize::line(s.display_title()),
                s.message_count,
                s.asset_count
            ),
        )?;
        if !matches!(answer.as_str(), "y" | "yes") {
            let _ = writeln!(err, "nothing deleted");
            return Ok(());
        }
    }
    sessions.delete(&id)?;
    let mut out = Out::stdout();
    out.line(&format!("deleted {}", sanitize::line(&id)))?;
    out.finish()
}
