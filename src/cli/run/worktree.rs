//! `run --worktree`: the whole run in a fresh git worktree of the workspace's `HEAD` on a
//! branch of its own (`neocode/run-<id>`), made under the workspace's data folder; at the
//! end its changes are committed on the branch and the branch and folder printed on stderr.

use std::io::Write as _;

use crate::cli::common::Failure;
use crate::runtime::Sessions;
use crate::runtime::agent::worktree;
use crate::runtime::tools::worktree::Worktree;
use crate::sanitize;

/// `sessions` working in a fresh worktree when `wanted`; a workspace that is not a git
/// repository, or no git, is a one-line failure.
pub(in crate::cli) fn enter(
    sessions: Sessions,
    wanted: bool,
) -> Result<(Sessions, Option<Worktree>), Failure> {
    if !wanted {
        return Ok((sessions, None));
    }
    let token = format!("{:08x}", crate::session::now_ms() & 0xffff_ffff);
    match worktree::make(&sessions, "run", &token) {
        Ok(wt) => Ok((sessions.rooted_at(&wt.path), Some(wt))),
        Err(e) => Err(Failure::runtime(format!(
            "--worktree: {}",
            sanitize::line(&e.to_string())
        ))),
    }
}

/// Commits what the run changed on the worktree's branch and says on stderr where both are.
pub(in crate::cli) fn report(wt: &Worktree, session_id: Option<&str>) {
    let message = match session_id {
        Some(id) => format!("neocode run {id}"),
        None => "neocode run".to_string(),
    };
    let changed = match wt.commit(&message) {
        Ok(Some(_)) => "its changes are committed on it".to_string(),
        Ok(None) => "it changed no file".to_string(),
        Err(e) => format!("its changes could not be committed: {e}"),
    };
    let _ = writeln!(
        std::io::stderr().lock(),
        "neocode: worktree {} on branch {} ({})",
        sanitize::line(&wt.path.display().to_string()),
        sanitize::line(&wt.branch),
        sanitize::line(&changed)
    );
}
