//! The agent part of the conversation: the agent as the status line shows it, the approval
//! policy chosen here, and a `/model` switch on its way. Its fields are its own.

use crate::runtime::config::ApprovalPolicy;
use crate::tui::live::AgentInfo;

/// What the conversation knows of the agent.
#[derive(Default)]
pub(super) struct AgentState {
    /// The agent as the status line shows it (set by the loop when it connects one).
    info: AgentInfo,
    /// Approval policy chosen with `/approve` (else the agent's).
    policy: Option<ApprovalPolicy>,
    /// The provider before a `/model` switch the agent has not accepted yet.
    model_before: Option<Result<String, crate::tui::error::Failure>>,
    /// A `/model NAME` of a session on its way to the store: (session, model), shown until
    /// the session's header names it.
    model_switch: Option<(String, String)>,
}

impl AgentState {
    /// The agent as the status line shows it.
    pub(super) fn info(&self) -> &AgentInfo {
        &self.info
    }

    pub(super) fn set_info(&mut self, info: AgentInfo) {
        self.info = info;
    }

    /// The configured model, or why there is none.
    pub(super) fn provider(&self) -> &Result<String, crate::tui::error::Failure> {
        &self.info.provider
    }

    pub(super) fn set_provider(&mut self, provider: Result<String, crate::tui::error::Failure>) {
        self.info.provider = provider;
    }

    /// An MCP server failed to start or died (the status line names it, once).
    pub(super) fn mcp_failed(&mut self, name: String) {
        if !self.info.mcp_failed.contains(&name) {
            self.info.mcp_failed.push(name);
        }
    }

    /// The approval policy of the next turn: `/approve`'s, else the agent's.
    pub(super) fn approval(&self) -> ApprovalPolicy {
        self.policy.unwrap_or(self.info.policy)
    }

    /// `/approve`: the policy of the next turns.
    pub(super) fn set_policy(&mut self, policy: ApprovalPolicy) {
        self.policy = Some(policy);
    }

    /// `/model NAME` for the open session `id`: shown until its header names it.
    pub(super) fn switch_session(&mut self, id: String, model: String) {
        self.model_switch = Some((id, model));
    }

    /// `/model NAME` without a session: the agent's model, the one before kept until the
    /// agent accepts it.
    pub(super) fn switch_agent(&mut self, model: String) {
        self.model_before = Some(self.info.provider.clone());
        self.info.provider = Ok(model);
    }

    /// The model switch was refused: the model before it is back.
    pub(super) fn switch_refused(&mut self) {
        if let Some(prev) = self.model_before.take() {
            self.info.provider = prev;
        }
        self.model_switch = None;
    }

    /// The model switch the agent answered (either way) is no longer shown.
    pub(super) fn switch_answered(&mut self) {
        self.model_switch = None;
    }

    /// The model `/model` chose for session `id`, until its header names it.
    pub(super) fn switched_model(&self, id: &str) -> Option<&str> {
        match &self.model_switch {
            Some((sid, name)) if sid == id => Some(name),
            _ => None,
        }
    }

    /// Session `id`'s header names `model`: a switch to it is stored.
    pub(super) fn model_stored(&mut self, id: &str, model: &str) {
        if self
            .model_switch
            .as_ref()
            .is_some_and(|(sid, m)| sid == id && m == model)
        {
            self.model_switch = None;
        }
    }
}
