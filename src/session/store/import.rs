//! Import support: a whole session written as given, and assets attached with their metadata.

use rusqlite::params;

use super::imported::write_import_columns;
use super::messages::insert_message;
use super::steps::{progress_as_updates, refresh_plan_counts, write_step_update};
use super::{Store, session_exists, to_json_opt, validate_id};
use crate::session::error::{Result, StoreError};
use crate::session::model::*;

impl Store {
    /// Writes a whole session as given (header values, messages with their seqs and times,
    /// step progress) in one transaction. Assets are written first by the caller through
    /// [`Store::save_asset`]-like paths; see `session::file`.
    pub(crate) fn insert_full(&self, s: &Session, summary_extra: &SessionSummary) -> Result<()> {
        let h = &s.header;
        validate_id("session", &h.id)?;
        if let Some(p) = &h.plan {
            p.validate()?;
        }
        self.write(|tx| {
            if session_exists(tx, &h.id)? {
                return Err(StoreError::AlreadyExists(h.id.clone()));
            }
            tx.execute(
                "INSERT INTO sessions (id, title, first_prompt, created_at_ms, updated_at_ms, provider, model, workdir,
                    status, parent_id, fork_seq, conversation_key, task_state_json, todos_json, skills_json,
                    plan_json, ledger_json, token_input_total, token_output_total, last_seq, message_count)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)",
                params![
                    h.id,
                    h.title,
                    summary_extra.first_prompt,
                    h.created_at_ms,
                    h.updated_at_ms,
                    h.provider,
                    h.model,
                    h.workdir,
                    h.status.as_str(),
                    h.parent_id,
                    h.fork_seq,
                    h.conversation_key,
                    to_json_opt(h.task_state.as_ref()),
                    to_json_opt(h.todos.as_ref()),
                    to_json_opt(h.skills.as_ref()),
                    to_json_opt(h.plan.as_ref()),
                    to_json_opt(h.ledger.as_ref()),
                    h.token_input_total as i64,
                    h.token_output_total as i64,
                    h.last_seq,
                    s.messages.len() as i64
                ],
            )?;
            for m in &s.messages {
                let nm = NewMessage {
                    role: Some(m.role),
                    parts: m.parts.clone(),
                    tool_calls: m.tool_calls.clone(),
                    tool_call_id: m.tool_call_id.clone(),
                    is_error: m.is_error,
                    tool_metadata: m.tool_metadata.clone(),
                    usage: m.usage,
                    created_at_ms: Some(m.created_at_ms),
                    extra: m.extra.clone(),
                };
                insert_message(tx, &h.id, m.seq, &nm, m.created_at_ms)?;
            }
            write_import_columns(tx, h)?;
            for (step, update) in progress_as_updates(&s.plan_progress) {
                write_step_update(tx, &h.id, &step, &update)?;
            }
            refresh_plan_counts(tx, &h.id)?;
            Ok(())
        })
    }

    /// Records the metadata of asset files already written for an imported session.
    pub(crate) fn attach_imported_asset(&self, meta: &AssetMeta, data: &[u8]) -> Result<AssetMeta> {
        self.save_asset_at(
            &meta.session_id,
            Some(&meta.id),
            &meta.mime_type,
            data,
            meta.created_at_ms,
        )
    }
}
