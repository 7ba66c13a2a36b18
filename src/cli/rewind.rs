//! `neocode rewind`: back to a user message, conversation and files together (issue 26).

use std::io::{IsTerminal, Write};

use clap::Args;

use super::common::{CmdResult, Failure, ask, open_for_id};
use super::out::Out;
use crate::runtime::Location;
use crate::runtime::rewind::{self, Plan, RewindError, Scope};
use crate::sanitize;

pub(super) use crate::runtime::rewind::TurnChanges;

pub(super) const REWIND_HELP: &str = "\
Examples:
  neocode show last                       find the seq of the user message to go back to
  neocode rewind last --to 5 --dry-run    what would happen to each file
  neocode rewind last --to 5 --yes        fork before message 5, files back; prints the new id
  neocode rewind last --to 5 --files-only --yes
  neocode rewind last --undo --yes        put back what the last rewind overwrote

The original session is never changed: the default continues in a new fork. A file changed
since the session last wrote it is skipped unless --force. Files changed by run_command were
not snapshotted and are listed as not restorable. Every file is listed before anything is
written; control files (.git, .neocode) and neocode's home are never written, and files get
mode 0644 or 0755 at most (no set-user-id bit).";

/// `neocode rewind <ID> --to <SEQ>` / `--undo`.
#[derive(Debug, Clone, Args)]
pub struct RewindArgs {
    /// Session: full id, unique prefix, or `last`.
    pub id: String,
    /// The user message (its seq, as `show` prints it) to go back to: the conversation
    /// continues from just before it, the files return to their state before its turn.
    #[arg(
        long,
        value_name = "SEQ",
        required_unless_present = "undo",
        conflicts_with = "undo"
    )]
    pub to: Option<i64>,
    /// Put the files back only; no fork (the session is continued as it is).
    #[arg(long, conflicts_with = "conversation_only")]
    pub files_only: bool,
    /// Fork before the message only; no file is touched.
    #[arg(long)]
    pub conversation_only: bool,
    /// Print what would happen to each file and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Also replace files changed since the session's last write.
    #[arg(long)]
    pub force: bool,
    /// Do not ask (needed when standard input is not a terminal).
    #[arg(short, long)]
    pub yes: bool,
    /// Undo the session's last rewind: the files it overwrote come back.
    #[arg(long, conflicts_with_all = ["files_only", "conversation_only"])]
    pub undo: bool,
}

fn failure(e: RewindError) -> Failure {
    let line = sanitize::line(&e.to_string()).into_owned();
    if e.is_usage() {
        Failure::usage(line)
    } else {
        Failure::runtime(line)
    }
}

/// Runs `neocode rewind`.
pub(super) fn run(loc: &Location, a: &RewindArgs) -> CmdResult {
    let (sessions, id) = open_for_id(loc, &a.id)?;
    let scope = if a.files_only {
        Scope::FilesOnly
    } else if a.conversation_only {
        Scope::ConversationOnly
    } else {
        Scope::Both
    };
    // A session that worked in a git worktree is rewound there.
    let sessions = rewind::sessions_for(&sessions, &id, scope).map_err(failure)?;
    let plan = match a.to {
        _ if a.undo => rewind::plan_undo(&sessions, &id, a.force),
        Some(seq) => rewind::plan(&sessions, &id, seq, scope, a.force),
        None => return Err(Failure::usage("rewind needs --to <SEQ> or --undo")),
    }
    .map_err(failure)?;
    // Files staged in git's index stay staged: said before and after.
    let staged = rewind::staged_note(&rewind::staged_files(sessions.root(), &plan))
        .map(|n| format!("  {}", sanitize::line(&n)));
    if a.dry_run {
        // Each file's line, then the hunks its rewind applies.
        let mut out = Out::stdout();
        let lines = report(&plan, true);
        let files_from = lines.len() - plan.files.len();
        for l in &lines[..files_from] {
            out.line(l)?;
        }
        for (l, f) in lines[files_from..].iter().zip(&plan.files) {
            out.line(l)?;
            for h in rewind::hunks(&sessions, f) {
                out.line(&format!("      {}", sanitize::line(&h)))?;
            }
        }
        if let Some(n) = &staged {
            out.line(n)?;
        }
        return out.finish();
    }
    if a.yes {
        // Every file is listed before it is written (an imported session's changes are the
        // session file's word: the list is the last look at them).
        let mut err = std::io::stderr().lock();
        for l in report(&plan, false) {
            let _ = writeln!(err, "{l}");
        }
    } else {
        confirm(&plan, staged.as_deref())?;
    }
    let result = rewind::apply(&sessions, &plan).map_err(failure)?;
    let mut err = std::io::stderr().lock();
    if let Some(n) = &staged {
        let _ = writeln!(err, "{n}");
    }
    let _ = writeln!(
        err,
        "continue with: neocode --resume {}",
        sanitize::line(&result)
    );
    let mut out = Out::stdout();
    out.line(&sanitize::line(&result))?;
    out.finish()
}

/// The plan's lines: a heading, then one line a file.
fn report(plan: &Plan, dry: bool) -> Vec<String> {
    let will = if dry { "would be " } else { "" };
    let mut lines = vec![match (plan.undo_of.is_some(), plan.scope) {
        (true, _) => format!(
            "undo of the last rewind of {}: files {will}put back",
            sanitize::line(&plan.session_id)
        ),
        (false, Scope::Both) => format!(
            "rewind of {} to message {}: a new session forked before it, files {will}put back",
            sanitize::line(&plan.session_id),
            plan.to_seq
        ),
        (false, Scope::FilesOnly) => format!(
            "rewind of {} to message {}: files only {will}put back",
            sanitize::line(&plan.session_id),
            plan.to_seq
        ),
        (false, Scope::ConversationOnly) => format!(
            "rewind of {} to message {}: conversation only (no file is touched)",
            sanitize::line(&plan.session_id),
            plan.to_seq
        ),
    }];
    if plan.files.is_empty() && plan.scope != Scope::ConversationOnly {
        lines.push("  no file was changed by the session from there on".into());
    }
    for f in &plan.files {
        let why = f.action.why();
        let why = if why.is_empty() {
            String::new()
        } else {
            format!(" ({why})")
        };
        lines.push(format!(
            "  {:<14} {}{}",
            f.action.word(),
            sanitize::line(&f.path),
            why
        ));
    }
    lines
}

/// Shows the plan and asks on a terminal; refuses without one.
fn confirm(plan: &Plan, staged: Option<&str>) -> CmdResult {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Err(Failure::usage(
            "refusing to rewind without --yes when standard input is not a terminal (see --dry-run)",
        ));
    }
    let mut err = std::io::stderr().lock();
    for l in report(plan, true) {
        let _ = writeln!(err, "{l}");
    }
    if let Some(s) = staged {
        let _ = writeln!(err, "{s}");
    }
    let n = plan
        .files
        .iter()
        .filter(|f| f.action.changes_file())
        .count();
    let answer = ask(
        &stdin,
        &mut err,
        format_args!(
            "go ahead ({n} files changed; `neocode rewind {} --undo` puts them back)? [y/N] ",
            sanitize::line(&plan.result_id)
        ),
    )?;
    if matches!(answer.as_str(), "y" | "yes") {
        Ok(())
    } else {
        let _ = writeln!(err, "nothing changed");
        Err(Failure::quiet())
    }
}

/// `show`'s text lines for [`crate::runtime::rewind::turn_changes`].
pub(super) fn turn_lines(turns: &[TurnChanges]) -> Vec<String> {
    let mut lines = Vec::new();
    for t in turns {
        lines.push(format!("  {}", t.heading()));
        for f in &t.files {
            lines.push(format!(
                "    #{:<4} {:<9} {}{}",
                f.seq,
                f.change,
                sanitize::line(&f.path),
                f.note()
            ));
        }
    }
    lines
}
