//! The worktrees neocode made in a workspace (`task` with `worktree: true`, `run --worktree`,
//! a plan's steps side by side), with the session each belongs to and whether it is still
//! running: one whose session's lease is free is stale (a crash, or a run that kept it), and
//! `neocode worktree prune` removes it (its changes committed on its branch first).

use std::path::{Path, PathBuf};

use super::subagent::worktree::{folder, short_id};
use crate::runtime::lease;
use crate::runtime::sessions::Sessions;
use crate::runtime::tools::worktree::{self, WorktreeError};
use crate::session::Status;

/// A worktree under the workspace's `.neocode/worktrees/`.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    pub(crate) path: PathBuf,
    pub(crate) branch: Option<String>,
    /// The session working in it, when one is found.
    pub(crate) session: Option<String>,
    pub(crate) status: Option<Status>,
    /// Its session holds its lease: a live process works in it.
    pub(crate) running: bool,
}

/// What pruning one worktree did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Pruned {
    /// Its folder is removed; its branch stays, with its changes committed on it.
    Removed { committed: bool },
    /// Kept: its session is running.
    Running,
    /// Kept: its session did not complete (or none is known); `--all` removes it.
    Unfinished,
}

/// The worktrees neocode made in the workspace of `sessions` (git forgets those whose folder
/// is gone first).
pub(crate) fn list(sessions: &Sessions) -> Result<Vec<Found>, WorktreeError> {
    let under = folder(sessions);
    let listed = worktree::list(sessions.workspace_root())?;
    let mut by_workdir = Vec::new();
    // A listing error leaves the sessions unknown; the worktrees are still shown.
    let _ = sessions.for_each_list_line(true, |l| {
        by_workdir.push((l.workdir.to_string(), l.id.to_string()));
        Ok(())
    });
    Ok(listed
        .into_iter()
        .filter(|w| w.path.starts_with(&under) || same_dir(&w.path, &under))
        .map(|w| {
            let session = session_of(sessions, &w.path, &by_workdir);
            let status = session
                .as_ref()
                .and_then(|id| sessions.header(id).ok())
                .map(|h| h.status);
            let running = session
                .as_ref()
                .is_some_and(|id| lease::is_held(sessions.data_dir(), id));
            Found {
                path: w.path,
                branch: w.branch,
                session,
                status,
                running,
            }
        })
        .collect())
}

/// Whether `path` is inside `under`, comparing their real paths (a temp folder behind a link).
fn same_dir(path: &Path, under: &Path) -> bool {
    match (path.canonicalize(), under.canonicalize()) {
        (Ok(p), Ok(u)) => p.starts_with(u),
        _ => false,
    }
}

/// The session of worktree `path`: the one whose workdir it is, else (`task-`, `step-`
/// folders) the one whose id starts with the folder's short id.
fn session_of(sessions: &Sessions, path: &Path, by_workdir: &[(String, String)]) -> Option<String> {
    let shown = path.display().to_string();
    if let Some((_, id)) = by_workdir.iter().find(|(w, _)| *w == shown) {
        return Some(id.clone());
    }
    let name = path.file_name()?.to_str()?;
    let short = name.strip_prefix("task-").or(name.strip_prefix("step-"))?;
    let id = sessions.resolve(short).ok()?;
    (short_id(&id) == short).then_some(id)
}

/// Prunes `found`: a stale worktree whose session completed (any stale one with `all`) has
/// its changes committed on its branch and its folder removed; a running one is kept.
pub(crate) fn prune(
    sessions: &Sessions,
    found: &Found,
    all: bool,
) -> Result<Pruned, WorktreeError> {
    if found.running {
        return Ok(Pruned::Running);
    }
    if found.status != Some(Status::Completed) && !all {
        return Ok(Pruned::Unfinished);
    }
    let branch = found.branch.clone().unwrap_or_default();
    let wt = worktree::open(sessions.workspace_root(), found.path.clone(), &branch)?;
    let message = match &found.session {
        Some(id) => format!("neocode session {id}: left in its worktree"),
        None => "neocode: left in a worktree".to_string(),
    };
    // A detached worktree has no branch to keep its changes: it is only removed.
    let committed = found.branch.is_some() && wt.commit(&message)?.is_some();
    wt.remove()?;
    Ok(Pruned::Removed { committed })
}
