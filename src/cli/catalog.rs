//! What `neocode agents list` and `neocode skill list` print alike: one line a definition
//! found, the files skipped and why, and where the definitions go when there are none.

use std::path::{Path, PathBuf};

use super::common::CmdResult;
use super::out::Out;
use crate::sanitize;

/// A file left out, as listed: `PATH: REASON`.
pub(super) fn skipped(path: &Path, reason: &str) -> String {
    format!("{}: {reason}", path.display())
}

/// Prints the files left out, a line each.
pub(super) fn print_skipped(out: &mut Out, skipped: &[String]) -> CmdResult {
    for s in skipped {
        out.line(&format!("skipped: {}", sanitize::line(s)))?;
    }
    Ok(())
}

/// The line of one definition: its name, where it comes from, a mark (in use, active) and its
/// description on one line.
pub(super) fn entry(name: &str, source: &str, mark: &str, description: &str) -> String {
    let desc = description.split_whitespace().collect::<Vec<_>>().join(" ");
    format!(
        "{}  {source:<9}  {mark:<6}  {}",
        sanitize::line(name),
        sanitize::line(&desc)
    )
}

/// The line printed when nothing is found: `no WHAT (FILES in A, B or C)`.
pub(super) fn none(what: &str, files: &str, dirs: &[PathBuf]) -> String {
    let dirs: Vec<String> = dirs
        .iter()
        .map(|d| sanitize::line(&d.display().to_string()).into_owned())
        .collect();
    let places = match dirs.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    };
    format!("no {what} ({files} in {places})")
}
