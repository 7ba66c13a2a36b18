//! The runtime: decides when sessions are created, appended, updated, compacted, resumed and
//! forked, and serialises writes per session. The TUI and the command line act on sessions
//! only through [`Runtime`]; neither touches the store or SQL.

pub mod worker;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::session::file::{self, SessionFile};
use crate::session::{
    AppendMeta, AssetMeta, ListPage, ListQuery, Message, NewMessage, NewSession, PlanProgress,
    Replacement, Result, Role, SearchHit, Session, SessionHeader, SessionSummary, StateUpdate,
    StepUpdate, Store, StoreError, ToolCall, WorkspacePaths,
};

/// How many trailing messages [`Runtime::interrupted_tool_calls`] reads: the answers to one
/// assistant message's calls follow it directly, so a dangling call is always near the end.
const INTERRUPT_SCAN: i64 = 256;

/// Where neocode keeps data and which workspace it acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The neocode home.
    pub home: PathBuf,
    /// The workspace's paths under the home.
    pub paths: WorkspacePaths,
}

impl Location {
    /// Resolves the home (`$NEOCODE_HOME`, else `~/.neocode`) and the workspace of `workdir`
    /// (or the current directory).
    pub fn resolve(workdir: Option<&Path>) -> std::result::Result<Location, String> {
        let home = crate::session::home_dir()?;
        let dir = match workdir {
            Some(d) => d.to_path_buf(),
            None => std::env::current_dir()
                .map_err(|e| format!("cannot read the current directory: {e}"))?,
        };
        let paths = WorkspacePaths::resolve(&home, &dir)?;
        Ok(Location { home, paths })
    }

    /// Workspace root, for messages.
    pub fn root(&self) -> &Path {
        &self.paths.root
    }
}

/// How the lifecycle seed's decision chain ended for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Continue this existing session.
    Continue(String),
    /// A brand-new session was created.
    New(String),
    /// The id was missing or unknown, and the conversation key found this session.
    Recovered {
        /// Session switched back to.
        session_id: String,
        /// `session_id_missing` or `session_not_found`.
        reason: &'static str,
    },
    /// A new session was created although the request looked like a continuation; the
    /// warning names recent sessions the user may have meant.
    NewWithWarning {
        /// The new session.
        session_id: String,
        /// `session_id_missing_starting_fresh` or `session_not_found_starting_new`.
        warning: &'static str,
        /// Recently active sessions (id, title).
        recent: Vec<(String, String)>,
    },
}

/// What a request says about which session it belongs to.
#[derive(Debug, Clone, Default)]
pub struct SessionRequest {
    /// The caller explicitly asked for a new session (e.g. `/new`).
    pub new_session: bool,
    /// The session id the caller holds, if any.
    pub session_id: Option<String>,
    /// SHA-256 of the first user message.
    pub conversation_key: Option<String>,
    /// The request's history contains assistant or tool messages.
    pub has_continuation: bool,
}

/// The runtime over one workspace's store.
#[derive(Clone, Debug)]
pub struct Runtime {
    store: Store,
    locks: Arc<Mutex<HashMap<String, Arc<Mutex<()>>>>>,
}

impl Runtime {
    /// Opens (creating as needed) the workspace's store.
    pub fn open(loc: &Location) -> Result<Runtime> {
        Ok(Runtime::with_store(Store::open(loc.paths.clone())?))
    }

    /// Opens the store only if it exists (for read-only commands on a fresh workspace).
    pub fn open_existing(loc: &Location) -> Result<Option<Runtime>> {
        Ok(Store::open_existing(loc.paths.clone())?.map(Runtime::with_store))
    }

    /// Opens every existing workspace store under `home` (never creating one), each with the
    /// workspace root recorded inside its database. A database that cannot be opened is
    /// returned as an error next to its folder, so one bad workspace does not hide the others.
    pub fn open_all(home: &Path) -> Vec<(PathBuf, Result<Runtime>)> {
        crate::session::workspace::all_workspace_dbs(home)
            .into_iter()
            .map(|db| {
                let dir = db.parent().map(Path::to_path_buf).unwrap_or_default();
                let rt = Store::open_workspace_dir(&dir).map(Runtime::with_store);
                (dir, rt)
            })
            .collect()
    }

    fn with_store(store: Store) -> Runtime {
        Runtime {
            store,
            locks: Arc::default(),
        }
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        &self.store.paths().root
    }

    /// The workspace's data folder under the home.
    pub fn data_dir(&self) -> &Path {
        &self.store.paths().dir
    }

    /// Serialises writes to one session within this process (SQLite serialises across
    /// processes).
    fn lock(&self, session_id: &str) -> Arc<Mutex<()>> {
        let mut map = self.locks.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(session_id.to_string()).or_default().clone()
    }

    fn locked<T>(&self, session_id: &str, f: impl FnOnce(&Store) -> Result<T>) -> Result<T> {
        let l = self.lock(session_id);
        let _g = l.lock().unwrap_or_else(|p| p.into_inner());
        f(&self.store)
    }

    // ----- reading ---------------------------------------------------------------------------

    /// One page of sessions, newest activity first (header table only).
    pub fn list(&self, q: &ListQuery) -> Result<ListPage> {
        self.store.list(q)
    }

    /// Number of sessions.
    pub fn count(&self) -> Result<u64> {
        self.store.count()
    }

    /// Changes whenever anything commits to the workspace's database (see
    /// [`Store::data_version`]): views poll it to stay live without reloading blindly.
    pub fn data_version(&self) -> Result<i64> {
        self.store.data_version()
    }

    /// One session's summary row.
    pub fn summary(&self, id: &str) -> Result<SessionSummary> {
        self.store.summary(id)
    }

    /// Resolves a full id, unique prefix or `last`.
    pub fn resolve(&self, key: &str) -> Result<String> {
        self.store.resolve(key)
    }

    /// A session's header.
    pub fn header(&self, id: &str) -> Result<SessionHeader> {
        self.store.load_header(id)
    }

    /// A session's merged plan progress.
    pub fn plan_progress(&self, id: &str) -> Result<PlanProgress> {
        self.store.load_plan_progress(id)
    }

    /// A whole session.
    pub fn load(&self, id: &str) -> Result<Session> {
        self.store.load_session(id)
    }

    /// Messages `from..=to` of a session.
    pub fn messages(&self, id: &str, from: i64, to: i64) -> Result<Vec<Message>> {
        self.store.load_messages(id, from, to)
    }

    /// Tool calls the session's last tool-calling assistant message made that never got a
    /// result: the process stopped between "the assistant asked" and "the tool answered".
    /// Resuming replays them (at least once). Reads only the transcript's tail.
    pub fn interrupted_tool_calls(&self, id: &str) -> Result<Vec<ToolCall>> {
        let last = self.store.load_header(id)?.last_seq;
        let tail = self
            .store
            .load_messages(id, (last - INTERRUPT_SCAN + 1).max(1), last)?;
        Ok(dangling_tool_calls(&tail))
    }

    /// Full-text search across the workspace.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>> {
        self.store.search(query, limit)
    }

    /// A session's assets.
    pub fn assets(&self, id: &str) -> Result<Vec<AssetMeta>> {
        self.store.list_assets(id)
    }

    /// An asset's bytes.
    pub fn asset_bytes(&self, id: &str, asset_id: &str) -> Result<(AssetMeta, Vec<u8>)> {
        self.store.open_asset(id, asset_id)
    }

    /// The session file of a session.
    pub fn export(&self, id: &str) -> Result<SessionFile> {
        file::export(&self.store, id)
    }

    // ----- changing -------------------------------------------------------------------------

    /// Starts a new, empty session.
    pub fn new_session(&self, new: NewSession) -> Result<SessionHeader> {
        self.store.create_session(new)
    }

    /// Appends messages (user message submitted, assistant reply finished, tool result done).
    pub fn append(&self, id: &str, messages: &[NewMessage], meta: &AppendMeta) -> Result<Vec<i64>> {
        self.locked(id, |s| s.append_messages(id, messages, meta))
    }

    /// Changes header state.
    pub fn update_state(&self, id: &str, update: &StateUpdate) -> Result<()> {
        self.locked(id, |s| s.update_state(id, update))
    }

    /// Renames a session.
    pub fn rename(&self, id: &str, title: &str) -> Result<()> {
        self.locked(id, |s| s.rename(id, title))
    }

    /// Records step progress.
    pub fn step_update(&self, id: &str, step_id: &str, update: &StepUpdate) -> Result<()> {
        self.locked(id, |s| s.record_step_update(id, step_id, update))
    }

    /// Compaction: replaces the transcript, carrying the task state forward and resetting the
    /// context token totals.
    pub fn compact(&self, id: &str, rep: &Replacement) -> Result<()> {
        self.locked(id, |s| s.replace_transcript(id, rep))
    }

    /// Forks at `at_seq` (default: the end).
    pub fn fork(&self, id: &str, at_seq: Option<i64>) -> Result<SessionHeader> {
        self.locked(id, |s| s.fork(id, at_seq))
    }

    /// Deletes a session and its assets.
    pub fn delete(&self, id: &str) -> Result<()> {
        self.locked(id, |s| s.delete(id))
    }

    /// Stores an asset for a session.
    pub fn save_asset(&self, id: &str, mime_type: &str, data: &[u8]) -> Result<AssetMeta> {
        self.locked(id, |s| s.save_asset(id, None, mime_type, data))
    }

    /// Imports a session file; `new_id` gives it a fresh id.
    pub fn import(&self, doc: &SessionFile, new_id: bool) -> Result<SessionHeader> {
        file::import(&self.store, doc, new_id)
    }

    // ----- lifecycle decisions ---------------------------------------------------------------

    /// The lifecycle seed's new-or-continue decision chain, run where the session is chosen.
    pub fn decide(&self, req: &SessionRequest, new: NewSession) -> Result<Decision> {
        if req.new_session {
            return Ok(Decision::New(self.new_session(new)?.id));
        }
        if let Some(id) = req.session_id.as_deref().filter(|s| !s.is_empty()) {
            match self.store.load_header(id) {
                Ok(h) => return Ok(Decision::Continue(h.id)),
                Err(StoreError::NotFound { .. }) => {
                    if let Some(found) = self.recover(req)? {
                        return Ok(Decision::Recovered {
                            session_id: found,
                            reason: "session_not_found",
                        });
                    }
                    let created = self.new_session(new)?;
                    return Ok(Decision::NewWithWarning {
                        session_id: created.id,
                        warning: "session_not_found_starting_new",
                        recent: self.recent(5)?,
                    });
                }
                Err(e) => return Err(e),
            }
        }
        if let Some(found) = self.recover(req)? {
            return Ok(Decision::Recovered {
                session_id: found,
                reason: "session_id_missing",
            });
        }
        let created = self.new_session(new)?;
        if req.has_continuation {
            return Ok(Decision::NewWithWarning {
                session_id: created.id,
                warning: "session_id_missing_starting_fresh",
                recent: self.recent(5)?,
            });
        }
        Ok(Decision::New(created.id))
    }

    fn recover(&self, req: &SessionRequest) -> Result<Option<String>> {
        match req.conversation_key.as_deref() {
            Some(k) if !k.is_empty() => Ok(self.store.find_by_conversation_key(k)?.map(|s| s.id)),
            _ => Ok(None),
        }
    }

    fn recent(&self, n: usize) -> Result<Vec<(String, String)>> {
        Ok(self
            .list(&ListQuery {
                limit: n,
                ..ListQuery::default()
            })?
            .items
            .into_iter()
            .map(|s| (s.id.clone(), s.display_title().to_string()))
            .collect())
    }
}

/// Tool calls of the last assistant message that carries calls and have no tool result after
/// it: what a crash between "assistant asked" and "tool answered" leaves behind. On resume
/// they are replayed (at least once: a replayed call may repeat side effects).
pub fn dangling_tool_calls(messages: &[Message]) -> Vec<ToolCall> {
    let Some(idx) = messages
        .iter()
        .rposition(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
    else {
        return Vec::new();
    };
    let answered: HashSet<&str> = messages[idx + 1..]
        .iter()
        .filter(|m| m.role == Role::Tool)
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    messages[idx]
        .tool_calls
        .iter()
        .filter(|c| !answered.contains(c.id.as_str()))
        .cloned()
        .collect()
}
