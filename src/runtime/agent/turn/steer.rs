//! Queue/steer delivery: messages queued while the turn runs, delivered at the tool boundary.

use serde_json::json;

use super::{Flow, Turn, store_failed, title_from};
use crate::runtime::agent::{TurnEvent, WarningCode};
use crate::session::{NewMessage, Role};

impl Turn {
    /// Messages queued to steer this turn (Alt-Enter in the TUI) go in at the tool boundary:
    /// stored as user messages, so the next model call reads them.
    pub(super) fn deliver_steer(&mut self) -> Flow {
        let steer = self
            .sessions
            .take_steer(&self.session_id)
            .map_err(store_failed)?;
        for q in steer {
            let mut msg = NewMessage::text(Role::User, q.text.clone());
            msg.tool_metadata = Some(json!({"queued": {"id": q.id, "steer": true}}));
            self.append(msg, self.state(None))?;
            self.emit(TurnEvent::Warning {
                code: WarningCode::Steered,
                message: format!("Steering message delivered: {}", title_from(&q.text)),
            });
        }
        Ok(())
    }
}
