//! [`SessionReport`]: everything `neocode show` says about one session, read in one read
//! transaction so its parts agree while another process goes on writing the session.

use std::path::Path;

use crate::runtime::extensions::project_context::{ContextReport, session_report};
use crate::runtime::rewind::{TurnChanges, turn_changes};
use crate::runtime::sessions::Sessions;
use crate::session::{
    AssetMeta, Message, PlanProgress, Result, SessionHeader, SessionSummary, ToolCall,
};

/// Messages read from the end to find the latest model call (context now).
const CONTEXT_TAIL: i64 = 64;

/// One session as a report shows it; formatting is the front end's.
#[derive(Debug)]
pub(crate) struct SessionReport {
    pub summary: SessionSummary,
    pub header: SessionHeader,
    /// The status to show ([`Sessions::shown_status`]: `interrupted` for a running session
    /// whose process is gone).
    pub status: &'static str,
    pub progress: PlanProgress,
    pub assets: Vec<AssetMeta>,
    /// The last messages asked for, oldest first (fewer when the session has fewer).
    pub last_messages: Vec<Message>,
    /// What the next request carries, in tokens, and whether that is an estimate (a
    /// compaction since the last model call); `None` before a model call.
    pub context_now: Option<(u64, bool)>,
    /// Tool calls left without a result when the session stopped.
    pub interrupted: Vec<ToolCall>,
    /// Instruction files, skills and MCP servers the session's turns take in.
    pub context: ContextReport,
    /// The workspace files the session's tools changed, by turn.
    pub file_changes: Vec<TurnChanges>,
    /// Whether the session it was forked from is in this workspace (false when imported
    /// without it, or deleted); `None` when it is no fork.
    pub parent_here: Option<bool>,
    /// Whether the session it is a sub-agent of is in this workspace; `None` when it is none.
    pub sub_agent_parent_here: Option<bool>,
}

impl Sessions {
    /// The report on session `id` with its last `last_messages` messages, read in one read
    /// transaction; `home` is where the user's instructions, skills and MCP servers are.
    pub(crate) fn report(
        &self,
        home: &Path,
        id: &str,
        last_messages: usize,
    ) -> Result<SessionReport> {
        self.store().read_consistent(|| {
            let summary = self.summary(id)?;
            let header = self.header(id)?;
            let here = |other: &Option<String>| other.as_ref().map(|o| self.summary(o).is_ok());
            let last = last_messages_of(self, id, header.last_seq, last_messages)?;
            // Context now: the latest model call's figures, found in the transcript's tail.
            let tail = self.messages(id, header.last_seq - CONTEXT_TAIL + 1, header.last_seq)?;
            Ok(SessionReport {
                status: self.shown_status(&summary.id, summary.status),
                progress: self.plan_progress(id)?,
                assets: self.assets(id)?,
                context_now: crate::runtime::agent::compact::context_now(
                    &header,
                    tail.iter().rev(),
                ),
                interrupted: self.interrupted_tool_calls(id)?,
                context: session_report(
                    home,
                    self,
                    id,
                    crate::runtime::trust::Admission::check(home, self.root()).skills(home),
                )?,
                file_changes: turn_changes(self, id, header.last_seq)?,
                parent_here: here(&summary.parent_id),
                sub_agent_parent_here: here(&header.subagent_of),
                last_messages: last,
                summary,
                header,
            })
        })
    }
}

/// The last `n` messages, even after compaction left `last_seq` beyond the stored seqs.
fn last_messages_of(
    sessions: &Sessions,
    id: &str,
    last_seq: i64,
    n: usize,
) -> Result<Vec<Message>> {
    let from = (last_seq - n as i64 + 1).max(1);
    let mut msgs = sessions.messages(id, from, last_seq)?;
    if msgs.len() < n && from > 1 {
        msgs = sessions.messages(id, 1, last_seq)?;
    }
    let skip = msgs.len().saturating_sub(n);
    Ok(msgs.split_off(skip))
}
