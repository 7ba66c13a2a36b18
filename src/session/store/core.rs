//! The store itself: opening the workspace database, lending its connections (a pool of
//! readers, one writer, reads pinned to one snapshot), and the row helpers every domain file
//! shares.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::session::error::{Result, StoreError};
use crate::session::schema::{classify, open_connection};
use crate::session::workspace::WorkspacePaths;

/// Default largest asset accepted, in bytes.
pub(crate) const DEFAULT_ASSET_LIMIT: u64 = 32 * 1024 * 1024;

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

/// Where the store reads the time (ms since the Unix epoch) it stamps on what it writes.
/// Tests inject one ([`Store::with_clock`]) so timestamps differ without sleeping.
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

pub(super) struct Inner {
    pub(super) paths: WorkspacePaths,
    pub(super) db: PathBuf,
    /// Reading connections, borrowed per call.
    pub(super) pool: Mutex<Vec<Connection>>,
    /// This process's one writing connection, opened on first use. `data_version` is asked
    /// on it too: SQLite moves that counter only for commits of *other* connections, so this
    /// process's own writes are not reported as news (see [`Store::data_version`]).
    pub(super) writer: Mutex<Option<Connection>>,
    pub(super) asset_limit: u64,
    /// Wakes the thread that indexes long messages after their commit (started on first
    /// use; it ends when the last handle goes).
    pub(super) indexer: Mutex<Option<mpsc::Sender<()>>>,
    /// Tests stop that thread to leave a message's indexing pending, as a crash would.
    pub(super) indexer_paused: AtomicBool,
    /// What SQLite said the first time a statement found the file damaged: from then on
    /// every write is refused (never retried), reads go on as far as they can.
    pub(super) damaged: Mutex<Option<String>>,
}

/// A handle on one workspace's store. Cheap to clone; safe to share across threads (reads
/// borrow a pooled connection; writes go through the one writing connection and take
/// SQLite's write lock with `BEGIN IMMEDIATE`).
#[derive(Clone)]
pub struct Store {
    pub(super) inner: Arc<Inner>,
    pub(super) clock: Clock,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("db", &self.inner.db).finish()
    }
}

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
    pub(crate) fn open_workspace_dir(dir: &Path) -> Result<Store> {
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

    pub(super) fn from_parts(paths: WorkspacePaths, db: PathBuf, conn: Connection) -> Store {
        // A process that ended between a long message's commit and its indexing left it
        // pending: caught up in the background now (and by any search before that).
        let pending = index_pending(&conn).unwrap_or(false);
        let damaged = std::fs::read_to_string(crate::session::doctor::damaged_marker(&db)).ok();
        let store = Store {
            inner: Arc::new(Inner {
                paths,
                db,
                pool: Mutex::new(vec![conn]),
                writer: Mutex::new(None),
                asset_limit: DEFAULT_ASSET_LIMIT,
                indexer: Mutex::new(None),
                indexer_paused: AtomicBool::new(false),
                damaged: Mutex::new(damaged),
            }),
            clock: Arc::new(now_ms),
        };
        if pending {
            store.index_soon();
        }
        store
    }

    /// Has the background thread index the messages whose indexing was deferred past their
    /// commit, starting it if needed. If it cannot start, the next search or open does it.
    pub(super) fn index_soon(&self) {
        if self.inner.indexer_paused.load(Ordering::Relaxed) {
            return;
        }
        let mut slot = self
            .inner
            .indexer
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(wake) = slot.as_ref()
            && wake.send(()).is_ok()
        {
            return;
        }
        let (wake, woken) = mpsc::channel::<()>();
        // Only a weak handle between wake-ups, so the thread never keeps a store open.
        let inner = Arc::downgrade(&self.inner);
        let clock = self.clock.clone();
        let spawned = std::thread::Builder::new()
            .name("neocode-index".into())
            .spawn(move || {
                while woken.recv().is_ok() {
                    while woken.try_recv().is_ok() {}
                    let Some(inner) = inner.upgrade() else { return };
                    let store = Store {
                        inner,
                        clock: clock.clone(),
                    };
                    store.index_in_background();
                }
            });
        if spawned.is_ok() && wake.send(()).is_ok() {
            *slot = Some(wake);
        }
    }

    /// One wake-up of the indexing thread. Errors leave the messages pending for the next
    /// search or open.
    pub(super) fn index_in_background(&self) {
        if !self.inner.indexer_paused.load(Ordering::Relaxed) {
            let _ = self.catch_up_search_index();
        }
    }

    /// Stops (or restarts) indexing long messages in the background, so a test can leave
    /// one pending as a crash between its commit and its indexing would. Searches still
    /// catch up first.
    #[doc(hidden)]
    pub fn pause_background_index(&self, paused: bool) {
        self.inner.indexer_paused.store(paused, Ordering::Relaxed);
        if !paused {
            self.index_soon();
        }
    }

    /// This handle with another clock (clones share the database, not the clock).
    #[doc(hidden)]
    pub fn with_clock(mut self, clock: Clock) -> Store {
        self.clock = clock;
        self
    }

    /// The time to stamp on a write.
    pub(super) fn now(&self) -> i64 {
        (self.clock)()
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

    /// A number that changes whenever another process commits to the database; this
    /// process's own writes (through any clone of this store) leave it alone, so a view that
    /// polls it reloads only for news and applies its own writes where it makes them. Cheap
    /// enough to poll every second.
    pub fn data_version(&self) -> Result<i64> {
        self.with_writer(|c| Ok(c.pragma_query_value(None, "data_version", |r| r.get(0))?))
    }

    /// Largest asset accepted.
    pub fn asset_limit(&self) -> u64 {
        self.inner.asset_limit
    }

    /// Runs `f` with every read this store makes on this thread inside one read transaction,
    /// so the reads see one committed state of the database however many statements they
    /// take (a writer committing between two of them is seen by neither, or by both). Writes
    /// made inside `f` go through the writing connection as always (and are not seen by
    /// those reads). Nested calls join the outer transaction.
    pub(crate) fn read_consistent<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let key = Arc::as_ptr(&self.inner) as usize;
        if PINNED.with(|p| p.borrow().iter().any(|(k, _)| *k == key)) {
            return f();
        }
        let conn = self.take_conn()?;
        // `BEGIN` defers the snapshot to the first read: one read now pins it.
        let begun = conn
            .execute_batch("BEGIN; SELECT count(*) FROM sessions;")
            .map_err(|e| self.noted(e.into()));
        if let Err(e) = begun {
            self.give_back(conn);
            return Err(e);
        }
        PINNED.with(|p| p.borrow_mut().push((key, Some(conn))));
        let out = f();
        let conn = PINNED.with(|p| {
            let mut pinned = p.borrow_mut();
            let at = pinned.iter().rposition(|(k, _)| *k == key)?;
            pinned.remove(at).1
        });
        if let Some(conn) = conn {
            // Only reads ran: ending the transaction cannot lose anything.
            let _ = conn.execute_batch("COMMIT");
            self.give_back(conn);
        }
        out
    }

    pub(super) fn take_conn(&self) -> Result<Connection> {
        let taken = self
            .inner
            .pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        match taken {
            Some(c) => Ok(c),
            None => open_connection(&self.inner.db, false, &self.inner.paths.root),
        }
    }

    pub(super) fn give_back(&self, conn: Connection) {
        let mut pool = self
            .inner
            .pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // Enough idle connections for the threads that read at once; more are closed.
        if pool.len() < 8 {
            pool.push(conn);
        }
    }

    pub(super) fn with_conn<T>(&self, f: impl FnOnce(&mut Connection) -> Result<T>) -> Result<T> {
        // Inside [`Store::read_consistent`] on this thread: its connection, unless a read is
        // already using it (a read that reads again takes a pooled one, as before).
        let key = Arc::as_ptr(&self.inner) as usize;
        let pinned = PINNED.with(|p| {
            let mut pinned = p.borrow_mut();
            let slot = pinned.iter_mut().rev().find(|(k, _)| *k == key)?;
            slot.1.take()
        });
        if let Some(mut conn) = pinned {
            let out = f(&mut conn);
            PINNED.with(|p| {
                let mut pinned = p.borrow_mut();
                if let Some(slot) = pinned.iter_mut().rev().find(|(k, _)| *k == key) {
                    slot.1 = Some(conn);
                }
            });
            return out.map_err(|e| self.noted(e));
        }
        let mut conn = self.take_conn()?;
        let out = f(&mut conn);
        self.give_back(conn);
        out.map_err(|e| self.noted(e))
    }

    /// Maps a SQLite error and remembers a damaged file (see [`Store::damaged`]).
    pub(super) fn noted(&self, e: StoreError) -> StoreError {
        let e = match e {
            StoreError::Sqlite(s) => classify(&self.inner.db, s),
            other => other,
        };
        if let StoreError::Damaged { detail, .. } = &e {
            let mut d = self
                .inner
                .damaged
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if d.is_none() {
                *d = Some(detail.clone());
                // Best effort: other processes (and the next run) stop writing too.
                let _ = std::fs::write(
                    crate::session::doctor::damaged_marker(&self.inner.db),
                    detail,
                );
            }
        }
        e
    }

    /// What SQLite said when a statement of this store found the database damaged, if one
    /// did; every write fails from then on.
    pub(crate) fn damaged(&self) -> Option<String> {
        self.inner
            .damaged
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Refuses to write once the database was found damaged.
    pub(crate) fn refuse_if_damaged(&self) -> Result<()> {
        // Another process may have found the damage since this one opened the store: its
        // marker stops this process's writes too (one stat per write).
        if self.damaged().is_none()
            && let Ok(detail) =
                std::fs::read_to_string(crate::session::doctor::damaged_marker(&self.inner.db))
        {
            let mut d = self
                .inner
                .damaged
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            d.get_or_insert(detail);
        }
        match self.damaged() {
            Some(detail) => Err(StoreError::Damaged {
                path: self.inner.db.clone(),
                detail,
            }),
            None => Ok(()),
        }
    }

    /// Runs `f` in a `BEGIN IMMEDIATE` transaction on the writing connection: all or nothing.
    pub(super) fn write<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        self.refuse_if_damaged()?;
        self.with_writer(|c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let out = f(&tx)?;
            tx.commit()?;
            Ok(out)
        })
    }

    pub(super) fn with_writer<T>(&self, f: impl FnOnce(&mut Connection) -> Result<T>) -> Result<T> {
        let mut slot = self
            .inner
            .writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let conn = match &mut *slot {
            Some(c) => c,
            empty => empty.insert(open_connection(
                &self.inner.db,
                false,
                &self.inner.paths.root,
            )?),
        };
        f(conn).map_err(|e| self.noted(e))
    }

    /// `NotFound` unless the session exists.
    pub(super) fn require(&self, c: &Connection, session_id: &str) -> Result<()> {
        if session_exists(c, session_id)? {
            Ok(())
        } else {
            Err(self.not_found(session_id))
        }
    }

    pub(super) fn not_found(&self, key: &str) -> StoreError {
        StoreError::NotFound {
            what: "session",
            key: key.chars().take(80).collect(),
            scope: self.inner.paths.root.display().to_string(),
        }
    }
}

thread_local! {
    /// The connections of the [`Store::read_consistent`] calls running on this thread, by
    /// store (the address of its shared part); `None` while a read is using it.
    static PINNED: std::cell::RefCell<Vec<(usize, Option<Connection>)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Whether `sql` (a `SELECT 1 ...`) finds a row.
pub(super) fn row_exists(c: &Connection, sql: &str, args: impl rusqlite::Params) -> Result<bool> {
    Ok(c.query_row(sql, args, |_| Ok(())).optional()?.is_some())
}

pub(super) fn session_exists(c: &Connection, session_id: &str) -> Result<bool> {
    row_exists(c, "SELECT 1 FROM sessions WHERE id = ?1", [session_id])
}

pub(super) fn to_json_opt<T: Serialize>(v: Option<&T>) -> Option<String> {
    v.map(|v| serde_json::to_string(v).unwrap_or_else(|_| "null".into()))
}

pub(super) fn from_json<T: DeserializeOwned>(
    session_id: &str,
    column: &'static str,
    s: &str,
) -> Result<T> {
    serde_json::from_str(s).map_err(|e| StoreError::BadColumn {
        session_id: session_id.to_string(),
        column,
        detail: e.to_string(),
    })
}

pub(super) fn opt_json<T: DeserializeOwned>(
    session_id: &str,
    column: &'static str,
    s: Option<String>,
) -> Result<Option<T>> {
    s.map(|s| from_json(session_id, column, &s)).transpose()
}

/// Whether a message's search-index row is still pending (a process ended between its commit
/// and its indexing).
pub(super) fn index_pending(c: &Connection) -> Result<bool> {
    row_exists(c, "SELECT 1 FROM messages WHERE fts_id < 0 LIMIT 1", [])
}
