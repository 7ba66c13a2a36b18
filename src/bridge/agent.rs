//! The bridge's turns, run by the agent runtime (the same [`Agent`] the TUI uses), through the
//! one port every front end submits to ([`Agent::submit`]).

use std::path::PathBuf;
use std::sync::Arc;

use crate::runtime::agent::{Agent, Op, OpError, OpOutcome, Sink, Started, Target, TurnRequest};
use crate::runtime::config::{Overrides, ProviderStatus, Settings};

use super::error::{BridgeError, ErrorCode};
use super::port::{PreparedTurn, TurnRunner, TurnSpec};

/// The runner `neocode bridge` uses: settings from `home` (file, environment), with the
/// request's model override, read once per chat.
pub(crate) fn agent_runner(home: PathBuf) -> Arc<dyn TurnRunner> {
    Arc::new(AgentRunner { home })
}

struct AgentRunner {
    home: PathBuf,
}

impl TurnRunner for AgentRunner {
    fn prepare(&self, model: Option<&str>) -> Result<Box<dyn PreparedTurn>, BridgeError> {
        let settings = Settings::load(
            &self.home,
            &Overrides {
                model: model.map(str::to_string),
                ..Overrides::default()
            },
        )
        .map_err(|e| BridgeError::new(ErrorCode::Config, e.to_string()))?;
        match settings.provider_status() {
            ProviderStatus::Ready { .. } => Ok(Box::new(Ready { settings })),
            ProviderStatus::Missing(m) => Err(BridgeError::new(ErrorCode::Config, m)),
        }
    }
}

/// A chat's settings, read once.
struct Ready {
    settings: Settings,
}

impl PreparedTurn for Ready {
    fn start(self: Box<Self>, spec: TurnSpec, sink: Sink) -> Result<Started, BridgeError> {
        let mut agent = Agent::new(spec.sessions, self.settings);
        if !spec.host_tools.is_empty() {
            agent = agent.with_host_tools(spec.host_tools);
        }
        let req = TurnRequest {
            prompt: spec.prompt,
            limits: spec.limits.unwrap_or_default(),
            adopt: spec.adopt,
            results: spec.results,
            ..TurnRequest::default()
        };
        match agent.submit(Target::Resume(spec.session_id), Op::Turn(req), sink) {
            Ok(OpOutcome::Started(s)) => Ok(s),
            Ok(_) => Err(BridgeError::new(
                ErrorCode::Internal,
                "the agent started no turn",
            )),
            Err(OpError::Start(e)) => Err(BridgeError::from(&e)),
            Err(e) => Err(BridgeError::new(
                ErrorCode::Storage,
                crate::sanitize::line(&e.to_string()).into_owned(),
            )),
        }
    }
}
