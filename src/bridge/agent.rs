//! The bridge's turns, run by the agent runtime (the same [`Agent`] the TUI uses).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use crate::runtime::agent::{
    Agent, FailCode, FinishReason, Target, TurnCommand, TurnEvent, TurnRequest,
};
use crate::runtime::config::{Overrides, ProviderStatus, Settings};
use crate::session::Usage;

use super::{TurnRunner, TurnSpec};

/// The runner `neocode bridge` uses: settings from `home` (file, environment), with the
/// request's model override.
pub fn agent_runner(home: PathBuf) -> Arc<dyn TurnRunner> {
    Arc::new(AgentRunner { home })
}

struct AgentRunner {
    home: PathBuf,
}

impl AgentRunner {
    fn settings(&self, model: Option<&str>) -> Result<Settings, String> {
        Settings::load(
            &self.home,
            &Overrides {
                model: model.map(str::to_string),
                ..Overrides::default()
            },
        )
        .map_err(String::from)
    }
}

impl TurnRunner for AgentRunner {
    fn check(&self, model: Option<&str>) -> Result<(), (&'static str, String)> {
        match self.settings(model).map(|s| s.provider_status()) {
            Ok(ProviderStatus::Ready { .. }) => Ok(()),
            Ok(ProviderStatus::Missing(m)) | Err(m) => Err(("config", m)),
        }
    }

    fn run(
        &self,
        spec: TurnSpec,
        emit: &mut dyn FnMut(TurnEvent),
        commands: Receiver<TurnCommand>,
    ) {
        let failed = |code: FailCode, message: String| TurnEvent::Finished {
            reason: FinishReason::Failed { code, message },
            usage: Usage::default(),
        };
        let settings = match self.settings(spec.model.as_deref()) {
            Ok(s) => s,
            Err(m) => return emit(failed(FailCode::Config, m)),
        };
        let mut agent = Agent::new(spec.sessions.clone(), settings);
        if !spec.host_tools.is_empty() {
            agent = agent.with_host_tools(spec.host_tools.clone());
        }
        let (tx, events) = channel();
        let handle = match agent.start(
            Target::Resume(spec.session_id.clone()),
            TurnRequest {
                prompt: spec.prompt.clone(),
                images: Vec::new(),
                limits: spec.limits.unwrap_or_default(),
                approval: None,
            },
            tx,
        ) {
            Ok(h) => h,
            Err(e) => return emit(failed(e.code.into(), e.message)),
        };
        let mut finished = false;
        loop {
            // Approvals and cancel from the bridge's input reach the turn (a cancel raises
            // its flag at once, on this side).
            while let Ok(c) = commands.try_recv() {
                let _ = handle.commands.send(c);
            }
            match events.recv_timeout(Duration::from_millis(10)) {
                Ok(ev) => {
                    finished = matches!(ev, TurnEvent::Finished { .. });
                    emit(ev);
                    if finished {
                        break;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        handle.join();
        if !finished {
            emit(failed(
                FailCode::Internal,
                "the turn ended without finishing".into(),
            ));
        }
    }
}
