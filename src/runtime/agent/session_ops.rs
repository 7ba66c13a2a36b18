//! What the agent changes in a session outside a turn: its model, skills, network grant, its
//! own rules ("always" for this session: listed with every rule in force, and revoked), and a
//! compaction on demand.

use super::base::Agent;
use super::compact::Compacted;
use super::error::{StartCode, StartError};
use super::op::OpError;
use super::{compact, ledger};
use crate::runtime::cancel::CancelFlag;
use crate::runtime::policy::approval;
use crate::runtime::policy::permissions::{List, RuleRef, Rules};
use crate::runtime::provider::OpenAi;

/// Every permission rule in force for a session (`/permissions`): its own, then the rule
/// files' (the workspace's first), in the order they are read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RulesInForce {
    /// The session's own grants as stored ("always" for this session: rule texts, and
    /// [`approval::NETWORK_GRANT`] for `/approve network`); empty without a session.
    pub session: Vec<String>,
    /// The rule files' rules: the list each is in, its text, file and line.
    pub files: Vec<(List, RuleRef)>,
    /// The rule files that exist: the workspace's `.neocode/permissions.toml`, the home's
    /// `config.toml` (when it has `[permissions]`).
    pub file_names: Vec<std::path::PathBuf>,
    /// Where the rule files would be (for "no rules": where to add them).
    pub workspace_file: std::path::PathBuf,
    /// `<home>/config.toml`.
    pub home_file: std::path::PathBuf,
    /// A rule file that does not load (one line, its file and line): its rules are not
    /// listed, and turns fail until it is fixed.
    pub problem: Option<String>,
}

/// The model lists fetched in this process, by base URL (`/model` asks once per server).
static MODELS: std::sync::OnceLock<
    std::sync::Mutex<std::collections::HashMap<String, Vec<String>>>,
> = std::sync::OnceLock::new();

impl Agent {
    /// The models the configured server offers (`GET /v1/models`), asked once per process
    /// and server, then answered from memory.
    pub(crate) fn models(&self) -> Result<Vec<String>, OpError> {
        let o = self.settings.openai()?;
        let cache = MODELS.get_or_init(Default::default);
        if let Ok(c) = cache.lock()
            && let Some(names) = c.get(&o.base_url)
        {
            return Ok(names.clone());
        }
        let base = o.base_url.clone();
        let names = OpenAi::new(o)
            .and_then(|p| p.models())
            .map_err(|e| OpError::Provider(e.message))?;
        if let Ok(mut c) = cache.lock() {
            c.insert(base, names.clone());
        }
        Ok(names)
    }

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
                    "no skill named `{name}`; available: {}{}",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    },
                    skills
                        .workspace_left_out
                        .as_ref()
                        .map(|w| format!(" ({w})"))
                        .unwrap_or_default()
                ),
            });
        };
        Ok(
            crate::runtime::extensions::project_context::skills::activate(
                &self.sessions,
                &id,
                skill,
            )?,
        )
    }

    /// Opens the network to the commands of session `key` from its next turn on
    /// (`/approve network`): stored with the session like an "always" answer, so it survives a
    /// restart; only the user raises it. Refused while a turn runs (the turn owns the ledger).
    pub fn allow_network(&self, key: &str) -> Result<String, StartError> {
        let id = self.sessions.resolve(key)?;
        let _lease = self.lease(&id)?;
        self.change_ledger(&id, |ledger| {
            let granted = ledger
                .approved_tools
                .iter()
                .any(|t| t == approval::NETWORK_GRANT);
            if !granted {
                ledger
                    .approved_tools
                    .push(approval::NETWORK_GRANT.to_string());
            }
            !granted
        })?;
        Ok(id)
    }

    /// Every rule in force for session `key` (`None`: a session not started yet, the files'
    /// rules only), for `/permissions`. Reads the rule files; a broken one is named in
    /// [`RulesInForce::problem`], not an error.
    pub(crate) fn rules_in_force(&self, key: Option<&str>) -> Result<RulesInForce, StartError> {
        let root = self.sessions.root();
        let home = self
            .settings
            .path
            .parent()
            .unwrap_or_else(|| std::path::Path::new("."));
        let session = match key {
            Some(key) => {
                let id = self.sessions.resolve(key)?;
                let header = self.sessions.header(&id)?;
                header.ledger.map(|l| l.approved_tools).unwrap_or_default()
            }
            None => Vec::new(),
        };
        let mut out = RulesInForce {
            session,
            workspace_file: Rules::workspace_file(root),
            home_file: Rules::home_file(home),
            ..RulesInForce::default()
        };
        match Rules::load(home, root) {
            Ok(rules) => {
                out.files = rules
                    .rules()
                    .iter()
                    .map(|r| (r.list, r.at.clone()))
                    .collect();
                out.file_names = rules.files().to_vec();
            }
            Err(e) => out.problem = Some(e.to_string()),
        }
        Ok(out)
    }

    /// Takes `grant` (a rule text, or [`approval::NETWORK_GRANT`]) out of session `key`'s own
    /// rules (`/permissions`): calls it allowed ask again from its next turn. Refused while
    /// a turn runs (the turn owns the ledger). Returns whether it was there.
    pub(crate) fn revoke_grant(&self, key: &str, grant: &str) -> Result<bool, StartError> {
        let id = self.sessions.resolve(key)?;
        let _lease = self.lease(&id)?;
        self.change_ledger(&id, |ledger| {
            let before = ledger.approved_tools.len();
            ledger.approved_tools.retain(|g| g.trim() != grant.trim());
            ledger.approved_tools.len() != before
        })
    }

    /// Compacts a session now (`neocode compact`, the TUI's `/compact`). Blocks; fails without
    /// changing anything when the summary cannot be made or the session is running.
    pub fn compact(&self, key: &str) -> Result<Compacted, StartError> {
        let id = self.sessions.resolve(key)?;
        if let Some(a) = self.for_session(&id)? {
            return a.compact(&id);
        }
        self.check_provider()?;
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
        self.change_ledger(&id, |ledger| {
            ledger.usage.input_tokens += c.usage.input_tokens;
            ledger.usage.output_tokens += c.usage.output_tokens;
            true
        })?;
        Ok(c)
    }

    /// Reads session `id`'s ledger, lets `change` edit it and stores it when `change` says
    /// it changed (the caller holds the lease). Returns what `change` said.
    fn change_ledger(
        &self,
        id: &str,
        change: impl FnOnce(&mut crate::session::RuntimeLedger) -> bool,
    ) -> Result<bool, StartError> {
        let header = self.sessions.header(id)?;
        let mut ledger = ledger::of(&header, &self.settings.limits);
        if !change(&mut ledger) {
            return Ok(false);
        }
        self.sessions.update_state(
            id,
            &crate::session::StateUpdate {
                ledger: crate::session::Change::Set(ledger),
                ..Default::default()
            },
        )?;
        Ok(true)
    }
}
