//! What a command changed: a fingerprint of the workspace (every file's path, size, mtime and
//! mode, walked with the `ignore` crate so `.gitignore` is honoured, `.git/` and neocode's
//! home left out) before and after it, compared. A command leaves no before-image, so these
//! changes are reported, never restored.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::session::{CommandChange, FileChange};

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

/// Walks `root` (its ignore files honoured, `.git` and `home` skipped).
pub(crate) fn take(root: &Path, home: Option<&Path>) -> Fingerprint {
    let home = home.map(Path::to_path_buf);
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .parents(false)
        .follow_links(false)
        .filter_entry(move |e| {
            e.file_name() != ".git" && home.as_deref().is_none_or(|h| e.path() != h)
        })
        .build();
    let mut files = HashMap::new();
    for entry in walker.flatten() {
        if entry.depth() == 0 || entry.file_type().is_some_and(|t| t.is_dir()) {
            continue;
        }
        if files.len() >= FINGERPRINT_LIMIT {
            return Fingerprint {
                files,
                complete: false,
            };
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let Ok(md) = entry.path().symlink_metadata() else {
            continue;
        };
        let mtime = i128::from(md.mtime()) * 1_000_000_000 + i128::from(md.mtime_nsec());
        files.insert(
            rel.to_string_lossy().into_owned(),
            (md.size(), mtime, md.mode() & 0o7777),
        );
    }
    Fingerprint {
        files,
        complete: true,
    }
}

/// The paths that differ between two fingerprints, sorted.
pub(crate) fn changes(before: &Fingerprint, after: &Fingerprint) -> Vec<FileChange> {
    let mut out: Vec<FileChange> = Vec::new();
    for (path, meta) in &after.files {
        let change = match before.files.get(path) {
            None => CommandChange::Created,
            Some(old) if old != meta => CommandChange::Modified,
            Some(_) => continue,
        };
        out.push(FileChange::ByCommand {
            path: path.clone(),
            change,
        });
    }
    for path in before.files.keys() {
        if !after.files.contains_key(path) {
            out.push(FileChange::ByCommand {
                path: path.clone(),
                change: CommandChange::Deleted,
            });
        }
    }
    out.sort_by(|a, b| path_of(a).cmp(path_of(b)));
    out
}

fn path_of(c: &FileChange) -> &str {
    match c {
        FileChange::Written { path, .. } | FileChange::ByCommand { path, .. } => path,
    }
}

/// The line the result ends with when the command changed files (or could not be watched).
pub(crate) fn report(before: &Fingerprint, after: &Fingerprint, changes: &[FileChange]) -> String {
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
            FileChange::ByCommand { path, change } => format!("{path} ({})", change.as_str()),
            FileChange::Written { path, .. } => path.clone(),
        })
        .collect();
    if changes.len() > NAMED {
        named.push(format!("and {} more", changes.len() - NAMED));
    }
    format!(
        "[files changed by a command, not restorable by a rewind: {}]\n",
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
        let got: Vec<String> = changes(&before, &after)
            .iter()
            .map(|c| match c {
                FileChange::ByCommand { path, change } => format!("{path} {}", change.as_str()),
                FileChange::Written { .. } => unreachable!(),
            })
            .collect();
        assert_eq!(got, ["edit modified", "gone deleted", "new created"]);
    }
}
