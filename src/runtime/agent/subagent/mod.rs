//! Sub-agents the model starts with the `task` tool: each one a child session
//! (`subagent_of` its caller) whose turn is the same turn loop [`Agent::spawn`](super::base::Agent::spawn) runs for a
//! plan's steps, with its own context window, a policy never wider than its parent's, a
//! ledger carved from what the parent has left (and a budget shared with the parent's other
//! children), and an agent profile's instructions, tools and model when the call names one.
//!
//! The tool's result is the child's final answer, with its session id. `background: true`
//! returns the id at once; `task_wait` waits for the answer. What a child spends is added
//! to its parent's ledger when it ends. Cancelling the parent cancels its children; each
//! child is a session of its own, resumable alone.

pub(super) mod children;
pub(in crate::runtime::agent) mod replay;
pub(super) mod sink;
pub(crate) mod worktree;

use serde_json::Value;

use super::handle::{Routes, SharedSink};
use super::ledger::{PromptCaps, SharedBudget};
use crate::runtime::config::ApprovalPolicy;
use crate::runtime::extensions::agents::Profile;
use crate::runtime::sessions::Sessions;
use crate::session::{RuntimeLedger, RuntimeLimits, RuntimeUsage, SessionHeader, now_ms};

pub(crate) use crate::runtime::extensions::agents::{TASK, TASK_WAIT};
pub(crate) use children::Child;

/// The key of the metadata of a child's opening message.
pub(in crate::runtime::agent) const META_KEY: &str = "subagent";

/// Why a sub-agent could not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SubagentError {
    #[error("no agent profile named `{name}` is in use (in use: {known})")]
    UnknownProfile { name: String, known: String },
    #[error("cannot start the sub-agent: {0}")]
    Start(#[from] super::error::StartError),
    #[error("cannot write the sub-agent's session: {0}")]
    Store(#[from] crate::session::StoreError),
    #[error("no worktree for the sub-agent: {0}")]
    Worktree(#[from] crate::runtime::tools::worktree::WorktreeError),
}

/// The arguments of a `task` call.
#[derive(Debug, Clone, serde::Deserialize)]
pub(in crate::runtime::agent) struct TaskArgs {
    pub prompt: String,
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub background: bool,
    /// Run in a fresh git worktree of the workspace's `HEAD` on a branch of its own.
    #[serde(default)]
    pub worktree: bool,
}

/// What a child inherits from the turn that starts it.
pub(in crate::runtime::agent) struct Parent<'a> {
    pub id: &'a str,
    /// The `task` call that starts the child (recorded in its opening message, so a replay
    /// of that call after a crash finds it: [`replay::earlier`]).
    pub call_id: &'a str,
    pub policy: ApprovalPolicy,
    pub ledger: &'a RuntimeLedger,
    /// Shared by the parent's children running at once (the parent's own when it has one).
    pub budget: SharedBudget,
    pub caps: PromptCaps,
    /// The parent turn's sink: the child's events go there as they happen.
    pub sink: SharedSink,
    /// Where answers sent to the parent are routed to the child that asked.
    pub routes: Routes,
}

/// The approval policy of a child: the profile's when it is narrower, else the parent's.
pub(in crate::runtime::agent) fn narrower(
    parent: ApprovalPolicy,
    profile: Option<ApprovalPolicy>,
) -> ApprovalPolicy {
    let width = |p: ApprovalPolicy| match p {
        ApprovalPolicy::Ask => 0,
        ApprovalPolicy::AutoEdit => 1,
        ApprovalPolicy::NeverAsk => 2,
    };
    match profile {
        Some(p) if width(p) < width(parent) => p,
        _ => parent,
    }
}

/// A child's ledger: the parent's limits less what the parent spent, nothing spent yet, the
/// parent's deadline and "always" approvals.
pub(in crate::runtime::agent) fn carve(parent: &RuntimeLedger) -> RuntimeLedger {
    let (l, u) = (&parent.limits, &parent.usage);
    let left = |m: Option<u64>, used: u64| m.map(|m| m.saturating_sub(used));
    RuntimeLedger {
        limits: RuntimeLimits {
            max_input_tokens: left(l.max_input_tokens, u.input_tokens),
            max_output_tokens: left(l.max_output_tokens, u.output_tokens),
            max_tool_calls: left(l.max_tool_calls, u.tool_calls),
            max_turns: left(l.max_turns, u.turns),
            max_wall_secs: l.max_wall_secs,
            max_cost_usd: l
                .max_cost_usd
                .map(|c| (c - u.cost_usd.unwrap_or(0.0)).max(0.0)),
        },
        usage: RuntimeUsage::default(),
        started_at_ms: Some(now_ms()),
        deadline_at_ms: parent.deadline_at_ms,
        cancelled_at_ms: None,
        termination: None,
        approved_tools: parent.approved_tools.clone(),
    }
}

/// Adds what a child spent (its stored ledger) to its parent's.
pub(in crate::runtime::agent) fn add_spent(parent: &mut RuntimeUsage, child: &RuntimeUsage) {
    parent.input_tokens += child.input_tokens;
    parent.output_tokens += child.output_tokens;
    parent.cached_input_tokens += child.cached_input_tokens;
    parent.cache_write_tokens += child.cache_write_tokens;
    parent.tool_calls += child.tool_calls;
    parent.turns += child.turns;
    if let Some(c) = child.cost_usd {
        parent.cost_usd = Some(parent.cost_usd.unwrap_or(0.0) + c);
    }
}

/// The text that opens a child's conversation.
pub(in crate::runtime::agent) fn opening(profile: Option<&Profile>) -> String {
    let mut s = String::from(
        "You are a sub-agent: another agent handed you the task in the next message. Work on it \
         alone (nobody answers questions), then end with your final answer, which is returned \
         to that agent as it is.",
    );
    if let Some(p) = profile.filter(|p| !p.body.trim().is_empty()) {
        s.push_str("\n\n");
        s.push_str(p.body.trim());
    }
    s
}

/// The tools a child session may call (its profile's list), read from its opening message;
/// `None` for any other session and for a child without a list.
pub(in crate::runtime::agent) fn restriction(
    sessions: &Sessions,
    header: &SessionHeader,
) -> Option<Vec<String>> {
    header.subagent_of.as_ref()?;
    let session = sessions.load(&header.id).ok()?;
    let first = session.messages.first()?;
    let tools = first.tool_metadata.as_ref()?.get(META_KEY)?.get("tools")?;
    let list = tools
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    Some(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_is_never_wider_than_its_parent() {
        use ApprovalPolicy::*;
        assert_eq!(narrower(Ask, Some(NeverAsk)), Ask);
        assert_eq!(narrower(NeverAsk, Some(Ask)), Ask);
        assert_eq!(narrower(AutoEdit, None), AutoEdit);
    }

    #[test]
    fn a_child_gets_what_its_parent_has_left() {
        let mut p = RuntimeLedger::default();
        p.limits.max_tool_calls = Some(10);
        p.limits.max_cost_usd = Some(1.0);
        p.usage.tool_calls = 4;
        p.usage.cost_usd = Some(0.25);
        let c = carve(&p);
        assert_eq!(c.limits.max_tool_calls, Some(6));
        assert_eq!(c.limits.max_cost_usd, Some(0.75));
        assert_eq!(c.usage, RuntimeUsage::default());
    }
}
