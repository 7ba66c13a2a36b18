//! The bridge's turns, run by the agent runtime (the same [`Agent`] the TUI uses).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::Receiver;

use crate::runtime::agent::{Agent, FinishReason, Target, TurnCommand, TurnEvent, TurnRequest};
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
        let failed = |code: &str, message: String| TurnEvent::Finished {
            reason: FinishReason::Failed {
                code: code.to_string(),
                message,
            },
            usage: Usage::default(),
        };
        let settings = match self.settings(spec.model.as_deref()) {
            Ok(s) => s,
            Err(m) => return emit(failed("config", m)),
        };
        let agent = Agent::new(spec.sessions.clone(), settings);
        let handle = match agent.start(
            Target::Resume(spec.session_id.clone()),
            TurnRequest {
                prompt: spec.prompt.clone(),
                limits: spec.limits.clone().unwrap_or_default(),
                approval: None,
            },
        ) {
            Ok(h) => h,
            Err(e) => return emit(failed(e.code, e.message)),
        };
        // Approvals and cancel from the bridge's input reach the turn; the relay ends when
        // the bridge drops its sender (the turn finished).
        let to_turn = handle.commands.clone();
        std::thread::spawn(move || {
            for c in commands {
                if to_turn.send(c).is_err() {
                    return;
                }
            }
        });
        let mut finished = false;
        for ev in handle.events.iter() {
            finished = matches!(ev, TurnEvent::Finished { .. });
            emit(ev);
            if finished {
                break;
            }
        }
        handle.join();
        if !finished {
            emit(failed(
                "internal",
                "the turn ended without finishing".into(),
            ));
        }
    }
}
