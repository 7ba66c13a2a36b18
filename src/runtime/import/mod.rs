//! Importing other agents' history: Claude Code transcripts and Codex CLI rollouts become
//! neocode session files (`session::file`), written through the store like any imported
//! session. The source files are only ever opened for reading.
//!
//! Idempotency: a converted session keeps the source's session id (sub-agents get an id
//! derived from their parent's), and records the source tool, id and a stamp (size and mtime)
//! of the file read. A re-import skips a file whose stamp is unchanged without reading it,
//! replaces a session whose file changed, and never touches a session that was continued in
//! neocode since it was imported.

pub(crate) mod claude;
pub(crate) mod codex;
mod read;

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::session::file::{self, SessionFile};
use crate::session::store::{BulkImport, BulkOutcome};
use crate::session::{Result, Store, StoreError};

use super::Sessions;
use read::Lines;
pub use read::{Converted, ReadStats};

/// The tools whose history can be imported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceTool {
    /// Claude Code (`~/.claude/projects`).
    ClaudeCode,
    /// OpenAI Codex CLI (`~/.codex/sessions`).
    Codex,
}

impl SourceTool {
    /// The name stored with imported sessions.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SourceTool::ClaudeCode => "claude-code",
            SourceTool::Codex => "codex",
        }
    }
}

/// Size and modification time of a file: a change in either means it must be read again.
pub fn stamp(path: &Path) -> std::io::Result<String> {
    let m = std::fs::metadata(path)?;
    let mtime = m
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    Ok(format!("{}:{mtime}", m.len()))
}

/// Converts one transcript file of `tool`.
pub fn convert(tool: SourceTool, path: &Path) -> std::io::Result<Converted> {
    match tool {
        SourceTool::ClaudeCode => claude::convert(path),
        SourceTool::Codex => codex::convert(path),
    }
}

/// The id the session of `path` gets, known from the path alone (so an unchanged file can be
/// skipped without reading it), or `None` when only the content tells.
pub fn expected_id(tool: SourceTool, path: &Path) -> Option<String> {
    match tool {
        SourceTool::ClaudeCode => claude::expected_id(path),
        SourceTool::Codex => codex::expected_id(path),
    }
}

/// What happened to one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// New in the workspace.
    Imported(String),
    /// Replaced by a newer read of its file.
    Updated(String),
    /// Present and unchanged.
    Unchanged(String),
    /// Not written, with the reason.
    Refused(String, String),
}

/// Writes one converted session in a transaction of its own: new, updated, unchanged, or
/// refused with a reason. [`import_files`] is the fast path for many.
pub fn apply(sessions: &Sessions, doc: SessionFile) -> Result<Outcome> {
    let store = sessions.store();
    store.bulk_import(|bulk| {
        bulk.begin_file()?;
        match put(store, bulk, doc) {
            Ok(o) => Ok(o),
            Err(e) => {
                bulk.end_file(false)?;
                Err(e)
            }
        }
    })
}

/// Writes one session into the open file of a bulk import.
fn put(store: &Store, bulk: &mut BulkImport<'_>, mut doc: SessionFile) -> Result<Outcome> {
    let Some(src) = doc.session.source.as_mut() else {
        return Err(StoreError::Corrupt {
            path: "<import>".into(),
            detail: "converted session has no source".into(),
        });
    };
    // How much of the session the import wrote: more later means it was continued here.
    let last_seq = doc.messages.last().map_or(0, |m| m.seq);
    let meta = src
        .metadata
        .get_or_insert_with(|| Value::Object(Default::default()));
    if let Value::Object(o) = meta {
        o.insert("imported_last_seq".into(), last_seq.into());
    }
    let (tool, source_id) = (src.tool.clone(), src.id.clone());
    let prepared = file::prepare(store, doc, false)?;
    Ok(match bulk.put(prepared, &tool, &source_id)? {
        BulkOutcome::Imported(id) => Outcome::Imported(id),
        BulkOutcome::Updated(id) => Outcome::Updated(id),
        BulkOutcome::Unchanged(id) => Outcome::Unchanged(id),
        BulkOutcome::Refused(id, why) => Outcome::Refused(id, why),
    })
}

/// Source bytes written per transaction by [`import_files`]: enough that small transcripts
/// share a commit (its header, index and WAL work); small enough that the transaction's dirty
/// pages (about twice the source: message rows and the search index) fit the writing
/// connection's 16 MiB page cache instead of spilling to the WAL mid-transaction, that a
/// crash loses little work, and that another neocode process waiting to write is not held up
/// long.
pub const BATCH_BYTES: u64 = 4 << 20;
/// A transaction is also committed once it has been open this long, whatever its size.
const BATCH_TIME: std::time::Duration = std::time::Duration::from_millis(1000);

/// One transcript file to import, with the stamp (size and mtime) taken when it was listed.
#[derive(Debug, Clone)]
pub struct Todo {
    pub path: PathBuf,
    pub stamp: String,
}

/// What became of one file, told once it is durable (or failed).
#[derive(Debug)]
pub struct FileDone {
    pub path: PathBuf,
    /// What reading met (zero when the file could not be read).
    pub stats: ReadStats,
    /// Sessions that held no message (skipped).
    pub empty: u64,
    /// The sessions written, or why the file was not (then none of it was written).
    pub result: std::result::Result<Vec<Outcome>, FileFailed>,
}

/// Why none of a file's sessions were written.
#[derive(Debug, thiserror::Error)]
pub enum FileFailed {
    /// The file cannot be read.
    #[error("cannot read: {0}")]
    Read(std::io::Error),
    /// Writing one of its sessions failed (the file's writes were undone).
    #[error("{0}")]
    Store(StoreError),
    /// Its batch's commit failed (the message the commit gave).
    #[error("not saved: {0}")]
    NotSaved(String),
}

/// What [`import_files`] reports as it goes.
#[derive(Debug)]
pub enum Progress {
    /// The n-th file (from 1) is being read and written.
    Reading(usize),
    /// A file is committed, or failed.
    Done(FileDone),
}

/// Commits a bulk import's open transaction and reports the files it held: saved, or failed
/// with the reason the commit gave.
fn commit_batch(
    bulk: &mut BulkImport<'_>,
    pending: &mut Vec<FileDone>,
    on: &mut dyn FnMut(Progress),
) {
    let r = bulk.commit();
    for mut done in pending.drain(..) {
        if let Err(e) = &r {
            done.result = Err(FileFailed::NotSaved(e.to_string()));
        }
        on(Progress::Done(done));
    }
}

/// Imports transcript files of `tool` into one workspace: converted on a second thread,
/// written several files per transaction (about `batch_bytes` of source per commit). Every
/// file is written whole or not at all, and [`Progress::Done`] comes only after the commit
/// that made it durable, so a crash or Ctrl-C leaves whole sessions and a re-run skips
/// exactly the files that were reported.
pub fn import_files(
    sessions: &Sessions,
    tool: SourceTool,
    files: Vec<Todo>,
    batch_bytes: u64,
    mut on: impl FnMut(Progress),
) -> Result<()> {
    let store = sessions.store();
    let paths: Vec<PathBuf> = files.iter().map(|t| t.path.clone()).collect();
    let mut pending: Vec<FileDone> = Vec::new();
    let mut batch = 0u64;
    let mut opened = std::time::Instant::now();
    store.bulk_import(|bulk| {
        let converted = convert_in_background(tool, paths);
        for (i, ((path, conv), todo)) in converted.zip(files).enumerate() {
            on(Progress::Reading(i + 1));
            let conv = match conv {
                Ok(c) => c,
                Err(e) => {
                    on(Progress::Done(FileDone {
                        path,
                        stats: ReadStats::default(),
                        empty: 0,
                        result: Err(FileFailed::Read(e)),
                    }));
                    continue;
                }
            };
            let size = todo
                .stamp
                .split(':')
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
            let mut done = FileDone {
                path,
                stats: conv.stats,
                empty: 0,
                result: Ok(Vec::new()),
            };
            if batch == 0 {
                opened = std::time::Instant::now();
            }
            if let Err(e) = bulk.begin_file() {
                // No transaction was open (the write lock stayed taken by another process
                // past the busy timeout, say): nothing pending is lost; this file failed.
                done.result = Err(FileFailed::Store(e));
                on(Progress::Done(done));
                continue;
            }
            let mut outcomes = Vec::new();
            let mut failed = None;
            for mut doc in conv.sessions {
                if doc.messages.is_empty() {
                    // Only metadata (a summary line, a snapshot): nothing to list or resume.
                    done.empty += 1;
                    continue;
                }
                if let Some(src) = doc.session.source.as_mut() {
                    src.stamp = Some(todo.stamp.clone());
                    let meta = src
                        .metadata
                        .get_or_insert_with(|| Value::Object(Default::default()));
                    if let Value::Object(o) = meta {
                        o.insert(
                            "path".into(),
                            Value::String(done.path.to_string_lossy().into_owned()),
                        );
                    }
                }
                match put(store, bulk, doc) {
                    Ok(o) => outcomes.push(o),
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            match failed {
                None => {
                    bulk.end_file(true)?;
                    done.result = Ok(outcomes);
                }
                Some(why) => {
                    bulk.end_file(false)?;
                    done.result = Err(FileFailed::Store(why));
                }
            }
            pending.push(done);
            batch += size.max(1);
            if batch >= batch_bytes || opened.elapsed() >= BATCH_TIME {
                commit_batch(bulk, &mut pending, &mut on);
                batch = 0;
            }
        }
        commit_batch(bulk, &mut pending, &mut on);
        Ok(())
    })
}

/// Whether an existing imported session of `tool` with this id has this stamp (the fast skip).
pub fn unchanged(
    sessions: &Sessions,
    tool: SourceTool,
    source_id: &str,
    stamp: &str,
) -> Result<Option<String>> {
    Ok(sessions
        .store()
        .find_imported(tool.as_str(), source_id)?
        .filter(|r| r.stamp.as_deref() == Some(stamp))
        .map(|r| r.id))
}

/// The transcript files under `dir` (recursively), sorted.
pub fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(p),
                Ok(t) if t.is_file() && p.extension().is_some_and(|x| x == "jsonl") => out.push(p),
                _ => {}
            }
        }
    }
    out.sort();
    out
}

/// Where a tool keeps its history: `$CLAUDE_CONFIG_DIR` or `~/.claude`, `$CODEX_HOME` or
/// `~/.codex`.
pub(crate) fn tool_home(tool: SourceTool) -> Option<PathBuf> {
    let (var, dot) = match tool {
        SourceTool::ClaudeCode => ("CLAUDE_CONFIG_DIR", ".claude"),
        SourceTool::Codex => ("CODEX_HOME", ".codex"),
    };
    match std::env::var_os(var).filter(|v| !v.is_empty()) {
        Some(v) => Some(PathBuf::from(v)),
        None => std::env::var_os("HOME")
            .filter(|v| !v.is_empty())
            .map(|h| PathBuf::from(h).join(dot)),
    }
}

/// Claude Code's folder name for a project directory: every character other than an ASCII
/// letter or digit becomes `-`.
pub fn claude_project_dir_name(dir: &Path) -> String {
    dir.to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// The working directory a transcript recorded (Claude Code: a line's `cwd`; Codex:
/// `session_meta.cwd`), from its first lines.
pub(crate) fn peek_cwd(tool: SourceTool, path: &Path) -> Option<String> {
    let mut lines = Lines::open(path).ok()?;
    for _ in 0..200 {
        let v = lines.next_object().ok()??;
        let cwd = match tool {
            SourceTool::ClaudeCode => v.get("cwd"),
            SourceTool::Codex => v
                .get("payload")
                .filter(|_| v.get("type").and_then(Value::as_str) == Some("session_meta"))
                .and_then(|p| p.get("cwd")),
        };
        if let Some(c) = cwd.and_then(Value::as_str).filter(|c| !c.is_empty()) {
            return Some(c.to_string());
        }
    }
    None
}

/// Whether `cwd` is `root` or inside it.
pub(crate) fn within(root: &Path, cwd: &str) -> bool {
    Path::new(cwd).starts_with(root)
}

/// Every transcript file the tool keeps under `home`; with `root`, only those of sessions that
/// ran in that directory or below it. Parents come before their sub-agents.
pub(crate) fn discover(tool: SourceTool, home: &Path, root: Option<&Path>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    match tool {
        SourceTool::ClaudeCode => {
            let projects = home.join("projects");
            let want = root.map(claude_project_dir_name);
            let Ok(rd) = std::fs::read_dir(&projects) else {
                return out;
            };
            let mut dirs: Vec<PathBuf> = rd
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect();
            dirs.sort();
            for dir in dirs {
                let name = dir
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let exact = match &want {
                    Some(w) if name == *w => true,
                    Some(w) if name.starts_with(&format!("{w}-")) => false,
                    Some(_) => continue,
                    None => true,
                };
                for f in jsonl_files(&dir) {
                    let keep = match root {
                        None => true,
                        Some(r) => match peek_cwd(tool, &f) {
                            Some(cwd) => within(r, &cwd),
                            None => exact,
                        },
                    };
                    if keep {
                        out.push(f);
                    }
                }
            }
        }
        SourceTool::Codex => {
            for sub in ["sessions", "archived_sessions"] {
                for f in jsonl_files(&home.join(sub)) {
                    let keep = match root {
                        None => true,
                        Some(r) => peek_cwd(tool, &f).is_some_and(|c| within(r, &c)),
                    };
                    if keep {
                        out.push(f);
                    }
                }
            }
        }
    }
    order_parents_first(&mut out);
    out
}

/// Sorts sub-agent transcripts after the others (links survive any order; this only makes
/// a partial import more useful).
pub(crate) fn order_parents_first(files: &mut [PathBuf]) {
    files.sort_by_key(|p| {
        let sub = p
            .parent()
            .and_then(|d| d.file_name())
            .is_some_and(|n| n == "subagents");
        (sub, p.clone())
    });
}

/// Converts `files` on a second thread while the caller writes what was converted before, so
/// reading and parsing overlap with SQLite. At most two converted files wait at a time, which
/// keeps memory flat however many files there are; dropping the iterator stops the thread.
pub(crate) fn convert_in_background(
    tool: SourceTool,
    files: Vec<PathBuf>,
) -> impl Iterator<Item = (PathBuf, std::io::Result<Converted>)> {
    let (tx, rx) = std::sync::mpsc::sync_channel(2);
    std::thread::spawn(move || {
        for path in files {
            let c = convert(tool, &path);
            if tx.send((path, c)).is_err() {
                break;
            }
        }
    });
    rx.into_iter()
}
