//! The agent's append points (seed 003): messages and the header state that goes with them
//! (status, runtime ledger, title, token totals) commit together, so a crash never leaves a
//! stored reply without the usage it consumed, or a budget without its last spend.

use super::core::Store;
use crate::session::error::Result;
use crate::session::model::{AppendMeta, Change, NewMessage, StateUpdate};

impl Store {
    /// Appends `messages` and applies `update` in one transaction. Returns the seqs assigned.
    /// A long message's search indexing follows in a second transaction (see
    /// `messages::DEFER_INDEX_BYTES`); every search catches it up first.
    pub fn append_with_state(
        &self,
        session_id: &str,
        messages: &[NewMessage],
        meta: &AppendMeta,
        update: &StateUpdate,
    ) -> Result<Vec<i64>> {
        if let Change::Set(plan) = &update.plan {
            plan.validate()?;
        }
        let appended = self.write(|tx| {
            let appended = self.append_in(tx, session_id, messages, meta)?;
            self.update_in(tx, session_id, update)?;
            Ok(appended)
        })?;
        Ok(self.after_append(appended))
    }
}
