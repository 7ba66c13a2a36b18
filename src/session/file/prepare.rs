//! Importing a session file: validated, decoded whole (so a write cannot fail halfway on
//! the document's content), then written.

use base64::Engine;

use super::doc::*;
use super::time::parse_time;
use super::validate::validate;
use crate::session::error::{Result as StoreResult, StoreError};
use crate::session::list::*;
use crate::session::model::*;
use crate::session::plan::{PlanProgress, StepStatus};
use crate::session::store::{Prepared, Store};

/// Writes a validated document into the store. With `new_id`, the session gets a fresh id
/// (and no parent link); otherwise an existing id is refused. Nothing is written on error.
pub fn import(store: &Store, doc: &SessionFile, new_id: bool) -> StoreResult<SessionHeader> {
    import_doc(store, doc.clone(), new_id)
}

/// [`import`] of a document the caller gives up (nothing of it is copied).
pub(crate) fn import_doc(
    store: &Store,
    doc: SessionFile,
    new_id: bool,
) -> StoreResult<SessionHeader> {
    let p = prepare(store, doc, new_id)?;
    let id = p.session.header.id.clone();
    store.insert_full(p.session, &p.summary)?;
    for (meta, data) in &p.assets {
        if let Err(e) = store.attach_imported_asset(meta, data) {
            // Keep "nothing written on error": take the half-imported session out again.
            let _ = store.delete(&id);
            return Err(e);
        }
    }
    store.load_header(&id)
}

/// Validates `doc` and decodes everything the store needs, so that a write cannot fail on
/// the document's content halfway.
pub(crate) fn prepare(store: &Store, doc: SessionFile, new_id: bool) -> StoreResult<Prepared> {
    validate(&doc).map_err(|e| StoreError::Corrupt {
        path: "<session file>".into(),
        detail: e.to_string(),
    })?;
    let SessionFile {
        session: f,
        messages: file_messages,
        assets: file_assets,
        ..
    } = doc;
    let id = if new_id {
        uuid::Uuid::new_v4().to_string()
    } else {
        f.id.clone()
    };
    let ms = |s: &str| parse_time("", s).unwrap_or(0);
    let progress = file_progress(f.plan.as_ref());
    // The parts are moved, not copied: they are most of an imported transcript's bytes.
    let messages: Vec<Message> = file_messages
        .into_iter()
        .map(|m| {
            let (usage, extra) = m.split_usage();
            Message {
                seq: m.seq,
                role: m.role,
                created_at_ms: ms(&m.created_at),
                parts: m.parts,
                tool_calls: m.tool_calls,
                tool_call_id: m.tool_call_id,
                is_error: m.is_error,
                tool_metadata: m.tool_metadata,
                usage,
                extra,
            }
        })
        .collect();
    let max_seq = messages.iter().map(|m| m.seq).max().unwrap_or(0);
    let first_prompt = first_prompt(&messages);
    let session = Session {
        header: SessionHeader {
            id: id.clone(),
            title: f.title.clone(),
            created_at_ms: ms(&f.created_at),
            updated_at_ms: ms(&f.updated_at),
            provider: f.provider.clone(),
            model: f.model.clone(),
            workdir: f.workdir.clone(),
            status: f.status,
            parent_id: if new_id { None } else { f.parent_id.clone() },
            fork_seq: if new_id { None } else { f.fork_seq },
            subagent_of: if new_id { None } else { f.subagent_of.clone() },
            source: f.source.clone(),
            branch: f.branch.clone(),
            profile: f.profile.clone(),
            conversation_key: f.conversation_key.clone(),
            task_state: f.task_state.clone(),
            todos: f.todos.clone(),
            skills: f.skills.clone(),
            plan: f.plan.as_ref().map(to_plan),
            ledger: f.ledger.clone(),
            token_input_total: f.tokens.input,
            token_output_total: f.tokens.output,
            last_seq: f.last_seq.unwrap_or(0).max(max_seq),
            message_count: messages.len() as u64,
        },
        plan_progress: progress,
        messages,
    };
    Ok(Prepared {
        session,
        summary: SessionSummary {
            first_prompt,
            ..SessionSummary::default()
        },
        assets: decode_assets(store, &id, file_assets)?,
    })
}

/// The plan progress a session file's steps carry.
fn file_progress(plan: Option<&FilePlan>) -> PlanProgress {
    let mut progress = PlanProgress::default();
    for st in plan.map(|p| p.steps.as_slice()).unwrap_or(&[]) {
        if st.status != StepStatus::Pending {
            progress.statuses.insert(st.id.clone(), st.status);
        }
        if let Some(r) = &st.result {
            progress.results.insert(st.id.clone(), r.clone());
        }
        if let Some(e) = &st.error {
            progress.failures.insert(st.id.clone(), e.clone());
        }
    }
    progress
}

/// The first 200 characters of the first prompt the person typed, without joining a long
/// message's text.
fn first_prompt(messages: &[Message]) -> String {
    let head = |m: &Message| -> String {
        let mut out = String::new();
        for p in &m.parts {
            if let Part::Text { text } = p {
                if !out.is_empty() {
                    out.push_str("\n\n");
                }
                out.extend(text.chars().take(200));
                if out.chars().count() >= 200 {
                    break;
                }
            }
        }
        out.chars().take(200).collect()
    };
    messages
        .iter()
        .filter(|m| m.role == Role::User && !m.extra.injected)
        .map(head)
        .find(|h| !h.trim().is_empty())
        .unwrap_or_default()
}

/// Every asset decoded (before anything is written) and its size checked, for session `id`.
fn decode_assets(
    store: &Store,
    id: &str,
    file_assets: Vec<FileAsset>,
) -> StoreResult<Vec<(AssetMeta, Vec<u8>)>> {
    let ms = |s: &str| parse_time("", s).unwrap_or(0);
    let mut assets = Vec::with_capacity(file_assets.len());
    // Consumed one by one: each asset's text goes once it is decoded.
    for (i, a) in file_assets.into_iter().enumerate() {
        let data = base64::engine::general_purpose::STANDARD
            .decode(&a.data_base64)
            .map_err(|e| StoreError::Corrupt {
                path: "<session file>".into(),
                detail: format!("$.assets[{i}].data_base64: {e}"),
            })?;
        if data.len() as u64 > store.asset_limit() {
            return Err(StoreError::TooLarge {
                what: "asset",
                size: data.len() as u64,
                limit: store.asset_limit(),
            });
        }
        let meta = AssetMeta {
            id: a.id.clone(),
            session_id: id.to_string(),
            mime_type: a.mime_type.clone(),
            size_bytes: 0,
            relative_path: String::new(),
            created_at_ms: ms(&a.created_at),
        };
        assets.push((meta, data));
    }
    Ok(assets)
}
