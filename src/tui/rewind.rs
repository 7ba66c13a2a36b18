//! The rewind dialog's state (issue 26): which message, what to go back ("conversation and
//! files" / "conversation only" / "files only"), the preview of what happens to each file,
//! scrolled. The plan, the preview and the rewind itself are the runtime's
//! ([`crate::runtime::rewind`]); the storage worker calls [`preview`], [`apply`] and
//! [`undo_turn`] (`/undo`), the router (`app/rewind.rs`) takes the keys and the view (`views/rewind.rs`) draws it.

use ratatui::layout::Rect;

use crate::format::short_id;
use crate::runtime::Sessions;
use crate::runtime::rewind::{self, Action, Plan, Scope};
use crate::sanitize;

/// The choices in the order the dialog offers them; the first (a fork, the files put back,
/// what they are overwritten with kept for `--undo`) is the default.
pub(crate) const CHOICES: [Scope; 3] = [Scope::Both, Scope::ConversationOnly, Scope::FilesOnly];

/// A choice's name in the dialog.
pub(crate) fn choice_name(scope: Scope) -> &'static str {
    match scope {
        Scope::Both => "conversation and files",
        Scope::ConversationOnly => "conversation only",
        Scope::FilesOnly => "files only",
    }
}

/// What a choice does, one line.
pub(crate) fn choice_help(scope: Scope, seq: i64) -> String {
    match scope {
        Scope::Both => format!("A new session forked before #{seq}, the files as they were then."),
        Scope::ConversationOnly => {
            format!("A new session forked before #{seq}; no file is touched.")
        }
        Scope::FilesOnly => format!("The files as they were before #{seq}; the same conversation."),
    }
}

/// Where the dialog is drawn on a screen of `size` (width, height).
pub(crate) fn dialog_area(size: (u16, u16)) -> Rect {
    let screen = Rect::new(0, 0, size.0, size.1);
    let w = size.0.saturating_sub(4).min(100);
    let h = size.1.saturating_sub(4);
    crate::tui::layout::centered(screen, w, h)
}

/// Lines above the preview inside the dialog: the message, a blank, the choices, what the
/// choice does, a blank.
pub(crate) const HEAD_ROWS: u16 = 5;

/// The preview lines the dialog shows at once.
pub(crate) fn preview_rows(size: (u16, u16)) -> usize {
    // The border, the head, and the scroll line under the preview.
    usize::from(dialog_area(size).height.saturating_sub(2 + HEAD_ROWS + 1)).max(1)
}

/// One file of the preview (sanitised).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviewFile {
    /// `restored`, `deleted`, `recreated`, `unchanged`, `skipped`, `not restorable`.
    pub word: &'static str,
    pub path: String,
    /// Why (empty for a plain restore).
    pub why: String,
    /// The unified diff lines the rewind applies (cut by the runtime).
    pub hunks: Vec<String>,
}

/// What a rewind to a message would do (the plan `neocode rewind --dry-run` prints).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preview {
    pub session_id: String,
    /// The user message gone back to.
    pub seq: i64,
    /// Its first line (sanitised).
    pub message: String,
    /// By path.
    pub files: Vec<PreviewFile>,
    /// The files staged in git's index, which a rewind leaves staged: what to run (one line,
    /// sanitised), when any are.
    pub staged: Option<String>,
}

/// A rewind done: the session to continue and what happened, one line (sanitised).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewound {
    /// The session to continue (a new fork, or the same session for files only).
    pub result_id: String,
    pub forks: bool,
    pub text: String,
}

/// The dialog over the conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewindDialog {
    pub preview: Preview,
    /// Index into [`CHOICES`].
    pub choice: usize,
    /// The first preview line shown.
    pub scroll: usize,
}

/// How a preview line is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineKind {
    /// A file's line: what happens to it.
    File,
    /// A file left alone.
    Left,
    Added,
    Removed,
    /// `@@` and `---`/`+++` lines.
    Hunk,
    Plain,
}

impl RewindDialog {
    pub(crate) fn new(preview: Preview) -> RewindDialog {
        RewindDialog {
            preview,
            choice: 0,
            scroll: 0,
        }
    }

    pub(crate) fn scope(&self) -> Scope {
        CHOICES[self.choice % CHOICES.len()]
    }

    /// The preview's lines for the chosen scope.
    pub(crate) fn lines(&self) -> Vec<(LineKind, String)> {
        if self.scope() == Scope::ConversationOnly {
            return vec![(
                LineKind::Plain,
                "No file is touched: the files stay as they are now.".into(),
            )];
        }
        if self.preview.files.is_empty() {
            return vec![(
                LineKind::Plain,
                "The session changed no file from there on.".into(),
            )];
        }
        let mut out = Vec::new();
        if let Some(s) = &self.preview.staged {
            // Its clauses one a line, so a narrow dialog cuts none.
            for (i, part) in s.split("; ").enumerate() {
                let indent = if i == 0 { "" } else { "  " };
                out.push((LineKind::Left, format!("{indent}{part}")));
            }
        }
        for f in &self.preview.files {
            let why = if f.why.is_empty() {
                String::new()
            } else {
                format!(" ({})", f.why)
            };
            let kind = if f.hunks.is_empty() && !matches!(f.word, "deleted" | "recreated") {
                LineKind::Left
            } else {
                LineKind::File
            };
            out.push((kind, format!("{:<14} {}{why}", f.word, f.path)));
            for h in &f.hunks {
                let kind = if h.starts_with("@@") || h.starts_with("---") || h.starts_with("+++") {
                    LineKind::Hunk
                } else if h.starts_with('+') {
                    LineKind::Added
                } else if h.starts_with('-') {
                    LineKind::Removed
                } else {
                    LineKind::Plain
                };
                out.push((kind, format!("    {h}")));
            }
        }
        out
    }

    /// Moves the preview by `by` lines, kept within `shown` lines of room.
    pub(crate) fn scroll_by(&mut self, by: i64, shown: usize) {
        let max = self.lines().len().saturating_sub(shown.max(1));
        let next = (self.scroll as i64 + by).clamp(0, max as i64);
        self.scroll = next as usize;
    }
}

/// The first line of a message, sanitised, for the dialog's title line.
fn first_line(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    sanitize::line(line.trim()).into_owned()
}

/// The rewind's reason, without the CLI's flag (the TUI has none).
fn tidy(why: String) -> String {
    why.replace(" (--force replaces it)", "")
}

/// The storage worker's half of opening the dialog: the user message a rewind from `at`
/// goes back to (the selected message's turn, else the last) and what it would do to each
/// file.
pub(crate) fn preview(sessions: &Sessions, id: &str, at: Option<i64>) -> anyhow::Result<Preview> {
    let Some(seq) = rewind::user_seq_at(sessions, id, at)? else {
        anyhow::bail!("This session has no message of yours to rewind to.");
    };
    // A session that worked in a git worktree is rewound there; its files are not when the
    // worktree is gone (the conversation still is).
    let (sessions, scope) = match rewind::sessions_for(sessions, id, Scope::Both) {
        Ok(s) => (s, Scope::Both),
        Err(rewind::RewindError::WorktreeGone { .. }) => {
            (sessions.clone(), Scope::ConversationOnly)
        }
        Err(e) => return Err(e.into()),
    };
    let sessions = &sessions;
    let plan = rewind::plan(sessions, id, seq, scope, false)?;
    let message = sessions
        .messages(id, seq, seq)?
        .first()
        .map(|m| first_line(&m.text()))
        .unwrap_or_default();
    let files = plan
        .files
        .iter()
        .map(|f| PreviewFile {
            word: f.action.word(),
            path: sanitize::line(&f.path).into_owned(),
            why: sanitize::line(&tidy(f.action.why())).into_owned(),
            hunks: rewind::hunks(sessions, f)
                .iter()
                .map(|h| sanitize::line(h).into_owned())
                .collect(),
        })
        .collect();
    let staged = rewind::staged_note(&rewind::staged_files(sessions.root(), &plan))
        .map(|n| sanitize::line(&n).into_owned());
    Ok(Preview {
        session_id: id.to_string(),
        seq,
        message,
        files,
        staged,
    })
}

/// The storage worker's half of Enter: plans the rewind again (the files may have changed
/// since the preview) and carries it out.
pub(crate) fn apply(
    sessions: &Sessions,
    id: &str,
    seq: i64,
    scope: Scope,
) -> anyhow::Result<Rewound> {
    let sessions = &rewind::sessions_for(sessions, id, scope)?;
    let plan = rewind::plan(sessions, id, seq, scope, false)?;
    let result_id = rewind::apply(sessions, &plan)?;
    Ok(Rewound {
        text: summary(&plan, &result_id),
        forks: plan.forks,
        result_id,
    })
}

/// What a rewind did, one line: where the conversation is, how many files went back, and
/// each one left alone with why.
pub(crate) fn summary(plan: &Plan, result_id: &str) -> String {
    let short = sanitize::line(short_id(result_id, 8)).into_owned();
    let mut text = match plan.scope {
        Scope::Both => format!(
            "Rewound to before message #{}: this is the new session {short} (the original is unchanged).",
            plan.to_seq
        ),
        Scope::ConversationOnly => format!(
            "Rewound the conversation to before message #{}: this is the new session {short}; no file was touched.",
            plan.to_seq
        ),
        Scope::FilesOnly => format!(
            "Put the files back as they were before message #{}; the conversation is kept.",
            plan.to_seq
        ),
    };
    if plan.scope == Scope::ConversationOnly {
        return text;
    }
    let count = |word: &str| {
        plan.files
            .iter()
            .filter(|f| f.action.word() == word)
            .count()
    };
    let done: Vec<String> = ["restored", "deleted", "recreated"]
        .into_iter()
        .filter(|w| count(w) > 0)
        .map(|w| format!("{} {w}", count(w)))
        .collect();
    if done.is_empty() {
        text.push_str(" No file needed changing.");
    } else {
        text.push_str(&format!(
            " Files: {}; `neocode rewind {short} --undo` puts them back.",
            done.join(", ")
        ));
    }
    let left: Vec<String> = plan
        .files
        .iter()
        .filter(|f| matches!(f.action, Action::Skip(_) | Action::NotRestorable(_)))
        .map(|f| {
            format!(
                "{} ({})",
                sanitize::line(&f.path),
                sanitize::line(&tidy(f.action.why()))
            )
        })
        .collect();
    if !left.is_empty() {
        text.push_str(&format!(" Skipped: {}.", left.join(", ")));
    }
    text
}

/// `/undo`'s line: how many files went back, and each one left alone.
pub(crate) fn undo_turn(sessions: &Sessions, id: &str) -> anyhow::Result<String> {
    let Some((plan, applied)) = rewind::undo_last_turn(sessions, id)? else {
        return Ok("/undo: this session has no turn yet.".into());
    };
    let done = plan
        .files
        .iter()
        .filter(|f| f.action.changes_file())
        .count();
    let left: Vec<String> = plan
        .files
        .iter()
        .filter(|f| matches!(f.action, Action::Skip(_) | Action::NotRestorable(_)))
        .map(|f| format!("{} ({})", sanitize::line(&f.path), f.action.why()))
        .collect();
    let mut text = if applied {
        format!(
            "Undid the last turn's changes to {done} file{}; `neocode rewind {} --undo` puts them back.",
            if done == 1 { "" } else { "s" },
            sanitize::line(id)
        )
    } else if left.is_empty() {
        "The last turn changed no file.".to_string()
    } else {
        "Nothing was undone.".to_string()
    };
    if !left.is_empty() {
        text.push_str(&format!(" Left as they are: {}.", left.join(", ")));
    }
    Ok(text)
}
