//! Unified diffs for the views (`write_file`, `edit_file` metadata).

use serde_json::{Value, json};
use similar::{ChangeTag, TextDiff};

/// Metadata of a file change: the path, a unified diff (a new file is all additions) and the
/// counts of added and removed lines.
pub(crate) fn metadata(rel: &str, before: Option<&str>, after: &str) -> Value {
    let old = before.unwrap_or("");
    let diff = TextDiff::from_lines(old, after);
    let (mut added, mut removed) = (0usize, 0usize);
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Insert => added += 1,
            ChangeTag::Delete => removed += 1,
            ChangeTag::Equal => {}
        }
    }
    let from = if before.is_some() {
        format!("a/{rel}")
    } else {
        "/dev/null".to_string()
    };
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header(&from, &format!("b/{rel}"))
        .to_string();
    json!({
        "path": rel,
        "created": before.is_none(),
        "diff": text,
        "added": added,
        "removed": removed,
    })
}
