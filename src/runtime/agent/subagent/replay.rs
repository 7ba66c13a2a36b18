//! A `task` call replayed after a crash: the child that call started before the process
//! stopped is found by its parent and the call id its opening message records, so the
//! replay takes that child's answer (it was resumed alone since) or resumes it, instead of
//! starting the same work again in a new child.

use super::META_KEY;
use crate::runtime::sessions::Sessions;
use crate::session::{Session, Status};

/// What became of the child an interrupted `task` call started.
pub(in crate::runtime::agent) enum Earlier {
    /// It completed (resumed alone after the crash): its answer is the call's result.
    Completed(Box<Session>),
    /// It has not finished: it is resumed.
    Unfinished(String),
}

/// The child session that call `call_id` of session `parent` started, if its opening
/// message records that call. A child that was cancelled or failed is resumed too; one that
/// is running in another process is left to it (its lease then refuses the resume).
pub(in crate::runtime::agent) fn earlier(
    sessions: &Sessions,
    parent: &str,
    call_id: &str,
) -> Option<Earlier> {
    let mut children = Vec::new();
    sessions
        .for_each_list_line(false, |l| {
            if l.subagent_of == Some(parent) {
                children.push(l.id.to_string());
            }
            Ok(())
        })
        .ok()?;
    // Only each child's opening message is read; the whole session only for the answer.
    let id = children.into_iter().find(|id| {
        sessions.messages(id, 1, 1).ok().is_some_and(|first| {
            first
                .first()
                .and_then(|m| m.tool_metadata.as_ref())
                .and_then(|meta| {
                    meta.get(META_KEY)?
                        .get("call_id")?
                        .as_str()
                        .map(str::to_string)
                })
                .is_some_and(|c| c == call_id)
        })
    })?;
    Some(match sessions.header(&id).ok()?.status {
        Status::Completed => Earlier::Completed(Box::new(sessions.load(&id).ok()?)),
        Status::Created | Status::Running | Status::Paused | Status::Failed | Status::Cancelled => {
            Earlier::Unfinished(id)
        }
    })
}

/// The profile a child runs, as its opening message records it.
pub(in crate::runtime::agent) fn profile_of(session: &Session) -> Option<String> {
    let meta = session.messages.first()?.tool_metadata.as_ref()?;
    meta.get(META_KEY)?
        .get("agent")?
        .as_str()
        .map(str::to_string)
}
