//! Reading a session file: parsed with the JSON path of the first problem, then checked
//! beyond what the types say.

use std::collections::HashSet;

use base64::Engine;
use serde::Deserialize;

use super::doc::*;
use super::time::{parse_time, truncate};
use crate::session::model::*;
use crate::session::store::validate_id;

/// A deserialisation error at its JSON path.
fn path_error(e: serde_path_to_error::Error<serde_json::Error>) -> FileError {
    // serde_path_to_error writes `.` for the root and `?` for a position it does not know
    // (e.g. text that is not JSON at all); neither is a JSON path.
    let p = e.path().to_string();
    let p = p.trim_end_matches('?').trim_end_matches('.');
    let path = if p.is_empty() {
        "$".to_string()
    } else {
        format!("$.{p}")
    };
    ferr(path, e.inner().to_string())
}

/// Parses and validates a document. Nothing is written.
pub fn parse(text: &str) -> Result<SessionFile, FileError> {
    let de = &mut serde_json::Deserializer::from_str(text);
    let doc: SessionFile = serde_path_to_error::deserialize(de).map_err(path_error)?;
    validate(&doc)?;
    Ok(doc)
}

/// A session file with its snapshots, as [`read`] takes it in.
#[derive(Deserialize)]
struct Whole {
    format: String,
    version: u32,
    session: FileSession,
    messages: Vec<FileMessage>,
    #[serde(default)]
    assets: Vec<FileAsset>,
    #[serde(default)]
    file_changes: Vec<crate::session::snapshot::FileChangeRow>,
    #[serde(default)]
    blobs: Vec<FileBlob>,
}

/// Parses and validates a session file and its snapshots (`export --with-files`) in one pass
/// over `reader`, never holding its text: what is kept is the document itself. Nothing is
/// written.
pub fn read(reader: impl std::io::Read) -> Result<(SessionFile, FileSnapshots), FileError> {
    let de = &mut serde_json::Deserializer::from_reader(reader);
    let w: Whole = serde_path_to_error::deserialize(de).map_err(path_error)?;
    let doc = SessionFile {
        format: w.format,
        version: w.version,
        session: w.session,
        messages: w.messages,
        assets: w.assets,
    };
    validate(&doc)?;
    Ok((
        doc,
        FileSnapshots {
            file_changes: w.file_changes,
            blobs: w.blobs,
        },
    ))
}

/// Semantic checks beyond the types.
pub fn validate(doc: &SessionFile) -> Result<(), FileError> {
    if doc.format != FORMAT {
        return Err(ferr(
            "$.format",
            format!("expected \"{FORMAT}\", found {:?}", truncate(&doc.format)),
        ));
    }
    if !(MIN_VERSION..=VERSION).contains(&doc.version) {
        return Err(ferr(
            "$.version",
            format!(
                "version {} is not supported (this neocode reads versions {MIN_VERSION} to {VERSION})",
                doc.version
            ),
        ));
    }
    validate_session(&doc.session)?;
    validate_messages(doc)?;
    validate_assets(&doc.assets)
}

/// The header: ids, times, source and plan.
fn validate_session(s: &FileSession) -> Result<(), FileError> {
    validate_id("session", &s.id).map_err(|e| ferr("$.session.id", e.to_string()))?;
    parse_time("$.session.created_at", &s.created_at)?;
    parse_time("$.session.updated_at", &s.updated_at)?;
    if let Some(p) = &s.parent_id {
        validate_id("session", p).map_err(|e| ferr("$.session.parent_id", e.to_string()))?;
    }
    if let Some(p) = &s.subagent_of {
        validate_id("session", p).map_err(|e| ferr("$.session.subagent_of", e.to_string()))?;
    }
    if let Some(src) = &s.source
        && src.tool.trim().is_empty()
    {
        return Err(ferr("$.session.source.tool", "empty source tool"));
    }
    if let Some(plan) = &s.plan {
        for (i, st) in plan.steps.iter().enumerate() {
            if st.id.is_empty() {
                return Err(ferr(
                    format!("$.session.plan.steps[{i}].id"),
                    "empty step id",
                ));
            }
        }
        to_plan(plan)
            .validate()
            .map_err(|e| ferr("$.session.plan.steps", e.to_string()))?;
    }
    Ok(())
}

/// The messages: seqs unique and in order, every tool result after its call, every image's
/// asset in the file.
fn validate_messages(doc: &SessionFile) -> Result<(), FileError> {
    let mut seqs = HashSet::new();
    let mut calls: HashSet<&str> = HashSet::new();
    let asset_ids: HashSet<&str> = doc.assets.iter().map(|a| a.id.as_str()).collect();
    for (i, m) in doc.messages.iter().enumerate() {
        let at = |f: &str| format!("$.messages[{i}].{f}");
        if m.seq < 1 {
            return Err(ferr(
                at("seq"),
                format!("seq must be 1 or more, found {}", m.seq),
            ));
        }
        if !seqs.insert(m.seq) {
            return Err(ferr(at("seq"), format!("duplicate seq {}", m.seq)));
        }
        // Calls are matched to results in file order, and the store keeps seq order: the two
        // must agree, or a result could land before its call.
        if let Some(prev) = i.checked_sub(1).map(|j| doc.messages[j].seq)
            && m.seq < prev
        {
            return Err(ferr(
                at("seq"),
                format!(
                    "seq {} follows seq {prev}: messages must be in seq order",
                    m.seq
                ),
            ));
        }
        parse_time(&at("created_at"), &m.created_at)?;
        for c in &m.tool_calls {
            calls.insert(c.id.as_str());
        }
        if m.role == Role::Tool {
            match &m.tool_call_id {
                None => {
                    return Err(ferr(
                        at("tool_call_id"),
                        "a tool result needs the id of its tool call",
                    ));
                }
                Some(id) if !calls.contains(id.as_str()) => {
                    return Err(ferr(
                        at("tool_call_id"),
                        format!(
                            "tool result answers call {:?}, which no earlier message made",
                            truncate(id)
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
        for (j, p) in m.parts.iter().enumerate() {
            if let Part::Image { asset_id, .. } = p
                && !asset_ids.contains(asset_id.as_str())
            {
                return Err(ferr(
                    format!("$.messages[{i}].parts[{j}].asset_id"),
                    format!(
                        "image refers to asset {:?}, which the file does not contain",
                        truncate(asset_id)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The assets: ids valid and unique, times, base64 content.
fn validate_assets(assets: &[FileAsset]) -> Result<(), FileError> {
    let mut seen = HashSet::new();
    for (i, a) in assets.iter().enumerate() {
        validate_id("asset", &a.id)
            .map_err(|e| ferr(format!("$.assets[{i}].id"), e.to_string()))?;
        if !seen.insert(a.id.as_str()) {
            return Err(ferr(
                format!("$.assets[{i}].id"),
                format!("duplicate asset id {:?}", a.id),
            ));
        }
        parse_time(&format!("$.assets[{i}].created_at"), &a.created_at)?;
        base64::engine::general_purpose::STANDARD
            .decode(&a.data_base64)
            .map_err(|e| {
                ferr(
                    format!("$.assets[{i}].data_base64"),
                    format!("not valid base64: {e}"),
                )
            })?;
    }
    Ok(())
}
