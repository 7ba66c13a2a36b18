//! The detail pane's own transitions: taking what the worker read of its session, and the
//! Up/Down of its Assets, Plan, Usage and Info tabs.

use crate::runtime::extensions::project_context::ContextReport;
use crate::session::{AssetMeta, PlanProgress, SessionHeader, StepConversation, ToolCall};
use crate::tui::pane::Detail;
use crate::tui::screen::Tab;
use crate::tui::transcript::{Transcript, chunk_of};

/// What the worker read of a session for the detail pane.
#[derive(Debug)]
pub(crate) struct DetailRead {
    pub header: SessionHeader,
    pub progress: PlanProgress,
    pub assets: Vec<AssetMeta>,
    /// Tool calls left without a result when the session stopped.
    pub interrupted: Vec<ToolCall>,
    pub steps: Vec<StepConversation>,
    pub context: Box<ContextReport>,
}

impl Detail {
    /// Takes what was read of the session; a transcript made now starts at its end when
    /// `at_end` (the conversation, or a turn streaming into it). True when this was its first
    /// read (the transcript is new).
    pub(crate) fn take_read(&mut self, read: DetailRead, at_end: bool) -> bool {
        let DetailRead {
            header,
            progress,
            assets,
            interrupted,
            steps,
            context,
        } = read;
        self.steps = steps;
        let last = header.last_seq;
        let first_load = self.transcript.is_none();
        match self.transcript.as_mut() {
            Some(t) if t.last_seq != last => {
                // Grown (or shrunk): the chunks from the old end on must be reloaded.
                let from = chunk_of(t.last_seq.min(last).max(1));
                t.chunks.retain(|c, _| *c < from);
                t.last_seq = last;
                t.clear_cache();
            }
            Some(_) => {}
            None => self.transcript = Some(Transcript::new(&header.id, last, at_end)),
        }
        self.header = Some(header);
        self.progress = progress;
        self.asset_sel = self.asset_sel.min(assets.len().saturating_sub(1));
        self.assets = assets;
        self.interrupted = interrupted;
        self.context = Some(context);
        // The Info tab's file changes are read again with it (a turn may have made more).
        self.changes_requested = false;
        first_load
    }

    /// Up (`d` < 0) or Down in a tab other than the transcript: its selection or its scroll.
    pub(crate) fn step_tab(&mut self, tab: Tab, d: i64) {
        match tab {
            Tab::Assets => {
                let n = self.assets.len() as i64;
                self.asset_sel = (self.asset_sel as i64 + d).clamp(0, (n - 1).max(0)) as usize;
            }
            Tab::Plan => {
                let n = self.plan_order().len() as i64;
                self.plan_sel = (self.plan_sel as i64 + d).clamp(0, (n - 1).max(0)) as usize;
            }
            Tab::Usage | Tab::Info => self.scroll = self.scroll.saturating_add_signed(d as i16),
            Tab::Transcript => {}
        }
    }
}
