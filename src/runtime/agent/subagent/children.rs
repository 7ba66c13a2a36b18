//! The children of this process's turns: each one's end (set by its sink when its
//! `Finished` passes), and the ones that run in the background, by child session id. A leaf
//! the agent holds (it imports no turn machinery).

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::runtime::agent::events::{FinishReason, TurnEvent};
use crate::runtime::agent::handle::TurnHandle;

/// How a child ended, once it has: set from the child's own thread, read by its parent's.
#[derive(Default)]
pub(crate) struct Ended {
    reason: Mutex<Option<FinishReason>>,
    changed: Condvar,
}

impl Ended {
    pub(in crate::runtime::agent) fn set(&self, reason: FinishReason) {
        *self.reason.lock().unwrap_or_else(PoisonError::into_inner) = Some(reason);
        self.changed.notify_all();
    }

    /// How it ended, if it has.
    pub(in crate::runtime::agent) fn get(&self) -> Option<FinishReason> {
        self.reason
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Waits at most `for_` for the end; how it ended, if it has.
    pub(in crate::runtime::agent) fn wait(&self, for_: Duration) -> Option<FinishReason> {
        let guard = self.reason.lock().unwrap_or_else(PoisonError::into_inner);
        let (guard, _) = self
            .changed
            .wait_timeout_while(guard, for_, |r| r.is_none())
            .unwrap_or_else(PoisonError::into_inner);
        guard.clone()
    }
}

/// A running (or ended, not yet collected) child.
pub(crate) struct Child {
    pub(in crate::runtime::agent) handle: TurnHandle,
    /// Its end, once its `Finished` passed its sink.
    pub(in crate::runtime::agent) ended: Arc<Ended>,
    /// The parent's session.
    pub(in crate::runtime::agent) parent: String,
    /// The profile it runs, if any.
    pub(in crate::runtime::agent) agent: Option<String>,
    pub(in crate::runtime::agent) started: Instant,
    /// The git worktree it works in (`worktree: true`).
    pub(in crate::runtime::agent) worktree: Option<crate::runtime::tools::worktree::Worktree>,
}

impl Child {
    pub(in crate::runtime::agent) fn id(&self) -> &str {
        &self.handle.session_id
    }
}

/// How the front end names a child: `sub-agent 1a2b3c4d` (`(reviewer)` after it when it
/// runs a profile).
pub(in crate::runtime::agent) fn label(id: &str, agent: Option<&str>) -> String {
    let short: String = id.chars().take(8).collect();
    match agent {
        Some(a) => format!("sub-agent {short} ({a})"),
        None => format!("sub-agent {short}"),
    }
}

/// `event` of child `session_id` (started by the parent's call `call_id`) as the parent's
/// [`TurnEvent::Subagent`].
pub(in crate::runtime::agent) fn tagged(
    session_id: &str,
    call_id: &str,
    agent: Option<&str>,
    event: TurnEvent,
) -> TurnEvent {
    TurnEvent::Subagent {
        session_id: session_id.to_string(),
        call_id: call_id.to_string(),
        agent: agent.map(str::to_string),
        event: Box::new(event),
    }
}

/// The background children of this process's turns, by child session id.
#[derive(Clone, Default)]
pub(crate) struct Children(Arc<Mutex<HashMap<String, Child>>>);

impl Children {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Child>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(in crate::runtime::agent) fn insert(&self, child: Child) {
        self.lock().insert(child.id().to_string(), child);
    }

    /// Takes child `id` out (a wait holds it; [`Children::insert`] puts it back).
    pub(in crate::runtime::agent) fn take(&self, id: &str) -> Option<Child> {
        self.lock().remove(id)
    }

    /// Takes out every background child of session `parent`.
    pub(in crate::runtime::agent) fn take_of(&self, parent: &str) -> Vec<Child> {
        let mut map = self.lock();
        let ids: Vec<String> = map
            .values()
            .filter(|c| c.parent == parent)
            .map(|c| c.id().to_string())
            .collect();
        ids.iter().filter_map(|id| map.remove(id)).collect()
    }

    /// Cancels every background child of session `parent`.
    pub(in crate::runtime::agent) fn cancel_of(&self, parent: &str) {
        for c in self.lock().values().filter(|c| c.parent == parent) {
            c.handle.cancel();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_returns_the_end_once_it_is_set() {
        let ended = Arc::new(Ended::default());
        assert_eq!(ended.wait(Duration::from_millis(1)), None);
        let setter = ended.clone();
        let t = std::thread::spawn(move || setter.set(FinishReason::Completed));
        assert_eq!(
            ended.wait(Duration::from_secs(30)),
            Some(FinishReason::Completed)
        );
        t.join().unwrap();
        assert_eq!(ended.get(), Some(FinishReason::Completed));
    }
}
