//! Dangling tool calls (seed 000 §5.2): calls an assistant message made that never got a
//! result because the process stopped between "the assistant asked" and "the tool answered".

use std::collections::HashSet;

use crate::session::{
    AssetMeta, CALLS_FROM, Message, PlanProgress, Result, Role, SessionHeader, ToolCall,
};

use super::sessions::Sessions;

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
    /// Tool calls without a result that this store did not receive from the model (see
    /// [`unrecorded_tool_calls`]): answered "not run", never run.
    pub unrecorded: Vec<ToolCall>,
}

impl Sessions {
    /// Header, plan progress, assets and interrupted tool calls of a session, read in one
    /// transaction so they agree while another process writes.
    pub fn open_session(&self, id: &str) -> Result<Opened> {
        let o = self.store().load_overview(id, INTERRUPT_SCAN)?;
        Ok(Opened {
            interrupted: dangling_tool_calls(&o.tail),
            unrecorded: unrecorded_tool_calls(&o.tail),
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

/// Whether this store's runtime received `m`'s calls from the model ([`CALLS_FROM`]).
fn from_model(m: &Message) -> bool {
    m.tool_metadata
        .as_ref()
        .and_then(|v| v.get(CALLS_FROM))
        .and_then(serde_json::Value::as_str)
        == Some("model")
}

/// The calls of the last tool-calling assistant message that have no result after it.
fn unanswered(messages: &[Message]) -> Option<(&Message, Vec<ToolCall>)> {
    let idx = messages
        .iter()
        .rposition(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())?;
    let answered: HashSet<&str> = messages[idx + 1..]
        .iter()
        .filter(|m| m.role == Role::Tool)
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    let calls = messages[idx]
        .tool_calls
        .iter()
        .filter(|c| !answered.contains(c.id.as_str()))
        .cloned()
        .collect();
    Some((&messages[idx], calls))
}

/// Unanswered calls of the last tool-calling assistant message that this store did not
/// receive from the model: they came with a bridge caller's history or an imported session
/// file (or were stored before calls were marked). Nothing of neocode made them, so they are
/// never run: the turn answers them "not run", under every approval policy.
/// Calls the conversation already went past (a user or assistant message follows) are left
/// as they are: the requests say they have no result.
pub fn unrecorded_tool_calls(messages: &[Message]) -> Vec<ToolCall> {
    let Some((m, calls)) = unanswered(messages) else {
        return Vec::new();
    };
    let last_exchange = messages
        .iter()
        .rposition(|x| std::ptr::eq(x, m))
        .is_some_and(|i| messages[i + 1..].iter().all(|x| x.role == Role::Tool));
    if from_model(m) || !last_exchange {
        return Vec::new();
    }
    calls
}

/// Tool calls of the last assistant message that carries calls and have no tool result after
/// it, when this store received them from the model ([`CALLS_FROM`]): what a crash between
/// "assistant asked" and "tool answered" leaves behind. On resume they are replayed (at least
/// once: a replayed call may repeat side effects).
pub fn dangling_tool_calls(messages: &[Message]) -> Vec<ToolCall> {
    match unanswered(messages) {
        Some((m, calls)) if from_model(m) => calls,
        _ => Vec::new(),
    }
}
