//! Imported history: where a session came from, and finding it again so a re-import updates
//! instead of duplicating.

use rusqlite::{OptionalExtension, Transaction, params};
use serde_json::Value;

use super::core::{Store, to_json_opt};
use crate::session::error::Result;
use crate::session::model::SessionHeader;

/// What the store knows of a session imported earlier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedRecord {
    /// The session's id in this workspace.
    pub id: String,
    /// The stamp of the file it was read from.
    pub stamp: Option<String>,
    /// Highest seq written (grows when the session is continued in neocode).
    pub last_seq: i64,
    /// Messages the import wrote, from the source metadata.
    pub imported_last_seq: Option<i64>,
}

/// Writes the import columns of a header inside the caller's transaction.
pub(super) fn write_import_columns(tx: &Transaction<'_>, h: &SessionHeader) -> Result<()> {
    if h.subagent_of.is_none() && h.source.is_none() {
        return Ok(());
    }
    let src = h.source.as_ref();
    tx.execute(
        "UPDATE sessions SET subagent_of = ?2, source_tool = ?3, source_version = ?4,
            source_id = ?5, source_stamp = ?6, source_meta_json = ?7
         WHERE id = ?1",
        params![
            h.id,
            h.subagent_of,
            src.map(|s| s.tool.as_str()),
            src.map(|s| s.version.as_str()),
            src.map(|s| s.id.as_str()),
            src.and_then(|s| s.stamp.as_deref()),
            to_json_opt(src.and_then(|s| s.metadata.as_ref())),
        ],
    )?;
    Ok(())
}

impl Store {
    /// The session imported from `tool`'s session `source_id`, if any.
    pub(crate) fn find_imported(
        &self,
        tool: &str,
        source_id: &str,
    ) -> Result<Option<ImportedRecord>> {
        self.with_conn(|c| find_imported_in(c, tool, source_id))
    }
}

/// [`Store::find_imported`] on a given connection (inside a bulk import's transaction, which
/// sees its own uncommitted writes).
pub(super) fn find_imported_in(
    c: &rusqlite::Connection,
    tool: &str,
    source_id: &str,
) -> Result<Option<ImportedRecord>> {
    let row = c
        .query_row(
            "SELECT id, source_stamp, last_seq, source_meta_json FROM sessions
             WHERE source_tool = ?1 AND source_id = ?2
             ORDER BY rowid LIMIT 1",
            params![tool, source_id],
            |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, Option<String>>(3)?,
                ))
            },
        )
        .optional()?;
    Ok(row.map(|(id, stamp, last_seq, meta)| {
        let imported_last_seq = meta
            .and_then(|m| serde_json::from_str::<serde_json::Value>(&m).ok())
            .and_then(|v| v.get("imported_last_seq").and_then(Value::as_i64));
        ImportedRecord {
            id,
            stamp,
            last_seq,
            imported_last_seq,
        }
    }))
}
