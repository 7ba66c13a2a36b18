//! The workspace session store: one SQLite database per workspace, behind intent-named methods.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, Row, Transaction, TransactionBehavior, params};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

use super::error::{Result, StoreError};
use super::model::*;
use super::plan::{Plan, PlanProgress, StepUpdate};
use super::schema::{classify, open_connection};
use super::search::{self, SearchResults};
use super::workspace::WorkspacePaths;

/// Deletes the search-index rows of session `?1`'s messages that no message of another
/// session (a fork sharing them) still points at. Run before the messages go.
const DELETE_SESSION_FTS: &str = "DELETE FROM message_fts WHERE rowid IN (
        SELECT m.fts_id FROM messages m
        WHERE m.session_id = ?1 AND m.fts_id IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM messages o WHERE o.fts_id = m.fts_id AND o.session_id <> ?1))";

/// Default largest asset accepted, in bytes.
pub const DEFAULT_ASSET_LIMIT: u64 = 32 * 1024 * 1024;

/// Longest first-prompt excerpt kept in the header.
const FIRST_PROMPT_CHARS: usize = 200;

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Checks an id is 1..=128 characters of `[A-Za-z0-9_-]`.
pub fn validate_id(what: &'static str, id: &str) -> Result<()> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(StoreError::InvalidId {
            what,
            id: id.chars().take(80).collect(),
        })
    }
}

/// What a new session starts with.
#[derive(Debug, Clone, Default)]
pub struct NewSession {
    /// Id to use; a fresh UUID when `None`.
    pub id: Option<String>,
    /// Title.
    pub title: String,
    /// Provider.
    pub provider: String,
    /// Model.
    pub model: String,
    /// Workdir.
    pub workdir: String,
    /// Conversation key; set from the first user message when `None`.
    pub conversation_key: Option<String>,
}

/// SHA-256 hex of a first user message: the conversation key of the lifecycle seed.
pub fn conversation_key(first_user_text: &str) -> String {
    Sha256::digest(first_user_text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

struct Inner {
    paths: WorkspacePaths,
    db: PathBuf,
    pool: Mutex<Vec<Connection>>,
    /// A connection kept only to ask `PRAGMA data_version` (see [`Store::data_version`]).
    watch: Mutex<Option<Connection>>,
    asset_limit: u64,
}

/// A handle on one workspace's store. Cheap to clone; safe to share across threads (each call
/// borrows a pooled connection, writes take SQLite's write lock with `BEGIN IMMEDIATE`).
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("db", &self.inner.db).finish()
    }
}

const SUMMARY_COLS: &str = "id, title, first_prompt, created_at_ms, updated_at_ms, provider, model, \
     workdir, status, parent_id, fork_seq, message_count, token_input_total, token_output_total, \
     plan_done, plan_failed, plan_total, asset_count";

const HEADER_COLS: &str = "id, title, created_at_ms, updated_at_ms, provider, model, workdir, \
     status, parent_id, fork_seq, conversation_key, task_state_json, todos_json, skills_json, \
     plan_json, ledger_json, token_input_total, token_output_total, last_seq, message_count";

const MESSAGE_COLS: &str = "seq, role, parts_json, tool_calls_json, tool_call_id, is_error, \
     tool_metadata_json, created_at_ms, input_tokens, output_tokens";

impl Store {
    /// Opens (creating folders and database as needed) the store of a workspace.
    pub fn open(paths: WorkspacePaths) -> Result<Store> {
        paths.create_dirs()?;
        let db = paths.db();
        let conn = open_connection(&db, true, &paths.root)?;
        Ok(Store::from_parts(paths, db, conn))
    }

    /// Opens the store only if its database exists; never creates anything.
    pub fn open_existing(paths: WorkspacePaths) -> Result<Option<Store>> {
        let db = paths.db();
        if !db.exists() {
            return Ok(None);
        }
        let conn = open_connection(&db, false, &paths.root)?;
        Ok(Some(Store::from_parts(paths, db, conn)))
    }

    /// Opens the existing store in a workspace data folder (`<home>/projects/<hash>`), taking
    /// the workspace root from the database itself. For commands that span every workspace.
    pub fn open_workspace_dir(dir: &Path) -> Result<Store> {
        let probe = WorkspacePaths {
            root: dir.to_path_buf(),
            dir: dir.to_path_buf(),
        };
        let db = probe.db();
        if !db.exists() {
            return Err(StoreError::io(db, std::io::ErrorKind::NotFound.into()));
        }
        let conn = open_connection(&db, false, &probe.root)?;
        let root: String = conn
            .query_row("SELECT value FROM workspace WHERE key = 'root'", [], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| classify(&db, e))?
            .unwrap_or_default();
        let paths = WorkspacePaths {
            root: if root.is_empty() {
                probe.root
            } else {
                PathBuf::from(root)
            },
            dir: probe.dir,
        };
        Ok(Store::from_parts(paths, db, conn))
    }

    fn from_parts(paths: WorkspacePaths, db: PathBuf, conn: Connection) -> Store {
        Store {
            inner: Arc::new(Inner {
                paths,
                db,
                pool: Mutex::new(vec![conn]),
                watch: Mutex::new(None),
                asset_limit: DEFAULT_ASSET_LIMIT,
            }),
        }
    }

    /// The workspace's paths.
    pub fn paths(&self) -> &WorkspacePaths {
        &self.inner.paths
    }

    /// The workspace root recorded inside the database.
    pub fn recorded_root(&self) -> Result<String> {
        self.with_conn(|c| {
            Ok(
                c.query_row("SELECT value FROM workspace WHERE key = 'root'", [], |r| {
                    r.get(0)
                })
                .optional()?
                .unwrap_or_default(),
            )
        })
    }

    /// The PRAGMAs of a connection this store opened: `journal_mode`, `synchronous`,
    /// `foreign_keys`, `busy_timeout`, `user_version`, as (name, value) pairs. For tests.
    #[doc(hidden)]
    pub fn pragmas(&self) -> Result<Vec<(String, String)>> {
        self.with_conn(|c| {
            let mut out = Vec::new();
            for name in [
                "journal_mode",
                "synchronous",
                "foreign_keys",
                "busy_timeout",
                "user_version",
            ] {
                let v: rusqlite::types::Value = c.pragma_query_value(None, name, |r| r.get(0))?;
                let v = match v {
                    rusqlite::types::Value::Integer(i) => i.to_string(),
                    rusqlite::types::Value::Text(t) => t,
                    other => format!("{other:?}"),
                };
                out.push((name.to_string(), v));
            }
            Ok(out)
        })
    }

    /// A number that changes whenever any other connection — this process's own writes
    /// included, or another process — commits to the database. Cheap enough to poll every
    /// second: a view compares it with the last one it saw and reloads only on a change.
    pub fn data_version(&self) -> Result<i64> {
        let mut watch = self.inner.watch.lock().unwrap_or_else(|p| p.into_inner());
        if watch.is_none() {
            *watch = Some(open_connection(
                &self.inner.db,
                false,
                &self.inner.paths.root,
            )?);
        }
        let conn = watch.as_ref().expect("watch connection just opened");
        conn.pragma_query_value(None, "data_version", |r| r.get(0))
            .map_err(|e| classify(&self.inner.db, e))
    }

    /// Largest asset accepted.
    pub fn asset_limit(&self) -> u64 {
        self.inner.asset_limit
    }

    fn with_conn<T>(&self, f: impl FnOnce(&mut Connection) -> Result<T>) -> Result<T> {
        let taken = self
            .inner
            .pool
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop();
        let mut conn = match taken {
            Some(c) => c,
            None => open_connection(&self.inner.db, false, &self.inner.paths.root)?,
        };
        let out = f(&mut conn);
        let mut pool = self.inner.pool.lock().unwrap_or_else(|p| p.into_inner());
        if pool.len() < 8 {
            pool.push(conn);
        }
        out.map_err(|e| match e {
            StoreError::Sqlite(s) => classify(&self.inner.db, s),
            other => other,
        })
    }

    /// Runs `f` in a `BEGIN IMMEDIATE` transaction: all or nothing.
    fn write<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        self.with_conn(|c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let out = f(&tx)?;
            tx.commit()?;
            Ok(out)
        })
    }

    // ----- sessions -------------------------------------------------------------------------

    /// Creates a session header with no messages.
    pub fn create_session(&self, new: NewSession) -> Result<SessionHeader> {
        let id = match new.id {
            Some(id) => {
                validate_id("session", &id)?;
                id
            }
            None => uuid::Uuid::new_v4().to_string(),
        };
        let now = now_ms();
        self.write(|tx| {
            if session_exists(tx, &id)? {
                return Err(StoreError::AlreadyExists(id.clone()));
            }
            tx.execute(
                "INSERT INTO sessions (id, title, created_at_ms, updated_at_ms, provider, model, workdir, conversation_key)
                 VALUES (?1, ?2, ?3, ?3, ?4, ?5, ?6, ?7)",
                params![id, new.title, now, new.provider, new.model, new.workdir, new.conversation_key],
            )?;
            Ok(())
        })?;
        self.load_header(&id)
    }

    /// Appends messages and updates the header (activity time, provider, model, workdir, token
    /// deltas, counts) in one transaction. Cost does not depend on the session's length.
    /// Returns the seqs assigned.
    pub fn append_messages(
        &self,
        session_id: &str,
        messages: &[NewMessage],
        meta: &AppendMeta,
    ) -> Result<Vec<i64>> {
        let now = now_ms();
        self.write(|tx| {
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
            let (mut tin, mut tout) = (0u64, 0u64);
            for (i, m) in messages.iter().enumerate() {
                let seq = last_seq + 1 + i as i64;
                insert_message(tx, session_id, seq, m, now)?;
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
            tx.execute(
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
                    conversation_key = ?11
                 WHERE id = ?1",
                params![
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
                    key
                ],
            )?;
            Ok(seqs)
        })
    }

    /// Overwrites header fields only; writes no message.
    pub fn update_state(&self, session_id: &str, update: &StateUpdate) -> Result<()> {
        if let Some(Some(plan)) = &update.plan {
            plan.validate()?;
        }
        self.write(|tx| {
            self.require(tx, session_id)?;
            let set = |col: &str, v: &dyn rusqlite::ToSql| -> Result<()> {
                tx.execute(&format!("UPDATE sessions SET {col} = ?2 WHERE id = ?1"), params![session_id, v])?;
                Ok(())
            };
            if let Some(t) = &update.title {
                set("title", t)?;
            }
            if let Some(w) = &update.workdir {
                set("workdir", w)?;
            }
            if let Some(p) = &update.provider {
                set("provider", p)?;
            }
            if let Some(m) = &update.model {
                set("model", m)?;
            }
            if let Some(s) = update.status {
                set("status", &s.as_str())?;
            }
            if let Some(v) = &update.task_state {
                set("task_state_json", &to_json_opt(v.as_ref()))?;
            }
            if let Some(v) = &update.todos {
                set("todos_json", &to_json_opt(v.as_ref()))?;
            }
            if let Some(v) = &update.skills {
                set("skills_json", &to_json_opt(v.as_ref()))?;
            }
            if let Some(v) = &update.ledger {
                set("ledger_json", &to_json_opt(v.as_ref()))?;
            }
            if let Some((i, o)) = update.token_totals {
                tx.execute(
                    "UPDATE sessions SET token_input_total = ?2, token_output_total = ?3 WHERE id = ?1",
                    params![session_id, i as i64, o as i64],
                )?;
            }
            if let Some(plan) = &update.plan {
                set("plan_json", &to_json_opt(plan.as_ref()))?;
                if let Some(plan) = plan {
                    let keep: HashSet<&str> = plan.steps.iter().map(|s| s.id.as_str()).collect();
                    let stale: Vec<String> = {
                        let mut st = tx.prepare("SELECT DISTINCT step_id FROM step_updates WHERE session_id = ?1")?;
                        st.query_map([session_id], |r| r.get::<_, String>(0))?
                            .collect::<rusqlite::Result<Vec<_>>>()?
                            .into_iter()
                            .filter(|s| !keep.contains(s.as_str()))
                            .collect()
                    };
                    for s in stale {
                        tx.execute(
                            "DELETE FROM step_updates WHERE session_id = ?1 AND step_id = ?2",
                            params![session_id, s],
                        )?;
                    }
                } else {
                    tx.execute("DELETE FROM step_updates WHERE session_id = ?1", [session_id])?;
                }
                refresh_plan_counts(tx, session_id)?;
            }
            if update.touch {
                tx.execute(
                    "UPDATE sessions SET updated_at_ms = max(updated_at_ms, ?2) WHERE id = ?1",
                    params![session_id, now_ms()],
                )?;
            }
            Ok(())
        })
    }

    /// Renames a session (not counted as activity).
    pub fn rename(&self, session_id: &str, title: &str) -> Result<()> {
        self.update_state(
            session_id,
            &StateUpdate {
                title: Some(title.to_string()),
                ..StateUpdate::default()
            },
        )
    }

    /// Replaces the whole transcript (compaction) in one transaction: old messages go, the new
    /// ones are written with seqs from 1, task state, tokens, provider/model/workdir and counts
    /// are updated. The title is kept.
    pub fn replace_transcript(&self, session_id: &str, rep: &Replacement) -> Result<()> {
        let now = now_ms();
        self.write(|tx| {
            self.require(tx, session_id)?;
            tx.execute(DELETE_SESSION_FTS, [session_id])?;
            tx.execute("DELETE FROM messages WHERE session_id = ?1", [session_id])?;
            for (i, m) in rep.messages.iter().enumerate() {
                insert_message(tx, session_id, i as i64 + 1, m, now)?;
            }
            tx.execute(
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
                params![
                    session_id,
                    now,
                    to_json_opt(rep.task_state.as_ref()),
                    rep.token_totals.0 as i64,
                    rep.token_totals.1 as i64,
                    rep.meta.provider,
                    rep.meta.model,
                    rep.meta.workdir,
                    rep.messages.len() as i64
                ],
            )?;
            Ok(())
        })
    }

    /// Lists session summaries from the header table alone, newest activity first.
    pub fn list(&self, q: &ListQuery) -> Result<ListPage> {
        let mut items = Vec::new();
        let mut keys = Vec::new();
        // One row past the page tells whether there is more beyond it.
        let fetch = if q.limit > 0 { q.limit + 1 } else { 0 };
        self.each_summary_row(q, fetch, |summary, rowid| {
            keys.push(PageKey {
                updated_at_ms: summary.updated_at_ms,
                rowid,
            });
            items.push(summary);
            Ok(())
        })?;
        let more = q.limit > 0 && items.len() > q.limit;
        if more {
            items.truncate(q.limit);
        }
        let beyond = if more { keys.pop() } else { None };
        if q.before.is_some() || q.from_end {
            // Read upwards (oldest first): turn the page the right way round.
            items.reverse();
            keys.reverse();
            return Ok(ListPage {
                items,
                next: None,
                keys,
                above: beyond,
            });
        }
        let next = if more { keys.last().cloned() } else { None };
        Ok(ListPage {
            items,
            next,
            keys,
            above: None,
        })
    }

    /// Where a session stands in the list: a key that starts a page at it (for
    /// [`ListQuery::after`]) and the number of sessions above it. `None` if it does not exist.
    pub fn locate(&self, session_id: &str) -> Result<Option<(PageKey, u64)>> {
        self.with_conn(|c| {
            let Some((at, rowid)) = c
                .query_row(
                    "SELECT updated_at_ms, rowid FROM sessions WHERE id = ?1",
                    [session_id],
                    |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
                )
                .optional()?
            else {
                return Ok(None);
            };
            let above: i64 = c.query_row(
                "SELECT count(*) FROM sessions
                 WHERE updated_at_ms > ?1 OR (updated_at_ms = ?1 AND rowid > ?2)",
                params![at, rowid],
                |r| r.get(0),
            )?;
            let key = PageKey {
                updated_at_ms: at,
                rowid: rowid + 1,
            };
            Ok(Some((key, above as u64)))
        })
    }

    /// The rows [`Store::list`] would return, handed to `f` one at a time in list order and
    /// never held together: memory stays flat however many sessions there are.
    pub fn for_each_summary(
        &self,
        q: &ListQuery,
        mut f: impl FnMut(SessionSummary) -> Result<()>,
    ) -> Result<()> {
        self.each_summary_row(q, q.limit, |s, _| f(s))
    }

    /// Every session id in byte order, one at a time (from the primary-key index alone).
    pub fn for_each_id(&self, mut f: impl FnMut(&str)) -> Result<()> {
        self.with_conn(|c| {
            let mut st = c.prepare_cached("SELECT id FROM sessions ORDER BY id")?;
            let mut rows = st.query([])?;
            while let Some(r) = rows.next()? {
                f(r.get_ref(0)?.as_str().map_err(rusqlite::Error::from)?);
            }
            Ok(())
        })
    }

    /// Runs the list query (at most `limit` rows, 0 = all) and hands each summary with its
    /// rowid to `f`.
    fn each_summary_row(
        &self,
        q: &ListQuery,
        limit: usize,
        mut f: impl FnMut(SessionSummary, i64) -> Result<()>,
    ) -> Result<()> {
        let mut sql = format!("SELECT {SUMMARY_COLS}, rowid FROM sessions WHERE 1=1");
        let mut args: Vec<Box<dyn rusqlite::ToSql>> = Vec::new();
        if let Some(text) = q.text.as_deref().filter(|t| !t.is_empty()) {
            let pat = format!("%{}%", like_escape(text));
            sql.push_str(" AND (title LIKE ? ESCAPE '\\' OR first_prompt LIKE ? ESCAPE '\\' OR id LIKE ? ESCAPE '\\')");
            args.push(Box::new(pat.clone()));
            args.push(Box::new(pat.clone()));
            args.push(Box::new(format!("{}%", like_escape(text))));
        }
        if !q.statuses.is_empty() {
            let marks = vec!["?"; q.statuses.len()].join(",");
            sql.push_str(&format!(" AND status IN ({marks})"));
            for s in &q.statuses {
                args.push(Box::new(s.as_str()));
            }
        }
        if let Some(k) = &q.after {
            sql.push_str(" AND (updated_at_ms < ? OR (updated_at_ms = ? AND rowid < ?))");
            args.push(Box::new(k.updated_at_ms));
            args.push(Box::new(k.updated_at_ms));
            args.push(Box::new(k.rowid));
        }
        if let Some(k) = &q.before {
            sql.push_str(" AND (updated_at_ms > ? OR (updated_at_ms = ? AND rowid > ?))");
            args.push(Box::new(k.updated_at_ms));
            args.push(Box::new(k.updated_at_ms));
            args.push(Box::new(k.rowid));
        }
        // Ties in activity time go to the later-created session (insertion order). Pages
        // read upwards walk the same index the other way.
        if q.before.is_some() || q.from_end {
            sql.push_str(" ORDER BY updated_at_ms ASC, rowid ASC");
        } else {
            sql.push_str(" ORDER BY updated_at_ms DESC, rowid DESC");
        }
        if limit > 0 {
            sql.push_str(&format!(" LIMIT {limit}"));
        }
        self.with_conn(|c| {
            let mut st = c.prepare_cached(&sql)?;
            let mut rows = st.query(rusqlite::params_from_iter(args.iter()))?;
            while let Some(r) = rows.next()? {
                let summary = summary_from_row(r)??;
                f(summary, r.get::<_, i64>(18)?)?;
            }
            Ok(())
        })
    }

    /// Number of sessions in the workspace.
    pub fn count(&self) -> Result<u64> {
        self.with_conn(|c| {
            Ok(c.query_row("SELECT count(*) FROM sessions", [], |r| r.get::<_, i64>(0))? as u64)
        })
    }

    /// One summary row.
    pub fn summary(&self, session_id: &str) -> Result<SessionSummary> {
        self.with_conn(|c| {
            c.query_row(
                &format!("SELECT {SUMMARY_COLS} FROM sessions WHERE id = ?1"),
                [session_id],
                summary_from_row,
            )
            .optional()?
            .ok_or_else(|| self.not_found(session_id))?
        })
    }

    /// Resolves a full id, a unique prefix, or `last` to a full id.
    pub fn resolve(&self, key: &str) -> Result<String> {
        if key == "last" {
            return self.with_conn(|c| {
                c.query_row(
                    "SELECT id FROM sessions ORDER BY updated_at_ms DESC, rowid DESC LIMIT 1",
                    [],
                    |r| r.get(0),
                )
                .optional()?
                .ok_or_else(|| self.not_found("last"))
            });
        }
        if key.is_empty()
            || !key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(self.not_found(key));
        }
        self.with_conn(|c| {
            let mut st = c.prepare_cached(
                "SELECT id, title, first_prompt FROM sessions WHERE id >= ?1 AND id < ?1 || x'ff'
                 ORDER BY updated_at_ms DESC, rowid DESC LIMIT 21",
            )?;
            let rows: Vec<(String, String, String)> = st
                .query_map([key], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<rusqlite::Result<_>>()?;
            if let Some(exact) = rows.iter().find(|r| r.0 == key) {
                return Ok(exact.0.clone());
            }
            match rows.len() {
                0 => Err(self.not_found(key)),
                1 => Ok(rows[0].0.clone()),
                n => Err(StoreError::Ambiguous {
                    prefix: key.to_string(),
                    more: n > 20,
                    candidates: rows
                        .into_iter()
                        .take(20)
                        .map(|(id, t, p)| (id, if t.is_empty() { p } else { t }))
                        .collect(),
                }),
            }
        })
    }

    /// The most recently active session with this conversation key.
    pub fn find_by_conversation_key(&self, key: &str) -> Result<Option<SessionSummary>> {
        self.with_conn(|c| {
            c.query_row(
                &format!(
                    "SELECT {SUMMARY_COLS} FROM sessions WHERE conversation_key = ?1
                     ORDER BY updated_at_ms DESC, rowid DESC LIMIT 1"
                ),
                [key],
                summary_from_row,
            )
            .optional()?
            .transpose()
        })
    }

    /// The header of a session.
    pub fn load_header(&self, session_id: &str) -> Result<SessionHeader> {
        self.with_conn(|c| load_header(c, session_id)?.ok_or_else(|| self.not_found(session_id)))
    }

    /// Merged step progress of a session's plan.
    pub fn load_plan_progress(&self, session_id: &str) -> Result<PlanProgress> {
        self.with_conn(|c| load_progress(c, session_id))
    }

    /// Header, plan progress and every message, in one read transaction.
    pub fn load_session(&self, session_id: &str) -> Result<Session> {
        self.with_conn(|c| {
            let tx = c.transaction()?;
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

    /// Messages with `from <= seq <= to`, by seq. For long transcripts.
    pub fn load_messages(&self, session_id: &str, from: i64, to: i64) -> Result<Vec<Message>> {
        self.with_conn(|c| load_messages(c, session_id, from, to))
    }

    /// Appends one step update and refreshes the plan counts on the header.
    pub fn record_step_update(
        &self,
        session_id: &str,
        step_id: &str,
        update: &StepUpdate,
    ) -> Result<()> {
        self.write(|tx| {
            self.require(tx, session_id)?;
            write_step_update(tx, session_id, step_id, update)?;
            refresh_plan_counts(tx, session_id)?;
            tx.execute(
                "UPDATE sessions SET updated_at_ms = max(updated_at_ms, ?2) WHERE id = ?1",
                params![session_id, now_ms()],
            )?;
            Ok(())
        })
    }

    /// Forks a session at `at_seq` (default: its last message): a new session whose parent is
    /// the source, with the messages up to that seq and their assets copied, in one transaction.
    pub fn fork(&self, session_id: &str, at_seq: Option<i64>) -> Result<SessionHeader> {
        let src = self.load_header(session_id)?;
        let at = at_seq.unwrap_or(src.last_seq);
        let exists_at = at == 0
            || self.with_conn(|c| {
                row_exists(
                    c,
                    "SELECT 1 FROM messages WHERE session_id = ?1 AND seq = ?2",
                    params![session_id, at],
                )
            })?;
        if at < 0 || !exists_at {
            return Err(StoreError::NoSuchSeq {
                session_id: session_id.to_string(),
                seq: at,
                last: src.last_seq,
            });
        }
        let new_id = uuid::Uuid::new_v4().to_string();
        // Asset files first (outside the transaction); removed again if the transaction fails.
        let assets = self.assets_referenced(session_id, at)?;
        let new_dir = self.inner.paths.assets().join(&new_id);
        let copy = || -> Result<Vec<AssetMeta>> {
            let mut out = Vec::new();
            for a in &assets {
                let src_path = self.checked_asset_path(a)?;
                super::workspace::create_private_dir(&new_dir)?;
                let rel = asset_relative_path(&new_id, &a.id);
                let dst = self.inner.paths.dir.join(&rel);
                if std::fs::hard_link(&src_path, &dst).is_err() {
                    std::fs::copy(&src_path, &dst).map_err(|e| StoreError::io(&dst, e))?;
                }
                out.push(AssetMeta {
                    session_id: new_id.clone(),
                    relative_path: rel,
                    ..a.clone()
                });
            }
            Ok(out)
        };
        let result = copy().and_then(|copied| {
            let now = now_ms();
            self.write(|tx| {
                tx.execute(
                    "INSERT INTO sessions (id, title, first_prompt, created_at_ms, updated_at_ms, provider, model,
                        workdir, status, parent_id, fork_seq, conversation_key, task_state_json, todos_json,
                        skills_json, plan_json, ledger_json, token_input_total, token_output_total, last_seq,
                        message_count, asset_count)
                     SELECT ?2, CASE WHEN title = '' THEN '' ELSE 'Fork of ' || title END, first_prompt, ?3, ?3,
                        provider, model, workdir, 'paused', id, ?4, NULL, task_state_json, todos_json,
                        skills_json, plan_json, ledger_json, 0, 0, ?4, 0, ?5
                     FROM sessions WHERE id = ?1",
                    params![session_id, new_id, now, at, copied.len() as i64],
                )?;
                // The copies point at the source's search-index rows: no re-indexing.
                tx.execute(
                    "INSERT INTO messages (session_id, seq, role, parts_json, tool_calls_json, tool_call_id, is_error,
                        tool_metadata_json, created_at_ms, input_tokens, output_tokens, fts_id)
                     SELECT ?2, seq, role, parts_json, tool_calls_json, tool_call_id, is_error, tool_metadata_json,
                        created_at_ms, input_tokens, output_tokens, fts_id
                     FROM messages WHERE session_id = ?1 AND seq <= ?3 ORDER BY seq",
                    params![session_id, new_id, at],
                )?;
                tx.execute(
                    "UPDATE sessions SET (message_count, token_input_total, token_output_total) =
                        (SELECT count(*), coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0)
                         FROM messages WHERE session_id = ?1)
                     WHERE id = ?1",
                    [&new_id],
                )?;
                tx.execute(
                    "INSERT INTO step_updates (session_id, step_id, kind, payload_json, write_seq)
                     SELECT ?2, step_id, kind, payload_json, write_seq FROM step_updates WHERE session_id = ?1",
                    params![session_id, new_id],
                )?;
                refresh_plan_counts(tx, &new_id)?;
                for a in &copied {
                    insert_asset_row(tx, a)?;
                }
                Ok(())
            })
        });
        if let Err(e) = result {
            let _ = std::fs::remove_dir_all(&new_dir);
            return Err(e);
        }
        self.load_header(&new_id)
    }

    /// Deletes a session: its rows (messages, steps, assets) and its asset folder. Forks of it
    /// stay, without a parent.
    pub fn delete(&self, session_id: &str) -> Result<()> {
        validate_id("session", session_id)?;
        self.write(|tx| {
            tx.execute(DELETE_SESSION_FTS, [session_id])?;
            let n = tx.execute("DELETE FROM sessions WHERE id = ?1", [session_id])?;
            if n == 0 {
                return Err(self.not_found(session_id));
            }
            Ok(())
        })?;
        let dir = self.inner.paths.assets().join(session_id);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::io(dir, e)),
        }
    }

    /// Full-text search over message text, best matches first (see [`super::search`] for
    /// how matches are bounded and ranked).
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>> {
        Ok(self.search_counted(query, limit)?.hits)
    }

    /// [`Store::search`] with the number of matching messages (bounded).
    pub fn search_counted(&self, query: &str, limit: usize) -> Result<SearchResults> {
        self.with_conn(|c| search::search(c, query, limit))
    }

    // ----- assets ---------------------------------------------------------------------------

    /// Saves an asset: checks id and size, writes a temp file, fsyncs, renames into place, then
    /// records the metadata. Returns the metadata.
    pub fn save_asset(
        &self,
        session_id: &str,
        asset_id: Option<&str>,
        mime_type: &str,
        data: &[u8],
    ) -> Result<AssetMeta> {
        self.save_asset_at(session_id, asset_id, mime_type, data, now_ms())
    }

    pub(crate) fn save_asset_at(
        &self,
        session_id: &str,
        asset_id: Option<&str>,
        mime_type: &str,
        data: &[u8],
        created_at_ms: i64,
    ) -> Result<AssetMeta> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
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
        let dir = self.inner.paths.assets().join(session_id);
        super::workspace::create_private_dir(&dir)?;
        let rel = asset_relative_path(session_id, &asset_id);
        let dst = self.inner.paths.dir.join(&rel);
        let tmp = dir.join(format!(".{asset_id}.{}.tmp", std::process::id()));
        let write_file = || -> std::io::Result<()> {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(data)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &dst)?;
            std::fs::File::open(&dir)?.sync_all()
        };
        if let Err(e) = write_file() {
            let _ = std::fs::remove_file(&tmp);
            return Err(StoreError::io(&dst, e));
        }
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

    /// Metadata of one asset.
    pub fn stat_asset(&self, session_id: &str, asset_id: &str) -> Result<AssetMeta> {
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
        self.with_conn(|c| {
            let mut st = c.prepare_cached(
                "SELECT id, session_id, mime_type, size_bytes, relative_path, created_at_ms
                 FROM session_assets WHERE session_id = ?1 ORDER BY created_at_ms, id",
            )?;
            Ok(st
                .query_map([session_id], asset_from_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?)
        })
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
    fn checked_asset_path(&self, meta: &AssetMeta) -> Result<PathBuf> {
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
    fn assets_referenced(&self, session_id: &str, at: i64) -> Result<Vec<AssetMeta>> {
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

    /// `NotFound` unless the session exists.
    fn require(&self, c: &Connection, session_id: &str) -> Result<()> {
        if session_exists(c, session_id)? {
            Ok(())
        } else {
            Err(self.not_found(session_id))
        }
    }

    fn not_found(&self, key: &str) -> StoreError {
        StoreError::NotFound {
            what: "session",
            key: key.chars().take(80).collect(),
            scope: self.inner.paths.root.display().to_string(),
        }
    }

    // ----- import / export support ----------------------------------------------------------

    /// Writes a whole session as given (header values, messages with their seqs and times,
    /// step progress) in one transaction. Assets are written first by the caller through
    /// [`Store::save_asset`]-like paths; see `session::file`.
    pub(crate) fn insert_full(&self, s: &Session, summary_extra: &SessionSummary) -> Result<()> {
        let h = &s.header;
        validate_id("session", &h.id)?;
        if let Some(p) = &h.plan {
            p.validate()?;
        }
        self.write(|tx| {
            if session_exists(tx, &h.id)? {
                return Err(StoreError::AlreadyExists(h.id.clone()));
            }
            let parent_exists = match &h.parent_id {
                Some(p) => session_exists(tx, p)?,
                None => false,
            };
            tx.execute(
                "INSERT INTO sessions (id, title, first_prompt, created_at_ms, updated_at_ms, provider, model, workdir,
                    status, parent_id, fork_seq, conversation_key, task_state_json, todos_json, skills_json,
                    plan_json, ledger_json, token_input_total, token_output_total, last_seq, message_count)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)",
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
                    if parent_exists { h.parent_id.clone() } else { None },
                    h.fork_seq,
                    h.conversation_key,
                    to_json_opt(h.task_state.as_ref()),
                    to_json_opt(h.todos.as_ref()),
                    to_json_opt(h.skills.as_ref()),
                    to_json_opt(h.plan.as_ref()),
                    to_json_opt(h.ledger.as_ref()),
                    h.token_input_total as i64,
                    h.token_output_total as i64,
                    h.last_seq,
                    s.messages.len() as i64
                ],
            )?;
            for m in &s.messages {
                let nm = NewMessage {
                    role: Some(m.role),
                    parts: m.parts.clone(),
                    tool_calls: m.tool_calls.clone(),
                    tool_call_id: m.tool_call_id.clone(),
                    is_error: m.is_error,
                    tool_metadata: m.tool_metadata.clone(),
                    usage: m.usage,
                    created_at_ms: Some(m.created_at_ms),
                };
                insert_message(tx, &h.id, m.seq, &nm, m.created_at_ms)?;
            }
            for (step, update) in progress_as_updates(&s.plan_progress) {
                write_step_update(tx, &h.id, &step, &update)?;
            }
            refresh_plan_counts(tx, &h.id)?;
            Ok(())
        })
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
}

/// Whether `sql` (a `SELECT 1 ...`) finds a row.
fn row_exists(c: &Connection, sql: &str, args: impl rusqlite::Params) -> Result<bool> {
    Ok(c.query_row(sql, args, |_| Ok(())).optional()?.is_some())
}

fn session_exists(c: &Connection, session_id: &str) -> Result<bool> {
    row_exists(c, "SELECT 1 FROM sessions WHERE id = ?1", [session_id])
}

fn asset_exists(c: &Connection, session_id: &str, asset_id: &str) -> Result<bool> {
    row_exists(
        c,
        "SELECT 1 FROM session_assets WHERE session_id = ?1 AND id = ?2",
        params![session_id, asset_id],
    )
}

/// Step updates that merge back to `p` exactly.
pub(crate) fn progress_as_updates(p: &PlanProgress) -> Vec<(String, StepUpdate)> {
    use super::plan::StepStatus as S;
    let mut out = Vec::new();
    for (step, status) in &p.statuses {
        // A result or a failure record (never both: each clears the other) is replayed first;
        // it implies completed or failed. A different final status follows it: a step can be
        // marked failed after its result, or completed after a failure, and keep the record.
        let implied = if let Some(r) = p.results.get(step) {
            out.push((step.clone(), StepUpdate::Result { result: r.clone() }));
            Some(S::Completed)
        } else if let Some(f) = p.failures.get(step) {
            out.push((step.clone(), StepUpdate::Error { error: f.clone() }));
            Some(S::Failed)
        } else {
            None
        };
        if implied != Some(*status) {
            out.push((step.clone(), StepUpdate::Status { status: *status }));
        }
    }
    out
}

/// Relative path of an asset file inside the workspace folder.
fn asset_relative_path(session_id: &str, asset_id: &str) -> String {
    format!("assets/{session_id}/{asset_id}.bin")
}

fn insert_asset_row(tx: &Transaction<'_>, a: &AssetMeta) -> Result<()> {
    tx.execute(
        "INSERT INTO session_assets (session_id, id, mime_type, size_bytes, relative_path, created_at_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![a.session_id, a.id, a.mime_type, a.size_bytes as i64, a.relative_path, a.created_at_ms],
    )?;
    Ok(())
}

fn write_step_update(
    tx: &Transaction<'_>,
    session_id: &str,
    step_id: &str,
    u: &StepUpdate,
) -> Result<()> {
    let payload = serde_json::to_string(u).map_err(|e| StoreError::BadColumn {
        session_id: session_id.to_string(),
        column: "payload_json",
        detail: e.to_string(),
    })?;
    // Only the latest row per (step, kind) is kept, so a later non-terminal status must not
    // replace a terminal status row: merging the kept rows would reopen the step, where
    // merging the full history keeps it terminal (the seed's first rule).
    if let StepUpdate::Status { status } = u
        && !status.is_terminal()
    {
        let stored: Option<String> = tx
            .query_row(
                "SELECT payload_json FROM step_updates
                 WHERE session_id = ?1 AND step_id = ?2 AND kind = 'status'",
                params![session_id, step_id],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(stored) = stored {
            let stored: StepUpdate = from_json(session_id, "step_updates.payload_json", &stored)?;
            if matches!(stored, StepUpdate::Status { status } if status.is_terminal()) {
                return Ok(());
            }
        }
    }
    // Write order is a per-session counter, so same-millisecond writes still merge in order.
    tx.execute(
        "INSERT INTO step_updates (session_id, step_id, kind, payload_json, write_seq)
         VALUES (?1, ?2, ?3, ?4,
                 (SELECT coalesce(max(write_seq), 0) + 1 FROM step_updates WHERE session_id = ?1))
         ON CONFLICT(session_id, step_id, kind) DO UPDATE SET
            payload_json = excluded.payload_json, write_seq = excluded.write_seq",
        params![session_id, step_id, u.kind(), payload],
    )?;
    Ok(())
}

fn load_progress(c: &Connection, session_id: &str) -> Result<PlanProgress> {
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

fn refresh_plan_counts(tx: &Transaction<'_>, session_id: &str) -> Result<()> {
    let plan_json: Option<String> = tx.query_row(
        "SELECT plan_json FROM sessions WHERE id = ?1",
        [session_id],
        |r| r.get(0),
    )?;
    let plan: Option<Plan> = match plan_json {
        Some(j) => Some(from_json(session_id, "plan_json", &j)?),
        None => None,
    };
    let counts = match plan {
        Some(plan) => load_progress(tx, session_id)?.counts(&plan),
        None => PlanCounts::default(),
    };
    tx.execute(
        "UPDATE sessions SET plan_total = ?2, plan_done = ?3, plan_failed = ?4 WHERE id = ?1",
        params![
            session_id,
            counts.total as i64,
            counts.done as i64,
            counts.failed as i64
        ],
    )?;
    Ok(())
}

fn insert_message(
    tx: &Transaction<'_>,
    session_id: &str,
    seq: i64,
    m: &NewMessage,
    now: i64,
) -> Result<()> {
    let parts = serde_json::to_string(&m.parts).unwrap_or_else(|_| "[]".into());
    let calls = if m.tool_calls.is_empty() {
        None
    } else {
        Some(serde_json::to_string(&m.tool_calls).unwrap_or_else(|_| "[]".into()))
    };
    let meta = to_json_opt(m.tool_metadata.as_ref());
    let body = search_body(m);
    let body = search::index_text(&body);
    let fts_id = if body.is_empty() {
        None
    } else {
        let mut fts = tx.prepare_cached("INSERT INTO message_fts (body) VALUES (?1)")?;
        fts.execute([body])?;
        Some(tx.last_insert_rowid())
    };
    let mut st = tx.prepare_cached(
        "INSERT INTO messages (session_id, seq, role, parts_json, tool_calls_json, tool_call_id, is_error,
            tool_metadata_json, created_at_ms, input_tokens, output_tokens, fts_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
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
        fts_id
    ])?;
    Ok(())
}

/// Text indexed for search: text parts, reasoning, and tool call names and arguments.
fn search_body(m: &NewMessage) -> String {
    let mut out = String::new();
    for p in &m.parts {
        match p {
            Part::Text { text } | Part::Reasoning { text } => {
                out.push_str(text);
                out.push('\n');
            }
            Part::Image { .. } => {}
        }
    }
    for c in &m.tool_calls {
        out.push_str(&c.name);
        out.push(' ');
        out.push_str(&c.arguments);
        out.push('\n');
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

fn like_escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}

fn to_json_opt<T: Serialize>(v: Option<&T>) -> Option<String> {
    v.map(|v| serde_json::to_string(v).unwrap_or_else(|_| "null".into()))
}

fn from_json<T: DeserializeOwned>(session_id: &str, column: &'static str, s: &str) -> Result<T> {
    serde_json::from_str(s).map_err(|e| StoreError::BadColumn {
        session_id: session_id.to_string(),
        column,
        detail: e.to_string(),
    })
}

fn opt_json<T: DeserializeOwned>(
    session_id: &str,
    column: &'static str,
    s: Option<String>,
) -> Result<Option<T>> {
    s.map(|s| from_json(session_id, column, &s)).transpose()
}

fn parse_status(session_id: &str, s: &str) -> Result<Status> {
    Status::parse(s).ok_or_else(|| StoreError::BadColumn {
        session_id: session_id.to_string(),
        column: "status",
        detail: format!("unknown status '{s}'"),
    })
}

fn summary_from_row(r: &Row<'_>) -> rusqlite::Result<Result<SessionSummary>> {
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
        message_count: r.get::<_, i64>(11)? as u64,
        token_input_total: r.get::<_, i64>(12)? as u64,
        token_output_total: r.get::<_, i64>(13)? as u64,
        plan: PlanCounts {
            done: r.get::<_, i64>(14)? as u64,
            failed: r.get::<_, i64>(15)? as u64,
            total: r.get::<_, i64>(16)? as u64,
        },
        asset_count: r.get::<_, i64>(17)? as u64,
        id,
    }))
}

fn load_header(c: &Connection, session_id: &str) -> Result<Option<SessionHeader>> {
    // Plain columns go straight into the header; status and JSON columns are parsed after
    // the row is read, so a bad value names its column.
    let row = c
        .query_row(
            &format!("SELECT {HEADER_COLS} FROM sessions WHERE id = ?1"),
            [session_id],
            |r| {
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
                    token_input_total: r.get::<_, i64>(16)? as u64,
                    token_output_total: r.get::<_, i64>(17)? as u64,
                    last_seq: r.get(18)?,
                    message_count: r.get::<_, i64>(19)? as u64,
                    ..SessionHeader::default()
                };
                let status: String = r.get(7)?;
                let json: [Option<String>; 5] =
                    [r.get(11)?, r.get(12)?, r.get(13)?, r.get(14)?, r.get(15)?];
                Ok((header, status, json))
            },
        )
        .optional()?;
    let Some((mut h, status, [task, todos, skills, plan, ledger])) = row else {
        return Ok(None);
    };
    h.status = parse_status(&h.id, &status)?;
    h.task_state = opt_json(&h.id, "task_state_json", task)?;
    h.todos = opt_json(&h.id, "todos_json", todos)?;
    h.skills = opt_json(&h.id, "skills_json", skills)?;
    h.plan = opt_json(&h.id, "plan_json", plan)?;
    h.ledger = opt_json(&h.id, "ledger_json", ledger)?;
    Ok(Some(h))
}

fn load_messages(c: &Connection, session_id: &str, from: i64, to: i64) -> Result<Vec<Message>> {
    let mut st = c.prepare_cached(&format!(
        "SELECT {MESSAGE_COLS} FROM messages WHERE session_id = ?1 AND seq BETWEEN ?2 AND ?3 ORDER BY seq"
    ))?;
    // (message with plain columns, role, parts, tool calls, tool metadata) as stored.
    type Raw = (Message, String, String, Option<String>, Option<String>);
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
                    input_tokens: r.get::<_, i64>(8)? as u64,
                    output_tokens: r.get::<_, i64>(9)? as u64,
                },
            };
            Ok((m, r.get(1)?, r.get(2)?, r.get(3)?, r.get(6)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    rows.into_iter()
        .map(|(mut m, role, parts, calls, meta)| {
            m.role = Role::parse(&role).ok_or_else(|| StoreError::BadColumn {
                session_id: session_id.to_string(),
                column: "role",
                detail: format!("unknown role '{role}' at seq {}", m.seq),
            })?;
            m.parts = from_json(session_id, "parts_json", &parts)?;
            m.tool_calls = opt_json(session_id, "tool_calls_json", calls)?.unwrap_or_default();
            m.tool_metadata = opt_json(session_id, "tool_metadata_json", meta)?;
            Ok(m)
        })
        .collect()
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
