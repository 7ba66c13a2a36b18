//! Compaction: when the window is full before a model call, or the server says it overflowed.

use super::{Flow, Turn, store_failed};
use crate::runtime::agent::compact;
use crate::runtime::agent::events::{FinishReason, TurnEvent};
use crate::session::{Role, Status};

impl Turn {
    /// Compacts the model's context when the last prompt filled the window past the
    /// threshold; the loaded context is read again afterwards.
    pub(super) fn compact_if_full(&mut self, session: &mut crate::session::Session) -> Flow {
        // A reply from before the latest compaction tells of the context before it.
        let last_prompt = session
            .messages
            .iter()
            .rev()
            .take_while(|m| !m.is_compaction())
            .find(|m| m.role == Role::Assistant)
            // Cached prompt tokens are counted apart but fill the window all the same.
            .map_or(0, compact::prompt_tokens);
        let threshold =
            (self.ctx.settings.context_window as f64 * self.ctx.settings.compact_at) as u64;
        if last_prompt >= threshold && session.messages.len() > 2 {
            let message = format!(
                "the last prompt used {last_prompt} of {} context tokens; compacting what the model is sent (every message stays stored)",
                self.ctx.settings.context_window
            );
            self.compact_now(session, message)?;
        }
        Ok(())
    }

    /// Compacts the model's context now (telling why); true when it was. The loaded context
    /// is read again either way.
    pub(super) fn compact_now(
        &mut self,
        session: &mut crate::session::Session,
        message: String,
    ) -> Result<bool, FinishReason> {
        self.ctx.gate.pre_compact();
        self.emit(TurnEvent::Compacting { message });
        let done = match compact::compact_with(
            &self.io.sessions,
            &self.ctx.session_id,
            self.io.provider.as_mut(),
            &self.io.cancel,
            &self.ctx.meta,
            self.ctx.settings.context_window,
        ) {
            Ok(c) => {
                // Lifetime usage stays in the ledger; only context totals reset.
                self.state.ledger.usage.input_tokens += c.usage.input_tokens;
                self.state.ledger.usage.output_tokens += c.usage.output_tokens;
                if let Some(b) = &self.state.budget {
                    b.add_tokens(c.usage);
                }
                self.state.usage.input_tokens += c.usage.input_tokens;
                self.state.usage.output_tokens += c.usage.output_tokens;
                self.set_status(Status::Running)?;
                true
            }
            Err(e) => {
                self.emit(TurnEvent::CompactionFailed {
                    message: format!("compaction failed, nothing changed: {e}"),
                });
                false
            }
        };
        // The model's context changed: read it again.
        *session = self
            .io
            .sessions
            .load_context(&self.ctx.session_id)
            .map_err(store_failed)?;
        Ok(done)
    }
}
