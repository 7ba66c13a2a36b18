//! The sub-agents of the running turn as the TUI follows them (from their tagged events):
//! who they are, what they do now, what they spent; and the Ctrl-T dialog over them, where
//! one is opened (its own session, written live), cancelled alone, or all are cancelled.

use crate::runtime::agent::TurnEvent;
use crate::sanitize;

/// What a sub-agent does now.
#[derive(Debug, Clone, PartialEq)]
pub enum SubState {
    Running,
    /// One of its calls waits for the user's answer (the card in the parent's view).
    Asking,
    /// It ended: how (`completed`, `cancelled`, ...).
    Ended(String),
}

/// One sub-agent of the turn.
#[derive(Debug, Clone, PartialEq)]
pub struct SubagentRow {
    /// Its session.
    pub id: String,
    /// The profile it runs (sanitised).
    pub agent: Option<String>,
    /// What its parent's `task` call asked, in a line (sanitised; empty until known).
    pub task: String,
    pub state: SubState,
    /// Tool calls it made.
    pub calls: u32,
    /// Tokens it spent: its model calls' as they are stored, its ledger's total at its end.
    pub tokens: u64,
    pub started_ms: i64,
    pub ended_ms: Option<i64>,
}

impl SubagentRow {
    /// Whether it still runs.
    pub(crate) fn running(&self) -> bool {
        !matches!(self.state, SubState::Ended(_))
    }

    /// One line for the dialog: `1a2b3c4d (reviewer)  running · 3 calls · 12 s`.
    pub(crate) fn describe(&self, now_ms: i64) -> String {
        let short: String = self.id.chars().take(8).collect();
        let who = match &self.agent {
            Some(a) => format!("{short} ({a})"),
            None => short,
        };
        let secs = (self.ended_ms.unwrap_or(now_ms) - self.started_ms).max(0) / 1000;
        let state = match &self.state {
            SubState::Running => "running".to_string(),
            SubState::Asking => "asks for approval".to_string(),
            SubState::Ended(how) => how.clone(),
        };
        let calls = format!(
            "{} call{}",
            self.calls,
            if self.calls == 1 { "" } else { "s" }
        );
        let tokens = if self.tokens > 0 {
            format!(" · {} tokens", self.tokens)
        } else {
            String::new()
        };
        let task = if self.task.is_empty() {
            String::new()
        } else {
            format!("  {}", self.task)
        };
        format!("{who:<20} {state} · {calls}{tokens} · {secs} s{task}")
    }
}

/// Follows sub-agent `id`'s `event` in `rows` (a row is added at its start).
pub(crate) fn track(
    rows: &mut Vec<SubagentRow>,
    id: &str,
    agent: Option<&str>,
    event: &TurnEvent,
    now_ms: i64,
) {
    if matches!(event, TurnEvent::Started { .. }) && !rows.iter().any(|r| r.id == id) {
        rows.push(SubagentRow {
            id: id.to_string(),
            agent: agent.map(|a| sanitize::line(a).into_owned()),
            task: String::new(),
            state: SubState::Running,
            calls: 0,
            tokens: 0,
            started_ms: now_ms,
            ended_ms: None,
        });
        return;
    }
    let Some(row) = rows.iter_mut().find(|r| r.id == id) else {
        return;
    };
    match event {
        TurnEvent::ToolCall { .. } => row.calls += 1,
        TurnEvent::AssistantStored { usage, .. } => {
            row.tokens += usage.input_tokens + usage.output_tokens;
        }
        TurnEvent::ApprovalNeeded { .. } => row.state = SubState::Asking,
        TurnEvent::ToolResult { .. } if row.state == SubState::Asking => {
            row.state = SubState::Running;
        }
        TurnEvent::Finished { reason, usage } => {
            row.state = SubState::Ended(reason.as_str().to_string());
            row.tokens = usage.input_tokens + usage.output_tokens;
            row.ended_ms = Some(now_ms);
        }
        _ => {}
    }
}

/// The Ctrl-T dialog: the chosen row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SubagentsDialog {
    pub selected: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::agent::FinishReason;
    use crate::session::Usage;

    #[test]
    fn a_row_follows_its_sub_agent_from_start_to_end() {
        let mut rows = Vec::new();
        let start = TurnEvent::Started {
            session_id: "abcdef1234".into(),
        };
        track(
            &mut rows,
            "abcdef1234",
            Some("rev\x1b[2Jiewer"),
            &start,
            1_000,
        );
        let call = crate::session::ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: "{}".into(),
        };
        let asked = TurnEvent::ApprovalNeeded {
            call,
            summary: String::new(),
            reason: String::new(),
            rules: Vec::new(),
        };
        track(&mut rows, "abcdef1234", None, &asked, 2_000);
        assert_eq!(rows[0].state, SubState::Asking);
        assert!(rows[0].describe(3_000).contains("asks for approval"));
        let stored = TurnEvent::AssistantStored {
            seq: 3,
            usage: Usage {
                input_tokens: 10,
                output_tokens: 5,
            },
        };
        track(&mut rows, "abcdef1234", None, &stored, 2_500);
        assert!(rows[0].describe(3_000).contains("· 15 tokens ·"));
        let end = TurnEvent::Finished {
            reason: FinishReason::Completed,
            usage: Usage {
                input_tokens: 100,
                output_tokens: 20,
            },
        };
        track(&mut rows, "abcdef1234", None, &end, 13_500);
        let line = rows[0].describe(99_000);
        assert!(!rows[0].running());
        // The profile's name is drawn inert.
        assert!(line.starts_with("abcdef12 (rev"), "{line}");
        assert!(!line.contains('\x1b'), "{line}");
        assert!(
            line.contains("completed · 0 calls · 120 tokens · 12 s"),
            "{line}"
        );
        // An event of an unknown sub-agent adds nothing.
        track(&mut rows, "other", None, &end, 0);
        assert_eq!(rows.len(), 1);
    }
}
