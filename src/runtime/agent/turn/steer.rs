//! Queue/steer delivery: messages queued while the turn runs, delivered at the tool boundary.
//! A queued message is marked delivered by the very append that stores it (one transaction),
//! so a kill at any point leaves it either still queued or stored, never lost.

use super::{Turn, store_failed, title_from};
use crate::runtime::agent::events::{FinishReason, TurnEvent, WarningCode};
use crate::session::{NewMessage, Role, StoreError};
use serde_json::{Value, json};

/// Test hook (`tests/suite/tui/tui_queue.rs`): `NEOCODE_TEST_QUEUE_PAUSE_MS` sleeps between
/// reading a queued message and the append that stores it, so a kill lands in between.
pub(super) fn test_pause() {
    if let Some(ms) = std::env::var("NEOCODE_TEST_QUEUE_PAUSE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

/// The queued message a prompt's metadata says it delivers (`{"queued": {"id": N}}`).
pub(super) fn queued_id(meta: Option<&Value>) -> Option<i64> {
    meta?.get("queued")?.get("id")?.as_i64()
}

impl Turn {
    /// Messages queued to steer this turn (Alt-Enter in the TUI) go in at the tool boundary
    /// (or after the model's answer, when they came while it was written): stored as user
    /// messages, so the next model call reads them. One removed meanwhile is skipped. How
    /// many went in.
    pub(super) fn deliver_steer(&mut self) -> Result<usize, FinishReason> {
        let steer = self
            .io
            .sessions
            .steer_waiting(&self.ctx.session_id)
            .map_err(store_failed)?;
        let mut delivered = 0;
        for q in steer {
            test_pause();
            let mut msg = NewMessage::text(Role::User, q.text.clone());
            msg.tool_metadata = Some(json!({"queued": {"id": q.id, "steer": true}}));
            let update = crate::session::StateUpdate {
                delivers: vec![q.id],
                ..self.update(None)
            };
            match self.try_append(msg, update, &[]) {
                Ok(_) => {}
                Err(StoreError::NotQueued(_)) => continue,
                Err(e) => return Err(store_failed(e)),
            }
            delivered += 1;
            self.emit(TurnEvent::Warning {
                code: WarningCode::Steered,
                message: format!("Steering message delivered: {}", title_from(&q.text)),
            });
        }
        Ok(delivered)
    }
}
