//! Messages: append, load (all of them, or the model's context), and replace a whole
//! transcript (seed 003's ReplaceTranscript; compaction no longer uses it: it appends its
//! summary and keeps every message).

use rusqlite::{Connection, OptionalExtension, Transaction, params};

use super::core::{Store, from_json, opt_json, to_json_opt};
use super::rows::{DELETE_SESSION_FTS, load_header, load_messages, load_progress};
use super::sessions::conversation_key;
use crate::session::error::Result;
use crate::session::model::*;

/// The seq the model's context of a session starts at: the latest compaction summary's
/// [`CONTEXT_FROM`] (1 for a summary that replaced the transcript, and when there is none).
/// Walks back from the newest message to that summary, so it reads only the context itself.
pub(super) fn context_start(c: &Connection, session_id: &str) -> Result<i64> {
    let meta: Option<Option<String>> = c
        .query_row(
            "SELECT tool_metadata_json FROM messages
             WHERE session_id = ?1 AND role = 'system' AND tool_metadata_json LIKE ?2
             ORDER BY seq DESC LIMIT 1",
            params![session_id, format!("%\"{COMPACTION_MARK}\"%")],
            |r| r.get(0),
        )
        .optional()?;
    Ok(meta
        .flatten()
        .and_then(|m| serde_json::from_str::<serde_json::Value>(&m).ok())
        .filter(|v| v.get(COMPACTION_MARK).is_some())
        .and_then(|v| v.get(CONTEXT_FROM).and_then(serde_json::Value::as_i64))
        .unwrap_or(1))
}

/// A message whose searchable text is at least this long is indexed after its commit, not in
/// it. Indexing is most of the cost of committing a long reply (tokenising 140 KB, then
/// flushing the postings and FTS5's periodic segment merge at COMMIT: 4–8 ms on average, the
/// merges and the WAL checkpoint they push out landing on random commits), while the rest of
/// the commit takes a fraction of a millisecond; short messages cost little to index and stay
/// indexed in their own transaction.
///
/// The commit reserves the message's index row (an empty body, so ranking by row id, newest
/// first, is as if it had been indexed then) and stores `fts_id = -rowid`: "index pending". A
/// follow-up transaction fills the row in and flips the sign ([`Store::catch_up_search_index`]):
/// on a background thread right after the commit, on the next open, and before every search,
/// so a message is found by any search once its commit has returned, crash or not. An index
/// row never matches a query while it is empty, and older binaries, which only join positive
/// ids, see nothing of it.
pub(super) const DEFER_INDEX_BYTES: usize = 16 * 1024;

/// Pending messages indexed per follow-up transaction, so a large backlog (a crash mid-way
/// through a burst of long tool results) does not hold the write lock for long.
const CATCH_UP_BATCH: i64 = 32;

/// Longest first-prompt excerpt kept in the header.
const FIRST_PROMPT_CHARS: usize = 200;

impl Store {
    /// Appends messages and updates the header (activity time, provider, model, workdir, token
    /// deltas, counts) in one transaction. Cost does not depend on the session's length.
    /// Returns the seqs assigned.
    pub fn append_messages(
        &self,
        session_id: &str,
        messages: &[NewMessage],
        meta: &AppendMeta,
    ) -> Result<Vec<i64>> {
        let appended = self.write(|tx| self.append_in(tx, session_id, messages, meta))?;
        Ok(self.after_append(appended))
    }

    /// [`Store::append_messages`] inside a caller's transaction, which must call
    /// [`Store::after_append`] once it has committed.
    pub(super) fn append_in(
        &self,
        tx: &Transaction<'_>,
        session_id: &str,
        messages: &[NewMessage],
        meta: &AppendMeta,
    ) -> Result<Appended> {
        let now = self.now();
        {
            let (last_seq, first_prompt, key): (i64, String, Option<String>) = tx
                .query_row(
                    "SELECT last_seq, first_prompt, conversation_key FROM sessions WHERE id = ?1",
                    [session_id],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .optional()?
                .ok_or_else(|| self.not_found(session_id))?;
            let mut first_prompt = first_prompt;
            let mut key = key;
            let mut seqs = Vec::with_capacity(messages.len());
            let mut index_pending = false;
            let (mut tin, mut tout) = (0u64, 0u64);
            for (i, m) in messages.iter().enumerate() {
                let seq = last_seq + 1 + i as i64;
                index_pending |= insert_indexed(tx, session_id, seq, m, now, Index::DeferLong)?;
                if m.role() == Role::User && first_prompt.is_empty() {
                    let text = user_text(&m.parts);
                    if !text.trim().is_empty() {
                        first_prompt = text.chars().take(FIRST_PROMPT_CHARS).collect();
                        if key.is_none() {
                            key = Some(conversation_key(&text));
                        }
                    }
                }
                tin += m.usage.input_tokens;
                tout += m.usage.output_tokens;
                seqs.push(seq);
            }
            // Every append runs it: compiled once per connection.
            tx.prepare_cached(
                "UPDATE sessions SET
                    updated_at_ms = max(updated_at_ms, ?2),
                    provider = coalesce(nullif(?3, ''), provider),
                    model = coalesce(nullif(?4, ''), model),
                    workdir = coalesce(nullif(?5, ''), workdir),
                    token_input_total = token_input_total + ?6,
                    token_output_total = token_output_total + ?7,
                    last_seq = ?8,
                    message_count = message_count + ?9,
                    first_prompt = ?10,
                    conversation_key = ?11,
                    profile = coalesce(nullif(?12, ''), profile)
                 WHERE id = ?1",
            )?
            .execute(params![
                session_id,
                now,
                meta.provider,
                meta.model,
                meta.workdir,
                tin as i64,
                tout as i64,
                last_seq + messages.len() as i64,
                messages.len() as i64,
                first_prompt,
                key,
                meta.profile
            ])?;
            Ok(Appended {
                seqs,
                index_pending,
            })
        }
    }

    /// After an append's transaction committed: hands deferred indexing to the background
    /// thread and returns the seqs.
    pub(super) fn after_append(&self, appended: Appended) -> Vec<i64> {
        if appended.index_pending {
            self.index_soon();
        }
        appended.seqs
    }

    /// Indexes for search the messages whose indexing was deferred past their commit (see
    /// `DEFER_INDEX_BYTES`), in follow-up transactions, then moves the WAL into the
    /// database; returns how many were indexed. The background thread does this right after
    /// such a commit (and after an open that finds some pending); call it to have it done now.
    ///
    /// The checkpoint is passive, on a reading connection, so writers are not held up. Each
    /// long message adds about a hundred pages to the WAL; without it the auto-checkpoint
    /// (every 1,000 pages, two fsyncs) lands on some later commit, often the next long
    /// reply's.
    pub fn catch_up_search_index(&self) -> Result<usize> {
        let n = self.index_pending_now()?;
        if n > 0 {
            self.with_conn(|c| {
                c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))?;
                Ok(())
            })?;
        }
        Ok(n)
    }

    /// Indexes the pending messages, if any; returns how many. Searches run this first.
    pub(super) fn index_pending_now(&self) -> Result<usize> {
        // Usually nothing is pending: a read, not the write lock, tells.
        if !self.search_index_pending()? {
            return Ok(0);
        }
        let mut total = 0;
        loop {
            let n = self.write(index_pending_in)?;
            total += n;
            if n < CATCH_UP_BATCH as usize {
                return Ok(total);
            }
        }
    }

    /// Whether some message waits to be indexed. One probe of the `fts_id` index.
    fn search_index_pending(&self) -> Result<bool> {
        self.with_conn(|c| super::core::index_pending(c))
    }

    /// Replaces the whole transcript (compaction) in one transaction: old messages go, the new
    /// ones are written with seqs from 1, task state, tokens, provider/model/workdir and counts
    /// are updated. The title is kept.
    pub fn replace_transcript(&self, session_id: &str, rep: &Replacement) -> Result<()> {
        let now = self.now();
        self.write(|tx| {
            self.require(tx, session_id)?;
            tx.execute(DELETE_SESSION_FTS, [session_id])?;
            tx.execute("DELETE FROM messages WHERE session_id = ?1", [session_id])?;
            // The recorded file changes stay (a rewind still compares against them) but no
            // longer belong to a message of the new transcript.
            tx.execute(
                "UPDATE file_changes SET seq = 0 WHERE session_id = ?1",
                [session_id],
            )?;
            for (i, m) in rep.messages.iter().enumerate() {
                insert_message(tx, session_id, i as i64 + 1, m, now)?;
            }
            // Every append runs it: compiled once per connection.
            tx.prepare_cached(
                "UPDATE sessions SET
                    updated_at_ms = max(updated_at_ms, ?2),
                    task_state_json = ?3,
                    token_input_total = ?4,
                    token_output_total = ?5,
                    provider = coalesce(nullif(?6, ''), provider),
                    model = coalesce(nullif(?7, ''), model),
                    workdir = coalesce(nullif(?8, ''), workdir),
                    last_seq = ?9,
                    message_count = ?9
                 WHERE id = ?1",
            )?
            .execute(params![
                session_id,
                now,
                to_json_opt(rep.task_state.as_ref()),
                rep.token_totals.0 as i64,
                rep.token_totals.1 as i64,
                rep.meta.provider,
                rep.meta.model,
                rep.meta.workdir,
                rep.messages.len() as i64
            ])?;
            Ok(())
        })
    }

    /// Header, plan progress and every message, in one read transaction.
    pub fn load_session(&self, session_id: &str) -> Result<Session> {
        self.with_conn(|c| {
            let tx = c.savepoint()?; // its own transaction, or part of a `read_consistent` one
            let header = load_header(&tx, session_id)?.ok_or_else(|| self.not_found(session_id))?;
            let plan_progress = load_progress(&tx, session_id)?;
            let messages = load_messages(&tx, session_id, 1, i64::MAX)?;
            Ok(Session {
                header,
                plan_progress,
                messages,
            })
        })
    }

    /// What the model is sent of a session, in one read transaction: the header, plan
    /// progress and the messages from where the latest compaction's kept tail starts (its
    /// summary among them), or every message when it was never compacted. Reads only that
    /// part, however long the transcript before it.
    pub fn load_context(&self, session_id: &str) -> Result<Session> {
        self.with_conn(|c| {
            let tx = c.savepoint()?; // its own transaction, or part of a `read_consistent` one
            let header = load_header(&tx, session_id)?.ok_or_else(|| self.not_found(session_id))?;
            let plan_progress = load_progress(&tx, session_id)?;
            let from = context_start(&tx, session_id)?;
            let messages = load_messages(&tx, session_id, from, i64::MAX)?;
            Ok(Session {
                header,
                plan_progress,
                messages,
            })
        })
    }

    /// Messages with `from <= seq <= to`, by seq. For long transcripts.
    pub fn load_messages(&self, session_id: &str, from: i64, to: i64) -> Result<Vec<Message>> {
        self.with_conn(|c| load_messages(c, session_id, from, to))
    }

    /// What the person typed recently, newest first (the editor's ↑ history): session
    /// `first`'s own user messages, then the workspace's (plan steps' prompts, injected text
    /// and what hooks added to a prompt left out), each text once, at most `limit`. Cheap at any size: each part looks
    /// through at most the newest `HISTORY_SCAN` messages (the session's by its (session,
    /// seq) key, the workspace's by rowid).
    pub(crate) fn recent_user_texts(
        &self,
        first: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>> {
        self.with_conn(|c| {
            let tx = c.savepoint()?; // its own transaction, or part of a `read_consistent` one
            let mut raw: Vec<String> = Vec::new();
            if let Some(id) = first {
                let mut st = tx.prepare_cached(
                    "SELECT parts_json FROM messages WHERE session_id = ?1 AND role = 'user' \
                     AND injected = 0 AND seq > (SELECT coalesce(max(seq), 0) FROM messages \
                     WHERE session_id = ?1) - ?3 ORDER BY seq DESC LIMIT ?2",
                )?;
                let rows = st.query_map(params![id, limit as i64, HISTORY_SCAN], |r| {
                    r.get::<_, String>(0)
                })?;
                for r in rows {
                    raw.push(r?);
                }
            }
            let mut st = tx.prepare_cached(
                "SELECT m.parts_json FROM messages m JOIN sessions s ON s.id = m.session_id \
                 WHERE m.id > (SELECT coalesce(max(id), 0) FROM messages) - ?1 \
                 AND m.role = 'user' AND m.injected = 0 \
                 AND NOT (s.parent_id IS NOT NULL AND s.fork_seq IS NULL) \
                 ORDER BY m.id DESC LIMIT ?2",
            )?;
            let rows = st.query_map(params![HISTORY_SCAN, limit as i64], |r| {
                r.get::<_, String>(0)
            })?;
            for r in rows {
                raw.push(r?);
            }
            drop(st);
            let mut out: Vec<String> = Vec::new();
            for parts in raw {
                let Ok(parts) = serde_json::from_str::<Vec<Part>>(&parts) else {
                    continue;
                };
                // What was typed is the first text part: the parts after it are what hooks
                // added (`additionalContext`), never typed.
                let Some(text) = parts.iter().find_map(|p| match p {
                    Part::Text { text } => Some(text.clone()),
                    _ => None,
                }) else {
                    continue;
                };
                if !text.trim().is_empty() && !out.contains(&text) {
                    out.push(text);
                }
                if out.len() >= limit {
                    break;
                }
            }
            Ok(out)
        })
    }
}

/// How many of the newest messages the workspace's ↑ history looks through.
pub(super) const HISTORY_SCAN: i64 = 20_000;

/// What an append carries out: the seqs given, and whether indexing was left for later.
pub(super) struct Appended {
    pub(super) seqs: Vec<i64>,
    index_pending: bool,
}

/// When a message's text goes into the search index.
#[derive(Clone, Copy, PartialEq)]
enum Index {
    /// In the inserting transaction.
    Now,
    /// In a follow-up transaction when the text is long ([`DEFER_INDEX_BYTES`]).
    DeferLong,
}

/// Inserts one message and indexes its text.
pub(super) fn insert_message(
    tx: &Transaction<'_>,
    session_id: &str,
    seq: i64,
    m: &NewMessage,
    now: i64,
) -> Result<()> {
    insert_indexed(tx, session_id, seq, m, now, Index::Now).map(|_| ())
}

/// [`insert_message`] of a message the caller gives up: its parts go as soon as they are
/// serialised, so a long imported message is held once, not twice, while SQLite takes it.
pub(super) fn insert_owned(
    tx: &Transaction<'_>,
    session_id: &str,
    seq: i64,
    mut m: NewMessage,
    now: i64,
) -> Result<()> {
    let parts = serde_json::to_string(&m.parts).unwrap_or_else(|_| "[]".into());
    let body = search_body(&m.parts, &m.tool_calls);
    m.parts = Vec::new();
    insert_with(tx, session_id, seq, &m, now, parts, Some(body)).map(|_| ())
}

/// Inserts one message and indexes its text (or reserves its index row). Returns whether
/// indexing was deferred.
fn insert_indexed(
    tx: &Transaction<'_>,
    session_id: &str,
    seq: i64,
    m: &NewMessage,
    now: i64,
    index: Index,
) -> Result<bool> {
    let parts = serde_json::to_string(&m.parts).unwrap_or_else(|_| "[]".into());
    let defer =
        index == Index::DeferLong && search_len(&m.parts, &m.tool_calls) >= DEFER_INDEX_BYTES;
    let body = (!defer).then(|| search_body(&m.parts, &m.tool_calls));
    insert_with(tx, session_id, seq, m, now, parts, body)
}

/// Inserts one message with its serialised parts; `body`: its index text (`None`: the index
/// row is reserved, to be filled in later). Returns whether indexing was deferred.
fn insert_with(
    tx: &Transaction<'_>,
    session_id: &str,
    seq: i64,
    m: &NewMessage,
    now: i64,
    parts: String,
    body: Option<String>,
) -> Result<bool> {
    let calls = if m.tool_calls.is_empty() {
        None
    } else {
        Some(serde_json::to_string(&m.tool_calls).unwrap_or_else(|_| "[]".into()))
    };
    let meta = to_json_opt(m.tool_metadata.as_ref());
    let defer = body.is_none();
    let fts_id = if let Some(body) = body {
        let body = crate::session::search::index_text(&body);
        if body.is_empty() {
            None
        } else {
            let mut fts = tx.prepare_cached("INSERT INTO message_fts (body) VALUES (?1)")?;
            fts.execute([body])?;
            Some(tx.last_insert_rowid())
        }
    } else {
        let mut fts = tx.prepare_cached("INSERT INTO message_fts (body) VALUES ('')")?;
        fts.execute([])?;
        Some(-tx.last_insert_rowid())
    };
    let mut st = tx.prepare_cached(
        "INSERT INTO messages (session_id, seq, role, parts_json, tool_calls_json, tool_call_id, is_error,
            tool_metadata_json, created_at_ms, input_tokens, output_tokens, fts_id,
            cached_input_tokens, cache_write_tokens, reasoning_tokens, injected, metadata_json)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
    )?;
    st.execute(params![
        session_id,
        seq,
        m.role().as_str(),
        parts,
        calls,
        m.tool_call_id,
        m.is_error,
        meta,
        m.created_at_ms.unwrap_or(now),
        m.usage.input_tokens as i64,
        m.usage.output_tokens as i64,
        fts_id,
        m.extra.tokens.cached_input_tokens as i64,
        m.extra.tokens.cache_write_tokens as i64,
        m.extra.tokens.reasoning_tokens as i64,
        m.extra.injected,
        to_json_opt(m.extra.metadata.as_ref()),
    ])?;
    Ok(defer)
}

/// Fills in up to [`CATCH_UP_BATCH`] reserved index rows, oldest first, from the stored
/// messages' text; returns how many. A fork's copies share the reservation and flip with it.
fn index_pending_in(tx: &Transaction<'_>) -> Result<usize> {
    let pending: Vec<(i64, String, String, Option<String>)> = {
        let mut st = tx.prepare_cached(
            "SELECT fts_id, session_id, parts_json, tool_calls_json FROM messages
             WHERE id IN (SELECT min(id) FROM messages WHERE fts_id < 0
                          GROUP BY fts_id ORDER BY fts_id DESC LIMIT ?1)",
        )?;
        st.query_map([CATCH_UP_BATCH], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?
        .collect::<rusqlite::Result<_>>()?
    };
    let mut fill = tx.prepare_cached("UPDATE message_fts SET body = ?2 WHERE rowid = ?1")?;
    let mut drop_row = tx.prepare_cached("DELETE FROM message_fts WHERE rowid = ?1")?;
    let mut flip = tx.prepare_cached("UPDATE messages SET fts_id = ?2 WHERE fts_id = ?1")?;
    let n = pending.len();
    for (reserved, session_id, parts, calls) in pending {
        let rowid = -reserved;
        // A message whose JSON no longer decodes is reported by whoever loads it; its index
        // row stays empty rather than blocking every later catch-up.
        let parts: Vec<Part> = from_json(&session_id, "parts_json", &parts).unwrap_or_default();
        let calls: Vec<ToolCall> = opt_json(&session_id, "tool_calls_json", calls)
            .ok()
            .flatten()
            .unwrap_or_default();
        let body = search_body(&parts, &calls);
        let body = crate::session::search::index_text(&body);
        if body.is_empty() {
            drop_row.execute([rowid])?;
            flip.execute(params![reserved, None::<i64>])?;
        } else {
            fill.execute(params![rowid, body])?;
            flip.execute(params![reserved, rowid])?;
        }
    }
    Ok(n)
}

/// Length of [`search_body`] before trimming, without building it.
fn search_len(parts: &[Part], calls: &[ToolCall]) -> usize {
    let parts: usize = parts
        .iter()
        .map(|p| match p {
            Part::Text { text } | Part::Reasoning { text, .. } => text.len() + 1,
            Part::Image { .. } => 0,
        })
        .sum();
    let calls: usize = calls
        .iter()
        .map(|c| c.name.len() + c.arguments.len() + 2)
        .sum();
    parts + calls
}

/// Text indexed for search: text parts, reasoning, and tool call names and arguments.
fn search_body(parts: &[Part], calls: &[ToolCall]) -> String {
    let mut out = String::new();
    let mut push = |s: &str| {
        let room = crate::session::search::INDEX_MAX_BYTES.saturating_sub(out.len());
        if s.len() <= room {
            out.push_str(s);
        } else {
            let cut = s.floor_char_boundary(room);
            out.push_str(&s[..cut]);
        }
    };
    for p in parts {
        match p {
            Part::Text { text } | Part::Reasoning { text, .. } => {
                push(text);
                push("\n");
            }
            Part::Image { .. } => {}
        }
    }
    for c in calls {
        push(&c.name);
        push(" ");
        push(&c.arguments);
        push("\n");
    }
    out.truncate(out.trim_end().len());
    out
}

fn user_text(parts: &[Part]) -> String {
    parts
        .iter()
        .filter_map(|p| match p {
            Part::Text { text } => Some(text.as_str()),
            Part::Image { .. } | Part::Reasoning { .. } => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}
