//! Plan step updates: recorded per (step, kind), merged into progress, counted on the header.

use rusqlite::{OptionalExtension, Transaction, params};

use super::core::{Store, from_json};
use super::rows::{SUMMARY_COLS, load_progress, summary_from_row};
use crate::session::error::{Result, StoreError};
use crate::session::list::*;
use crate::session::plan::{Plan, PlanCounts, PlanProgress, StepUpdate};

/// The conversation of one attempt at a plan step: a child session of the plan run whose
/// first message names the step (`{"plan_step": {"step_id": ...}}` in its metadata).
#[derive(Debug, Clone, PartialEq)]
pub struct StepConversation {
    /// The step it ran.
    pub step_id: String,
    /// The child session.
    pub session: SessionSummary,
}

impl Store {
    /// Every step conversation of a plan run, oldest attempt first.
    pub(crate) fn step_conversations(&self, session_id: &str) -> Result<Vec<StepConversation>> {
        self.with_conn(|c| {
            let mut st = c.prepare_cached(&format!(
                "SELECT {SUMMARY_COLS},
                    (SELECT json_extract(m.tool_metadata_json, '$.plan_step.step_id')
                       FROM messages m WHERE m.session_id = sessions.id AND m.seq = 1)
                 FROM sessions WHERE parent_id = ?1 AND fork_seq IS NULL
                 ORDER BY created_at_ms, rowid"
            ))?;
            let rows = st.query_map([session_id], |r| {
                // The step id follows the summary columns.
                let step: Option<String> = r.get(SUMMARY_COLS.split(',').count())?;
                Ok(summary_from_row(r)?.map(|s| (step, s)))
            })?;
            let mut out = Vec::new();
            for row in rows {
                if let (Some(step_id), session) = row?? {
                    out.push(StepConversation { step_id, session });
                }
            }
            Ok(out)
        })
    }

    /// Merged step progress of a session's plan.
    pub fn load_plan_progress(&self, session_id: &str) -> Result<PlanProgress> {
        self.with_conn(|c| load_progress(c, session_id))
    }

    /// Appends one step update and refreshes the plan counts on the header.
    pub fn record_step_update(
        &self,
        session_id: &str,
        step_id: &str,
        update: &StepUpdate,
    ) -> Result<()> {
        self.write(|tx| {
            self.require(tx, session_id)?;
            write_step_update(tx, session_id, step_id, update)?;
            refresh_plan_counts(tx, session_id)?;
            tx.execute(
                "UPDATE sessions SET updated_at_ms = max(updated_at_ms, ?2) WHERE id = ?1",
                params![session_id, self.now()],
            )?;
            Ok(())
        })
    }
}

/// Step updates that merge back to `p` exactly.
pub(crate) fn progress_as_updates(p: &PlanProgress) -> Vec<(String, StepUpdate)> {
    use crate::session::plan::StepStatus as S;
    let mut out = Vec::new();
    for (step, status) in &p.statuses {
        // A result or a failure record (never both: each clears the other) is replayed first;
        // it implies completed or failed. A different final status follows it: a step can be
        // marked failed after its result, or completed after a failure, and keep the record.
        let implied = if let Some(r) = p.results.get(step) {
            out.push((step.clone(), StepUpdate::Result { result: r.clone() }));
            Some(S::Completed)
        } else if let Some(f) = p.failures.get(step) {
            out.push((step.clone(), StepUpdate::Error { error: f.clone() }));
            Some(S::Failed)
        } else {
            None
        };
        if implied != Some(*status) {
            out.push((step.clone(), StepUpdate::Status { status: *status }));
        }
    }
    out
}

pub(super) fn write_step_update(
    tx: &Transaction<'_>,
    session_id: &str,
    step_id: &str,
    u: &StepUpdate,
) -> Result<()> {
    let payload = serde_json::to_string(u).map_err(|e| StoreError::BadColumn {
        session_id: session_id.to_string(),
        column: "payload_json",
        detail: e.to_string(),
    })?;
    // Only the latest row per (step, kind) is kept, so a later non-terminal status must not
    // replace a terminal status row: merging the kept rows would reopen the step, where
    // merging the full history keeps it terminal (the seed's first rule).
    if let StepUpdate::Status { status } = u
        && !status.is_terminal()
    {
        let stored: Option<String> = tx
            .query_row(
                "SELECT payload_json FROM step_updates
                 WHERE session_id = ?1 AND step_id = ?2 AND kind = 'status'",
                params![session_id, step_id],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(stored) = stored {
            let stored: StepUpdate = from_json(session_id, "step_updates.payload_json", &stored)?;
            if matches!(stored, StepUpdate::Status { status } if status.is_terminal()) {
                return Ok(());
            }
        }
    }
    // Write order is a per-session counter, so same-millisecond writes still merge in order.
    tx.execute(
        "INSERT INTO step_updates (session_id, step_id, kind, payload_json, write_seq)
         VALUES (?1, ?2, ?3, ?4,
                 (SELECT coalesce(max(write_seq), 0) + 1 FROM step_updates WHERE session_id = ?1))
         ON CONFLICT(session_id, step_id, kind) DO UPDATE SET
            payload_json = excluded.payload_json, write_seq = excluded.write_seq",
        params![session_id, step_id, u.kind(), payload],
    )?;
    Ok(())
}

pub(super) fn refresh_plan_counts(tx: &Transaction<'_>, session_id: &str) -> Result<()> {
    let plan_json: Option<String> = tx.query_row(
        "SELECT plan_json FROM sessions WHERE id = ?1",
        [session_id],
        |r| r.get(0),
    )?;
    let plan: Option<Plan> = match plan_json {
        Some(j) => Some(from_json(session_id, "plan_json", &j)?),
        None => None,
    };
    let counts = match plan {
        Some(plan) => load_progress(tx, session_id)?.counts(&plan),
        None => PlanCounts::default(),
    };
    tx.execute(
        "UPDATE sessions SET plan_total = ?2, plan_done = ?3, plan_failed = ?4 WHERE id = ?1",
        params![
            session_id,
            counts.total as i64,
            counts.done as i64,
            counts.failed as i64
        ],
    )?;
    Ok(())
}
