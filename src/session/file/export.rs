//! Writing a session file: the document built from a stored session.

use base64::Engine;

use super::doc::*;
use super::time::rfc3339;
use crate::session::error::Result as StoreResult;
use crate::session::model::TokenDetail;
use crate::session::store::Store;

/// Builds the document for a stored session.
pub fn export(store: &Store, session_id: &str) -> StoreResult<SessionFile> {
    let s = store.load_session(session_id)?;
    let h = &s.header;
    let plan = h.plan.as_ref().map(|plan| FilePlan {
        steps: plan
            .steps
            .iter()
            .map(|st| FileStep {
                id: st.id.clone(),
                title: st.title.clone(),
                depends_on: st.depends_on.clone(),
                status: s.plan_progress.status(&st.id),
                result: s.plan_progress.results.get(&st.id).cloned(),
                error: s.plan_progress.failures.get(&st.id).cloned(),
            })
            .collect(),
    });
    let mut assets = Vec::new();
    for a in store.list_assets(session_id)? {
        let (_, data) = store.open_asset(session_id, &a.id)?;
        assets.push(FileAsset {
            id: a.id,
            mime_type: a.mime_type,
            created_at: rfc3339(a.created_at_ms),
            data_base64: base64::engine::general_purpose::STANDARD.encode(data),
        });
    }
    // The messages' finer token counts, summed for the file's totals.
    let detail: TokenDetail = s.messages.iter().map(|m| m.extra.tokens).sum();
    Ok(SessionFile {
        format: FORMAT.into(),
        version: VERSION,
        session: FileSession {
            id: h.id.clone(),
            title: h.title.clone(),
            created_at: rfc3339(h.created_at_ms),
            updated_at: rfc3339(h.updated_at_ms),
            provider: h.provider.clone(),
            model: h.model.clone(),
            workdir: h.workdir.clone(),
            status: h.status,
            parent_id: h.parent_id.clone(),
            subagent_of: h.subagent_of.clone(),
            source: h.source.clone(),
            fork_seq: h.fork_seq,
            branch: h.branch.clone(),
            profile: h.profile.clone(),
            conversation_key: h.conversation_key.clone(),
            plan,
            tokens: FileTokens {
                input: h.token_input_total,
                output: h.token_output_total,
                cached_input: detail.cached_input_tokens,
                cache_write: detail.cache_write_tokens,
                reasoning: detail.reasoning_tokens,
            },
            task_state: h.task_state.clone(),
            todos: h.todos.clone(),
            skills: h.skills.clone(),
            ledger: h.ledger.clone(),
            last_seq: Some(h.last_seq),
        },
        messages: s
            .messages
            .iter()
            .map(|m| FileMessage {
                seq: m.seq,
                role: m.role,
                parts: m.parts.clone(),
                tool_calls: m.tool_calls.clone(),
                tool_call_id: m.tool_call_id.clone(),
                is_error: m.is_error,
                tool_metadata: m.tool_metadata.clone(),
                created_at: rfc3339(m.created_at_ms),
                usage: file_usage(&m.usage, &m.extra),
                injected: m.extra.injected,
                metadata: m.extra.metadata.clone(),
            })
            .collect(),
        assets,
    })
}
