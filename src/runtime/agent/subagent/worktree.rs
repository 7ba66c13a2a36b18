//! A sub-agent's git worktree (`task` with `worktree: true`): made in the workspace's
//! `.neocode/worktrees/` (a folder that ignores itself, so the parent's `git status` and
//! walks never list it; inside `.neocode/`, which the parent's file tools and sandbox never
//! write; not in the neocode home, which a child's sandbox could then not hide), and, when
//! the child ends, its changes committed on its branch and returned as a diff, the folder
//! removed unless kept.

use crate::runtime::sessions::Sessions;
use crate::runtime::tools::worktree::{self, Worktree, WorktreeError};

/// The first characters of a session id, as a worktree's folder and branch name them.
pub(crate) fn short_id(id: &str) -> String {
    id.chars()
        .filter(char::is_ascii_alphanumeric)
        .take(8)
        .collect()
}

/// The folder the workspace's worktrees are made in.
pub(crate) fn folder(sessions: &Sessions) -> std::path::PathBuf {
    sessions.workspace_root().join(".neocode").join("worktrees")
}

/// Makes the worktree `<workspace>/.neocode/worktrees/<kind>-<short id>` on branch
/// `neocode/<kind>-<short id>` from the workspace's `HEAD`.
pub(crate) fn make(sessions: &Sessions, kind: &str, id: &str) -> Result<Worktree, WorktreeError> {
    let short = short_id(id);
    worktree::create(
        sessions.workspace_root(),
        &folder(sessions),
        &format!("{kind}-{short}"),
        &format!("neocode/{kind}-{short}"),
    )
}

/// The worktree [`make`] made for session `id`, when its folder is still there (a child
/// resumed after a crash goes on in it).
pub(crate) fn existing(sessions: &Sessions, kind: &str, id: &str) -> Option<Worktree> {
    let short = short_id(id);
    let path = folder(sessions).join(format!("{kind}-{short}"));
    if !path.is_dir() {
        return None;
    }
    worktree::open(
        sessions.workspace_root(),
        path,
        &format!("neocode/{kind}-{short}"),
    )
    .ok()
}

/// What a child's worktree gave when the child ended: its changes committed on its branch
/// and the folder removed unless `keep`. The text for the task result: the branch, where
/// the folder is when it is kept, and the diff cut at `cap` bytes (the whole diff saved
/// beside the worktrees, its path said).
pub(crate) fn finish(wt: &Worktree, id: &str, keep: bool, cap: usize) -> String {
    let mut text = String::new();
    let diff = match wt.commit(&format!("neocode sub-agent {id}")) {
        Ok(d) => d,
        Err(e) => {
            text.push_str(&format!("\n\nIts changes could not be committed: {e}."));
            None
        }
    };
    let kept = keep || !text.is_empty() || {
        match wt.remove() {
            Ok(()) => false,
            Err(e) => {
                text.push_str(&format!("\n\nIts worktree could not be removed: {e}."));
                true
            }
        }
    };
    let mut head = format!("\n\nBranch: {}", wt.branch);
    if kept {
        head.push_str(&format!(" (worktree kept at {})", wt.path.display()));
    }
    head.push('.');
    text.insert_str(0, &head);
    match diff {
        None => text.push_str("\nIt changed no file."),
        Some(d) => text.push_str(&diff_text(&d, wt, cap)),
    }
    text
}

/// The diff as the result shows it: whole up to `cap` bytes, else cut there with the whole
/// saved as `<worktree>.diff`.
fn diff_text(diff: &str, wt: &Worktree, cap: usize) -> String {
    if diff.len() <= cap {
        return format!(
            "\nIts changes (apply them with your edit tools, or merge the branch):\n\n{diff}"
        );
    }
    let mut end = cap;
    while !diff.is_char_boundary(end) {
        end -= 1;
    }
    let saved = wt.path.with_extension("diff");
    let note = match std::fs::write(&saved, diff) {
        Ok(()) => format!("the whole diff is in {}", saved.display()),
        Err(e) => format!("the whole diff could not be saved ({e}); the branch has it"),
    };
    format!(
        "\nIts changes, cut at {cap} of {} bytes ({note}):\n\n{}",
        diff.len(),
        &diff[..end]
    )
}
