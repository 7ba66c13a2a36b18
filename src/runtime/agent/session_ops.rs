//! What the agent changes in a session outside a turn: its model, skills, network grant, and
//! a compaction on demand.

use super::{Agent, Compacted, StartCode, StartError, approval, compact, ledger};
use crate::runtime::cancel::CancelFlag;

impl Agent {
    /// Switches session `key` to `model` from its next request on (`/model NAME`): stored in
    /// its header, so it survives a restart; `run --model` overrides it for one run.
    pub fn set_model(&self, key: &str, model: &str) -> Result<String, StartError> {
        let model = model.trim();
        if model.is_empty() {
            return Err(StartError {
                code: StartCode::Usage,
                message: "the model name is empty".into(),
            });
        }
        let id = self.sessions.resolve(key)?;
        let _lease = self.lease(&id)?;
        let header = self.sessions.header(&id)?;
        let ledger = ledger::of(&header, &self.settings.limits);
        self.sessions.update_state(
            &id,
            &crate::session::StateUpdate {
                model: Some(model.to_string()),
                // `/provider`'s agent: the session keeps that profile too.
                profile: self.settings.profile.clone(),
                ledger: crate::session::Change::Set(ledger),
                ..Default::default()
            },
        )?;
        Ok(id)
    }

    /// Activates a skill in a session for the user (`/skill NAME`): recorded in the header,
    /// its body joins the system prompt from the next model call on. Returns whether it was
    /// newly activated.
    pub fn activate_skill(&self, key: &str, name: &str) -> Result<bool, StartError> {
        let id = self.sessions.resolve(key)?;
        let skills = self.ext.skills();
        let Some(skill) = skills.get(name) else {
            let known: Vec<&str> = skills.skills.iter().map(|s| s.name.as_str()).collect();
            return Err(StartError {
                code: StartCode::Usage,
                message: format!(
                    "no skill named `{name}`; available: {}",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            });
        };
        Ok(crate::runtime::project_context::skills::activate(
            &self.sessions,
            &id,
            skill,
        )?)
    }

    /// Opens the network to the commands of session `key` from its next turn on
    /// (`/approve network`): stored with the session like an "always" answer, so it survives a
    /// restart; only the user raises it. Refused while a turn runs (the turn owns the ledger).
    pub fn allow_network(&self, key: &str) -> Result<String, StartError> {
        let id = self.sessions.resolve(key)?;
        let _lease = self.lease(&id)?;
        let header = self.sessions.header(&id)?;
        let mut ledger = ledger::of(&header, &self.settings.limits);
        if !ledger
            .approved_tools
            .iter()
            .any(|t| t == approval::NETWORK_GRANT)
        {
            ledger
                .approved_tools
                .push(approval::NETWORK_GRANT.to_string());
            self.sessions.update_state(
                &id,
                &crate::session::StateUpdate {
                    ledger: crate::session::Change::Set(ledger),
                    ..Default::default()
                },
            )?;
        }
        Ok(id)
    }

    /// Compacts a session now (`neocode compact`, the TUI's `/compact`). Blocks; fails without
    /// changing anything when the summary cannot be made or the session is running.
    pub fn compact(&self, key: &str) -> Result<Compacted, StartError> {
        self.check_provider()?;
        let id = self.sessions.resolve(key)?;
        if let Some(a) = self.for_session(&id)? {
            return a.compact(&id);
        }
        let _lease = self.lease(&id)?;
        let mut provider = (self.factory)().map_err(|e| StartError {
            code: StartCode::Config,
            message: e.message,
        })?;
        let meta = self.meta_for(provider.as_ref());
        let c = compact::compact_with(
            &self.sessions,
            &id,
            provider.as_mut(),
            &CancelFlag::default(),
            &meta,
            self.settings.context_window,
        )
        .map_err(|e| StartError {
            code: StartCode::Provider,
            message: e.to_string(),
        })?;
        let header = self.sessions.header(&id)?;
        let mut ledger = ledger::of(&header, &self.settings.limits);
        ledger.usage.input_tokens += c.usage.input_tokens;
        ledger.usage.output_tokens += c.usage.output_tokens;
        self.sessions.update_state(
            &id,
            &crate::session::StateUpdate {
                ledger: crate::session::Change::Set(ledger),
                ..Default::default()
            },
        )?;
        Ok(c)
    }
}
