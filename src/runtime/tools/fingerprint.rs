//! What a command changed: a fingerprint of the workspace (every file's path, size, mtime and
//! mode, walked with the `ignore` crate so `.gitignore` is honoured, `.git/` and neocode's
//! home left out) before and after it, compared. A command leaves no before-image, so these
//! changes are reported, never restored.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::session::snapshot::SNAPSHOT_LIMIT;
use crate::session::{CommandChange, FileChange, FileState};

/// Files walked at most; a larger workspace is not fingerprinted (and the result says so).
pub(crate) const FINGERPRINT_LIMIT: usize = 50_000;

/// Paths named in the result text at most (the stored change list keeps them all).
const NAMED: usize = 20;

/// One file as the walk saw it: no content is read, only what `lstat` says.
#[derive(Debug, PartialEq, Eq)]
struct Entry {
    /// Relative to the root.
    path: Box<str>,
    size: u64,
    /// Modification time in nanoseconds since the epoch.
    mtime: i64,
    /// Permission bits.
    mode: u32,
}

/// Every file of the workspace, sorted by path (two fingerprints are compared by merging).
pub(crate) struct Fingerprint {
    files: Vec<Entry>,
    /// False when the walk stopped at [`FINGERPRINT_LIMIT`].
    complete: bool,
}

/// What [`collect`] keeps of one walked entry.
pub(crate) enum Found<T> {
    Skip,
    /// Kept, not counted against [`FINGERPRINT_LIMIT`] (a folder).
    Kept(T),
    /// Kept and counted: past the limit the walk stops.
    Counted(T),
}

/// What one walking thread found, handed over when the walk drops its visitor.
struct Visitor<'a, T: Send, F> {
    root: &'a Path,
    see: &'a F,
    found: Vec<T>,
    all: &'a Mutex<Vec<Vec<T>>>,
    seen: &'a AtomicUsize,
}

impl<T: Send, F> Drop for Visitor<'_, T, F> {
    fn drop(&mut self) {
        let found = std::mem::take(&mut self.found);
        self.all
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(found);
    }
}

impl<T: Send, F> ignore::ParallelVisitor for Visitor<'_, T, F>
where
    F: Fn(&ignore::DirEntry, &Path) -> Found<T> + Sync,
{
    fn visit(&mut self, entry: Result<ignore::DirEntry, ignore::Error>) -> ignore::WalkState {
        let Ok(entry) = entry else {
            return ignore::WalkState::Continue;
        };
        let Ok(rel) = entry.path().strip_prefix(self.root) else {
            return ignore::WalkState::Continue;
        };
        match (self.see)(&entry, rel) {
            Found::Skip => {}
            Found::Kept(t) => self.found.push(t),
            Found::Counted(t) => {
                if self.seen.fetch_add(1, Ordering::Relaxed) >= FINGERPRINT_LIMIT {
                    return ignore::WalkState::Quit;
                }
                self.found.push(t);
            }
        }
        ignore::WalkState::Continue
    }
}

struct Visitors<'a, T: Send, F> {
    root: &'a Path,
    see: &'a F,
    all: &'a Mutex<Vec<Vec<T>>>,
    seen: &'a AtomicUsize,
}

impl<'s, T: Send + 's, F> ignore::ParallelVisitorBuilder<'s> for Visitors<'s, T, F>
where
    F: Fn(&ignore::DirEntry, &Path) -> Found<T> + Sync + 's,
{
    fn build(&mut self) -> Box<dyn ignore::ParallelVisitor + 's> {
        Box::new(Visitor {
            root: self.root,
            see: self.see,
            found: Vec::new(),
            all: self.all,
            seen: self.seen,
        })
    }
}

/// Walks `root` ([`walk`]'s rules) on two threads, each collecting what `see` keeps of an
/// entry (given with its path relative to `root`) in its own list (no lock per file),
/// merged at the end. Also returns how many counted entries were seen: above
/// [`FINGERPRINT_LIMIT`] the walk stopped early and the list is incomplete.
pub(crate) fn collect<T: Send>(
    root: &Path,
    home: Option<&Path>,
    see: impl Fn(&ignore::DirEntry, &Path) -> Found<T> + Sync,
) -> (Vec<T>, usize) {
    let all = Mutex::new(Vec::new());
    let seen = AtomicUsize::new(0);
    walk(root, home, |_| true)
        .threads(2)
        .build_parallel()
        .visit(&mut Visitors {
            root,
            see: &see,
            all: &all,
            seen: &seen,
        });
    let parts = all
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut found = Vec::with_capacity(parts.iter().map(Vec::len).sum());
    for p in parts {
        found.extend(p);
    }
    (found, seen.into_inner())
}

/// The walk every fingerprint uses: ignore files honoured (not those above `root`), hidden
/// files included, links not followed, `.git` and `home` skipped, and whatever `keep` refuses.
pub(crate) fn walk(
    root: &Path,
    home: Option<&Path>,
    keep: impl Fn(&ignore::DirEntry) -> bool + Send + Sync + 'static,
) -> ignore::WalkBuilder {
    let home = home.map(Path::to_path_buf);
    let mut b = ignore::WalkBuilder::new(root);
    b.hidden(false)
        .require_git(false)
        .parents(false)
        .follow_links(false)
        .filter_entry(move |e| {
            e.file_name() != ".git" && home.as_deref().is_none_or(|h| e.path() != h) && keep(e)
        });
    b
}

impl Fingerprint {
    /// The files' paths, sorted.
    pub(crate) fn paths(&self) -> Vec<&str> {
        self.files.iter().map(|e| &*e.path).collect()
    }
}

/// Walks `root` (its ignore files honoured, `.git` and `home` skipped): every file's
/// `lstat`, sorted by path.
pub(crate) fn take(root: &Path, home: Option<&Path>) -> Fingerprint {
    let (mut files, seen) = collect(root, home, |entry, rel| {
        if entry.depth() == 0 || entry.file_type().is_some_and(|t| t.is_dir()) {
            return Found::Skip;
        }
        let Ok(md) = entry.metadata() else {
            return Found::Skip;
        };
        Found::Counted(Entry {
            path: rel.to_string_lossy().into(),
            size: md.size(),
            mtime: md
                .mtime()
                .saturating_mul(1_000_000_000)
                .saturating_add(md.mtime_nsec()),
            mode: md.mode() & 0o7777,
        })
    });
    files.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    Fingerprint {
        files,
        complete: seen <= FINGERPRINT_LIMIT,
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
    use std::cmp::Ordering;
    let change = |path: &str, change: CommandChange| by_command(root, path, change, before_tree);
    let mut out: Vec<FileChange> = Vec::new();
    let (mut old, mut new) = (
        before.files.iter().peekable(),
        after.files.iter().peekable(),
    );
    loop {
        let order = match (old.peek(), new.peek()) {
            (None, None) => break,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(o), Some(n)) => o.path.cmp(&n.path),
        };
        match order {
            Ordering::Less => {
                if let Some(o) = old.next() {
                    out.push(change(&o.path, CommandChange::Deleted));
                }
            }
            Ordering::Greater => {
                if let Some(n) = new.next() {
                    out.push(change(&n.path, CommandChange::Created));
                }
            }
            Ordering::Equal => {
                if let (Some(o), Some(n)) = (old.next(), new.next())
                    && o != n
                {
                    out.push(change(&n.path, CommandChange::Modified));
                }
            }
        }
    }
    out
}

/// One path a command changed, with its state now (hashed) and the tree holding it before.
pub(crate) fn by_command(
    root: &Path,
    path: &str,
    change: CommandChange,
    before_tree: Option<&str>,
) -> FileChange {
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
    named(changes, in_git)
}

/// The line naming what a command changed (empty when nothing changed).
pub(crate) fn named(changes: &[FileChange], in_git: bool) -> String {
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

    /// The two fingerprints are compared by merging sorted lists: paths whose order is not
    /// their folders' order (`d/x` between `d-x` and `d0`) and many unchanged files around
    /// the changed ones still give exactly the changed paths.
    #[test]
    fn only_the_changed_paths_among_many_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in ["d", "d/e", "z"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in 0..300 {
            std::fs::write(root.join(format!("d/e/f{f}")), "x").unwrap();
        }
        for f in ["d-x", "d0", "d/x", "z/y", "a"] {
            std::fs::write(root.join(f), "1").unwrap();
        }
        let before = take(root, None);
        assert!(before.complete);
        assert_eq!(before.files.len(), 305);
        std::fs::write(root.join("d/x"), "22").unwrap();
        std::fs::write(root.join("d/e/f150"), "yy").unwrap();
        std::fs::remove_file(root.join("d0")).unwrap();
        std::fs::write(root.join("d/e/new"), "n").unwrap();
        let after = take(root, None);
        let got: Vec<String> = changes(root, &before, &after, None)
            .iter()
            .map(|c| match c {
                FileChange::ByCommand { path, change, .. } => {
                    format!("{path} {}", change.as_str())
                }
                FileChange::Written { .. } => unreachable!(),
            })
            .collect();
        assert_eq!(
            got,
            [
                "d/e/f150 modified",
                "d/e/new created",
                "d/x modified",
                "d0 deleted"
            ]
        );
    }
}
