//! Rewind (issue 26): going back to a user message, conversation and files together.
//!
//! A rewind to seq `S` of session `X` forks `X` at `S - 1` (the original keeps everything
//! after `S`) and puts every file the session's tools changed from `S` on back as it was
//! just before: the before-image of its first change at or after `S`. A file changed since
//! the session's last write (by the user's editor, another session) is skipped unless
//! forced; what a rewind overwrites is stored first, so the rewind can be undone.
//!
//! Crash safety: the whole rewind (targets and previous states, blobs already stored) is
//! journaled before any file is touched, each file is replaced atomically (temporary file,
//! fsync, rename), and [`recover`] (run when a process opens the sessions) finishes a rewind
//! a kill interrupted. So each file is always either old or new, and the journal ends done.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

mod changes;
mod staged;
mod types;

pub(crate) use changes::{TurnChanges, turn_changes};
pub(crate) use staged::{staged_files, staged_note};
pub use types::{Action, FilePlan, Plan, REWOUND, RewindError, Scope};

use super::Sessions;
use super::tools::{git_snapshot, protected};
use crate::session::{FileChangeRow, FileState, Rewind, RewindFile, RewindState, Role};

type Result<T> = std::result::Result<T, RewindError>;

/// The sessions to rewind `session_id`'s files with: rooted at the git worktree it worked in
/// (a sub-agent's `worktree: true`, `run --worktree`, the TUI's `--worktree`) when it did, so
/// its before-images go back there and never onto the workspace's own files. A rewind of
/// files whose worktree is gone is refused (its changes are on its branch); one of the
/// conversation only goes on.
pub fn sessions_for(sessions: &Sessions, session_id: &str, scope: Scope) -> Result<Sessions> {
    let header = sessions.header(session_id)?;
    let workdir = Path::new(&header.workdir);
    let worktrees = sessions.workspace_root().join(".neocode").join("worktrees");
    if header.workdir.is_empty() || !workdir.starts_with(&worktrees) {
        return Ok(sessions.clone());
    }
    if workdir.is_dir() {
        return Ok(sessions.rooted_at(workdir));
    }
    if scope == Scope::ConversationOnly {
        return Ok(sessions.clone());
    }
    Err(RewindError::WorktreeGone {
        session_id: session_id.to_string(),
        path: header.workdir,
    })
}

/// Plans a rewind of `session_id` to the user message `to_seq`.
pub fn plan(
    sessions: &Sessions,
    session_id: &str,
    to_seq: i64,
    scope: Scope,
    force: bool,
) -> Result<Plan> {
    let header = sessions.header(session_id)?;
    let at = sessions.messages(session_id, to_seq, to_seq)?;
    if to_seq < 1 || at.first().is_none_or(|m| m.role != Role::User) {
        let users: Vec<String> = sessions
            .messages(session_id, 1, header.last_seq)?
            .iter()
            .filter(|m| m.role == Role::User)
            .map(|m| m.seq.to_string())
            .collect();
        return Err(RewindError::NotUserMessage {
            session_id: session_id.to_string(),
            seq: to_seq,
            user_seqs: if users.is_empty() {
                "(none)".into()
            } else {
                users.join(", ")
            },
        });
    }
    let files = if scope == Scope::ConversationOnly {
        Vec::new()
    } else {
        let changes = sessions.store().file_changes(session_id)?;
        let rewound = sessions.store().rewound_states(session_id)?;
        plan_files(
            sessions.root(),
            Some(sessions.home()),
            &changes,
            &rewound,
            to_seq,
            force,
        )
    };
    let forks = scope != Scope::FilesOnly;
    Ok(Plan {
        session_id: session_id.to_string(),
        to_seq,
        scope,
        result_id: if forks {
            uuid::Uuid::new_v4().to_string()
        } else {
            session_id.to_string()
        },
        forks,
        undo_of: None,
        files,
    })
}

/// Each path changed at or after `to_seq`: its target (the state before its first change
/// there) checked against what the session last left it as and what is there now.
fn plan_files(
    root: &Path,
    home: Option<&Path>,
    changes: &[FileChangeRow],
    rewound: &[(String, FileState)],
    to_seq: i64,
    force: bool,
) -> Vec<FilePlan> {
    // path -> (first change at or after to_seq, last change of all)
    let mut by_path: BTreeMap<&str, (Option<&FileChangeRow>, &FileChangeRow)> = BTreeMap::new();
    for c in changes {
        let e = by_path.entry(&c.path).or_insert((None, c));
        e.1 = c;
        if c.seq >= to_seq && e.0.is_none() {
            e.0 = Some(c);
        }
    }
    let mut out = Vec::new();
    for (path, (first, last)) in by_path {
        let Some(first) = first else { continue };
        if let Some(why) = refusal(root, home, path) {
            out.push(FilePlan::not_restorable(path, why));
            continue;
        }
        let (target, from_git) = match target_of(root, first) {
            Ok((t, bytes)) => (masked(t), bytes),
            Err(why) => {
                out.push(FilePlan::not_restorable(path, why.to_string()));
                continue;
            }
        };
        let current = current_state(root, path);
        // What an earlier rewind of this session set the file to is the session's too.
        let ours = rewound.iter().any(|(p, st)| p == path && st.same(&current));
        out.push(FilePlan {
            path: path.to_string(),
            action: decide(&current, &target, &last.after, force || ours),
            target,
            from_git,
        });
    }
    out
}

/// Why a file's state before the rewound turns cannot be had.
#[derive(Debug, thiserror::Error)]
enum Unrestorable {
    /// Its git snapshot cannot be read.
    #[error("{0}")]
    Snapshot(#[from] git_snapshot::SnapshotError),
    /// A command changed it and no snapshot was taken before.
    #[error("changed by a command, not restorable")]
    ByCommand,
    /// It was too large to snapshot.
    #[error("not snapshotted (it was over the size cap)")]
    OverCap,
}

/// The state before a change (and, read from git, its bytes), or why it cannot be had.
fn target_of(
    root: &Path,
    first: &FileChangeRow,
) -> std::result::Result<(FileState, Option<Vec<u8>>), Unrestorable> {
    match (&first.by_command, &first.before_tree) {
        (Some(_), Some(tree)) => match git_snapshot::read(root, tree, &first.path)? {
            Some((data, mode)) => Ok((FileState::of(&data, mode), Some(data))),
            None => Ok((FileState::Absent, None)),
        },
        (Some(_), None) => Err(Unrestorable::ByCommand),
        (None, _) if first.before == FileState::Unknown => Err(Unrestorable::OverCap),
        (None, _) => Ok((first.before.clone(), None)),
    }
}

/// What to do with a file now `current`, to be `target`, last left as `expected`.
fn decide(current: &FileState, target: &FileState, expected: &FileState, force: bool) -> Action {
    if current.same(target) {
        return Action::Unchanged;
    }
    if !force && !current.same(expected) {
        let what = if expected == &FileState::Unknown {
            "a command changed it after the session's last write, so its content is unknown"
        } else {
            "changed since the session's last write"
        };
        return Action::Skip(format!("{what} (--force replaces it)"));
    }
    match (target, current) {
        (FileState::Absent, _) => Action::Delete,
        (_, FileState::Absent) => Action::Recreate,
        _ => Action::Restore,
    }
}

/// Lines of one file's hunks a preview shows at most.
const PREVIEW_LINES: usize = 40;

/// The hunks a file's rewind applies (from what is there now to its target), as unified
/// diff lines, cut after `PREVIEW_LINES` (40); a binary file is one line saying so. Empty for
/// a file left alone. Not yet sanitised.
pub(crate) fn hunks(sessions: &Sessions, f: &FilePlan) -> Vec<String> {
    if !f.action.changes_file() {
        return Vec::new();
    }
    let read_now = checked_path(sessions.root(), &f.path)
        .ok()
        .and_then(|p| std::fs::read(p).ok());
    let target = match (&f.target, &f.from_git) {
        (_, Some(data)) => Some(data.clone()),
        (FileState::Stored { hash, .. }, None) => sessions.store().read_blob(hash).ok(),
        (FileState::Absent | FileState::Unknown, None) => None,
    };
    let (Ok(now), Ok(then)) = (
        String::from_utf8(read_now.clone().unwrap_or_default()),
        String::from_utf8(target.clone().unwrap_or_default()),
    ) else {
        return vec!["(binary content)".into()];
    };
    let from = if read_now.is_some() {
        format!("a/{}", f.path)
    } else {
        "/dev/null".into()
    };
    let to = if target.is_some() {
        format!("b/{}", f.path)
    } else {
        "/dev/null".into()
    };
    let text = similar::TextDiff::from_lines(&now, &then)
        .unified_diff()
        .context_radius(2)
        .header(&from, &to)
        .to_string();
    let all: Vec<&str> = text.lines().collect();
    let mut out: Vec<String> = all
        .iter()
        .take(PREVIEW_LINES)
        .map(ToString::to_string)
        .collect();
    if all.len() > PREVIEW_LINES {
        out.push(format!("… {} more diff lines", all.len() - PREVIEW_LINES));
    }
    out
}

/// The seq of the session's last user message (`None`: it has none).
pub(crate) fn last_user_seq(sessions: &Sessions, session_id: &str) -> Result<Option<i64>> {
    user_seq_at(sessions, session_id, None)
}

/// The user message a rewind from message `at` goes back to: `at` itself when it is a user
/// message, else the one that started its turn (the last user message at or before it);
/// without `at`, the session's last user message. `None`: there is none.
pub(crate) fn user_seq_at(
    sessions: &Sessions,
    session_id: &str,
    at: Option<i64>,
) -> Result<Option<i64>> {
    const WINDOW: i64 = 256;
    let last = sessions.header(session_id)?.last_seq;
    let mut to = at.map_or(last, |a| a.min(last));
    while to >= 1 {
        let from = (to - WINDOW + 1).max(1);
        let msgs = sessions.messages(session_id, from, to)?;
        if let Some(m) = msgs.iter().rev().find(|m| m.role == Role::User) {
            return Ok(Some(m.seq));
        }
        to = from - 1;
    }
    Ok(None)
}

/// The TUI's `/undo`: the files the last turn changed go back (a files-only rewind to the
/// last user message; the conversation is kept). Returns the plan and whether anything was
/// applied (`None`: the session has no user message).
pub(crate) fn undo_last_turn(
    sessions: &Sessions,
    session_id: &str,
) -> Result<Option<(Plan, bool)>> {
    let Some(seq) = last_user_seq(sessions, session_id)? else {
        return Ok(None);
    };
    let plan = plan(sessions, session_id, seq, Scope::FilesOnly, false)?;
    let changes = plan.files.iter().any(|f| f.action.changes_file());
    if changes {
        apply(sessions, &plan)?;
    }
    Ok(Some((plan, changes)))
}

/// Plans undoing the newest rewind made from (or into) `session_id`: each file it changed
/// goes back to what the rewind found.
pub fn plan_undo(sessions: &Sessions, session_id: &str, force: bool) -> Result<Plan> {
    let rw = sessions
        .store()
        .last_rewind(session_id)?
        .ok_or_else(|| RewindError::NothingToUndo(session_id.to_string()))?;
    let root = sessions.root();
    let files = rw
        .files
        .iter()
        .map(|f| {
            let target = masked(f.previous.clone());
            let action = match refusal(root, Some(sessions.home()), &f.path) {
                Some(why) => Action::NotRestorable(why),
                None => decide(&current_state(root, &f.path), &target, &f.target, force),
            };
            FilePlan {
                path: f.path.clone(),
                action,
                target,
                from_git: None,
            }
        })
        .collect();
    Ok(Plan {
        session_id: rw.session_id.clone(),
        to_seq: 0,
        scope: Scope::FilesOnly,
        result_id: rw.session_id.clone(),
        forks: false,
        undo_of: Some(rw.id),
        files,
    })
}

/// Carries a plan out: stores what it overwrites, journals it, forks, replaces the files,
/// marks it done. Returns the session to continue.
pub fn apply(sessions: &Sessions, plan: &Plan) -> Result<String> {
    let store = sessions.store();
    let root = sessions.root();
    let mut files = Vec::new();
    for f in plan.files.iter().filter(|f| f.action.changes_file()) {
        let full = checked_path(root, &f.path)?;
        if let Some(data) = &f.from_git {
            store.put_blob(data)?;
        }
        let previous = match std::fs::read(&full) {
            Ok(data) => FileState::Stored {
                hash: store.put_blob(&data)?,
                mode: file_mode(&full),
                size: data.len() as u64,
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => FileState::Absent,
            Err(e) => return Err(file_error(&f.path, &e)),
        };
        files.push(RewindFile {
            path: f.path.clone(),
            target: f.target.clone(),
            previous,
        });
    }
    let rw = Rewind {
        id: uuid::Uuid::new_v4().to_string(),
        session_id: plan.session_id.clone(),
        to_seq: plan.to_seq,
        result_id: plan.result_id.clone(),
        forks: plan.forks,
        undo_of: plan.undo_of.clone(),
        state: RewindState::Applying,
        pid: std::process::id(),
        files,
    };
    store.begin_rewind(&rw)?;
    if let Err(e) = finish(sessions, &rw) {
        // Nothing was replaced when staging failed: the journal goes (a failure after the
        // first rename leaves it for the next start to finish).
        if !rw
            .files
            .iter()
            .any(|f| current_state(root, &f.path).same(&f.target))
        {
            let _ = store.abandon_rewind(&rw.id);
        }
        return Err(e);
    }
    Ok(rw.result_id)
}

/// The part of a rewind after its journal: every file staged (its new content written to a
/// temporary file beside it and fsynced, in parallel), then each replaced by a rename (or
/// deleted), the folders fsynced, the fork made unless it exists, done. Safe to run again
/// on a rewind that was partly applied. When staging fails nothing was changed: the error
/// is returned and the journal is left for the next start to try again.
fn finish(sessions: &Sessions, rw: &Rewind) -> Result<()> {
    let store = sessions.store();
    let staged = stage(sessions, rw)?;
    let pause = test_pause();
    let mut dirs: Vec<PathBuf> = Vec::new();
    for (full, tmp) in &staged {
        let done = match tmp {
            Some(tmp) => std::fs::rename(tmp, full),
            None => match std::fs::remove_file(full) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                other => other,
            },
        };
        done.map_err(|e| file_error(&full.to_string_lossy(), &e))?;
        if let Some(d) = full.parent()
            && !dirs.iter().any(|x| x == d)
        {
            dirs.push(d.to_path_buf());
        }
        if let Some(p) = pause {
            std::thread::sleep(p);
        }
    }
    for d in dirs {
        if let Ok(f) = std::fs::File::open(&d) {
            let _ = f.sync_all();
        }
    }
    if rw.forks && store.load_header(&rw.result_id).is_err() {
        store.fork_as(&rw.session_id, Some(rw.to_seq - 1), &rw.result_id)?;
        // The list (and `show`) mark a session a rewind made with `↺`, and say where it went
        // back to, so rewinds of one session are told apart.
        let source = store.summary(&rw.session_id)?;
        let title = rewound_title(source.display_title(), rw.to_seq);
        store.rename(&rw.result_id, &title)?;
    }
    store.finish_rewind(&rw.id)?;
    Ok(())
}

/// The title of a session a rewind of `source` (titled so) to message `to_seq` made:
/// `↺ before #12 · Fix the tests` (the point first, so a narrow list still tells the rewinds
/// of one session apart); a rewind of such a session names its own point only.
pub(crate) fn rewound_title(source: &str, to_seq: i64) -> String {
    let base = source.trim_start_matches(REWOUND).trim_start();
    let base = base
        .strip_prefix("before #")
        .and_then(|rest| rest.split_once(" · "))
        .filter(|(n, _)| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()))
        .map_or(base, |(_, b)| b);
    format!("{REWOUND} before #{to_seq} · {base}")
}

/// A staged file's bytes and mode.
type Content = (Vec<u8>, u32);

/// Each file's path and the fsynced temporary file holding its target (`None`: deleted).
/// The blobs are read (their hashes checked) first. Then every temporary file is written and
/// its writeback started (`sync_file_range`), so the disk takes them all at once, and only
/// then each is fsynced, on up to [`SYNC_THREADS`] threads: the fsyncs mostly find their data
/// written and share the filesystem's journal commits, instead of paying one commit each.
fn stage(sessions: &Sessions, rw: &Rewind) -> Result<Vec<(PathBuf, Option<PathBuf>)>> {
    let mut work: Vec<(PathBuf, Option<Content>)> = Vec::new();
    for f in &rw.files {
        if refusal(sessions.root(), Some(sessions.home()), &f.path).is_some() {
            // Never written, whatever a journal says.
            continue;
        }
        let full = checked_path(sessions.root(), &f.path)?;
        match &f.target {
            FileState::Absent => work.push((full, None)),
            FileState::Unknown => {}
            FileState::Stored { hash, mode, .. } => {
                let data = sessions.store().read_blob(hash)?;
                work.push((full, Some((data, *mode))));
            }
        }
    }
    // In batches, so a rewind of thousands of files never holds more descriptors open
    // than the process may have.
    let mut synced = Ok(());
    for batch in work.chunks(SYNC_BATCH) {
        let written: std::io::Result<Vec<std::fs::File>> = batch
            .iter()
            .filter_map(|(full, content)| content.as_ref().map(|(d, m)| write_tmp(full, d, *m)))
            .collect();
        synced = written.and_then(|files| sync_all(&files));
        if synced.is_err() {
            break;
        }
    }
    let staged: Vec<(PathBuf, Option<PathBuf>)> = work
        .into_iter()
        .map(|(full, content)| {
            let tmp = content.map(|_| tmp_path(&full, std::process::id()));
            (full, tmp)
        })
        .collect();
    if let Err(e) = synced {
        for (_, tmp) in &staged {
            if let Some(t) = tmp {
                let _ = std::fs::remove_file(t);
            }
        }
        return Err(RewindError::File {
            path: "a file of the rewind".into(),
            detail: crate::session::io_error(&e),
        });
    }
    Ok(staged)
}

/// Threads the staged files are fsynced on at most.
const SYNC_THREADS: usize = 32;

/// Staged files held open at once (written, then fsynced together).
const SYNC_BATCH: usize = 64;

/// fsyncs every file, on up to [`SYNC_THREADS`] threads.
fn sync_all(files: &[std::fs::File]) -> std::io::Result<()> {
    if files.is_empty() {
        return Ok(());
    }
    let chunk = files.len().div_ceil(SYNC_THREADS.min(files.len()));
    std::thread::scope(|s| {
        let handles: Vec<_> = files
            .chunks(chunk)
            .map(|part| s.spawn(move || part.iter().try_for_each(std::fs::File::sync_all)))
            .collect();
        handles.into_iter().try_for_each(|h| {
            h.join()
                .unwrap_or_else(|_| Err(std::io::Error::other("a staging thread failed")))
        })
    })
}

/// Test hook (`tests/suite/cli/rewind.rs`): `NEOCODE_TEST_REWIND_PAUSE_MS` sleeps after each
/// file, so a kill lands in the middle of a rewind.
fn test_pause() -> Option<std::time::Duration> {
    std::env::var("NEOCODE_TEST_REWIND_PAUSE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(std::time::Duration::from_millis)
}

/// Finishes every rewind a kill left journaled but not done (unless the process applying it
/// is still alive). Best effort: what fails stays journaled for the next start.
pub(crate) fn recover(sessions: &Sessions) {
    let Ok(pending) = sessions.store().unfinished_rewinds() else {
        return;
    };
    for rw in pending {
        if rw.pid != std::process::id() && process_alive(rw.pid) {
            continue;
        }
        // The temporary file a kill left behind, if it came between create and rename.
        for f in &rw.files {
            if let Ok(full) = checked_path(sessions.root(), &f.path) {
                let _ = std::fs::remove_file(tmp_path(&full, rw.pid));
            }
        }
        let _ = finish(sessions, &rw);
    }
}

fn process_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// Writes `data` with `mode` to the temporary file beside `path` and starts its writeback
/// (its folder is created when missing); the caller fsyncs the returned file.
fn write_tmp(path: &Path, data: &[u8], mode: u32) -> std::io::Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = tmp_path(path, std::process::id());
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(data)?;
        f.set_permissions(std::fs::Permissions::from_mode(safe_mode(mode)))?;
        // SAFETY: an open descriptor of ours; only asks the kernel to start writing it out
        // (durability still comes from the fsync that follows).
        unsafe { libc::sync_file_range(f.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
        Ok(f)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The temporary file process `pid` writes `path` through.
fn tmp_path(path: &Path, pid: u32) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.neocode-rewind-{pid}.tmp"))
}

/// The mode a rewind writes a file with: at most 0755 (no set-user-id, set-group-id or
/// sticky bit, nothing writable by group or others), whatever a session recorded.
pub(crate) fn safe_mode(mode: u32) -> u32 {
    mode & 0o755
}

/// `state` with its mode made [`safe_mode`].
pub(crate) fn masked(state: FileState) -> FileState {
    match state {
        FileState::Stored { hash, mode, size } => FileState::Stored {
            hash,
            mode: safe_mode(mode),
            size,
        },
        other => other,
    }
}

/// Why a rewind (or an import) never writes the recorded path `rel`: it is absolute or has
/// `..`, it is a control file (`.git`, `.neocode`: only the user changes them), or it lies,
/// through the folders that exist now, in one or in neocode's `home`.
pub(crate) fn refusal(root: &Path, home: Option<&Path>, rel: &str) -> Option<String> {
    let p = Path::new(rel);
    if p.is_absolute() || p.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Some("the recorded path leaves the workspace".into());
    }
    let control = |who: &str| format!("{who}'s control file: only the user changes it");
    if let Some(who) = protected::owner(rel) {
        return Some(control(who));
    }
    let root_real = root.canonicalize().ok()?;
    let home_real = home
        .and_then(|h| h.canonicalize().ok())
        .filter(|h| h.starts_with(&root_real));
    let full = root_real.join(p);
    let mut dir = full.parent();
    while let Some(d) = dir {
        if let Ok(real) = d.canonicalize() {
            if let Ok(inside) = real.strip_prefix(&root_real)
                && let Some(who) = protected::owner(&inside.to_string_lossy())
            {
                return Some(control(who));
            }
            if home_real.as_ref().is_some_and(|h| real.starts_with(h)) {
                return Some("it lies in neocode's home, which only the user changes".into());
            }
            return None;
        }
        dir = d.parent();
    }
    None
}

/// `root/rel`, refusing a stored path that is absolute, has `..`, or leads through a
/// symlinked folder out of the root.
fn checked_path(root: &Path, rel: &str) -> Result<PathBuf> {
    let escape = || RewindError::File {
        path: rel.to_string(),
        detail: "the recorded path leaves the workspace; refusing to touch it".into(),
    };
    let p = Path::new(rel);
    if p.is_absolute() || p.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(escape());
    }
    let full = root.join(p);
    // The deepest folder that exists must resolve inside the root.
    let mut dir = full.parent();
    while let Some(d) = dir {
        if let Ok(real) = d.canonicalize() {
            if !real.starts_with(root) {
                return Err(escape());
            }
            break;
        }
        dir = d.parent();
    }
    Ok(full)
}

/// The state of `root/rel` now (`Unknown` for something that is not a regular file).
fn current_state(root: &Path, rel: &str) -> FileState {
    let Ok(full) = checked_path(root, rel) else {
        return FileState::Unknown;
    };
    match std::fs::symlink_metadata(&full) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => FileState::Absent,
        Ok(md) if md.is_file() => match std::fs::read(&full) {
            Ok(data) => FileState::of(&data, md.permissions().mode() & 0o7777),
            Err(_) => FileState::Unknown,
        },
        _ => FileState::Unknown,
    }
}

fn file_mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).map_or(0o644, |m| m.permissions().mode() & 0o7777)
}

fn file_error(path: &str, e: &std::io::Error) -> RewindError {
    RewindError::File {
        path: path.to_string(),
        detail: crate::session::io_error(e),
    }
}

#[cfg(test)]
mod tests;
