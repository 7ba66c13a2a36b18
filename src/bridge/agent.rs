//! The bridge's turns run by the agent runtime.

use std::sync::Arc;
use std::sync::mpsc::Receiver;

use crate::runtime::agent::{FinishReason, TurnCommand, TurnEvent};
use crate::session::Usage;

use super::{TurnRunner, TurnSpec};

/// The runner `neocode bridge` uses.
pub fn agent_runner() -> Arc<dyn TurnRunner> {
    Arc::new(AgentRunner)
}

struct AgentRunner;

impl TurnRunner for AgentRunner {
    fn run(&self, _spec: TurnSpec, emit: &mut dyn FnMut(TurnEvent), _: Receiver<TurnCommand>) {
        // PROVISIONAL until the agent core lands on this branch: say so plainly.
        emit(TurnEvent::Finished {
            reason: FinishReason::Failed {
                code: "unavailable".into(),
                message: "this build of neocode has no agent runtime yet".into(),
            },
            usage: Usage::default(),
        });
    }
}
