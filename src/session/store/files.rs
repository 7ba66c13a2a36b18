//! The workspace files a session changed (issue 26): before-images as content-addressed blobs
//! (`<workspace folder>/files/<2 hex>/<SHA-256>`, shared by every session and fork that
//! refers to one, deleted with the last of them), the change rows stored in the same
//! transaction as the tool result, and the journal of rewinds.

use std::collections::BTreeSet;
use std::path::PathBuf;

use rusqlite::{Connection, OptionalExtension, Row, Transaction, params};

use super::core::Store;
use crate::session::error::{Result, StoreError};
use crate::session::model::{AppendMeta, Change, NewMessage, StateUpdate};
use crate::session::snapshot::*;

/// The columns a change row is read with, in [`change_from_row`]'s order.
const CHANGE_COLS: &str = "seq, path, by_command, before_hash, before_mode, before_size, \
     before_absent, after_hash, after_mode, after_size, after_absent, before_tree";

impl Store {
    /// The file a blob is kept in (its hash checked to be one).
    fn blob_path(&self, hash: &str) -> Result<PathBuf> {
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(StoreError::InvalidId {
                what: "blob",
                id: hash.chars().take(80).collect(),
            });
        }
        Ok(self.inner.paths.files().join(&hash[..2]).join(hash))
    }

    /// Stores `data` as a blob unless one with its hash is there already; returns the hash.
    /// Written (temporary file, rename) before any row names it. Not fsynced, like the
    /// database's commits (`synchronous = NORMAL`) and the file tools' own writes: a kill
    /// loses nothing, a power cut may lose the newest blobs, which [`Store::read_blob`]'s
    /// hash check then refuses.
    pub(crate) fn put_blob(&self, data: &[u8]) -> Result<String> {
        let hash = blob_hash(data);
        self.put_blob_hashed(&hash, data)?;
        Ok(hash)
    }

    fn put_blob_hashed(&self, hash: &str, data: &[u8]) -> Result<()> {
        let path = self.blob_path(hash)?;
        if path.exists() {
            return Ok(());
        }
        let dir = path.parent().map(PathBuf::from).unwrap_or_default();
        crate::session::workspace::create_private_dir(&dir)?;
        let tmp = dir.join(format!(".{hash}.{}.tmp", std::process::id()));
        crate::session::workspace::replace_private_file(&dir, &tmp, &path, data, false)
            .map_err(|e| StoreError::io(&path, e))
    }

    /// A blob's bytes, checked against its hash (a blob a power cut cut short is refused,
    /// never restored).
    pub(crate) fn read_blob(&self, hash: &str) -> Result<Vec<u8>> {
        let path = self.blob_path(hash)?;
        let data = std::fs::read(&path).map_err(|e| StoreError::io(&path, e))?;
        if blob_hash(&data) != hash {
            return Err(StoreError::Corrupt {
                path,
                detail: "the snapshot's content does not match its hash".into(),
            });
        }
        Ok(data)
    }

    /// How many blobs the workspace keeps (for tests and `doctor`-style reports).
    pub fn blob_count(&self) -> usize {
        let Ok(dirs) = std::fs::read_dir(self.inner.paths.files()) else {
            return 0;
        };
        dirs.flatten()
            .filter_map(|d| std::fs::read_dir(d.path()).ok())
            .map(|files| {
                files
                    .flatten()
                    .filter(|f| !f.file_name().to_string_lossy().starts_with('.'))
                    .count()
            })
            .sum()
    }

    /// [`Store::append_with_state`] that also records the file changes of the tool result
    /// among `messages` (the last one): the before-images' blobs are written first, the rows
    /// in the same transaction as the messages.
    pub(crate) fn append_with_files(
        &self,
        session_id: &str,
        messages: &[NewMessage],
        meta: &AppendMeta,
        update: &StateUpdate,
        files: &[FileChange],
    ) -> Result<Vec<i64>> {
        if let Change::Set(plan) = &update.plan {
            plan.validate()?;
        }
        let rows = self.prepare_changes(files)?;
        let appended = self.write(|tx| {
            let appended = self.append_in(tx, session_id, messages, meta)?;
            self.update_in(tx, session_id, update)?;
            let seq = appended.seqs.last().copied().unwrap_or(0);
            for r in &rows {
                insert_change(tx, session_id, seq, r)?;
            }
            Ok(appended)
        })?;
        Ok(self.after_append(appended))
    }

    /// Blobs written and states computed for `files`.
    fn prepare_changes(&self, files: &[FileChange]) -> Result<Vec<FileChangeRow>> {
        let mut rows = Vec::with_capacity(files.len());
        for f in files {
            rows.push(match f {
                FileChange::Written {
                    path,
                    before,
                    after,
                } => FileChangeRow {
                    seq: 0,
                    path: path.clone(),
                    by_command: None,
                    before: self.image_state(before, true)?,
                    after: self.image_state(after, false)?,
                    before_tree: None,
                },
                FileChange::ByCommand {
                    path,
                    change,
                    after,
                    before_tree,
                } => FileChangeRow {
                    seq: 0,
                    path: path.clone(),
                    by_command: Some(*change),
                    before: FileState::Unknown,
                    after: after.clone(),
                    before_tree: before_tree.clone(),
                },
            });
        }
        Ok(rows)
    }

    /// The state of an image, its bytes stored as a blob when `keep`.
    fn image_state(&self, image: &Image, keep: bool) -> Result<FileState> {
        Ok(match image {
            Image::Absent => FileState::Absent,
            Image::TooLarge { .. } => FileState::Unknown,
            Image::Bytes { data, mode } => {
                let state = FileState::of(data, *mode);
                if keep && let FileState::Stored { hash, .. } = &state {
                    self.put_blob_hashed(hash, data)?;
                }
                state
            }
        })
    }

    /// Every file change of a session, by seq (then path).
    pub(crate) fn file_changes(&self, session_id: &str) -> Result<Vec<FileChangeRow>> {
        self.with_conn(|c| {
            let mut st = c.prepare_cached(&format!(
                "SELECT {CHANGE_COLS} FROM file_changes WHERE session_id = ?1 ORDER BY seq, rowid"
            ))?;
            let rows = st
                .query_map([session_id], change_from_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
    }

    /// Records an imported session's file changes (`import` of a file exported with
    /// `--with-files`); the blobs they name are stored already.
    pub(crate) fn import_file_changes(
        &self,
        session_id: &str,
        rows: &[FileChangeRow],
    ) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        self.write(|tx| {
            for r in rows {
                insert_change(tx, session_id, r.seq, r)?;
            }
            Ok(())
        })
    }

    /// Journals a rewind (state `applying`) before any file is touched; the blobs of its
    /// targets and previous states must be stored already.
    pub(crate) fn begin_rewind(&self, rw: &Rewind) -> Result<()> {
        let now = self.now();
        self.write(|tx| {
            tx.execute(
                "INSERT INTO rewinds (id, session_id, to_seq, result_id, forks, undo_of, state,
                    pid, created_at_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'applying', ?7, ?8)",
                params![
                    rw.id,
                    rw.session_id,
                    rw.to_seq,
                    rw.result_id,
                    rw.forks,
                    rw.undo_of,
                    rw.pid,
                    now
                ],
            )?;
            let mut st = tx.prepare_cached(
                "INSERT INTO rewind_files (rewind_id, path, target_hash, target_mode,
                    target_absent, prev_hash, prev_mode, prev_absent)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?;
            for f in &rw.files {
                let (th, tm, _, ta) = state_cols(&f.target);
                let (ph, pm, _, pa) = state_cols(&f.previous);
                st.execute(params![rw.id, f.path, th, tm, ta, ph, pm, pa])?;
            }
            Ok(())
        })
    }

    /// Marks a journaled rewind done (and the rewind it undoes, undone).
    pub(crate) fn finish_rewind(&self, id: &str) -> Result<()> {
        self.write(|tx| {
            tx.execute("UPDATE rewinds SET state = 'done' WHERE id = ?1", [id])?;
            tx.execute(
                "UPDATE rewinds SET state = 'undone'
                 WHERE id = (SELECT undo_of FROM rewinds WHERE id = ?1)",
                [id],
            )?;
            Ok(())
        })
    }

    /// Drops the journal of a rewind that changed nothing (it failed before its first file).
    pub(crate) fn abandon_rewind(&self, id: &str) -> Result<()> {
        self.write(|tx| {
            tx.execute(
                "DELETE FROM rewinds WHERE id = ?1 AND state = 'applying'",
                [id],
            )?;
            Ok(())
        })
    }

    /// Rewinds journaled but not finished (a kill in the middle), oldest first.
    pub(crate) fn unfinished_rewinds(&self) -> Result<Vec<Rewind>> {
        self.with_conn(|c| {
            let ids: Vec<String> = c
                .prepare_cached("SELECT id FROM rewinds WHERE state = 'applying' ORDER BY rowid")?
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            ids.iter().map(|id| load_rewind(c, id)).collect()
        })
    }

    /// The newest finished rewind of `session_id` (made from it, or that made it) that is
    /// not an undo and was not undone.
    pub(crate) fn last_rewind(&self, session_id: &str) -> Result<Option<Rewind>> {
        self.with_conn(|c| {
            let id: Option<String> = c
                .query_row(
                    "SELECT id FROM rewinds WHERE (session_id = ?1 OR result_id = ?1)
                        AND state = 'done' AND undo_of IS NULL ORDER BY rowid DESC LIMIT 1",
                    [session_id],
                    |r| r.get(0),
                )
                .optional()?;
            id.map(|id| load_rewind(c, &id)).transpose()
        })
    }

    /// The states finished rewinds of `session_id` set files to (path, state): a later
    /// rewind of the session counts them as its own writes.
    pub(crate) fn rewound_states(&self, session_id: &str) -> Result<Vec<(String, FileState)>> {
        self.with_conn(|c| {
            let mut st = c.prepare_cached(
                "SELECT f.path, f.target_hash, f.target_mode, f.target_absent
                 FROM rewind_files f JOIN rewinds r ON r.id = f.rewind_id
                 WHERE r.session_id = ?1 AND r.state IN ('done', 'undone')",
            )?;
            let rows = st
                .query_map([session_id], |r| {
                    Ok((r.get(0)?, state_from(r.get(1)?, r.get(2)?, None, r.get(3)?)))
                })?
                .collect::<rusqlite::Result<_>>()?;
            Ok(rows)
        })
    }

    /// After a session's rows are gone: deletes the blobs of `candidates` no row refers to.
    pub(super) fn drop_unreferenced_blobs(&self, candidates: &BTreeSet<String>) -> Result<()> {
        if candidates.is_empty() {
            return Ok(());
        }
        let gone: Vec<String> = self.with_conn(|c| {
            let mut out = Vec::new();
            for h in candidates {
                if !blob_referenced(c, h)? {
                    out.push(h.clone());
                }
            }
            Ok(out)
        })?;
        for h in gone {
            if let Ok(p) = self.blob_path(&h) {
                let _ = std::fs::remove_file(p);
            }
        }
        Ok(())
    }
}

/// The blobs a session's rows refer to (its changes and its rewinds' files).
pub(super) fn session_blobs(c: &Connection, session_id: &str) -> Result<BTreeSet<String>> {
    let mut st = c.prepare_cached(
        "SELECT before_hash FROM file_changes WHERE session_id = ?1 AND before_hash IS NOT NULL
         UNION SELECT f.target_hash FROM rewind_files f JOIN rewinds r ON r.id = f.rewind_id
            WHERE r.session_id = ?1 AND f.target_hash IS NOT NULL
         UNION SELECT f.prev_hash FROM rewind_files f JOIN rewinds r ON r.id = f.rewind_id
            WHERE r.session_id = ?1 AND f.prev_hash IS NOT NULL",
    )?;
    Ok(st
        .query_map([session_id], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?)
}

fn blob_referenced(c: &Connection, hash: &str) -> Result<bool> {
    super::core::row_exists(
        c,
        "SELECT 1 FROM file_changes WHERE before_hash = ?1
         UNION ALL SELECT 1 FROM rewind_files WHERE target_hash = ?1
         UNION ALL SELECT 1 FROM rewind_files WHERE prev_hash = ?1 LIMIT 1",
        [hash],
    )
}

/// Copies a session's change rows up to `at` to a fork (the blobs are shared).
pub(super) fn copy_changes(tx: &Transaction<'_>, from: &str, to: &str, at: i64) -> Result<()> {
    tx.execute(
        &format!(
            "INSERT INTO file_changes (session_id, {CHANGE_COLS})
             SELECT ?2, {CHANGE_COLS} FROM file_changes WHERE session_id = ?1 AND seq <= ?3
             ORDER BY rowid"
        ),
        params![from, to, at],
    )?;
    Ok(())
}

/// (hash, mode, size, absent) of a state.
fn state_cols(s: &FileState) -> (Option<&str>, Option<u32>, Option<i64>, bool) {
    match s {
        FileState::Absent => (None, None, None, true),
        FileState::Unknown => (None, None, None, false),
        FileState::Stored { hash, mode, size } => {
            (Some(hash), Some(*mode), i64::try_from(*size).ok(), false)
        }
    }
}

fn state_from(
    hash: Option<String>,
    mode: Option<u32>,
    size: Option<i64>,
    absent: bool,
) -> FileState {
    match (hash, absent) {
        (_, true) => FileState::Absent,
        (Some(hash), false) => FileState::Stored {
            hash,
            mode: mode.unwrap_or(0o644),
            size: size.and_then(|s| u64::try_from(s).ok()).unwrap_or(0),
        },
        (None, false) => FileState::Unknown,
    }
}

fn insert_change(
    tx: &Transaction<'_>,
    session_id: &str,
    seq: i64,
    r: &FileChangeRow,
) -> Result<()> {
    let (bh, bm, bs, ba) = state_cols(&r.before);
    let (ah, am, asz, aa) = state_cols(&r.after);
    let mut st = tx.prepare_cached(&format!(
        "INSERT INTO file_changes (session_id, {CHANGE_COLS})
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"
    ))?;
    st.execute(params![
        session_id,
        seq,
        r.path,
        r.by_command.map(CommandChange::as_str),
        bh,
        bm,
        bs,
        ba,
        ah,
        am,
        asz,
        aa,
        r.before_tree
    ])?;
    Ok(())
}

fn change_from_row(r: &Row<'_>) -> rusqlite::Result<FileChangeRow> {
    let by: Option<String> = r.get(2)?;
    Ok(FileChangeRow {
        seq: r.get(0)?,
        path: r.get(1)?,
        by_command: by.as_deref().map(|b| match b {
            "created" => CommandChange::Created,
            "deleted" => CommandChange::Deleted,
            _ => CommandChange::Modified,
        }),
        before: state_from(r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?),
        after: state_from(r.get(7)?, r.get(8)?, r.get(9)?, r.get(10)?),
        before_tree: r.get(11)?,
    })
}

fn load_rewind(c: &Connection, id: &str) -> Result<Rewind> {
    let mut rw = c.query_row(
        "SELECT id, session_id, to_seq, result_id, forks, undo_of, state, pid
         FROM rewinds WHERE id = ?1",
        [id],
        |r| {
            let state: String = r.get(6)?;
            Ok(Rewind {
                id: r.get(0)?,
                session_id: r.get(1)?,
                to_seq: r.get(2)?,
                result_id: r.get(3)?,
                forks: r.get(4)?,
                undo_of: r.get(5)?,
                state: RewindState::parse(&state).unwrap_or(RewindState::Done),
                pid: r.get(7)?,
                files: Vec::new(),
            })
        },
    )?;
    let mut st = c.prepare_cached(
        "SELECT path, target_hash, target_mode, target_absent, prev_hash, prev_mode, prev_absent
         FROM rewind_files WHERE rewind_id = ?1 ORDER BY path",
    )?;
    rw.files = st
        .query_map([id], |r| {
            Ok(RewindFile {
                path: r.get(0)?,
                target: state_from(r.get(1)?, r.get(2)?, None, r.get(3)?),
                previous: state_from(r.get(4)?, r.get(5)?, None, r.get(6)?),
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rw)
}
