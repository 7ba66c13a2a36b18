//! [`Sessions`]: the workspace's sessions as the front ends see them. Reads pass through to
//! the store; writes to one session are serialised within this process (SQLite serialises
//! them across processes).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use crate::session::file::{self, SessionFile};
use crate::session::{
    AppendMeta, AssetMeta, ListBounds, ListLine, ListPage, ListQuery, Message, NewMessage,
    NewSession, PageKey, PlanProgress, QueuedMessage, Result, SearchResults, Session,
    SessionHeader, SessionSummary, StateUpdate, StepConversation, StepUpdate, Store,
};

/// The status shown for a `running` session whose process died (see
/// [`Sessions::shown_status`]); never stored.
pub(crate) const INTERRUPTED: &str = "interrupted";

/// The sessions of one workspace's store.
#[derive(Clone, Debug)]
pub struct Sessions {
    pub(super) store: Store,
    locks: Arc<Mutex<HashMap<String, Arc<Mutex<()>>>>>,
    /// Where this handle's turns work when it is not the workspace root: a git worktree a
    /// sub-agent or a `run --worktree` runs in ([`Sessions::rooted_at`]).
    worktree: Option<Arc<Path>>,
}

impl Sessions {
    /// Opens every existing workspace store under `home` (never creating one), each with the
    /// workspace root recorded inside its database. A database that cannot be opened is
    /// returned as an error next to its folder, so one bad workspace does not hide the others.
    pub(crate) fn open_all(home: &Path) -> Vec<(PathBuf, Result<Sessions>)> {
        crate::session::workspace::all_workspace_dbs(home)
            .into_iter()
            .map(|db| {
                let dir = db.parent().map(Path::to_path_buf).unwrap_or_default();
                let sessions = Store::open_workspace_dir(&dir).map(Sessions::with_store);
                (dir, sessions)
            })
            .collect()
    }

    pub(super) fn with_store(store: Store) -> Sessions {
        Sessions {
            store,
            locks: Arc::default(),
            worktree: None,
        }
    }

    /// The same store (the workspace's database, data folder and write locks) with its turns
    /// working in `root` (a git worktree of the workspace): [`Sessions::root`] is `root`,
    /// [`Sessions::workspace_root`] stays the workspace's.
    pub(crate) fn rooted_at(&self, root: &Path) -> Sessions {
        Sessions {
            store: self.store.clone(),
            locks: self.locks.clone(),
            worktree: Some(Arc::from(root)),
        }
    }

    /// Where turns work: the workspace root, or the worktree of [`Sessions::rooted_at`].
    pub fn root(&self) -> &Path {
        match &self.worktree {
            Some(w) => w,
            None => &self.store.paths().root,
        }
    }

    /// The workspace root, whatever worktree this handle works in (trust and the
    /// workspace's rules are the workspace's).
    pub(crate) fn workspace_root(&self) -> &Path {
        &self.store.paths().root
    }

    /// The workspace's data folder under the home.
    pub fn data_dir(&self) -> &Path {
        &self.store.paths().dir
    }

    /// The status to show for session `id` stored as `status`: a `running` session whose
    /// turn holder is gone (its process was killed) is `interrupted` until it is resumed.
    /// Only running rows pay for the check (one try-lock of the lease file).
    pub(crate) fn shown_status(&self, id: &str, status: crate::session::Status) -> &'static str {
        if status == crate::session::Status::Running && !super::lease::is_held(self.data_dir(), id)
        {
            INTERRUPTED
        } else {
            status.as_str()
        }
    }

    /// The neocode home (the workspace folder is `<home>/projects/<hash>`).
    pub fn home(&self) -> &Path {
        self.data_dir()
            .parent()
            .and_then(Path::parent)
            .unwrap_or(Path::new(""))
    }

    /// Serialises writes to one session within this process (SQLite serialises across
    /// processes).
    fn lock(&self, session_id: &str) -> Arc<Mutex<()>> {
        let mut map = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        map.entry(session_id.to_string()).or_default().clone()
    }

    fn locked<T>(&self, session_id: &str, f: impl FnOnce(&Store) -> Result<T>) -> Result<T> {
        let l = self.lock(session_id);
        let _g = l.lock().unwrap_or_else(PoisonError::into_inner);
        f(&self.store)
    }

    // ----- reading ---------------------------------------------------------------------------

    /// One page of sessions, newest activity first (header table only).
    pub fn list(&self, q: &ListQuery) -> Result<ListPage> {
        self.store.list(q)
    }

    /// A key starting a list page at a session, and the number of sessions above it.
    pub(crate) fn locate(&self, id: &str) -> Result<Option<(PageKey, u64)>> {
        self.store.locate(id)
    }

    /// Every session as `--list` prints it, newest activity first, borrowed row by row
    /// (without `details`, only what the table shows).
    pub(crate) fn for_each_list_line(
        &self,
        details: bool,
        f: impl FnMut(&ListLine<'_>) -> Result<()>,
    ) -> Result<()> {
        self.store.for_each_list_line(details, f)
    }

    /// Every session's id, title and first prompt, newest activity first.
    pub(crate) fn for_each_list_text(
        &self,
        f: impl FnMut(&str, &str, &str, &str) -> Result<()>,
    ) -> Result<()> {
        self.store.for_each_list_text(f)
    }

    /// What the whole list's column widths depend on, read from indexes alone.
    pub(crate) fn list_bounds(&self) -> Result<ListBounds> {
        self.store.list_bounds()
    }

    /// Every session id in byte order, one at a time.
    pub(crate) fn for_each_id(&self, f: impl FnMut(&str)) -> Result<()> {
        self.store.for_each_id(f)
    }

    /// Number of sessions.
    pub fn count(&self) -> Result<u64> {
        self.store.count()
    }

    /// Changes whenever anything commits to the workspace's database (see
    /// [`Store::data_version`]): views poll it to stay live without reloading blindly.
    pub(crate) fn data_version(&self) -> Result<i64> {
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

    /// The step conversations of a plan run (child sessions, oldest attempt first).
    pub fn step_conversations(&self, id: &str) -> Result<Vec<StepConversation>> {
        self.store.step_conversations(id)
    }

    /// A whole session.
    pub fn load(&self, id: &str) -> Result<Session> {
        self.store.load_session(id)
    }

    /// What the model is sent of a session: the messages from where the latest compaction's
    /// kept tail starts (see [`Store::load_context`]), with the header and plan progress.
    pub fn load_context(&self, id: &str) -> Result<Session> {
        self.store.load_context(id)
    }

    /// Messages `from..=to` of a session.
    pub fn messages(&self, id: &str, from: i64, to: i64) -> Result<Vec<Message>> {
        self.store.load_messages(id, from, to)
    }

    /// What the person typed recently, newest first: session `first`'s messages, then the
    /// workspace's (the editor's ↑ history).
    pub(crate) fn recent_user_texts(
        &self,
        first: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>> {
        self.store.recent_user_texts(first, limit)
    }

    /// Full-text search with the (bounded) number of matching messages.
    pub(crate) fn search_counted(&self, query: &str, limit: usize) -> Result<SearchResults> {
        self.store.search_counted(query, limit)
    }

    /// The seqs of one session's messages matching `query`, in order (at most `limit`), and
    /// whether more matched.
    pub(crate) fn search_session(
        &self,
        id: &str,
        query: &str,
        limit: usize,
    ) -> Result<(Vec<i64>, bool)> {
        self.store.search_session(id, query, limit)
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

    /// Starts a new, empty session. The git branch its workdir is on is recorded with it
    /// (unless the caller names one).
    pub fn new_session(&self, mut new: NewSession) -> Result<SessionHeader> {
        if new.branch.is_none() && !new.workdir.is_empty() {
            new.branch = git_branch(std::path::Path::new(&new.workdir));
        }
        self.store.create_session(new)
    }

    /// Appends messages (user message submitted, assistant reply finished, tool result done).
    pub fn append(&self, id: &str, messages: &[NewMessage], meta: &AppendMeta) -> Result<Vec<i64>> {
        self.locked(id, |s| s.append_messages(id, messages, meta))
    }

    /// Appends messages and changes header state (status, ledger, title) in one transaction:
    /// the agent's append points.
    pub(crate) fn append_with_state(
        &self,
        id: &str,
        messages: &[NewMessage],
        meta: &AppendMeta,
        update: &StateUpdate,
    ) -> Result<Vec<i64>> {
        self.locked(id, |s| s.append_with_state(id, messages, meta, update))
    }

    /// The workspace files a session's tools changed, by seq (see [`super::rewind`]).
    pub(crate) fn file_changes(&self, id: &str) -> Result<Vec<crate::session::FileChangeRow>> {
        self.store.file_changes(id)
    }

    /// [`Sessions::append_with_state`] for a tool result that changed workspace files: the
    /// changes (before-images as blobs) are recorded in the same transaction.
    pub fn append_with_files(
        &self,
        id: &str,
        messages: &[NewMessage],
        meta: &AppendMeta,
        update: &StateUpdate,
        files: &[crate::session::FileChange],
    ) -> Result<Vec<i64>> {
        self.locked(id, |s| {
            s.append_with_files(id, messages, meta, update, files)
        })
    }

    /// Answers calls interrupted by a crash "not run" (the user marked them interrupted
    /// instead of running them again): a tool result each, so nothing offers them any more.
    /// Returns the last seq.
    pub(crate) fn mark_interrupted(&self, id: &str, calls: Vec<String>) -> Result<i64> {
        let msgs: Vec<NewMessage> = calls
            .into_iter()
            .map(|c| {
                NewMessage::tool_result(
                    c,
                    "Not run: the session stopped before this call ran, and the user marked it interrupted instead of running it again.".to_string(),
                    true,
                )
            })
            .collect();
        let seqs = self.append(id, &msgs, &AppendMeta::default())?;
        Ok(seqs.last().copied().unwrap_or(0))
    }

    /// Changes header state.
    pub fn update_state(&self, id: &str, update: &StateUpdate) -> Result<()> {
        self.locked(id, |s| s.update_state(id, update))
    }

    /// Queues a message for session `id` (typed while a turn runs, or sent by another
    /// process); the process holding the lease delivers it.
    pub fn enqueue(&self, id: &str, text: &str, steer: bool) -> Result<QueuedMessage> {
        self.store.enqueue(id, text, steer)
    }

    /// The messages waiting in a session's queue, oldest first.
    pub fn queued(&self, id: &str) -> Result<Vec<QueuedMessage>> {
        self.store.queued(id)
    }

    /// Queued message `qid` if it still waits (nothing marked: the append storing it marks it
    /// delivered, see [`crate::session::StateUpdate::delivers`]).
    pub(crate) fn waiting(&self, id: &str, qid: i64) -> Result<Option<QueuedMessage>> {
        self.store.waiting(id, qid)
    }

    /// The steering messages waiting for session `id` (the running turn stores them).
    pub(crate) fn steer_waiting(&self, id: &str) -> Result<Vec<QueuedMessage>> {
        self.store.steer_waiting(id)
    }

    /// Removes a waiting message; whether it still waited.
    pub fn remove_queued(&self, id: &str, qid: i64) -> Result<bool> {
        self.store.remove_queued(id, qid)
    }

    /// Renames a session.
    pub fn rename(&self, id: &str, title: &str) -> Result<()> {
        self.locked(id, |s| s.rename(id, title))
    }

    /// Records step progress.
    pub fn step_update(&self, id: &str, step_id: &str, update: &StepUpdate) -> Result<()> {
        self.locked(id, |s| s.record_step_update(id, step_id, update))
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

    pub(crate) fn store(&self) -> &Store {
        &self.store
    }
}

/// The branch checked out where `dir` is: `.git/HEAD` of the nearest repository above it
/// read directly (a worktree's `.git` file points at its own HEAD), so no process is run and
/// nothing reaches the network. `None` outside a repository and on a detached HEAD.
pub(crate) fn git_branch(dir: &std::path::Path) -> Option<String> {
    let mut at = Some(dir);
    for _ in 0..64 {
        let d = at?;
        let git = d.join(".git");
        let head = if git.is_dir() {
            Some(git.join("HEAD"))
        } else if git.is_file() {
            let text = std::fs::read_to_string(&git).ok()?;
            let target = text.trim().strip_prefix("gitdir:")?.trim();
            Some(d.join(target).join("HEAD"))
        } else {
            None
        };
        if let Some(head) = head {
            let text = std::fs::read_to_string(head).ok()?;
            let name = text.trim().strip_prefix("ref: refs/heads/")?;
            return (!name.is_empty()).then(|| name.to_string());
        }
        at = d.parent();
    }
    None
}

#[cfg(test)]
mod branch_tests {
    use super::git_branch;

    #[test]
    fn the_branch_is_read_from_head_in_a_repository_and_its_worktrees() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("src/deep")).unwrap();
        std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/feature/x\n").unwrap();
        assert_eq!(
            git_branch(&repo.join("src/deep")).as_deref(),
            Some("feature/x")
        );
        std::fs::write(repo.join(".git/HEAD"), "3f2c9a0d\n").unwrap();
        assert_eq!(git_branch(&repo), None, "a detached HEAD has no branch");
        let wt = tmp.path().join("wt");
        std::fs::create_dir_all(repo.join(".git/worktrees/wt")).unwrap();
        std::fs::write(
            repo.join(".git/worktrees/wt/HEAD"),
            "ref: refs/heads/b29b\n",
        )
        .unwrap();
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(wt.join(".git"), "gitdir: ../repo/.git/worktrees/wt\n").unwrap();
        assert_eq!(git_branch(&wt).as_deref(), Some("b29b"));
        assert_eq!(git_branch(&tmp.path().join("none")), None);
    }
}
