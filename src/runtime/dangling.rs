//! Dangling tool calls (seed 000 §5.2): calls an assistant message made that never got a
//! result because the process stopped between "the assistant asked" and "the tool answered".

use std::collections::HashSet;

use crate::session::{AssetMeta, Message, PlanProgress, Result, Role, SessionHeader, ToolCall};

use super::Sessions;

/// How many trailing messages [`Sessions::interrupted_tool_calls`] reads: the answers to one
/// assistant message's calls follow it directly, so a dangling call is always near the end.
const INTERRUPT_SCAN: i64 = 256;

/// A session as opening it shows it, from one read transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct Opened {
    pub header: SessionHeader,
    pub progress: PlanProgress,
    pub assets: Vec<AssetMeta>,
    /// Tool calls left without a result when the session stopped (see
    /// [`Sessions::interrupted_tool_calls`]).
    pub interrupted: Vec<ToolCall>,
}

impl Sessions {
    /// Header, plan progress, assets and interrupted tool calls of a session, read in one
    /// transaction so they agree while another process writes.
    pub fn open_session(&self, id: &str) -> Result<Opened> {
        let o = self.store().load_overview(id, INTERRUPT_SCAN)?;
        Ok(Opened {
            interrupted: dangling_tool_calls(&o.tail),
            header: o.header,
            progress: o.plan_progress,
            assets: o.assets,
        })
    }

    /// Tool calls the session's last tool-calling assistant message made that never got a
    /// result: the process stopped between "the assistant asked" and "the tool answered".
    /// Resuming replays them (at least once). Reads only the transcript's tail.
    pub fn interrupted_tool_calls(&self, id: &str) -> Result<Vec<ToolCall>> {
        Ok(self.open_session(id)?.interrupted)
    }
}

/// Tool calls of the last assistant message that carries calls and have no tool result after
/// it: what a crash between "assistant asked" and "tool answered" leaves behind. On resume
/// they are replayed (at least once: a replayed call may repeat side effects).
pub fn dangling_tool_calls(messages: &[Message]) -> Vec<ToolCall> {
    let Some(idx) = messages
        .iter()
        .rposition(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
    else {
        return Vec::new();
    };
    let answered: HashSet<&str> = messages[idx + 1..]
        .iter()
        .filter(|m| m.role == Role::Tool)
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    messages[idx]
        .tool_calls
        .iter()
        .filter(|c| !answered.contains(c.id.as_str()))
        .cloned()
        .collect()
}
