//! Assets: files beside the database (images), their metadata rows, and path checks.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, Row, Transaction, params};

use super::core::{Store, from_json, row_exists, validate_id};
use crate::session::error::{Result, StoreError};
use crate::session::model::*;

impl Store {
    /// Saves an asset: checks id and size, writes a temp file, fsyncs, renames into place, then
    /// records the metadata. Returns the metadata.
    pub fn save_asset(
        &self,
        session_id: &str,
        asset_id: Option<&str>,
        mime_type: &str,
        data: &[u8],
    ) -> Result<AssetMeta> {
        self.save_asset_at(session_id, asset_id, mime_type, data, self.now())
    }

    pub(crate) fn save_asset_at(
        &self,
        session_id: &str,
        asset_id: Option<&str>,
        mime_type: &str,
        data: &[u8],
        created_at_ms: i64,
    ) -> Result<AssetMeta> {
        validate_id("session", session_id)?;
        let asset_id = match asset_id {
            Some(a) => a.to_string(),
            None => uuid::Uuid::new_v4().simple().to_string(),
        };
        validate_id("asset", &asset_id)?;
        if data.len() as u64 > self.inner.asset_limit {
            return Err(StoreError::TooLarge {
                what: "asset",
                size: data.len() as u64,
                limit: self.inner.asset_limit,
            });
        }
        self.load_header(session_id)?;
        // Refuse a taken id before the rename below would overwrite the existing file (the
        // check inside the transaction stays for a racing writer).
        if self.with_conn(|c| asset_exists(c, session_id, &asset_id))? {
            return Err(StoreError::AlreadyExists(format!(
                "{session_id}/{asset_id}"
            )));
        }
        let (rel, dst) = self.write_asset_file(session_id, &asset_id, data)?;
        let meta = AssetMeta {
            id: asset_id,
            session_id: session_id.to_string(),
            mime_type: mime_type.to_string(),
            size_bytes: data.len() as u64,
            relative_path: rel,
            created_at_ms,
        };
        let r = self.write(|tx| {
            if asset_exists(tx, session_id, &meta.id)? {
                return Err(StoreError::AlreadyExists(format!(
                    "{session_id}/{}",
                    meta.id
                )));
            }
            insert_asset_row(tx, &meta)?;
            tx.execute(
                "UPDATE sessions SET asset_count = asset_count + 1 WHERE id = ?1",
                [session_id],
            )?;
            Ok(())
        });
        if let Err(e) = r {
            if !matches!(e, StoreError::AlreadyExists(_)) {
                let _ = std::fs::remove_file(&dst);
            }
            return Err(e);
        }
        Ok(meta)
    }

    /// Writes an asset's file durably (temp file, fsync, rename, fsync of the folder) and
    /// returns its relative and full path; the metadata row is the caller's.
    pub(super) fn write_asset_file(
        &self,
        session_id: &str,
        asset_id: &str,
        data: &[u8],
    ) -> Result<(String, PathBuf)> {
        let dir = self.inner.paths.assets().join(session_id);
        crate::session::workspace::create_private_dir(&dir)?;
        let rel = asset_relative_path(session_id, asset_id);
        let dst = self.inner.paths.dir.join(&rel);
        let tmp = dir.join(format!(".{asset_id}.{}.tmp", std::process::id()));
        crate::session::workspace::replace_private_file(&dir, &tmp, &dst, data, true)
            .map_err(|e| StoreError::io(&dst, e))?;
        Ok((rel, dst))
    }

    /// Metadata of one asset.
    pub(crate) fn stat_asset(&self, session_id: &str, asset_id: &str) -> Result<AssetMeta> {
        validate_id("session", session_id)?;
        validate_id("asset", asset_id)?;
        self.with_conn(|c| {
            c.query_row(
                "SELECT id, session_id, mime_type, size_bytes, relative_path, created_at_ms
                 FROM session_assets WHERE session_id = ?1 AND id = ?2",
                params![session_id, asset_id],
                asset_from_row,
            )
            .optional()?
            .ok_or_else(|| StoreError::NotFound {
                what: "asset",
                key: asset_id.to_string(),
                scope: format!("session {session_id}"),
            })
        })
    }

    /// Every asset of a session, oldest first.
    pub fn list_assets(&self, session_id: &str) -> Result<Vec<AssetMeta>> {
        self.with_conn(|c| list_assets(c, session_id))
    }

    /// Reads an asset's bytes, re-checking that its stored path stays inside the workspace.
    pub fn open_asset(&self, session_id: &str, asset_id: &str) -> Result<(AssetMeta, Vec<u8>)> {
        let meta = self.stat_asset(session_id, asset_id)?;
        let path = self.checked_asset_path(&meta)?;
        let data = std::fs::read(&path).map_err(|e| StoreError::io(&path, e))?;
        Ok((meta, data))
    }

    /// Deletes an asset's metadata and file.
    pub fn delete_asset(&self, session_id: &str, asset_id: &str) -> Result<()> {
        let meta = self.stat_asset(session_id, asset_id)?;
        self.write(|tx| {
            tx.execute(
                "DELETE FROM session_assets WHERE session_id = ?1 AND id = ?2",
                params![session_id, asset_id],
            )?;
            tx.execute(
                "UPDATE sessions SET asset_count = asset_count - 1 WHERE id = ?1",
                [session_id],
            )?;
            Ok(())
        })?;
        if let Ok(p) = self.checked_asset_path(&meta) {
            let _ = std::fs::remove_file(p);
        }
        Ok(())
    }

    /// The absolute path of an asset, refusing stored paths that leave the workspace folder
    /// (`..`, absolute paths, symlinks pointing out).
    pub(super) fn checked_asset_path(&self, meta: &AssetMeta) -> Result<PathBuf> {
        let rel = Path::new(&meta.relative_path);
        let escape = || StoreError::PathEscape(meta.id.clone());
        if rel.is_absolute()
            || rel
                .components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            return Err(escape());
        }
        let base = std::fs::canonicalize(&self.inner.paths.dir)
            .map_err(|e| StoreError::io(&self.inner.paths.dir, e))?;
        let full = base.join(rel);
        let resolved = std::fs::canonicalize(&full).map_err(|e| StoreError::io(&full, e))?;
        if !resolved.starts_with(base.join("assets")) {
            return Err(escape());
        }
        Ok(resolved)
    }

    /// Assets of `session_id` that messages `1..=at` show. Only messages whose parts JSON
    /// holds an image part are parsed (most hold none), and none when the session has no
    /// assets at all.
    pub(super) fn assets_referenced(&self, session_id: &str, at: i64) -> Result<Vec<AssetMeta>> {
        let all = self.list_assets(session_id)?;
        if all.is_empty() {
            return Ok(all);
        }
        let ids: HashSet<String> = self.with_conn(|c| {
            let mut st = c.prepare_cached(
                "SELECT parts_json FROM messages
                 WHERE session_id = ?1 AND seq <= ?2 AND instr(parts_json, '\"image\"') > 0",
            )?;
            let rows: Vec<String> = st
                .query_map(params![session_id, at], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            let mut ids = HashSet::new();
            for parts in rows {
                let parts: Vec<Part> = from_json(session_id, "parts_json", &parts)?;
                ids.extend(parts.into_iter().filter_map(|p| match p {
                    Part::Image { asset_id, .. } => Some(asset_id),
                    Part::Text { .. } | Part::Reasoning { .. } => None,
                }));
            }
            Ok(ids)
        })?;
        Ok(all.into_iter().filter(|a| ids.contains(&a.id)).collect())
    }
}

fn asset_exists(c: &Connection, session_id: &str, asset_id: &str) -> Result<bool> {
    row_exists(
        c,
        "SELECT 1 FROM session_assets WHERE session_id = ?1 AND id = ?2",
        params![session_id, asset_id],
    )
}

/// Relative path of an asset file inside the workspace folder.
pub(super) fn asset_relative_path(session_id: &str, asset_id: &str) -> String {
    format!("assets/{session_id}/{asset_id}.bin")
}

pub(super) fn insert_asset_row(tx: &Transaction<'_>, a: &AssetMeta) -> Result<()> {
    tx.execute(
        "INSERT INTO session_assets (session_id, id, mime_type, size_bytes, relative_path, created_at_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![a.session_id, a.id, a.mime_type, a.size_bytes as i64, a.relative_path, a.created_at_ms],
    )?;
    Ok(())
}

fn asset_from_row(r: &Row<'_>) -> rusqlite::Result<AssetMeta> {
    Ok(AssetMeta {
        id: r.get(0)?,
        session_id: r.get(1)?,
        mime_type: r.get(2)?,
        size_bytes: r.get::<_, i64>(3)? as u64,
        relative_path: r.get(4)?,
        created_at_ms: r.get(5)?,
    })
}

pub(super) fn list_assets(c: &Connection, session_id: &str) -> Result<Vec<AssetMeta>> {
    let mut st = c.prepare_cached(
        "SELECT id, session_id, mime_type, size_bytes, relative_path, created_at_ms
         FROM session_assets WHERE session_id = ?1 ORDER BY created_at_ms, id",
    )?;
    Ok(st
        .query_map([session_id], asset_from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}
