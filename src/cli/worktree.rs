//! `neocode worktree list|prune`: the git worktrees neocode made in the workspace (sub-agents'
//! `worktree: true`, `run --worktree`, plan steps), the session of each and whether it still
//! runs; a crash leaves them behind, `prune` removes the stale ones.

use serde::Serialize;

use super::common::{CmdResult, Failure};
use super::out::Out;
use crate::runtime::agent::worktrees::{self, Found, Pruned};
use crate::runtime::{Location, Sessions};
use crate::sanitize;
use crate::session::Status;

#[derive(Serialize)]
struct JsonWorktree<'a> {
    path: String,
    branch: Option<&'a str>,
    session: Option<&'a str>,
    status: Option<&'static str>,
    state: &'static str,
}

/// `running` while its session holds its lease, else `stale`.
fn state(f: &Found) -> &'static str {
    if f.running { "running" } else { "stale" }
}

/// Its session's stored status; `interrupted` for one stored as running whose process is gone.
fn status(f: &Found) -> Option<&'static str> {
    f.status.map(|s| match s {
        Status::Running if !f.running => "interrupted",
        other => other.as_str(),
    })
}

fn failed(e: &impl std::fmt::Display) -> Failure {
    Failure::runtime(sanitize::line(&e.to_string()).into_owned())
}

/// The workspace's sessions and its worktrees (none when it has no database yet).
fn found(loc: &Location) -> Result<Option<(Sessions, Vec<Found>)>, Failure> {
    let Some(sessions) = Sessions::open_existing(loc)? else {
        return Ok(None);
    };
    let list = worktrees::list(&sessions).map_err(|e| failed(&e))?;
    Ok(Some((sessions, list)))
}

/// `neocode worktree list`.
pub(super) fn list(loc: &Location, json: bool) -> CmdResult {
    let list = found(loc)?.map(|(_, l)| l).unwrap_or_default();
    let mut out = Out::stdout();
    if json {
        out.json_array(list.iter().map(|f| JsonWorktree {
            path: f.path.display().to_string(),
            branch: f.branch.as_deref(),
            session: f.session.as_deref(),
            status: status(f),
            state: state(f),
        }))?;
        return out.finish();
    }
    if list.is_empty() {
        out.line("no worktrees made by neocode in this workspace")?;
        return out.finish();
    }
    for f in &list {
        let session = match (&f.session, status(f)) {
            (Some(id), Some(s)) => format!("session {} ({s})", short(id)),
            _ => "no session".to_string(),
        };
        out.line(&format!(
            "{}  {}  {session}  {}",
            state(f),
            sanitize::line(f.branch.as_deref().unwrap_or("(detached)")),
            sanitize::line(&f.path.display().to_string())
        ))?;
    }
    out.finish()
}

/// `neocode worktree prune`: removes the stale worktrees whose session completed (every
/// stale one with `all`), saying what it removed and what it kept and why.
pub(super) fn prune(loc: &Location, all: bool) -> CmdResult {
    let Some((sessions, list)) = found(loc)? else {
        return Out::stdout().finish();
    };
    let mut out = Out::stdout();
    for f in &list {
        let path = sanitize::line(&f.path.display().to_string()).into_owned();
        let branch = sanitize::line(f.branch.as_deref().unwrap_or("(detached)")).into_owned();
        let line = match worktrees::prune(&sessions, f, all).map_err(|e| failed(&e))? {
            Pruned::Removed { committed } => format!(
                "removed {path} (branch {branch} kept{})",
                if committed {
                    ", what was left in it committed there"
                } else {
                    ""
                }
            ),
            Pruned::Running => format!("kept {path}: its session is running"),
            Pruned::Unfinished => format!(
                "kept {path}: its session {} (`neocode run --resume` goes on; --all removes it)",
                match (&f.session, status(f)) {
                    (Some(id), Some(s)) => format!("{} is {s}", short(id)),
                    _ => "is unknown".to_string(),
                }
            ),
        };
        out.line(&line)?;
    }
    if list.is_empty() {
        out.line("no worktrees made by neocode in this workspace")?;
    }
    out.finish()
}

fn short(id: &str) -> String {
    sanitize::line(&id.chars().take(8).collect::<String>()).into_owned()
}
