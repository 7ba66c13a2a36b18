//! What a command changed: a fingerprint of the workspace (every file's path, size, mtime and
//! mode, walked with the `ignore` crate so `.gitignore` is honoured, `.git/` and neocode's
//! home left out) before and after it, compared. A command leaves no before-image, so these
//! changes are reported, never restored.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::session::snapshot::SNAPSHOT_LIMIT;
use crate::session::{CommandChange, FileChange, FileState};

/// Files walked at most; a larger workspace is not fingerprinted (and the result says so).
pub(crate) const FINGERPRINT_LIMIT: usize = 50_000;

/// Paths named in the result text at most (the stored change list keeps them all).
const NAMED: usize = 20;

/// (size, mtime in ns, mode) by path relative to the root.
pub(crate) struct Fingerprint {
    files: HashMap<String, (u64, i128, u32)>,
    /// False when the walk stopped at [`FINGERPRINT_LIMIT`].
    complete: bool,
}

/// Walks `root` (its ignore files honoured, `.git` and `home` skipped) on two threads.
pub(crate) fn take(root: &Path, home: Option<&Path>) -> Fingerprint {
    use ignore::WalkState;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, Ordering};
    let home = home.map(Path::to_path_buf);
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .parents(false)
        .follow_links(false)
        .threads(2)
        .filter_entry(move |e| {
            e.file_name() != ".git" && home.as_deref().is_none_or(|h| e.path() != h)
        })
        .build_parallel();
    let files: Mutex<HashMap<String, (u64, i128, u32)>> = Mutex::new(HashMap::new());
    let over = AtomicBool::new(false);
    walker.run(|| {
        let (files, over) = (&files, &over);
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if entry.depth() == 0 || entry.file_type().is_some_and(|t| t.is_dir()) {
                return WalkState::Continue;
            }
            let (Ok(rel), Ok(md)) = (entry.path().strip_prefix(root), entry.metadata()) else {
                return WalkState::Continue;
            };
            let mtime = i128::from(md.mtime()) * 1_000_000_000 + i128::from(md.mtime_nsec());
            let mut files = files.lock().unwrap_or_else(|p| p.into_inner());
            if files.len() >= FINGERPRINT_LIMIT {
                over.store(true, Ordering::Relaxed);
                return WalkState::Quit;
            }
            files.insert(
                rel.to_string_lossy().into_owned(),
                (md.size(), mtime, md.mode() & 0o7777),
            );
            WalkState::Continue
        })
    });
    Fingerprint {
        files: files.into_inner().unwrap_or_else(|p| p.into_inner()),
        complete: !over.load(Ordering::Relaxed),
    }
}

/// The paths that differ between two fingerprints, sorted, each with its state after the
/// command (hashed; `Unknown` over the snapshot cap) and the tree holding the state before.
pub(crate) fn changes(
    root: &Path,
    before: &Fingerprint,
    after: &Fingerprint,
    before_tree: Option<&str>,
) -> Vec<FileChange> {
    let mut out: Vec<FileChange> = Vec::new();
    let change = |path: &str, change: CommandChange| {
        let after = match change {
            CommandChange::Deleted => FileState::Absent,
            CommandChange::Created | CommandChange::Modified => state_now(&root.join(path)),
        };
        FileChange::ByCommand {
            path: path.to_string(),
            change,
            after,
            before_tree: before_tree.map(str::to_string),
        }
    };
    for (path, meta) in &after.files {
        match before.files.get(path) {
            None => out.push(change(path, CommandChange::Created)),
            Some(old) if old != meta => out.push(change(path, CommandChange::Modified)),
            Some(_) => {}
        }
    }
    for path in before.files.keys() {
        if !after.files.contains_key(path) {
            out.push(change(path, CommandChange::Deleted));
        }
    }
    out.sort_by(|a, b| path_of(a).cmp(path_of(b)));
    out
}

/// A file's state now (`Unknown` when it cannot be read, is not a regular file, or is over
/// the snapshot cap).
fn state_now(path: &Path) -> FileState {
    match std::fs::symlink_metadata(path) {
        Ok(md) if md.is_file() && md.len() <= SNAPSHOT_LIMIT => std::fs::read(path)
            .map_or(FileState::Unknown, |d| {
                FileState::of(&d, md.mode() & 0o7777)
            }),
        _ => FileState::Unknown,
    }
}

fn path_of(c: &FileChange) -> &str {
    match c {
        FileChange::Written { path, .. } | FileChange::ByCommand { path, .. } => path,
    }
}

/// The line the result ends with when the command changed files (or could not be watched).
pub(crate) fn report(
    before: &Fingerprint,
    after: &Fingerprint,
    changes: &[FileChange],
    in_git: bool,
) -> String {
    if !before.complete || !after.complete {
        return format!(
            "[the workspace has over {FINGERPRINT_LIMIT} files, so what the command changed was not recorded; a rewind cannot restore it]\n"
        );
    }
    if changes.is_empty() {
        return String::new();
    }
    let mut named: Vec<String> = changes
        .iter()
        .take(NAMED)
        .map(|c| match c {
            FileChange::ByCommand { path, change, .. } => {
                format!("{path} ({})", change.as_str())
            }
            FileChange::Written { path, .. } => path.clone(),
        })
        .collect();
    if changes.len() > NAMED {
        named.push(format!("and {} more", changes.len() - NAMED));
    }
    let how = if in_git {
        "restorable by a rewind (git holds the work tree as it was before)"
    } else {
        "not restorable by a rewind"
    };
    format!(
        "[files changed by a command, {how}: {}]\n",
        named.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_modified_and_deleted_files_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("keep"), "k").unwrap();
        std::fs::write(root.join("edit"), "1").unwrap();
        std::fs::write(root.join("gone"), "g").unwrap();
        std::fs::write(root.join(".gitignore"), "ignored/\n").unwrap();
        std::fs::create_dir(root.join("ignored")).unwrap();
        let before = take(root, None);
        std::fs::write(root.join("edit"), "22").unwrap();
        std::fs::remove_file(root.join("gone")).unwrap();
        std::fs::write(root.join("new"), "n").unwrap();
        std::fs::write(root.join("ignored/x"), "x").unwrap();
        let after = take(root, None);
        let got: Vec<String> = changes(root, &before, &after, None)
            .iter()
            .map(|c| match c {
                FileChange::ByCommand {
                    path,
                    change,
                    after,
                    ..
                } => format!("{path} {} {}", change.as_str(), after == &FileState::Absent),
                FileChange::Written { .. } => unreachable!(),
            })
            .collect();
        assert_eq!(
            got,
            [
                "edit modified false",
                "gone deleted true",
                "new created false"
            ]
        );
    }
}
