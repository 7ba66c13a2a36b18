//! Sessions: create, update the header, list, resolve, delete.

use std::collections::HashSet;

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, Transaction, params};
use sha2::{Digest, Sha256};

use super::assets::list_assets;
use super::core::{Store, session_exists, to_json_opt, validate_id};
use super::rows::{
    DELETE_SESSION_FTS, SUMMARY_COLS, load_header, load_messages, load_progress, parse_status,
    summary_from_row,
};
use super::steps::refresh_plan_counts;
use crate::session::error::{Result, StoreError};
use crate::session::list::*;
use crate::session::model::*;
use crate::session::plan::{PlanCounts, PlanProgress};

/// What a new session starts with.
#[derive(Debug, Clone, Default)]
pub struct NewSession {
    /// Id to use; a fresh UUID when `None`.
    pub id: Option<String>,
    pub title: String,
    pub provider: String,
    pub model: String,
    pub workdir: String,
    /// Conversation key; set from the first user message when `None`.
    pub conversation_key: Option<String>,
    /// The session this one belongs to without being a fork of it (a plan step's
    /// conversation links to its plan run this way; `fork_seq` stays empty).
    pub parent_id: Option<String>,
    /// The git branch it starts on (the runtime reads it from the workdir).
    pub branch: Option<String>,
    /// The session whose model started this one as a sub-agent (the `task` tool).
    pub subagent_of: Option<String>,
}

/// One session as opening it shows it: see [`Store::load_overview`].
#[derive(Debug, Clone, PartialEq)]
pub struct SessionOverview {
    pub header: SessionHeader,
    pub plan_progress: PlanProgress,
    pub assets: Vec<AssetMeta>,
    /// The last messages, by seq.
    pub tail: Vec<Message>,
}

/// SHA-256 hex of a first user message: the conversation key of the lifecycle seed.
pub fn conversation_key(first_user_text: &str) -> String {
    Sha256::digest(first_user_text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Store {
    /// Creates a session header with no messages.
    pub fn create_session(&self, new: NewSession) -> Result<SessionHeader> {
        let id = match new.id {
            Some(id) => {
                validate_id("session", &id)?;
                id
            }
            None => uuid::Uuid::new_v4().to_string(),
        };
        let now = self.now();
        self.write(|tx| {
            if session_exists(tx, &id)? {
                return Err(StoreError::AlreadyExists(id.clone()));
            }
            if let Some(p) = &new.parent_id {
                self.require(tx, p)?;
            }
            if let Some(p) = &new.subagent_of {
                self.require(tx, p)?;
            }
            tx.execute(
                "INSERT INTO sessions (id, title, created_at_ms, updated_at_ms, provider, model, workdir, conversation_key, parent_id, branch, subagent_of)
                 VALUES (?1, ?2, ?3, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![id, new.title, now, new.provider, new.model, new.workdir, new.conversation_key, new.parent_id, new.branch, new.subagent_of],
            )?;
            Ok(())
        })?;
        self.load_header(&id)
    }

    /// Overwrites header fields only; writes no message.
    pub fn update_state(&self, session_id: &str, update: &StateUpdate) -> Result<()> {
        if let Change::Set(plan) = &update.plan {
            plan.validate()?;
        }
        self.write(|tx| self.update_in(tx, session_id, update))
    }

    /// [`Store::update_state`] inside a caller's transaction (the plan is validated by the
    /// caller).
    pub(super) fn update_in(
        &self,
        tx: &Transaction<'_>,
        session_id: &str,
        update: &StateUpdate,
    ) -> Result<()> {
        self.require(tx, session_id)?;
        // Every column that changes, in one UPDATE: each statement rewrites the row and the
        // list's covering index entry (`sessions_listed` holds nearly every column), so one
        // per column was several rewrites (and statements to compile) per turn's state.
        let mut cols: Vec<(&str, SqlValue)> = Vec::new();
        let text = |s: &str| SqlValue::Text(s.to_string());
        if let Some(t) = &update.title {
            cols.push(("title", text(t)));
        }
        if let Some(w) = &update.workdir {
            cols.push(("workdir", text(w)));
        }
        if let Some(p) = &update.provider {
            cols.push(("provider", text(p)));
        }
        if let Some(m) = &update.model {
            cols.push(("model", text(m)));
        }
        if let Some(p) = &update.profile {
            cols.push(("profile", text(p)));
        }
        if let Some(s) = update.status {
            cols.push(("status", text(s.as_str())));
        }
        json_col(&mut cols, "task_state_json", &update.task_state);
        json_col(&mut cols, "todos_json", &update.todos);
        json_col(&mut cols, "skills_json", &update.skills);
        json_col(&mut cols, "ledger_json", &update.ledger);
        // A session with a ledger counts its tokens once: its totals are the ledger's
        // lifetime usage (every model call, also those that stored no message: a
        // compaction's summary, a reply cancelled before its text), never reset.
        let totals = update.token_totals.or(match &update.ledger {
            Change::Set(l) => Some((l.usage.input_tokens, l.usage.output_tokens)),
            Change::Keep | Change::Clear => None,
        });
        // The list's dollars: the ledger's, in the same transaction.
        match &update.ledger {
            Change::Set(l) => cols.push((
                "cost_usd",
                l.usage.cost_usd.map_or(SqlValue::Null, SqlValue::Real),
            )),
            Change::Clear => cols.push(("cost_usd", SqlValue::Null)),
            Change::Keep => {}
        }
        if let Some((i, o)) = totals {
            cols.push(("token_input_total", SqlValue::Integer(i as i64)));
            cols.push(("token_output_total", SqlValue::Integer(o as i64)));
        }
        json_col(&mut cols, "plan_json", &update.plan);
        if update.touch {
            cols.push(("updated_at_ms", SqlValue::Integer(self.now())));
        }
        if !cols.is_empty() {
            let mut sql = String::from("UPDATE sessions SET ");
            for (i, (col, _)) in cols.iter().enumerate() {
                if i > 0 {
                    sql.push_str(", ");
                }
                // Activity only moves forward.
                if *col == "updated_at_ms" {
                    sql.push_str(&format!("{col} = max({col}, ?{})", i + 2));
                } else {
                    sql.push_str(&format!("{col} = ?{}", i + 2));
                }
            }
            sql.push_str(" WHERE id = ?1");
            let mut st = tx.prepare_cached(&sql)?;
            st.raw_bind_parameter(1, session_id)?;
            for (i, (_, v)) in cols.iter().enumerate() {
                st.raw_bind_parameter(i + 2, v)?;
            }
            st.raw_execute()?;
        }
        if let Change::Set(plan) = &update.plan {
            let keep: HashSet<&str> = plan.steps.iter().map(|s| s.id.as_str()).collect();
            let stale: Vec<String> = {
                let mut st =
                    tx.prepare("SELECT DISTINCT step_id FROM step_updates WHERE session_id = ?1")?;
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
        } else if matches!(update.plan, Change::Clear) {
            tx.execute(
                "DELETE FROM step_updates WHERE session_id = ?1",
                [session_id],
            )?;
        }
        if !update.plan.is_keep() {
            refresh_plan_counts(tx, session_id)?;
        }
        for &id in &update.delivers {
            self.deliver_in(tx, session_id, id)?;
        }
        Ok(())
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
    pub(crate) fn locate(&self, session_id: &str) -> Result<Option<(PageKey, u64)>> {
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

    /// Every session as `--list` prints it, newest activity first, each row borrowed from
    /// the database (no text is copied) and handed to `f`; an error from `f` stops the scan.
    /// Without `details` the fields the table does not show (creation time, provider,
    /// workdir, status, assets) are left empty, which saves reading them.
    pub(crate) fn for_each_list_line(
        &self,
        details: bool,
        mut f: impl FnMut(&ListLine<'_>) -> Result<()>,
    ) -> Result<()> {
        // The table's query reads only what it shows; `pos` maps each of SUMMARY_COLS to its
        // place in the query (None: not read, left empty).
        const TABLE_COLS: &str = "id, title, first_prompt, updated_at_ms, model, parent_id, \
             subagent_of, message_count, token_input_total, token_output_total, plan_done, \
             plan_failed, plan_total, source_tool, branch, cost_usd";
        const TABLE_POS: [Option<usize>; 23] = [
            Some(0),
            Some(1),
            Some(2),
            None,
            Some(3),
            None,
            Some(4),
            None,
            None,
            Some(5),
            None,
            Some(7),
            Some(8),
            Some(9),
            Some(10),
            Some(11),
            Some(12),
            None,
            Some(6),
            Some(13),
            Some(14),
            Some(15),
            None,
        ];
        let (cols, pos) = if details {
            (SUMMARY_COLS, std::array::from_fn(Some))
        } else {
            (TABLE_COLS, TABLE_POS)
        };
        self.with_conn(|c| {
            scan_with_small_cache(c, |c| {
                // `insert_order` is the rowid: the same order as every other list query, read
                // from the index that holds every column (`sessions_listed`, schema 5).
                let mut st = c.prepare_cached(&format!(
                    "SELECT {cols} FROM sessions INDEXED BY sessions_listed
                     ORDER BY updated_at_ms DESC, insert_order DESC"
                ))?;
                let mut rows = st.query([])?;
                while let Some(r) = rows.next()? {
                    let text = |i: usize| -> rusqlite::Result<Option<&str>> {
                        match pos[i] {
                            Some(p) => Ok(r.get_ref(p)?.as_str_or_null()?),
                            None => Ok(None),
                        }
                    };
                    let int = |i: usize| -> rusqlite::Result<i64> {
                        match pos[i] {
                            Some(p) => Ok(r.get_ref(p)?.as_i64_or_null()?.unwrap_or(0)),
                            None => Ok(0),
                        }
                    };
                    let count = |i: usize| int(i).map(|n| n.max(0) as u64);
                    let real = |i: usize| -> rusqlite::Result<Option<f64>> {
                        match pos[i] {
                            Some(p) => Ok(r.get_ref(p)?.as_f64_or_null()?),
                            None => Ok(None),
                        }
                    };
                    let id = text(0)?.unwrap_or_default();
                    let status = match text(8)? {
                        Some(s) => parse_status(id, s)?,
                        None => Status::Created,
                    };
                    f(&ListLine {
                        id,
                        title: text(1)?.unwrap_or_default(),
                        first_prompt: text(2)?.unwrap_or_default(),
                        created_at_ms: int(3)?,
                        updated_at_ms: int(4)?,
                        provider: text(5)?.unwrap_or_default(),
                        model: text(6)?.unwrap_or_default(),
                        workdir: text(7)?.unwrap_or_default(),
                        status,
                        parent_id: text(9)?,
                        subagent_of: text(18)?,
                        message_count: count(11)?,
                        token_input_total: count(12)?,
                        token_output_total: count(13)?,
                        plan: PlanCounts {
                            done: count(14)?,
                            failed: count(15)?,
                            total: count(16)?,
                        },
                        asset_count: count(17)?,
                        source: text(19)?,
                        branch: text(20)?,
                        cost_usd: real(21)?,
                        profile: text(22)?,
                    })?;
                }
                Ok(())
            })
        })
    }

    /// Every session's id, title, first prompt and branch ("" without one), newest activity
    /// first, borrowed row by row (what a filter over the whole list matches against).
    pub(crate) fn for_each_list_text(
        &self,
        mut f: impl FnMut(&str, &str, &str, &str) -> Result<()>,
    ) -> Result<()> {
        self.with_conn(|c| {
            scan_with_small_cache(c, |c| {
                let mut st = c.prepare_cached(
                    "SELECT id, title, first_prompt, branch FROM sessions INDEXED BY sessions_listed
                     ORDER BY updated_at_ms DESC, insert_order DESC",
                )?;
                let mut rows = st.query([])?;
                while let Some(r) = rows.next()? {
                    let text = |i: usize| -> rusqlite::Result<&str> {
                        Ok(r.get_ref(i)?.as_str_or_null()?.unwrap_or_default())
                    };
                    f(text(0)?, text(1)?, text(2)?, text(3)?)?;
                }
                Ok(())
            })
        })
    }

    /// What the list's column widths depend on, from indexes alone (a handful of index
    /// probes and one probe per distinct model; no row is read).
    pub(crate) fn list_bounds(&self) -> Result<ListBounds> {
        self.with_conn(|c| {
            let oldest: Option<i64> =
                c.query_row("SELECT min(updated_at_ms) FROM sessions", [], |r| r.get(0))?;
            let max_messages: Option<i64> =
                c.query_row("SELECT max(message_count) FROM sessions", [], |r| r.get(0))?;
            let (plan_total, plan_failed): (Option<i64>, Option<i64>) = c.query_row(
                "SELECT max(plan_total), max(plan_failed) FROM sessions WHERE plan_total > 0",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            // Distinct models by skipping along the model index: one probe per model.
            let mut models: Vec<String> = Vec::new();
            let mut next: Option<String> =
                c.query_row("SELECT min(model) FROM sessions", [], |r| r.get(0))?;
            let mut st = c.prepare_cached("SELECT min(model) FROM sessions WHERE model > ?1")?;
            while let Some(m) = next {
                next = st.query_row([&m], |r| r.get(0))?;
                models.push(m);
            }
            // One probe of `sessions_by_cost`.
            let any_cost = c
                .query_row(
                    "SELECT 1 FROM sessions WHERE cost_usd IS NOT NULL LIMIT 1",
                    [],
                    |_| Ok(()),
                )
                .optional()?
                .is_some();
            Ok(ListBounds {
                any_cost,
                oldest_updated_at_ms: oldest,
                max_message_count: max_messages.unwrap_or(0).max(0) as u64,
                max_plan_total: plan_total.unwrap_or(0).max(0) as u64,
                max_plan_failed: plan_failed.unwrap_or(0).max(0) as u64,
                models,
            })
        })
    }

    /// Every session id in byte order, one at a time (from the primary-key index alone).
    pub(crate) fn for_each_id(&self, mut f: impl FnMut(&str)) -> Result<()> {
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
            args.push(Box::new(pat));
            args.push(Box::new(format!("{}%", like_escape(text))));
        }
        if let Some(b) = &q.branch {
            sql.push_str(" AND branch = ?");
            args.push(Box::new(b.clone()));
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
        let rowid_col = SUMMARY_COLS.split(',').count();
        self.with_conn(|c| {
            let mut run = |c: &Connection| -> Result<()> {
                let mut st = c.prepare_cached(&sql)?;
                let mut rows = st.query(rusqlite::params_from_iter(args.iter()))?;
                while let Some(r) = rows.next()? {
                    let summary = summary_from_row(r)??;
                    // The column after the summary's (by position: a name lookup per row
                    // costs more than the rest of the row).
                    f(summary, r.get::<_, i64>(rowid_col)?)?;
                }
                Ok(())
            };
            if limit == 0 {
                scan_with_small_cache(c, run)
            } else {
                run(c)
            }
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
        // Up to 20 candidates are named in the error; the 21st only says there are more.
        self.with_conn(|c| {
            let mut st = c.prepare_cached(
                "SELECT id, title, first_prompt FROM sessions WHERE id >= ?1 AND id < ?1 || x'ff'
                 ORDER BY updated_at_ms DESC, rowid DESC LIMIT 21",
            )?;
            let mut rows: Vec<(String, String, String)> = st
                .query_map([key], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<rusqlite::Result<_>>()?;
            if rows.is_empty() && key.bytes().any(|b| b.is_ascii_alphabetic()) {
                // Ids are case-insensitive for people (a prefix typed from a screenshot in
                // capitals): LIKE folds ASCII case; `_` is a wildcard there, so escape it.
                let mut st = c.prepare_cached(
                    "SELECT id, title, first_prompt FROM sessions WHERE id LIKE ?1 ESCAPE '\\'
                     ORDER BY updated_at_ms DESC, rowid DESC LIMIT 21",
                )?;
                let pattern = format!("{}%", key.replace('_', "\\_"));
                rows = st
                    .query_map([pattern], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .collect::<rusqlite::Result<_>>()?;
            }
            if let Some(exact) = rows.iter().find(|r| r.0.eq_ignore_ascii_case(key)) {
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

    /// Sets the conversation key of a session (a fork made to continue a caller's diverging
    /// conversation carries the caller's key, so recovery by key finds the fork).
    pub(crate) fn set_conversation_key(&self, session_id: &str, key: &str) -> Result<()> {
        self.write(|tx| {
            let n = tx.execute(
                "UPDATE sessions SET conversation_key = ?2 WHERE id = ?1",
                params![session_id, key],
            )?;
            if n == 0 {
                return Err(self.not_found(session_id));
            }
            Ok(())
        })
    }

    /// The header of a session.
    pub fn load_header(&self, session_id: &str) -> Result<SessionHeader> {
        self.with_conn(|c| load_header(c, session_id)?.ok_or_else(|| self.not_found(session_id)))
    }

    /// What opening a session shows (header, plan progress, assets and the last `tail`
    /// messages), read in one transaction so the parts agree even while another process
    /// appends.
    pub fn load_overview(&self, session_id: &str, tail: i64) -> Result<SessionOverview> {
        self.with_conn(|c| {
            let tx = c.savepoint()?; // its own transaction, or part of a `read_consistent` one
            let header = load_header(&tx, session_id)?.ok_or_else(|| self.not_found(session_id))?;
            let plan_progress = load_progress(&tx, session_id)?;
            let assets = list_assets(&tx, session_id)?;
            let last = header.last_seq;
            let tail = load_messages(&tx, session_id, (last - tail + 1).max(1), last)?;
            Ok(SessionOverview {
                header,
                plan_progress,
                assets,
                tail,
            })
        })
    }

    /// Deletes a session: its rows (messages, steps, assets) and its asset folder. Forks and
    /// sub-agents of it stay and keep its id as their parent (shown as not in the workspace).
    pub fn delete(&self, session_id: &str) -> Result<()> {
        validate_id("session", session_id)?;
        let blobs = self.write(|tx| {
            let blobs = super::files::session_blobs(tx, session_id)?;
            tx.execute(DELETE_SESSION_FTS, [session_id])?;
            let n = tx.execute("DELETE FROM sessions WHERE id = ?1", [session_id])?;
            if n == 0 {
                return Err(self.not_found(session_id));
            }
            Ok(blobs)
        })?;
        // Blobs no other session (nor another session's rewind) refers to go with it.
        self.drop_unreferenced_blobs(&blobs)?;
        let dir = self.inner.paths.assets().join(session_id);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::io(dir, e)),
        }
    }
}

fn like_escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}

/// Runs a scan of the whole header table with a small page cache: every page is read once,
/// and the connection's usual 16 MiB cache would only hold on to them (at 100,000 sessions
/// that cache was most of `--list`'s memory).
/// Writes one JSON column of a header change: nothing for [`Change::Keep`], NULL for
/// [`Change::Clear`].
/// A JSON column's change, as the value to store (`Keep`: none).
fn json_col<T: serde::Serialize>(
    cols: &mut Vec<(&str, SqlValue)>,
    col: &'static str,
    change: &Change<T>,
) {
    match change {
        Change::Keep => {}
        Change::Clear => cols.push((col, SqlValue::Null)),
        Change::Set(v) => cols.push((
            col,
            to_json_opt(Some(v)).map_or(SqlValue::Null, SqlValue::Text),
        )),
    }
}

fn scan_with_small_cache<T>(c: &Connection, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
    c.pragma_update(None, "cache_size", -1024)?;
    let out = f(c);
    c.pragma_update(None, "cache_size", -16384)?;
    out
}
