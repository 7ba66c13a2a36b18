//! A child's sink: its events reach its parent's front end as they happen (tagged with the
//! child, from the child's own thread), an approval it asks routes the answer back to it
//! whichever front end sends it, and its end is kept for the parent to collect.

use std::sync::Arc;

use super::children::{Ended, label, tagged};
use crate::runtime::agent::events::TurnEvent;
use crate::runtime::agent::handle::{Commands, Routes, Running, SharedSink, TurnSink};

/// Where a child's events go.
pub(in crate::runtime::agent) struct ChildSink {
    /// The parent turn's sink.
    pub parent: SharedSink,
    /// Where answers sent to the parent's commands are routed.
    pub routes: Routes,
    /// The child's own commands.
    pub commands: Commands,
    /// The turns this process runs: the child is among them from its start to its end.
    pub running: Running,
    pub id: String,
    /// The parent's `task` call that started it.
    pub call_id: String,
    pub agent: Option<String>,
    pub ended: Arc<Ended>,
}

impl ChildSink {
    fn tag(&self, event: TurnEvent) -> TurnEvent {
        tagged(&self.id, &self.call_id, self.agent.as_deref(), event)
    }
}

impl TurnSink for ChildSink {
    fn event(&mut self, event: TurnEvent) {
        let who = label(&self.id, self.agent.as_deref());
        let out = match event {
            TurnEvent::Finished { reason, usage } => {
                self.running.remove(&self.id);
                let end = self.tag(TurnEvent::Finished {
                    reason: reason.clone(),
                    usage,
                });
                self.parent.event(end);
                // Set after the event went: the parent's result for the call follows it.
                self.ended.set(reason);
                return;
            }
            TurnEvent::ApprovalNeeded {
                call,
                summary,
                reason,
                rules,
            } => {
                // Before the question leaves: the answer may come at once.
                self.routes.insert(&call.id, self.commands.clone());
                self.tag(TurnEvent::ApprovalNeeded {
                    call,
                    summary: format!("{who}: {summary}"),
                    reason,
                    rules,
                })
            }
            TurnEvent::Warning { code, message } => TurnEvent::Warning {
                code,
                message: format!("{who}: {message}"),
            },
            // A grandchild's event, tagged with it already: an answer about its call goes
            // through this child.
            TurnEvent::Subagent {
                session_id,
                call_id,
                agent,
                event,
            } => {
                if let TurnEvent::ApprovalNeeded { call, .. } = event.as_ref() {
                    self.routes.insert(&call.id, self.commands.clone());
                }
                TurnEvent::Subagent {
                    session_id,
                    call_id,
                    agent,
                    event,
                }
            }
            // In the running turns before the front end hears of it: a command to its id
            // (cancel it alone) reaches it from the first event on.
            e @ TurnEvent::Started { .. } => {
                self.running.insert(&self.id, self.commands.clone());
                self.tag(e)
            }
            e @ (TurnEvent::ToolCall { .. }
            | TurnEvent::ToolResult { .. }
            | TurnEvent::AssistantStored { .. }) => self.tag(e),
            _ => return,
        };
        self.parent.event(out);
    }
}
