//! Forking: a new session holding a prefix of another, its assets copied.

use rusqlite::params;

use super::assets::{asset_relative_path, insert_asset_row};
use super::core::{Store, opt_json, row_exists, to_json_opt};
use super::steps::refresh_plan_counts;
use crate::session::error::{Result, StoreError};
use crate::session::model::*;

impl Store {
    /// Forks a session at `at_seq` (default: its last message): a new session whose parent is
    /// the source, with the messages up to that seq and their assets copied, in one transaction.
    pub fn fork(&self, session_id: &str, at_seq: Option<i64>) -> Result<SessionHeader> {
        self.fork_as(session_id, at_seq, &uuid::Uuid::new_v4().to_string())
    }

    /// [`Store::fork`] giving the new session the id `new_id` (a rewind journals it before
    /// forking, so a start that finishes the rewind knows whether the fork was made).
    pub(crate) fn fork_as(
        &self,
        session_id: &str,
        at_seq: Option<i64>,
        new_id: &str,
    ) -> Result<SessionHeader> {
        super::core::validate_id("session", new_id)?;
        let src = self.load_header(session_id)?;
        let at = at_seq.unwrap_or(src.last_seq);
        let exists_at = at == 0
            || self.with_conn(|c| {
                row_exists(
                    c,
                    "SELECT 1 FROM messages WHERE session_id = ?1 AND seq = ?2",
                    params![session_id, at],
                )
            })?;
        if at < 0 || !exists_at {
            return Err(StoreError::NoSuchSeq {
                session_id: session_id.to_string(),
                seq: at,
                last: src.last_seq,
            });
        }
        // Asset files first (outside the transaction); removed again if the transaction fails.
        let assets = self.assets_referenced(session_id, at)?;
        let new_dir = self.inner.paths.assets().join(new_id);
        let copy = || -> Result<Vec<AssetMeta>> {
            let mut out = Vec::new();
            for a in &assets {
                let src_path = self.checked_asset_path(a)?;
                crate::session::workspace::create_private_dir(&new_dir)?;
                let rel = asset_relative_path(new_id, &a.id);
                let dst = self.inner.paths.dir.join(&rel);
                if std::fs::hard_link(&src_path, &dst).is_err() {
                    std::fs::copy(&src_path, &dst).map_err(|e| StoreError::io(&dst, e))?;
                }
                out.push(AssetMeta {
                    session_id: new_id.to_string(),
                    relative_path: rel,
                    ..a.clone()
                });
            }
            Ok(out)
        };
        let result = copy().and_then(|copied| {
            let now = self.now();
            self.write(|tx| {
                tx.execute(
                    "INSERT INTO sessions (id, title, first_prompt, created_at_ms, updated_at_ms, provider, model,
                        workdir, status, parent_id, fork_seq, conversation_key, task_state_json, todos_json,
                        skills_json, plan_json, ledger_json, token_input_total, token_output_total, last_seq,
                        message_count, asset_count, branch, profile)
                     SELECT ?2, CASE WHEN title = '' THEN '' ELSE 'Fork of ' || title END, first_prompt, ?3, ?3,
                        provider, model, workdir, 'paused', id, ?4, NULL, task_state_json, todos_json,
                        skills_json, plan_json, ledger_json, 0, 0, ?4, 0, ?5, branch, profile
                     FROM sessions WHERE id = ?1",
                    params![session_id, new_id, now, at, copied.len() as i64],
                )?;
                // The copies point at the source's search-index rows: no re-indexing.
                tx.execute(
                    "INSERT INTO messages (session_id, seq, role, parts_json, tool_calls_json, tool_call_id, is_error,
                        tool_metadata_json, created_at_ms, input_tokens, output_tokens, fts_id,
                        cached_input_tokens, cache_write_tokens, reasoning_tokens, injected, metadata_json)
                     SELECT ?2, seq, role, parts_json, tool_calls_json, tool_call_id, is_error, tool_metadata_json,
                        created_at_ms, input_tokens, output_tokens, fts_id,
                        cached_input_tokens, cache_write_tokens, reasoning_tokens, injected, metadata_json
                     FROM messages WHERE session_id = ?1 AND seq <= ?3 ORDER BY seq",
                    params![session_id, new_id, at],
                )?;
                // A fork's lifetime usage starts at 0 (the copied messages keep their per-turn
                // figures; the parent's spend stays the parent's): token totals 0, and the
                // copied ledger keeps its limits and "always" answers but not its usage.
                tx.execute(
                    "UPDATE sessions SET message_count =
                        (SELECT count(*) FROM messages WHERE session_id = ?1)
                     WHERE id = ?1",
                    [new_id],
                )?;
                drop_later_task_state(tx, new_id, at)?;
                reset_ledger(tx, new_id)?;
                tx.execute(
                    "INSERT INTO step_updates (session_id, step_id, kind, payload_json, write_seq)
                     SELECT ?2, step_id, kind, payload_json, write_seq FROM step_updates WHERE session_id = ?1",
                    params![session_id, new_id],
                )?;
                refresh_plan_counts(tx, new_id)?;
                super::files::copy_changes(tx, session_id, new_id, at)?;
                for a in &copied {
                    insert_asset_row(tx, a)?;
                }
                Ok(())
            })
        });
        if let Err(e) = result {
            let _ = std::fs::remove_dir_all(&new_dir);
            return Err(e);
        }
        self.load_header(new_id)
    }
}

/// The task state a compaction after the fork point (`at`) wrote summarises messages the fork
/// does not have: the fork starts without it (the summaries it copied still stand in its
/// transcript).
fn drop_later_task_state(tx: &rusqlite::Transaction<'_>, new_id: &str, at: i64) -> Result<()> {
    let task: Option<String> = tx.query_row(
        "SELECT task_state_json FROM sessions WHERE id = ?1",
        [new_id],
        |r| r.get(0),
    )?;
    let later = opt_json::<serde_json::Value>(new_id, "task_state_json", task)?
        .and_then(|t| t.get(TASK_SUMMARY_SEQ).and_then(serde_json::Value::as_i64))
        .is_some_and(|s| s > at);
    if later {
        tx.execute(
            "UPDATE sessions SET task_state_json = NULL WHERE id = ?1",
            [new_id],
        )?;
    }
    Ok(())
}

/// The copied ledger keeps its limits and "always" answers but not its usage, stop or cancel.
fn reset_ledger(tx: &rusqlite::Transaction<'_>, new_id: &str) -> Result<()> {
    let ledger: Option<String> = tx.query_row(
        "SELECT ledger_json FROM sessions WHERE id = ?1",
        [new_id],
        |r| r.get(0),
    )?;
    if let Some(mut l) = opt_json::<RuntimeLedger>(new_id, "ledger_json", ledger)? {
        l.usage = RuntimeUsage::default();
        l.termination = None;
        l.cancelled_at_ms = None;
        tx.execute(
            "UPDATE sessions SET ledger_json = ?2 WHERE id = ?1",
            params![new_id, to_json_opt(Some(&l))],
        )?;
    }
    Ok(())
}
