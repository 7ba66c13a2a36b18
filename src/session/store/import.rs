//! Import support: a whole session written as given, assets attached with their metadata, and
//! bulk imports of other agents' history (many sessions per transaction).

use std::collections::HashSet;
use std::path::PathBuf;

use rusqlite::{Connection, Transaction, TransactionBehavior, params};

use super::assets::{asset_relative_path, insert_asset_row};
use super::core::{Store, session_exists, to_json_opt, validate_id};
use super::imported::{find_imported_in, write_import_columns};
use super::messages::insert_owned;
use super::rows::DELETE_SESSION_FTS;
use super::steps::{progress_as_updates, refresh_plan_counts, write_step_update};
use crate::session::error::{Result, StoreError};
use crate::session::list::*;
use crate::session::model::*;

/// A session file checked and turned into what the store writes (`session::file::prepare`
/// builds it): the session, its summary columns, and its assets decoded (with their
/// metadata). Nothing is written.
pub(crate) struct Prepared {
    pub session: Session,
    pub summary: SessionSummary,
    pub assets: Vec<(AssetMeta, Vec<u8>)>,
}

/// WAL pages written before SQLite checkpoints on its own during a bulk import: the usual
/// 1,000 pages (4 MB) made every session or two of history pay a checkpoint and its fsync;
/// 64 MB still keeps the WAL file bounded however large the import.
const BULK_AUTOCHECKPOINT_PAGES: i64 = 16_384;

impl Store {
    /// Writes a whole session as given (header values, messages with their seqs and times,
    /// step progress) in one transaction. Assets are written first by the caller through
    /// [`Store::save_asset`]-like paths; see `session::file`.
    pub(crate) fn insert_full(&self, s: Session, summary_extra: &SessionSummary) -> Result<()> {
        check_header(&s.header)?;
        self.write(|tx| insert_full_in(tx, s, summary_extra))
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

    /// Runs a bulk import on this process's writing connection: `f` writes sessions through
    /// the [`BulkImport`] and commits when it likes; what it left uncommitted is committed
    /// when `f` succeeds and rolled back when it fails. Meanwhile SQLite checkpoints the WAL
    /// less often (restored after), and the WAL is checkpointed once at the end. The page
    /// cache stays as it is: 64 MiB bought no time in the benchmark and tripled peak memory.
    pub(crate) fn bulk_import<T>(
        &self,
        f: impl FnOnce(&mut BulkImport<'_>) -> Result<T>,
    ) -> Result<T> {
        self.refuse_if_damaged()?;
        self.with_writer(|conn| {
            let old_ckpt: i64 =
                conn.pragma_query_value(None, "wal_autocheckpoint", |r| r.get(0))?;
            conn.pragma_update(None, "wal_autocheckpoint", BULK_AUTOCHECKPOINT_PAGES)?;
            let out = {
                let mut bulk = BulkImport {
                    store: self,
                    conn,
                    tx: None,
                    pending: Vec::new(),
                    written: Vec::new(),
                    pending_prune: Vec::new(),
                    prune: Vec::new(),
                    in_file: false,
                };
                match f(&mut bulk) {
                    Ok(v) => bulk.commit().map(|()| v),
                    Err(e) => {
                        bulk.rollback();
                        Err(e)
                    }
                }
            };
            // Restoring is best effort: the connection stays usable either way.
            let _ = conn.pragma_update(None, "wal_autocheckpoint", old_ckpt);
            // One checkpoint for the whole import; TRUNCATE also gives back the space of a WAL
            // that grew. A reader in another process can leave it partial, which is harmless.
            let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
            out
        })
    }
}

/// What a bulk import did with one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BulkOutcome {
    Imported(String),
    Updated(String),
    Unchanged(String),
    Refused(String, String),
}

/// An import in progress on the writing connection. Sessions are grouped by source file (a
/// file is written whole or not at all, under a savepoint) and files into transactions that
/// the caller commits: a crash loses only what was not committed, and only whole files.
pub(crate) struct BulkImport<'c> {
    store: &'c Store,
    conn: &'c Connection,
    tx: Option<Transaction<'c>>,
    /// Asset files the open file created, removed if it is rolled back.
    pending: Vec<PathBuf>,
    /// Asset files the open transaction created, removed if it is rolled back.
    written: Vec<PathBuf>,
    /// Sessions the open file updated, and the asset files they keep.
    pending_prune: Vec<(String, HashSet<PathBuf>)>,
    /// Updated sessions and the asset files they keep: the others go after the commit.
    prune: Vec<(String, HashSet<PathBuf>)>,
    in_file: bool,
}

impl BulkImport<'_> {
    /// Starts the sessions of one source file (and a transaction, if none is open).
    pub(crate) fn begin_file(&mut self) -> Result<()> {
        self.end_file(true)?;
        if self.tx.is_none() {
            self.tx = Some(Transaction::new_unchecked(
                self.conn,
                TransactionBehavior::Immediate,
            )?);
        }
        self.conn.execute_batch("SAVEPOINT import_file")?;
        self.in_file = true;
        Ok(())
    }

    /// Ends the file started by [`BulkImport::begin_file`]: kept when `keep`, otherwise
    /// everything written for it is undone.
    pub(crate) fn end_file(&mut self, keep: bool) -> Result<()> {
        if !std::mem::take(&mut self.in_file) {
            return Ok(());
        }
        if keep {
            self.conn.execute_batch("RELEASE import_file")?;
            self.written.append(&mut self.pending);
            for (id, kept) in self.pending_prune.drain(..) {
                // The last write of a session decides which of its files stay.
                self.prune.retain(|(p, _)| *p != id);
                self.prune.push((id, kept));
            }
        } else {
            self.conn
                .execute_batch("ROLLBACK TO import_file; RELEASE import_file")?;
            for p in self.pending.drain(..) {
                let _ = std::fs::remove_file(p);
            }
            self.pending_prune.clear();
        }
        Ok(())
    }

    /// Makes everything written so far durable and frees the write lock until the next file.
    pub(crate) fn commit(&mut self) -> Result<()> {
        self.end_file(true)?;
        let Some(tx) = self.tx.take() else {
            return Ok(());
        };
        if let Err(e) = tx.commit() {
            self.drop_written();
            return Err(e.into());
        }
        self.written.clear();
        for (id, keep) in self.prune.drain(..) {
            let dir = self.store.inner.paths.assets().join(&id);
            let Ok(rd) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in rd.flatten() {
                if !keep.contains(&e.path()) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        Ok(())
    }

    fn rollback(&mut self) {
        self.in_file = false;
        if let Some(tx) = self.tx.take() {
            let _ = tx.rollback();
        }
        self.written.append(&mut self.pending);
        self.pending_prune.clear();
        self.drop_written();
    }

    fn drop_written(&mut self) {
        for p in self.written.drain(..) {
            let _ = std::fs::remove_file(p);
        }
        self.prune.clear();
    }

    /// Writes one converted session of the open file, imported from `tool`'s session
    /// `source_id`: new; or replacing the earlier import of a file that changed (the delete
    /// and the insert in one transaction); or left alone when its stamp is unchanged or it
    /// was continued in neocode since it was imported. The decision is taken inside the
    /// transaction, so a session continued meanwhile by another process is seen.
    pub(crate) fn put(&mut self, p: Prepared, tool: &str, source_id: &str) -> Result<BulkOutcome> {
        let (Some(tx), true) = (self.tx.as_ref(), self.in_file) else {
            return Err(StoreError::Corrupt {
                path: "<import>".into(),
                detail: "bulk import written outside a file".into(),
            });
        };
        let Prepared {
            mut session,
            summary,
            assets,
        } = p;
        check_header(&session.header)?;
        let stamp = session.header.source.as_ref().and_then(|s| s.stamp.clone());
        let updated = match find_imported_in(tx, tool, source_id)? {
            Some(rec) if rec.stamp.is_some() && rec.stamp == stamp => {
                return Ok(BulkOutcome::Unchanged(rec.id));
            }
            Some(rec) if rec.last_seq > rec.imported_last_seq.unwrap_or(i64::MAX) => {
                return Ok(BulkOutcome::Refused(
                    rec.id,
                    "continued in neocode since it was imported; not replaced".into(),
                ));
            }
            Some(rec) => {
                tx.execute(DELETE_SESSION_FTS, [&rec.id])?;
                tx.execute("DELETE FROM sessions WHERE id = ?1", [&rec.id])?;
                session.header.id = rec.id.clone();
                Some(rec.id)
            }
            None if session_exists(tx, &session.header.id)? => {
                return Ok(BulkOutcome::Refused(
                    session.header.id,
                    "a session with this id already exists in the workspace and was not imported from here"
                        .into(),
                ));
            }
            None => None,
        };
        let id = session.header.id.clone();
        insert_full_in(tx, session, &summary)?;
        let mut kept = HashSet::new();
        for (meta, data) in &assets {
            validate_id("asset", &meta.id)?;
            let existed = self
                .store
                .inner
                .paths
                .dir
                .join(asset_relative_path(&id, &meta.id))
                .exists();
            let (rel, dst) = self.store.write_asset_file(&id, &meta.id, data)?;
            if !existed {
                self.pending.push(dst.clone());
            }
            kept.insert(dst);
            let row = AssetMeta {
                id: meta.id.clone(),
                session_id: id.clone(),
                mime_type: meta.mime_type.clone(),
                size_bytes: data.len() as u64,
                relative_path: rel,
                created_at_ms: meta.created_at_ms,
            };
            insert_asset_row(tx, &row)?;
            tx.execute(
                "UPDATE sessions SET asset_count = asset_count + 1 WHERE id = ?1",
                [&id],
            )?;
        }
        Ok(match updated {
            Some(id) => {
                self.pending_prune.push((id.clone(), kept));
                BulkOutcome::Updated(id)
            }
            None => BulkOutcome::Imported(id),
        })
    }
}

fn check_header(h: &SessionHeader) -> Result<()> {
    validate_id("session", &h.id)?;
    if let Some(p) = &h.plan {
        p.validate()?;
    }
    Ok(())
}

/// Inserts a whole session (header, messages, import columns, step progress) inside the
/// caller's transaction.
fn insert_full_in(tx: &Transaction<'_>, s: Session, summary_extra: &SessionSummary) -> Result<()> {
    let Session {
        header: ref h,
        plan_progress,
        messages,
    } = s;
    if session_exists(tx, &h.id)? {
        return Err(StoreError::AlreadyExists(h.id.clone()));
    }
    // A session with a ledger: its token totals are the ledger's lifetime usage (a file
    // written before they were kept equal may carry context totals).
    let (tok_in, tok_out) = match &h.ledger {
        Some(l) => (l.usage.input_tokens, l.usage.output_tokens),
        None => (h.token_input_total, h.token_output_total),
    };
    tx.execute(
        "INSERT INTO sessions (id, title, first_prompt, created_at_ms, updated_at_ms, provider, model, workdir,
            status, parent_id, fork_seq, conversation_key, task_state_json, todos_json, skills_json,
            plan_json, ledger_json, token_input_total, token_output_total, last_seq, message_count, branch,
            cost_usd, profile)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22,
            ?23, ?24)",
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
            tok_in as i64,
            tok_out as i64,
            h.last_seq,
            messages.len() as i64,
            h.branch,
            h.ledger.as_ref().and_then(|l| l.usage.cost_usd),
            h.profile
        ],
    )?;
    for mut m in messages {
        // Only this store's own turns say their calls came from the model.
        if let Some(serde_json::Value::Object(meta)) = m.tool_metadata.as_mut() {
            meta.remove(crate::session::model::CALLS_FROM);
        }
        let nm = NewMessage {
            role: Some(m.role),
            parts: m.parts,
            tool_calls: m.tool_calls,
            tool_call_id: m.tool_call_id,
            is_error: m.is_error,
            tool_metadata: m.tool_metadata,
            usage: m.usage,
            created_at_ms: Some(m.created_at_ms),
            extra: m.extra,
        };
        insert_owned(tx, &h.id, m.seq, nm, m.created_at_ms)?;
    }
    write_import_columns(tx, h)?;
    for (step, update) in progress_as_updates(&plan_progress) {
        write_step_update(tx, &h.id, &step, &update)?;
    }
    refresh_plan_counts(tx, &h.id)?;
    Ok(())
}
