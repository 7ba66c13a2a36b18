//! `neocode doctor`'s half in the session layer: is a workspace database healthy, and a
//! recovery that loses nothing recoverable and never deletes the damaged file.
//!
//! The check is SQLite's `PRAGMA integrity_check` on a read-only connection (nothing is
//! migrated or written). The recovery writes a copy beside the file, first through
//! `VACUUM INTO` (it reads every table and rebuilds every index, so a damaged index loses
//! nothing); when that fails or the copy is not sound, a salvage copy row by row into a fresh
//! database of the current schema, skipping only rows SQLite cannot read. The bundled SQLite
//! has no recovery extension (`sqlite3_recover` is not compiled in), hence the salvage. The
//! copy must pass `integrity_check`; then the damaged file (and its `-wal`) is renamed to
//! `session.db.damaged-<time>` beside it and the copy takes its place.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::error::{Result, StoreError};

/// Marker beside a database that a statement found damaged: while it exists, the store
/// writes nothing to that database (in any process). `doctor --recover` removes it.
pub(crate) fn damaged_marker(db: &Path) -> PathBuf {
    let mut s = db.as_os_str().to_os_string();
    s.push(".damaged");
    PathBuf::from(s)
}

/// What `integrity_check` said about one database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Health {
    /// The database file.
    pub db: PathBuf,
    /// `true` when SQLite answered `ok` and no damage marker is left.
    pub ok: bool,
    /// SQLite's findings (at most 20 lines), or why the file could not be checked.
    pub problems: Vec<String>,
    /// A store found the file damaged earlier (the marker exists): what SQLite said then.
    pub marked: Option<String>,
}

fn sqlite_err(db: &Path, e: rusqlite::Error) -> StoreError {
    super::schema::classify(db, e)
}

fn open_read_only(db: &Path) -> Result<Connection> {
    let c = super::schema::open_read_only(db)?;
    c.busy_timeout(std::time::Duration::from_millis(5000))
        .map_err(|e| sqlite_err(db, e))?;
    Ok(c)
}

fn integrity(c: &Connection) -> std::result::Result<Vec<String>, rusqlite::Error> {
    let mut st = c.prepare("PRAGMA integrity_check(20)")?;
    let rows = st.query_map([], |r| r.get::<_, String>(0))?;
    rows.collect()
}

/// Checks `db` with `PRAGMA integrity_check` (read-only).
pub(crate) fn check(db: &Path) -> Health {
    let marked = std::fs::read_to_string(damaged_marker(db)).ok();
    let problems = match open_read_only(db) {
        Ok(c) => match integrity(&c) {
            Ok(lines) if lines.len() == 1 && lines[0] == "ok" => Vec::new(),
            Ok(lines) => lines,
            Err(e) => vec![sqlite_err(db, e).to_string()],
        },
        Err(e) => vec![e.to_string()],
    };
    Health {
        db: db.to_path_buf(),
        ok: problems.is_empty() && marked.is_none(),
        problems,
        marked,
    }
}

/// What a recovery did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Recovered {
    /// The database, now the recovered copy.
    pub db: PathBuf,
    /// Where the damaged file was kept.
    pub kept: PathBuf,
    /// `vacuum` (a whole copy) or `salvage` (row by row).
    pub method: &'static str,
    /// Rows that could not be read (salvage only).
    pub lost_rows: u64,
    /// Sessions in the recovered copy.
    pub sessions: u64,
}

/// Recovers `db` (see the module doc). Stop every other neocode of this workspace first.
pub(crate) fn recover(db: &Path) -> Result<Recovered> {
    let root: PathBuf = open_read_only(db)
        .ok()
        .and_then(|c| {
            c.query_row("SELECT value FROM workspace WHERE key = 'root'", [], |r| {
                r.get::<_, String>(0)
            })
            .ok()
        })
        .map(PathBuf::from)
        .unwrap_or_else(|| db.parent().unwrap_or(db).to_path_buf());
    let root = root.as_path();
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
    let with = |suffix: &str| {
        let mut s = db.as_os_str().to_os_string();
        s.push(suffix);
        PathBuf::from(s)
    };
    let copy = with(&format!(".recovered-{stamp}"));
    let kept = with(&format!(".damaged-{stamp}"));
    let _ = std::fs::remove_file(&copy);
    let (method, lost_rows) = match vacuum_into(db, &copy) {
        Ok(()) if copy_is_sound(&copy) => ("vacuum", 0),
        _ => {
            let _ = std::fs::remove_file(&copy);
            let lost = salvage(db, &copy, root)?;
            if !copy_is_sound(&copy) {
                return Err(StoreError::Damaged {
                    path: copy,
                    detail: "the salvaged copy does not pass integrity_check either; the damaged file was left as it is".into(),
                });
            }
            ("salvage", lost)
        }
    };
    let sessions = open_read_only(&copy)
        .and_then(|c| {
            c.query_row("SELECT count(*) FROM sessions", [], |r| r.get::<_, i64>(0))
                .map_err(|e| sqlite_err(&copy, e))
        })
        .unwrap_or(0) as u64;
    std::fs::rename(db, &kept).map_err(|e| StoreError::io(db, e))?;
    for side in ["-wal", "-shm"] {
        let from = with(side);
        if from.exists() {
            let mut to = kept.as_os_str().to_os_string();
            to.push(side);
            std::fs::rename(&from, PathBuf::from(to)).map_err(|e| StoreError::io(&from, e))?;
        }
    }
    std::fs::rename(&copy, db).map_err(|e| StoreError::io(&copy, e))?;
    let _ = std::fs::remove_file(damaged_marker(db));
    Ok(Recovered {
        db: db.to_path_buf(),
        kept,
        method,
        lost_rows,
        sessions,
    })
}

fn copy_is_sound(copy: &Path) -> bool {
    open_read_only(copy)
        .ok()
        .and_then(|c| integrity(&c).ok())
        .is_some_and(|l| l.len() == 1 && l[0] == "ok")
}

fn vacuum_into(db: &Path, copy: &Path) -> Result<()> {
    let c = open_read_only(db)?;
    c.execute("VACUUM INTO ?1", [copy.to_string_lossy().as_ref()])
        .map_err(|e| sqlite_err(db, e))?;
    Ok(())
}

/// Copies every readable row of every table of the current schema from `db` into a fresh
/// database at `copy`; returns how many rows could not be read.
fn salvage(db: &Path, copy: &Path, root: &Path) -> Result<u64> {
    // A fresh database with the current schema (migrated like any new one).
    drop(super::schema::open_connection(copy, true, root)?);
    let c = Connection::open(copy).map_err(|e| sqlite_err(copy, e))?;
    c.execute_batch("PRAGMA foreign_keys = OFF; DELETE FROM workspace;")
        .map_err(|e| sqlite_err(copy, e))?;
    c.execute(
        "ATTACH DATABASE ?1 AS old",
        [format!("file:{}?mode=ro", db.to_string_lossy())],
    )
    .map_err(|e| sqlite_err(db, e))?;
    let tables: Vec<String> = {
        let mut st = c
            .prepare(
                "SELECT name FROM main.sqlite_master WHERE type = 'table' \
                 AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'message_fts_%' ORDER BY name",
            )
            .map_err(|e| sqlite_err(copy, e))?;
        st.query_map([], |r| r.get(0))
            .and_then(|rows| rows.collect())
            .map_err(|e| sqlite_err(copy, e))?
    };
    let mut lost = 0u64;
    for t in tables {
        lost += salvage_table(&c, &t);
    }
    c.execute_batch("DETACH DATABASE old")
        .map_err(|e| sqlite_err(copy, e))?;
    Ok(lost)
}

/// Copies the readable rows of table `t`, in rowid order, stepping over what cannot be read;
/// returns how many rows (or unreadable spots) were lost.
fn salvage_table(c: &Connection, t: &str) -> u64 {
    let q = format!("\"{}\"", t.replace('"', "\"\""));
    let cols: Vec<String> = match c.prepare(&format!("PRAGMA main.table_info({q})")) {
        Ok(mut st) => st
            .query_map([], |r| r.get::<_, String>(1))
            .and_then(|rows| rows.collect())
            .unwrap_or_default(),
        Err(_) => return 1,
    };
    if cols.is_empty() {
        return 0;
    }
    let list = cols
        .iter()
        .map(|c| format!("\"{}\"", c.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(", ");
    // Tables without rowid are copied in one statement, or not at all.
    if c.prepare(&format!("SELECT rowid FROM old.{q} LIMIT 0"))
        .is_err()
    {
        let sql = format!("INSERT OR IGNORE INTO main.{q}({list}) SELECT {list} FROM old.{q}");
        return u64::from(c.execute(&sql, []).is_err());
    }
    let next_sql = format!("SELECT rowid FROM old.{q} WHERE rowid > ?1 ORDER BY rowid LIMIT 1");
    let copy_sql = format!(
        "INSERT OR IGNORE INTO main.{q}(rowid, {list}) SELECT rowid, {list} FROM old.{q} WHERE rowid = ?1"
    );
    let mut lost = 0u64;
    let mut after: i64 = i64::MIN;
    let mut misses = 0u32;
    loop {
        match c.query_row(&next_sql, [after], |r| r.get::<_, i64>(0)) {
            Ok(id) => {
                if c.execute(&copy_sql, [id]).is_err() {
                    lost += 1;
                }
                after = id;
            }
            Err(rusqlite::Error::QueryReturnedNoRows) => break,
            Err(_) => {
                // An unreadable page: step over it, a bounded number of times.
                lost += 1;
                misses += 1;
                if misses > 10_000 || after == i64::MAX {
                    break;
                }
                after = if after == i64::MIN { 0 } else { after + 1 };
            }
        }
    }
    lost
}
