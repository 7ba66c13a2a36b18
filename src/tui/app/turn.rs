//! Events of a running agent turn. This is where the live conversation view plugs in: it
//! will show streamed text, tool calls and approval prompts. What is here is the part the
//! event loop needs now: whether a turn runs (frames are paced while it does), and that what
//! a turn stored is this process's own write, which the `data_version` poll does not report,
//! so the open session is refreshed here.

use super::App;
use crate::runtime::agent::TurnEvent;
use crate::tui::effect::Effect;

impl App {
    pub(super) fn turn_event(&mut self, event: TurnEvent) -> Vec<Effect> {
        match event {
            TurnEvent::Started { .. } => {
                self.turn_running = true;
                Vec::new()
            }
            // Stored messages grow the open transcript.
            TurnEvent::AssistantStored { .. } | TurnEvent::ToolResult { .. } => {
                self.refresh_detail()
            }
            TurnEvent::Finished { .. } => {
                self.turn_running = false;
                let mut effects = self.refresh_detail();
                // The session is the newest now.
                effects.extend(self.reload_top());
                effects
            }
            // A plan step's state changed in the store: the Plan tab shows it.
            TurnEvent::StepStarted { .. } | TurnEvent::StepFinished { .. } => self.refresh_detail(),
            // Shown by the live conversation view (not built yet).
            TurnEvent::TextDelta(_)
            | TurnEvent::ReasoningDelta(_)
            | TurnEvent::ToolCall { .. }
            | TurnEvent::ApprovalNeeded { .. }
            | TurnEvent::Warning { .. }
            | TurnEvent::PlanProposed { .. }
            | TurnEvent::Step { .. } => Vec::new(),
        }
    }
}
