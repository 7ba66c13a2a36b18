//! Ctrl-T: the running turn's sub-agents over the conversation. ↑↓ choose one, Enter opens
//! it (its own session, written live as it works: Alt-Enter there steers it, Esc cancels
//! it), `x` cancels the chosen one alone (its parent gets "cancelled" as the call's result
//! and goes on), `X` cancels every one still running, Esc closes. The dialog's state is
//! `tui::subagents`, its view `views/subagents.rs`.

use crossterm::event::{KeyCode, KeyEvent};

use super::App;
use super::state::Overlay;
use crate::runtime::agent::TurnCommand;
use crate::tui::effect::{Effect, TurnEffect};
use crate::tui::subagents::{SubagentRow, SubagentsDialog};

impl App {
    /// The sub-agents the live turn started (none when no turn ran).
    pub(crate) fn subagent_rows(&self) -> &[SubagentRow] {
        self.conv.live().map_or(&[], |l| l.subagents.as_slice())
    }

    /// Ctrl-T: the dialog opens when the turn started sub-agents.
    pub(super) fn open_subagents(&mut self) -> Vec<Effect> {
        let rows = self.subagent_rows();
        if rows.is_empty() {
            self.say("No sub-agent runs in this turn (the model starts them with the task tool).");
            return Vec::new();
        }
        let running = rows.iter().filter(|r| r.running()).count();
        self.say(format!(
            "{} sub-agent{}, {running} running: Enter opens one, x cancels it, X cancels all, Esc closes.",
            rows.len(),
            if rows.len() == 1 { "" } else { "s" },
        ));
        self.overlay = Overlay::Subagents(SubagentsDialog::default());
        Vec::new()
    }

    /// A key over the sub-agents dialog.
    pub(super) fn subagents_key(&mut self, mut d: SubagentsDialog, key: KeyEvent) -> Vec<Effect> {
        let n = self.subagent_rows().len();
        match key.code {
            KeyCode::Esc => return Vec::new(),
            KeyCode::Up | KeyCode::Char('k') => d.selected = d.selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => {
                d.selected = (d.selected + 1).min(n.saturating_sub(1));
            }
            KeyCode::Enter => {
                if let Some(row) = self.subagent_rows().get(d.selected) {
                    let id = row.id.clone();
                    let effects = self.resume(&id);
                    return effects;
                }
            }
            KeyCode::Char('x') => {
                let effects = self.cancel_subagents(Some(d.selected));
                self.overlay = Overlay::Subagents(d);
                return effects;
            }
            KeyCode::Char('X') => {
                let effects = self.cancel_subagents(None);
                self.overlay = Overlay::Subagents(d);
                return effects;
            }
            _ => {}
        }
        self.overlay = Overlay::Subagents(d);
        Vec::new()
    }

    /// Cancels sub-agent `which` (a row), or every running one: each alone, by its session.
    fn cancel_subagents(&mut self, which: Option<usize>) -> Vec<Effect> {
        let ids: Vec<String> = self
            .subagent_rows()
            .iter()
            .enumerate()
            .filter(|(i, r)| r.running() && which.is_none_or(|w| w == *i))
            .map(|(_, r)| r.id.clone())
            .collect();
        if ids.is_empty() {
            self.fail("No running sub-agent to cancel there.");
            return Vec::new();
        }
        self.say(match ids.len() {
            1 => format!(
                "Cancelling sub-agent {}…",
                crate::format::short_id(&ids[0], 8)
            ),
            n => format!("Cancelling {n} sub-agents…"),
        });
        ids.into_iter()
            .map(|session_id| {
                Effect::Turn(TurnEffect::CommandTo {
                    session_id,
                    cmd: TurnCommand::Cancel,
                })
            })
            .collect()
    }
}
