//! Connection set-up, PRAGMAs and forward migrations.

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension};

use super::error::{Result, StoreError};

/// Newest schema version this binary reads and writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Forward migrations: entry `i` moves a database from version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[
    // 0 -> 1: the first schema.
    r"
    CREATE TABLE workspace (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    CREATE TABLE sessions (
        id                 TEXT PRIMARY KEY,
        title              TEXT NOT NULL DEFAULT '',
        first_prompt       TEXT NOT NULL DEFAULT '',
        created_at_ms      INTEGER NOT NULL,
        updated_at_ms      INTEGER NOT NULL,
        provider           TEXT NOT NULL DEFAULT '',
        model              TEXT NOT NULL DEFAULT '',
        workdir            TEXT NOT NULL DEFAULT '',
        status             TEXT NOT NULL DEFAULT 'created',
        parent_id          TEXT REFERENCES sessions(id) ON DELETE SET NULL,
        fork_seq           INTEGER,
        conversation_key   TEXT,
        task_state_json    TEXT,
        todos_json         TEXT,
        skills_json        TEXT,
        plan_json          TEXT,
        ledger_json        TEXT,
        token_input_total  INTEGER NOT NULL DEFAULT 0,
        token_output_total INTEGER NOT NULL DEFAULT 0,
        last_seq           INTEGER NOT NULL DEFAULT 0,
        message_count      INTEGER NOT NULL DEFAULT 0,
        asset_count        INTEGER NOT NULL DEFAULT 0,
        plan_total         INTEGER NOT NULL DEFAULT 0,
        plan_done          INTEGER NOT NULL DEFAULT 0,
        plan_failed        INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX sessions_by_activity ON sessions(updated_at_ms); -- (updated_at_ms, rowid), scanned backwards
    CREATE INDEX sessions_by_key ON sessions(conversation_key, updated_at_ms DESC)
        WHERE conversation_key IS NOT NULL;
    CREATE INDEX sessions_by_parent ON sessions(parent_id) WHERE parent_id IS NOT NULL;
    CREATE TABLE messages (
        id                 INTEGER PRIMARY KEY,
        session_id         TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq                INTEGER NOT NULL,
        role               TEXT NOT NULL,
        parts_json         TEXT NOT NULL,
        tool_calls_json    TEXT,
        tool_call_id       TEXT,
        is_error           INTEGER NOT NULL DEFAULT 0,
        tool_metadata_json TEXT,
        created_at_ms      INTEGER NOT NULL,
        input_tokens       INTEGER NOT NULL DEFAULT 0,
        output_tokens      INTEGER NOT NULL DEFAULT 0,
        UNIQUE (session_id, seq)
    );
    CREATE VIRTUAL TABLE message_fts USING fts5(body, tokenize = 'unicode61 remove_diacritics 2');
    CREATE TABLE session_assets (
        session_id    TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        id            TEXT NOT NULL,
        mime_type     TEXT NOT NULL,
        size_bytes    INTEGER NOT NULL,
        relative_path TEXT NOT NULL,
        created_at_ms INTEGER NOT NULL,
        PRIMARY KEY (session_id, id)
    ) WITHOUT ROWID;
    CREATE TABLE step_updates (
        session_id   TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        step_id      TEXT NOT NULL,
        kind         TEXT NOT NULL CHECK (kind IN ('status', 'result', 'error')),
        payload_json TEXT NOT NULL,
        write_seq    INTEGER NOT NULL,
        PRIMARY KEY (session_id, step_id, kind)
    ) WITHOUT ROWID;
    ",
    // 1 -> 2: messages point at their search-index row instead of sharing its rowid, so a
    // fork's copied messages share the source's index rows rather than re-indexing the text
    // (re-indexing was most of the cost of forking a long session). An index row is deleted
    // when the last message pointing at it goes.
    r"
    ALTER TABLE messages ADD COLUMN fts_id INTEGER;
    UPDATE messages SET fts_id = id WHERE id IN (SELECT rowid FROM message_fts);
    CREATE INDEX messages_by_fts ON messages(fts_id);
    ",
    // 2 -> 3: imported history. The parent link loses its foreign key, so a fork or
    // sub-agent imported before its parent keeps the parent id as written (and deleting a
    // parent no longer rewrites its children); SQLite can only drop a constraint by rebuilding
    // the table, which keeps every rowid (list paging orders by it) and recreates the indexes.
    // `migrate` runs this with foreign keys off, so dropping the old table cascades nowhere.
    // New columns: the sub-agent link (separate from the fork link), where an imported
    // session came from (tool, version, its id there, a stamp of the file read, metadata),
    // and per message: cached-input, cache-write and reasoning tokens, an injected flag and a
    // metadata object.
    r"
    CREATE TABLE sessions_v3 (
        id                 TEXT PRIMARY KEY,
        title              TEXT NOT NULL DEFAULT '',
        first_prompt       TEXT NOT NULL DEFAULT '',
        created_at_ms      INTEGER NOT NULL,
        updated_at_ms      INTEGER NOT NULL,
        provider           TEXT NOT NULL DEFAULT '',
        model              TEXT NOT NULL DEFAULT '',
        workdir            TEXT NOT NULL DEFAULT '',
        status             TEXT NOT NULL DEFAULT 'created',
        parent_id          TEXT,
        fork_seq           INTEGER,
        conversation_key   TEXT,
        task_state_json    TEXT,
        todos_json         TEXT,
        skills_json        TEXT,
        plan_json          TEXT,
        ledger_json        TEXT,
        token_input_total  INTEGER NOT NULL DEFAULT 0,
        token_output_total INTEGER NOT NULL DEFAULT 0,
        last_seq           INTEGER NOT NULL DEFAULT 0,
        message_count      INTEGER NOT NULL DEFAULT 0,
        asset_count        INTEGER NOT NULL DEFAULT 0,
        plan_total         INTEGER NOT NULL DEFAULT 0,
        plan_done          INTEGER NOT NULL DEFAULT 0,
        plan_failed        INTEGER NOT NULL DEFAULT 0,
        subagent_of        TEXT,
        source_tool        TEXT,
        source_version     TEXT,
        source_id          TEXT,
        source_stamp       TEXT,
        source_meta_json   TEXT
    );
    INSERT INTO sessions_v3 (rowid, id, title, first_prompt, created_at_ms, updated_at_ms,
        provider, model, workdir, status, parent_id, fork_seq, conversation_key,
        task_state_json, todos_json, skills_json, plan_json, ledger_json, token_input_total,
        token_output_total, last_seq, message_count, asset_count, plan_total, plan_done,
        plan_failed)
    SELECT rowid, id, title, first_prompt, created_at_ms, updated_at_ms, provider, model,
        workdir, status, parent_id, fork_seq, conversation_key, task_state_json, todos_json,
        skills_json, plan_json, ledger_json, token_input_total, token_output_total, last_seq,
        message_count, asset_count, plan_total, plan_done, plan_failed
    FROM sessions;
    DROP TABLE sessions;
    ALTER TABLE sessions_v3 RENAME TO sessions;
    CREATE INDEX sessions_by_activity ON sessions(updated_at_ms);
    CREATE INDEX sessions_by_key ON sessions(conversation_key, updated_at_ms DESC)
        WHERE conversation_key IS NOT NULL;
    CREATE INDEX sessions_by_parent ON sessions(parent_id) WHERE parent_id IS NOT NULL;
    CREATE INDEX sessions_by_subagent_parent ON sessions(subagent_of)
        WHERE subagent_of IS NOT NULL;
    CREATE INDEX sessions_by_source ON sessions(source_tool, source_id)
        WHERE source_id IS NOT NULL;
    ALTER TABLE messages ADD COLUMN cached_input_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE messages ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE messages ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE messages ADD COLUMN injected INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE messages ADD COLUMN metadata_json TEXT;
    ",
    // 3 -> 4: CJK words and emoji become searchable. The index keeps symbols (`So`: emoji)
    // as tokens, and indexed text carries a separator around each CJK character and symbol
    // (`neocode_index_text`, registered on every connection; see src/session/search/text.rs), so
    // the whole index is rebuilt from the text it stores. Row ids are kept: messages' fts_id
    // stay valid.
    r#"
    CREATE VIRTUAL TABLE message_fts_rebuilt USING fts5(body,
        tokenize = "unicode61 remove_diacritics 2 categories 'L* N* Co So'");
    INSERT INTO message_fts_rebuilt (rowid, body)
        SELECT rowid, neocode_index_text(body) FROM message_fts;
    DROP TABLE message_fts;
    ALTER TABLE message_fts_rebuilt RENAME TO message_fts;
    "#,
    // 4 -> 5: the whole list without the header table. `--list` lays out its columns
    // before the first row (it streams rows and never holds them): the widest message count,
    // the largest plan and every model come from the first three indexes in a few probes.
    // `sessions_listed` holds every column a list row shows, in list order, so the whole
    // list is one sequential index scan instead of a table lookup per row (a quarter faster
    // at 100,000 sessions); `insert_order` is the rowid (copied on insert by the trigger),
    // because an index cannot name the rowid as a column and ties in activity time go to the
    // later-created session. Each append rewrites one more index entry (the list's).
    r"
    CREATE INDEX sessions_by_message_count ON sessions(message_count);
    CREATE INDEX sessions_by_model ON sessions(model);
    CREATE INDEX sessions_with_plan ON sessions(plan_total, plan_failed) WHERE plan_total > 0;
    ALTER TABLE sessions ADD COLUMN insert_order INTEGER;
    UPDATE sessions SET insert_order = rowid;
    CREATE TRIGGER sessions_insert_order AFTER INSERT ON sessions BEGIN
        UPDATE sessions SET insert_order = NEW.rowid WHERE rowid = NEW.rowid;
    END;
    CREATE INDEX sessions_listed ON sessions(updated_at_ms, insert_order, id, title,
        first_prompt, created_at_ms, provider, model, workdir, status, parent_id, fork_seq,
        message_count, token_input_total, token_output_total, plan_done, plan_failed,
        plan_total, asset_count, subagent_of, source_tool);
    ",
    // (issue 29, the durable queue) messages typed while a turn runs: a row per message,
    // `queued` until the process holding the session's lease delivers it (`delivered`, with
    // the time) or the user removes it (the row goes). `steer` ones are delivered at the next
    // tool boundary of the running turn, the others as a turn of their own, oldest first.
    r"
    CREATE TABLE queued_messages (
        id              INTEGER PRIMARY KEY,
        session_id      TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        text            TEXT NOT NULL,
        steer           INTEGER NOT NULL DEFAULT 0,
        status          TEXT NOT NULL DEFAULT 'queued',
        created_at_ms   INTEGER NOT NULL,
        delivered_at_ms INTEGER
    );
    CREATE INDEX queued_messages_waiting ON queued_messages(session_id, id)
        WHERE status = 'queued';
    ",
    // Rewind (issue 26): what a session's tools changed in the workspace. `file_changes`: one
    // row per file a tool result changed (its message's seq; 0 once compaction renumbered the
    // transcript), the before- and after-state (blob hash, mode, size; `*_absent`: no file;
    // no hash and not absent: not kept — over the size cap, or changed by a command, whose
    // change `by_command` names; inside git, `before_tree` is the tree object of the working
    // tree before the command, which holds its earlier content). Blobs live in `files/` beside the assets, shared across
    // sessions and deleted with the last row naming one. `rewinds` / `rewind_files`: the
    // journal of a rewind, written before any file is replaced, so a start finishes one a
    // kill interrupted; the previous states make it undoable.
    r"
    CREATE TABLE file_changes (
        session_id    TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq           INTEGER NOT NULL,
        path          TEXT NOT NULL,
        by_command    TEXT,
        before_hash   TEXT,
        before_mode   INTEGER,
        before_size   INTEGER,
        before_absent INTEGER NOT NULL DEFAULT 0,
        after_hash    TEXT,
        after_mode    INTEGER,
        after_size    INTEGER,
        after_absent  INTEGER NOT NULL DEFAULT 0,
        before_tree   TEXT
    );
    CREATE INDEX file_changes_by_session ON file_changes(session_id, seq);
    CREATE INDEX file_changes_by_blob ON file_changes(before_hash) WHERE before_hash IS NOT NULL;
    CREATE TABLE rewinds (
        id            TEXT PRIMARY KEY,
        session_id    TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        to_seq        INTEGER NOT NULL,
        result_id     TEXT NOT NULL,
        forks         INTEGER NOT NULL,
        undo_of       TEXT,
        state         TEXT NOT NULL CHECK (state IN ('applying', 'done', 'undone')),
        pid           INTEGER NOT NULL,
        created_at_ms INTEGER NOT NULL
    );
    CREATE INDEX rewinds_by_session ON rewinds(session_id);
    CREATE INDEX rewinds_by_result ON rewinds(result_id);
    CREATE INDEX rewinds_unfinished ON rewinds(state) WHERE state = 'applying';
    CREATE TABLE rewind_files (
        rewind_id     TEXT NOT NULL REFERENCES rewinds(id) ON DELETE CASCADE,
        path          TEXT NOT NULL,
        target_hash   TEXT,
        target_mode   INTEGER,
        target_absent INTEGER NOT NULL,
        prev_hash     TEXT,
        prev_mode     INTEGER,
        prev_absent   INTEGER NOT NULL,
        PRIMARY KEY (rewind_id, path)
    ) WITHOUT ROWID;
    CREATE INDEX rewind_files_by_target ON rewind_files(target_hash) WHERE target_hash IS NOT NULL;
    CREATE INDEX rewind_files_by_prev ON rewind_files(prev_hash) WHERE prev_hash IS NOT NULL;
    ",
    // (issue 29, b29b) the git branch a session started on: read from `.git/HEAD` of its
    // workdir when it is created (NULL outside a repository, on a detached HEAD, and for
    // sessions made before this). The list shows and filters it, so the covering index of
    // the list (`sessions_listed`) is rebuilt with it at its end.
    r"
    ALTER TABLE sessions ADD COLUMN branch TEXT;
    DROP INDEX sessions_listed;
    CREATE INDEX sessions_listed ON sessions(updated_at_ms, insert_order, id, title,
        first_prompt, created_at_ms, provider, model, workdir, status, parent_id, fork_seq,
        message_count, token_input_total, token_output_total, plan_done, plan_failed,
        plan_total, asset_count, subagent_of, source_tool, branch);
    ",
    // (issue 25, c2) dollars and the provider profile per session. `cost_usd`: the lifetime
    // dollars of the session's priced model calls (the ledger's `usage.cost_usd`, written in
    // the same transaction as the ledger; NULL while no call had a price, and for sessions
    // without a ledger). `profile`: the `[providers.NAME]` profile its last turn ran with
    // (NULL: none, or made before this). Both are list columns, so the list's covering
    // index is rebuilt with them at its end; `sessions_by_cost` answers "does any session
    // have a cost" (the table's column) with one probe.
    r"
    ALTER TABLE sessions ADD COLUMN cost_usd REAL;
    ALTER TABLE sessions ADD COLUMN profile TEXT;
    UPDATE sessions SET cost_usd = json_extract(ledger_json, '$.usage.cost_usd')
        WHERE ledger_json IS NOT NULL AND json_valid(ledger_json);
    CREATE INDEX sessions_by_cost ON sessions(cost_usd) WHERE cost_usd IS NOT NULL;
    DROP INDEX sessions_listed;
    CREATE INDEX sessions_listed ON sessions(updated_at_ms, insert_order, id, title,
        first_prompt, created_at_ms, provider, model, workdir, status, parent_id, fork_seq,
        message_count, token_input_total, token_output_total, plan_done, plan_failed,
        plan_total, asset_count, subagent_of, source_tool, branch, cost_usd, profile);
    ",
];

/// Maps SQLite's "not a database" and "corrupt" codes to [`StoreError::Damaged`].
pub(crate) fn classify(path: &Path, e: rusqlite::Error) -> StoreError {
    if let rusqlite::Error::SqliteFailure(f, msg) = &e
        && matches!(f.code, ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt)
    {
        return StoreError::Damaged {
            path: path.to_path_buf(),
            detail: msg.clone().unwrap_or_else(|| f.to_string()),
        };
    }
    StoreError::Sqlite(e)
}

/// Opens a connection with the contract's PRAGMAs. `create` makes the file (mode 0600, before
/// WAL so `-wal`/`-shm` inherit it) and migrates; otherwise the file must exist.
pub(crate) fn open_connection(path: &Path, create: bool, root: &Path) -> Result<Connection> {
    if create && !path.exists() {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .and_then(|f| {
                use std::os::unix::fs::PermissionsExt;
                // Whatever the umask.
                f.set_permissions(std::fs::Permissions::from_mode(0o600))
            })
            .map_err(|e| StoreError::io(path, e))?;
    }
    // A home without write access (a read-only mount, someone else's folder) is still
    // read: the file is opened read-only and nothing below writes to it.
    let writable = create || can_write(path);
    let conn = if writable {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        Connection::open_with_flags(path, flags).map_err(|e| classify(path, e))?
    } else {
        open_read_only(path)?
    };
    conn.busy_timeout(std::time::Duration::from_millis(5000))
        .map_err(|e| classify(path, e))?;
    // Read the version before anything that could write to the file.
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(|e| classify(path, e))?;
    if version > SCHEMA_VERSION {
        return Err(StoreError::TooNew {
            path: path.to_path_buf(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    if !writable {
        if version < SCHEMA_VERSION {
            return Err(StoreError::io(
                path,
                std::io::Error::other(format!(
                    "the database (schema {version}) needs an upgrade to {SCHEMA_VERSION}, but neither it nor its folder is writable"
                )),
            ));
        }
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(|e| classify(path, e))?;
        super::search::register_functions(&conn).map_err(|e| classify(path, e))?;
        return Ok(conn);
    }
    set_wal(&conn, path)?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(|e| classify(path, e))?;
    conn.pragma_update(None, "foreign_keys", "ON")
        .map_err(|e| classify(path, e))?;
    conn.pragma_update(None, "busy_timeout", 5000)
        .map_err(|e| classify(path, e))?;
    // 16 MiB page cache (the default is 2 MiB): a fork or compaction of a long session
    // touches more pages than that, and spilling them mid-transaction dominated its cost.
    conn.pragma_update(None, "cache_size", -16384)
        .map_err(|e| classify(path, e))?;
    super::search::register_functions(&conn).map_err(|e| classify(path, e))?;
    if version < SCHEMA_VERSION {
        migrate(&conn, path, root)?;
    }
    Ok(conn)
}

/// Whether this process may write the database file and create files beside it (`-wal`,
/// `-shm`).
fn can_write(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let ok = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            // SAFETY: a NUL-terminated path; access only reads it.
            .is_ok_and(|c| unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0)
    };
    ok(path) && path.parent().is_none_or(ok)
}

/// A read-only connection. A WAL database whose folder is not writable cannot get its
/// `-shm` file, so SQLite refuses the plain open: then it is opened `immutable` (SQLite then
/// takes no locks; on a read-only mount nobody can write it meanwhile, and a folder that is
/// only someone else's to write is read as it is at that moment).
pub(crate) fn open_read_only(path: &Path) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let plain = Connection::open_with_flags(path, flags).and_then(|c| {
        c.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0))?;
        Ok(c)
    });
    match plain {
        Ok(c) => Ok(c),
        Err(rusqlite::Error::SqliteFailure(f, _))
            if matches!(
                f.code,
                ErrorCode::CannotOpen | ErrorCode::ReadOnly | ErrorCode::DatabaseBusy
            ) =>
        {
            let mut uri = String::from("file:");
            for ch in path.to_string_lossy().chars() {
                match ch {
                    '%' => uri.push_str("%25"),
                    '?' => uri.push_str("%3f"),
                    '#' => uri.push_str("%23"),
                    c => uri.push(c),
                }
            }
            uri.push_str("?immutable=1");
            Connection::open_with_flags(&uri, flags).map_err(|e| classify(path, e))
        }
        Err(e) => Err(classify(path, e)),
    }
}

/// Switches the file to WAL. Switching a rollback-journal file needs an exclusive lock and
/// SQLite answers `SQLITE_BUSY` at once (no busy handler) while another process holds any
/// lock, which happens when several processes open a new workspace together; retry for as
/// long as the busy timeout. Once the file is in WAL mode this is a no-op.
fn set_wal(conn: &Connection, path: &Path) -> Result<()> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(5000);
    loop {
        match conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0)) {
            Ok(mode) if mode.eq_ignore_ascii_case("wal") => return Ok(()),
            Ok(mode) => {
                return Err(StoreError::io(
                    path,
                    std::io::Error::other(format!(
                        "cannot switch the database to WAL (journal mode stays {mode})"
                    )),
                ));
            }
            Err(rusqlite::Error::SqliteFailure(f, _))
                if f.code == ErrorCode::DatabaseBusy && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(e) => return Err(classify(path, e)),
        }
    }
}

/// Applies every missing migration in one immediate transaction.
fn migrate(conn: &Connection, path: &Path, root: &Path) -> Result<()> {
    // A migration that rebuilds a table must not fire the foreign-key actions of the other
    // tables when it drops the old one (messages cascade from sessions). The pragma is a
    // no-op inside a transaction, so it is switched around it; `foreign_key_check` below
    // proves the rebuilt schema still holds before anything commits.
    conn.pragma_update(None, "foreign_keys", "OFF")
        .map_err(|e| classify(path, e))?;
    let result = migrate_locked(conn, path, root);
    conn.pragma_update(None, "foreign_keys", "ON")
        .map_err(|e| classify(path, e))?;
    result
}

fn migrate_locked(conn: &Connection, path: &Path, root: &Path) -> Result<()> {
    conn.execute_batch("BEGIN IMMEDIATE")
        .map_err(|e| classify(path, e))?;
    let result = (|| -> Result<()> {
        // Another process may have migrated while we waited for the lock.
        let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                path: path.to_path_buf(),
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        for (v, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            conn.execute_batch(sql).map_err(|e| classify(path, e))?;
            conn.pragma_update(None, "user_version", v as i64 + 1)?;
        }
        let broken: Option<String> = conn
            .query_row("PRAGMA foreign_key_check", [], |r| r.get(0))
            .optional()?;
        if let Some(table) = broken {
            return Err(StoreError::Corrupt {
                path: path.to_path_buf(),
                detail: format!("migration left a dangling reference in {table}"),
            });
        }
        conn.execute(
            "INSERT INTO workspace(key, value) VALUES ('root', ?1)
             ON CONFLICT(key) DO NOTHING",
            [root.to_string_lossy()],
        )?;
        Ok(())
    })();
    match result {
        Ok(()) => conn.execute_batch("COMMIT").map_err(|e| classify(path, e)),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}
