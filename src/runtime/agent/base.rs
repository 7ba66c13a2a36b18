//! The [`Agent`] itself: what it holds, how it is made, and what its turns record.

use std::sync::Arc;

use crate::session::AppendMeta;

use crate::runtime::config::{Api, ProviderStatus, Settings};
use crate::runtime::lease::{Lease, LeaseError};
use crate::runtime::provider::{
    Anthropic, DemoModel, OpenAi, Provider, ProviderError, Responses, demo,
};
use crate::runtime::sessions::Sessions;

use super::error::{StartCode, StartError};
use super::handle::Running;

/// Makes the provider a turn talks to (called on the turn's thread).
pub type ProviderFactory = Arc<dyn Fn() -> Result<Box<dyn Provider>, ProviderError> + Send + Sync>;

/// Starts turns on a workspace's sessions.
#[derive(Clone)]
pub struct Agent {
    pub(super) sessions: Sessions,
    pub(super) settings: Settings,
    pub(super) factory: ProviderFactory,
    pub(super) ext: Arc<crate::runtime::extensions::project::Extensions>,
    /// The provider is the OpenAI-compatible one built from `settings` (so another model
    /// means another provider); false for a test's or demo's own provider.
    pub(super) openai: bool,
    /// The provider needs no settings and always answers as this model (the demo model).
    pub(super) fixed_model: Option<&'static str>,
    /// The turns this agent (and the agents made from it) runs in this process.
    pub(super) running: Running,
    /// The background sub-agents their turns started.
    pub(super) children: super::subagent::children::Children,
}

/// The model a session keeps: the one its header names, once neocode has run it or `/model`
/// chose one (an imported session's header names the other tool's model, which is not one
/// to send here). `None`: the configured default applies.
pub fn session_model(h: &crate::session::SessionHeader) -> Option<&str> {
    (h.ledger.is_some() && !h.model.trim().is_empty()).then_some(h.model.as_str())
}

/// The constructor of the provider `settings` configure (its `api`), built on the turn's
/// thread. Each provider is one line here; what a session stores as its provider is that
/// provider's [`Provider::name`].
fn provider_factory(settings: &Settings) -> ProviderFactory {
    let s = settings.clone();
    Arc::new(move || {
        let config = |m: crate::runtime::config::ConfigError| ProviderError {
            kind: crate::runtime::provider::ErrorKind::Protocol,
            message: m.to_string(),
            partial: None,
        };
        Ok(match s.api {
            Api::Chat => Box::new(OpenAi::new(s.openai().map_err(config)?)?) as Box<dyn Provider>,
            Api::Responses => Box::new(Responses::new(s.wire().map_err(config)?)?),
            Api::Anthropic => Box::new(Anthropic::new(s.wire().map_err(config)?)?),
        })
    })
}

impl Agent {
    /// An agent whose turns talk to the scripted in-process demo model (`neocode demo`): no
    /// network, no settings needed; the tools, approvals and sandbox are the real ones.
    pub(crate) fn demo(sessions: Sessions, settings: Settings) -> Agent {
        let factory: ProviderFactory =
            Arc::new(|| Ok(Box::new(DemoModel::new()) as Box<dyn Provider>));
        let mut a = Agent::with_provider(sessions, settings, factory);
        a.fixed_model = Some(demo::DEMO_MODEL);
        a
    }

    /// An agent using the OpenAI-compatible provider from `settings`.
    pub fn new(sessions: Sessions, settings: Settings) -> Agent {
        let factory = provider_factory(&settings);
        let mut a = Agent::with_provider(sessions, settings, factory);
        a.openai = true;
        a
    }

    /// This agent with another model (same extensions, no MCP restart); `api:model` (as
    /// `/model` takes it) switches the wire API too.
    pub fn with_model(&self, model: &str) -> Agent {
        let mut settings = self.settings.clone();
        let (api, model) = Api::split_model(model);
        if let Some(api) = api {
            settings.api = api;
        }
        settings.model = Some(model.to_string());
        self.with_settings(settings)
    }

    /// This agent with other settings: a fresh provider factory when it builds real clients,
    /// the same sessions, extensions and running turns.
    fn with_settings(&self, settings: Settings) -> Agent {
        let factory = if self.openai {
            provider_factory(&settings)
        } else {
            self.factory.clone()
        };
        Agent {
            sessions: self.sessions.clone(),
            settings,
            factory,
            ext: self.ext.clone(),
            openai: self.openai,
            fixed_model: self.fixed_model,
            running: self.running.clone(),
            children: self.children.clone(),
        }
    }

    /// This agent with the `[providers.NAME]` profile of `config.toml` (the file and the
    /// environment read again, the approval policy kept; same extensions, no MCP restart), as
    /// `/provider NAME` switches. An unknown profile is an error naming the ones there are.
    pub fn with_profile(&self, name: &str) -> Result<Agent, crate::runtime::config::ConfigError> {
        let home = self
            .settings
            .path
            .parent()
            .unwrap_or_else(|| std::path::Path::new("."));
        let flags = crate::runtime::config::Overrides {
            provider: Some(name.to_string()),
            approval: Some(self.settings.approval),
            ..crate::runtime::config::Overrides::default()
        };
        let settings = Settings::load(home, &flags)?;
        Ok(self.with_settings(settings))
    }

    /// The model requests go to with its api (`anthropic:claude-sonnet-4-5`), as `/model`
    /// and a session's header keep it; `None` while no model is configured.
    pub fn api_model(&self) -> Option<String> {
        self.model_name().map(|m| match Api::split_model(&m) {
            (Some(_), _) => m,
            (None, _) => format!("{}:{m}", self.settings.api.as_str()),
        })
    }

    /// The agent a turn in session `id` runs with: the session's own model unless this run
    /// was given one (`--model`), on the profile it recorded (`/provider`) unless this run
    /// chose one (`--provider`, `NEOCODE_PROVIDER`). `None`: this one.
    pub(crate) fn for_session(&self, id: &str) -> Result<Option<Agent>, StartError> {
        if self.settings.model_from_flag {
            return Ok(None);
        }
        let h = self.sessions.header(id)?;
        // A profile that is no longer in the config leaves the configured provider.
        let profiled = match (&self.settings.profile, &h.profile) {
            (None, Some(p)) if self.openai => self.with_profile(p).ok(),
            _ => None,
        };
        let base = profiled.as_ref().unwrap_or(self);
        Ok(match session_model(&h) {
            Some(m) if base.settings.model.as_deref() != Some(m) => {
                let mut a = base.with_model(m);
                // The session's model, settled: it is not looked up again.
                a.settings.model_from_flag = true;
                Some(a)
            }
            _ => profiled,
        })
    }

    /// An agent with another provider (tests, demos).
    pub fn with_provider(
        sessions: Sessions,
        settings: Settings,
        factory: ProviderFactory,
    ) -> Agent {
        let ext = crate::runtime::extensions::project::Extensions::new(
            &settings,
            sessions.root(),
            admitted(&settings, sessions.root()),
        );
        Agent {
            sessions,
            settings,
            factory,
            ext,
            openai: false,
            fixed_model: None,
            running: Running::default(),
            children: super::subagent::children::Children::default(),
        }
    }

    /// This agent working in `root` (a git worktree of the workspace): its turns' tools,
    /// sandbox, rewind records and stored workdir are there; the store, trust and
    /// extensions stay the workspace's.
    pub(crate) fn rooted_at(&self, root: &std::path::Path) -> Agent {
        let mut a = self.clone();
        a.sessions = self.sessions.rooted_at(root);
        a
    }

    /// This agent offering the front end's own `tools` too (never run here: a call of one
    /// waits for the front end, like a call waiting for approval).
    pub(crate) fn with_host_tools(
        mut self,
        tools: Vec<crate::runtime::provider::ToolDef>,
    ) -> Agent {
        self.ext = crate::runtime::extensions::project::Extensions::with_host_tools(
            &self.settings,
            self.sessions.root(),
            admitted(&self.settings, self.sessions.root()),
            tools,
        );
        self
    }

    /// This agent for a front end that brings its own (an editor over ACP): `servers` start
    /// beside the configured MCP servers (one manager, started the same way), `files`, when
    /// given, is where the file tools read and write, and `terminal`, when given, runs
    /// `run_command`'s sandboxed command. Fresh extensions; the same sessions, provider and
    /// running turns.
    pub(crate) fn with_front_end(
        &self,
        servers: Vec<crate::runtime::config::mcp::ServerConfig>,
        files: Option<Arc<dyn crate::runtime::tools::FileAccess>>,
        terminal: Option<Arc<dyn crate::runtime::tools::CommandTerminal>>,
    ) -> Agent {
        let mut agent = self.clone();
        agent.settings.mcp_servers.extend(servers);
        agent.ext = crate::runtime::extensions::project::Extensions::with_front_end(
            &agent.settings,
            agent.sessions.root(),
            admitted(&agent.settings, agent.sessions.root()),
            files,
            terminal,
        );
        agent
    }

    /// Whether sending works, or exactly which setting is missing.
    pub(crate) fn provider_status(&self) -> ProviderStatus {
        match self.fixed_model {
            Some(model) => ProviderStatus::Ready {
                base_url: "in process (no network)".into(),
                model: model.into(),
            },
            None => self.settings.provider_status(),
        }
    }

    /// The window the provider's server tells (llama.cpp's `/props`, `/v1/models`, an
    /// overflow's numbers; probed once per server and process, so the first call may wait a
    /// few seconds): `None` when it tells none or no provider can be made.
    pub(crate) fn told_window(&self) -> Option<u64> {
        (self.factory)().ok()?.context_window()
    }

    /// The settings.
    pub(crate) fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The model requests go to.
    pub(crate) fn model_name(&self) -> Option<String> {
        match self.provider_status() {
            ProviderStatus::Ready { model, .. } => Some(model),
            ProviderStatus::Missing(_) => None,
        }
    }

    /// What appends record. A model given for one run (`--model`) is not recorded as the
    /// session's: the session keeps its own. No provider is named here: appends made with
    /// one (the turn's, a compaction's) record its [`Provider::name`], the others keep the
    /// session's.
    pub(crate) fn meta(&self) -> AppendMeta {
        let model = if self.settings.model_from_flag {
            None
        } else {
            self.model_name()
        };
        AppendMeta {
            provider: None,
            model,
            workdir: Some(self.sessions.root().display().to_string()),
            profile: self.settings.profile.clone(),
        }
    }

    /// [`Agent::meta`] for appends made with `provider`: they name it.
    pub(crate) fn meta_for(&self, provider: &dyn Provider) -> AppendMeta {
        AppendMeta {
            provider: Some(provider.name().to_string()),
            ..self.meta()
        }
    }

    pub(crate) fn check_provider(&self) -> Result<(), StartError> {
        match self.provider_status() {
            ProviderStatus::Ready { .. } => Ok(()),
            ProviderStatus::Missing(m) => Err(StartError {
                code: StartCode::Config,
                message: m,
            }),
        }
    }

    pub(crate) fn lease(&self, id: &str) -> Result<Lease, StartError> {
        lease_of(&self.sessions, id)
    }
}

/// Takes session `id`'s lease: `busy` when another process runs it.
pub(crate) fn lease_of(sessions: &Sessions, id: &str) -> Result<Lease, StartError> {
    Lease::acquire(sessions.data_dir(), id).map_err(|e| match e {
        LeaseError::Busy { pid } => StartError {
            code: StartCode::Busy,
            message: match pid {
                Some(p) => format!("session {id} is running in pid {p}"),
                None => format!("session {id} is running in another process"),
            },
        },
        LeaseError::Io(m) => StartError {
            code: StartCode::Store,
            message: m,
        },
    })
}

/// A session opened for a run: the agent that runs it (the session's own model unless this
/// run was given one), its id and its lease.
pub(crate) struct Opened {
    pub agent: Agent,
    pub id: String,
    pub lease: Lease,
}

/// What the workspace at `root` lets its extensions use, by the trust record of the settings'
/// home.
fn admitted(
    settings: &Settings,
    root: &std::path::Path,
) -> Arc<dyn crate::runtime::extensions::project::Admitted> {
    let home = settings
        .path
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    crate::runtime::trust::admitted(&home, root)
}
