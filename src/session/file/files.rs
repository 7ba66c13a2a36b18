//! `export --with-files`: the session file with the workspace file changes its tools made
//! and the snapshots (blobs) they refer to, inline, so that a rewind still works after
//! `import` into another home (issue 26). Two top-level keys beside the session file's own:
//! `file_changes` (the rows `show` lists, by seq) and `blobs` (`hash`, `data_base64`). A
//! reader that does not know them reads the session file as usual.

use std::collections::BTreeSet;

use base64::Engine;
use serde::Serialize;

use super::doc::{FileBlob, FileError, FileSnapshots, SessionFile, ferr};
use super::prepare::import_doc;
use crate::session::error::{Result as StoreResult, StoreError};
use crate::session::model::SessionHeader;
use crate::session::snapshot::{FileState, blob_hash};
use crate::session::store::Store;

/// The session file and its snapshots, written as one JSON document.
#[derive(Debug, Serialize)]
pub(crate) struct WithFiles<'a> {
    #[serde(flatten)]
    pub doc: &'a SessionFile,
    #[serde(flatten)]
    pub files: &'a FileSnapshots,
}

/// A session's file changes and every blob they refer to that the store holds (a change's
/// before-image always; an after-image's bytes are not kept, only its hash).
pub(crate) fn export_files(store: &Store, session_id: &str) -> StoreResult<FileSnapshots> {
    let file_changes = store.file_changes(session_id)?;
    let hashes: BTreeSet<&str> = file_changes
        .iter()
        .flat_map(|c| [&c.before, &c.after])
        .filter_map(|s| match s {
            FileState::Stored { hash, .. } => Some(hash.as_str()),
            FileState::Absent | FileState::Unknown => None,
        })
        .collect();
    let mut blobs = Vec::new();
    for hash in hashes {
        match store.read_blob(hash) {
            Ok(data) => blobs.push(FileBlob {
                hash: hash.to_string(),
                data_base64: base64::engine::general_purpose::STANDARD.encode(data),
            }),
            // An after-image has no blob; a before-image always has one.
            Err(StoreError::Io { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(FileSnapshots {
        file_changes,
        blobs,
    })
}

/// One blob's bytes, checked against its hash.
fn decode_blob(i: usize, b: &FileBlob) -> Result<Vec<u8>, FileError> {
    let data = base64::engine::general_purpose::STANDARD
        .decode(&b.data_base64)
        .map_err(|e| ferr(format!("$.blobs[{i}].data_base64"), e.to_string()))?;
    if blob_hash(&data) != b.hash {
        return Err(ferr(
            format!("$.blobs[{i}].hash"),
            "does not match the SHA-256 of its data",
        ));
    }
    Ok(data)
}

/// Checks the snapshots: each blob's bytes match its hash (decoded one at a time, never all
/// at once), and each change's before-image is among them.
fn check(files: &FileSnapshots, last_seq: i64) -> Result<(), FileError> {
    let mut have = BTreeSet::new();
    for (i, b) in files.blobs.iter().enumerate() {
        decode_blob(i, b)?;
        have.insert(b.hash.as_str());
    }
    for (i, c) in files.file_changes.iter().enumerate() {
        if c.seq < 1 || c.seq > last_seq {
            return Err(ferr(
                format!("$.file_changes[{i}].seq"),
                format!("{} is not a message of the session (1..={last_seq})", c.seq),
            ));
        }
        if let FileState::Stored { hash, .. } = &c.before
            && !have.contains(hash.as_str())
        {
            return Err(ferr(
                format!("$.file_changes[{i}].before"),
                "its snapshot is not among the file's blobs",
            ));
        }
    }
    Ok(())
}

/// Imports a session file with its snapshots: the blobs are checked, then stored one at a
/// time, then the session, then its change rows; nothing of the session is left when a step
/// fails. The document is consumed as it is written, so an import holds it once.
pub(crate) fn import_owned(
    store: &Store,
    doc: SessionFile,
    files: FileSnapshots,
    new_id: bool,
) -> StoreResult<SessionHeader> {
    let last_seq = doc
        .messages
        .iter()
        .map(|m| m.seq)
        .max()
        .unwrap_or(0)
        .max(doc.session.last_seq.unwrap_or(0));
    let corrupt = |e: FileError| StoreError::Corrupt {
        path: "<session file>".into(),
        detail: e.to_string(),
    };
    check(&files, last_seq).map_err(corrupt)?;
    let FileSnapshots {
        file_changes,
        blobs,
    } = files;
    for (i, b) in blobs.into_iter().enumerate() {
        let data = decode_blob(i, &b).map_err(corrupt)?;
        drop(b);
        store.put_blob(&data)?;
    }
    let header = import_doc(store, doc, new_id)?;
    if let Err(e) = store.import_file_changes(&header.id, &file_changes) {
        let _ = store.delete(&header.id);
        return Err(e);
    }
    Ok(header)
}
