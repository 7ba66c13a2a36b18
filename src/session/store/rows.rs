//! How the store's rows read back into the model, shared by the store's files: the column
//! lists and row readers of sessions, messages and step updates, and the search-index
//! cleanup every session delete runs. It imports no sibling, so the files that write rows
//! (`sessions`, `messages`, `steps`, `import`, `fork`) depend on it and not on each other.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::core::{from_json, opt_json};
use crate::session::error::{Result, StoreError};
use crate::session::list::*;
use crate::session::model::*;
use crate::session::plan::{PlanCounts, PlanProgress, StepUpdate};

pub(super) const SUMMARY_COLS: &str = "id, title, first_prompt, created_at_ms, updated_at_ms, provider, model, \
     workdir, status, parent_id, fork_seq, message_count, token_input_total, token_output_total, \
     plan_done, plan_failed, plan_total, asset_count, subagent_of, source_tool, branch, cost_usd, \
     profile";

pub(super) const HEADER_COLS: &str = "id, title, created_at_ms, updated_at_ms, provider, model, workdir, \
     status, parent_id, fork_seq, conversation_key, task_state_json, todos_json, skills_json, \
     plan_json, ledger_json, token_input_total, token_output_total, last_seq, message_count, \
     subagent_of, source_tool, source_version, source_id, source_stamp, source_meta_json, branch, \
     profile";

pub(super) fn parse_status(session_id: &str, s: &str) -> Result<Status> {
    Status::parse(s).ok_or_else(|| StoreError::BadColumn {
        session_id: session_id.to_string(),
        column: "status",
        detail: format!("unknown status '{s}'"),
    })
}

/// Column `i` of `r`: a count, stored as SQLite's signed integer.
fn count(r: &Row<'_>, i: usize) -> rusqlite::Result<u64> {
    Ok(r.get::<_, i64>(i)? as u64)
}

pub(super) fn summary_from_row(r: &Row<'_>) -> rusqlite::Result<Result<SessionSummary>> {
    let id: String = r.get(0)?;
    let status: String = r.get(8)?;
    let status = match parse_status(&id, &status) {
        Ok(s) => s,
        Err(e) => return Ok(Err(e)),
    };
    Ok(Ok(SessionSummary {
        title: r.get(1)?,
        first_prompt: r.get(2)?,
        created_at_ms: r.get(3)?,
        updated_at_ms: r.get(4)?,
        provider: r.get(5)?,
        model: r.get(6)?,
        workdir: r.get(7)?,
        status,
        parent_id: r.get(9)?,
        fork_seq: r.get(10)?,
        message_count: count(r, 11)?,
        token_input_total: count(r, 12)?,
        token_output_total: count(r, 13)?,
        plan: PlanCounts {
            done: count(r, 14)?,
            failed: count(r, 15)?,
            total: count(r, 16)?,
        },
        asset_count: count(r, 17)?,
        subagent_of: r.get(18)?,
        source: r.get(19)?,
        branch: r.get(20)?,
        cost_usd: r.get(21)?,
        profile: r.get(22)?,
        id,
    }))
}

pub(super) fn load_header(c: &Connection, session_id: &str) -> Result<Option<SessionHeader>> {
    // Plain columns go straight into the header; status and JSON columns are parsed after
    // the row is read, so a bad value names its column.
    // Read several times a turn: compiled once per connection.
    let row = c
        .prepare_cached(&format!("SELECT {HEADER_COLS} FROM sessions WHERE id = ?1"))?
        .query_row([session_id], |r| {
            let header = SessionHeader {
                id: r.get(0)?,
                title: r.get(1)?,
                created_at_ms: r.get(2)?,
                updated_at_ms: r.get(3)?,
                provider: r.get(4)?,
                model: r.get(5)?,
                workdir: r.get(6)?,
                parent_id: r.get(8)?,
                fork_seq: r.get(9)?,
                conversation_key: r.get(10)?,
                token_input_total: count(r, 16)?,
                token_output_total: count(r, 17)?,
                last_seq: r.get(18)?,
                message_count: count(r, 19)?,
                subagent_of: r.get(20)?,
                branch: r.get(26)?,
                profile: r.get(27)?,
                ..SessionHeader::default()
            };
            let status: String = r.get(7)?;
            let json: [Option<String>; 5] =
                [r.get(11)?, r.get(12)?, r.get(13)?, r.get(14)?, r.get(15)?];
            let source: [Option<String>; 5] =
                [r.get(21)?, r.get(22)?, r.get(23)?, r.get(24)?, r.get(25)?];
            Ok((header, status, json, source))
        })
        .optional()?;
    let Some((mut h, status, [task, todos, skills, plan, ledger], source)) = row else {
        return Ok(None);
    };
    if let [Some(tool), version, id, stamp, meta] = source {
        h.source = Some(SessionSource {
            tool,
            version: version.unwrap_or_default(),
            id: id.unwrap_or_default(),
            stamp,
            metadata: opt_json(&h.id, "source_meta_json", meta)?,
        });
    }
    h.status = parse_status(&h.id, &status)?;
    h.task_state = opt_json(&h.id, "task_state_json", task)?;
    h.todos = opt_json(&h.id, "todos_json", todos)?;
    h.skills = opt_json(&h.id, "skills_json", skills)?;
    h.plan = opt_json(&h.id, "plan_json", plan)?;
    h.ledger = opt_json(&h.id, "ledger_json", ledger)?;
    Ok(Some(h))
}

pub(super) fn load_progress(c: &Connection, session_id: &str) -> Result<PlanProgress> {
    let mut st = c.prepare_cached(
        "SELECT step_id, payload_json FROM step_updates WHERE session_id = ?1 ORDER BY write_seq",
    )?;
    let rows: Vec<(String, String)> = st
        .query_map([session_id], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut p = PlanProgress::default();
    for (step, payload) in rows {
        let u: StepUpdate = from_json(session_id, "step_updates.payload_json", &payload)?;
        p.apply(&step, &u);
    }
    Ok(p)
}

/// Deletes the search-index rows of session `?1`'s messages that no message of another
/// session (a fork sharing them) still points at, reserved rows of pending messages included
/// (see `messages::DEFER_INDEX_BYTES`). Run before the messages go.
pub(super) const DELETE_SESSION_FTS: &str = "DELETE FROM message_fts WHERE rowid IN (
        SELECT abs(m.fts_id) FROM messages m
        WHERE m.session_id = ?1 AND m.fts_id IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM messages o WHERE o.fts_id = m.fts_id AND o.session_id <> ?1))";

const MESSAGE_COLS: &str = "seq, role, parts_json, tool_calls_json, tool_call_id, is_error, \
     tool_metadata_json, created_at_ms, input_tokens, output_tokens, cached_input_tokens, \
     cache_write_tokens, reasoning_tokens, injected, metadata_json";

pub(super) fn load_messages(
    c: &Connection,
    session_id: &str,
    from: i64,
    to: i64,
) -> Result<Vec<Message>> {
    let mut st = c.prepare_cached(&format!(
        "SELECT {MESSAGE_COLS} FROM messages WHERE session_id = ?1 AND seq BETWEEN ?2 AND ?3 ORDER BY seq"
    ))?;
    // (message with plain columns, role, parts, tool calls, tool metadata) as stored.
    type Raw = (
        Message,
        String,
        String,
        Option<String>,
        Option<String>,
        Option<String>,
    );
    let rows: Vec<Raw> = st
        .query_map(params![session_id, from, to], |r| {
            let m = Message {
                seq: r.get(0)?,
                role: Role::User,
                parts: Vec::new(),
                tool_calls: Vec::new(),
                tool_call_id: r.get(4)?,
                is_error: r.get(5)?,
                tool_metadata: None,
                created_at_ms: r.get(7)?,
                usage: Usage {
                    input_tokens: count(r, 8)?,
                    output_tokens: count(r, 9)?,
                },
                extra: MessageExtra {
                    tokens: TokenDetail {
                        cached_input_tokens: count(r, 10)?,
                        cache_write_tokens: count(r, 11)?,
                        reasoning_tokens: count(r, 12)?,
                    },
                    injected: r.get(13)?,
                    metadata: None,
                },
            };
            Ok((m, r.get(1)?, r.get(2)?, r.get(3)?, r.get(6)?, r.get(14)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    rows.into_iter()
        .map(|(mut m, role, parts, calls, meta, extra_meta)| {
            m.role = Role::parse(&role).ok_or_else(|| StoreError::BadColumn {
                session_id: session_id.to_string(),
                column: "role",
                detail: format!("unknown role '{role}' at seq {}", m.seq),
            })?;
            m.parts = from_json(session_id, "parts_json", &parts)?;
            m.tool_calls = opt_json(session_id, "tool_calls_json", calls)?.unwrap_or_default();
            m.tool_metadata = opt_json(session_id, "tool_metadata_json", meta)?;
            m.extra.metadata = opt_json(session_id, "metadata_json", extra_meta)?;
            Ok(m)
        })
        .collect()
}
