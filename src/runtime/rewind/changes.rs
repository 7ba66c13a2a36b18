//! A session's file changes grouped by the turn they happened in: what `show` lists and the
//! TUI's Info tab draws (one reading, so the two never disagree).

use crate::runtime::Sessions;
use crate::session::{CommandChange, FileState, Role, StoreError};

/// One file change as `show` lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ShownChange {
    /// The tool result that made it.
    pub seq: i64,
    pub path: String,
    /// `created`, `modified` or `deleted`.
    pub change: &'static str,
    /// `tool` (write_file / edit_file) or `command` (run_command).
    pub by: &'static str,
    /// Whether a rewind can put back the state before it.
    pub restorable: bool,
}

impl ShownChange {
    /// What a reader should know beyond the change ("" for a restorable tool change).
    pub(crate) fn note(&self) -> &'static str {
        match (self.by, self.restorable) {
            ("command", true) => " (by a command; restorable from git's snapshot)",
            ("command", false) => " (by a command, not restorable)",
            (_, false) => " (not snapshotted)",
            _ => "",
        }
    }
}

/// A turn's file changes: the user message that started it (0: before any, or recorded
/// before a compaction renumbered the transcript).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TurnChanges {
    pub turn: i64,
    pub files: Vec<ShownChange>,
}

impl TurnChanges {
    /// The turn's heading line.
    pub(crate) fn heading(&self) -> String {
        if self.turn > 0 {
            format!("turn at message {}", self.turn)
        } else {
            "earlier (before a compaction)".to_string()
        }
    }
}

/// A session's file changes grouped by the turn they happened in, oldest first.
pub(crate) fn turn_changes(
    sessions: &Sessions,
    id: &str,
    last_seq: i64,
) -> Result<Vec<TurnChanges>, StoreError> {
    let changes = sessions.file_changes(id)?;
    if changes.is_empty() {
        return Ok(Vec::new());
    }
    let users: Vec<i64> = sessions
        .messages(id, 1, last_seq)?
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.seq)
        .collect();
    let mut out: Vec<TurnChanges> = Vec::new();
    for c in changes {
        let turn = users
            .iter()
            .rev()
            .find(|u| **u <= c.seq && c.seq > 0)
            .copied()
            .unwrap_or(0);
        let change = match (&c.by_command, &c.before, &c.after) {
            (Some(k), _, _) => k.as_str(),
            (None, FileState::Absent, _) => CommandChange::Created.as_str(),
            (None, _, FileState::Absent) => CommandChange::Deleted.as_str(),
            (None, _, _) => CommandChange::Modified.as_str(),
        };
        let shown = ShownChange {
            seq: c.seq,
            change,
            by: if c.by_command.is_some() {
                "command"
            } else {
                "tool"
            },
            restorable: c.before_tree.is_some()
                || (c.by_command.is_none() && c.before != FileState::Unknown),
            path: c.path,
        };
        match out.last_mut() {
            Some(t) if t.turn == turn => t.files.push(shown),
            _ => out.push(TurnChanges {
                turn,
                files: vec![shown],
            }),
        }
    }
    Ok(out)
}
