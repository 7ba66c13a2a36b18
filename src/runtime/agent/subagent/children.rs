//! The children of this process's turns that run in the background, by child session id: a
//! leaf the agent holds (it imports no turn machinery).

use std::collections::HashMap;
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::runtime::agent::events::{FinishReason, TurnEvent};
use crate::runtime::agent::handle::TurnHandle;

/// A running (or ended, not yet collected) child.
pub(crate) struct Child {
    pub(in crate::runtime::agent) handle: TurnHandle,
    pub(in crate::runtime::agent) events: Receiver<TurnEvent>,
    /// The parent's session.
    pub(in crate::runtime::agent) parent: String,
    /// The profile it runs, if any.
    pub(in crate::runtime::agent) agent: Option<String>,
    pub(in crate::runtime::agent) started: Instant,
    /// How it ended, once its `Finished` was read.
    pub(in crate::runtime::agent) finished: Option<FinishReason>,
    /// Calls of the child waiting for an approval relayed to the parent's front end.
    pub(in crate::runtime::agent) waiting: Vec<String>,
    /// The parent's `task` call that started it.
    pub(in crate::runtime::agent) call_id: String,
    /// The git worktree it works in (`worktree: true`).
    pub(in crate::runtime::agent) worktree: Option<crate::runtime::tools::worktree::Worktree>,
}

impl Child {
    pub(in crate::runtime::agent) fn id(&self) -> &str {
        &self.handle.session_id
    }

    /// `event` of this child as the parent's [`TurnEvent::Subagent`].
    pub(in crate::runtime::agent) fn tagged(&self, event: TurnEvent) -> TurnEvent {
        TurnEvent::Subagent {
            session_id: self.id().to_string(),
            call_id: self.call_id.clone(),
            agent: self.agent.clone(),
            event: Box::new(event),
        }
    }

    /// How the front end names this child: `sub-agent 1a2b3c4d` (`(reviewer)` after it when
    /// it runs a profile).
    pub(in crate::runtime::agent) fn label(&self) -> String {
        let id = self.id();
        let short = &id[..id.len().min(8)];
        match &self.agent {
            Some(a) => format!("sub-agent {short} ({a})"),
            None => format!("sub-agent {short}"),
        }
    }
}

/// The background children of this process's turns, by child session id.
#[derive(Clone, Default)]
pub(crate) struct Children(Arc<Mutex<HashMap<String, Child>>>);

impl Children {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Child>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(in crate::runtime::agent) fn insert(&self, child: Child) {
        self.lock().insert(child.id().to_string(), child);
    }

    /// Takes child `id` out (a wait holds it; [`Children::insert`] puts it back).
    pub(in crate::runtime::agent) fn take(&self, id: &str) -> Option<Child> {
        self.lock().remove(id)
    }

    /// Cancels every background child of session `parent`.
    pub(in crate::runtime::agent) fn cancel_of(&self, parent: &str) {
        for c in self.lock().values().filter(|c| c.parent == parent) {
            c.handle.cancel();
        }
    }
}
