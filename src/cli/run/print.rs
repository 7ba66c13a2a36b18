//! How `run` shows a turn: its events as text (or the bridge's JSON lines), and the answers
//! to what the turn asks.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::sync::mpsc::Sender;

use super::prompt;
use super::text::{plan_text, short};
use crate::runtime::agent::{Commands, FinishReason, Permission, TurnCommand, TurnEvent, TurnSink};
use crate::runtime::tools;
use crate::sanitize;
use crate::session::Usage;

/// `run`'s end of the turn port: the turn's own thread prints each event and answers what it
/// asks (on the terminal); the finish reason goes back to the main thread, which waits for it
/// and for Ctrl-C.
pub(super) struct Printer {
    view: View,
    /// The running turn's commands (the sink is built with them).
    commands: Commands,
    done: Option<std::sync::mpsc::Sender<(FinishReason, Usage)>>,
}

impl TurnSink for Printer {
    fn event(&mut self, ev: TurnEvent) {
        if let Some(cmd) = self.view.show(&ev) {
            let _ = self.commands.send(cmd);
        }
        if let TurnEvent::Finished { reason, usage } = ev
            && let Some(done) = self.done.take()
        {
            let _ = done.send((reason, usage));
        }
    }
}

impl Drop for Printer {
    fn drop(&mut self) {
        self.view.end_text();
    }
}

pub(super) struct View {
    /// Event lines on stdout (`--json`, `stream-json`) instead of text.
    json: bool,
    /// The answer text is not streamed to stdout (`--output-format json`).
    hide_text: bool,
    /// No tool activity or warnings on stderr (`--quiet`, and the event-line formats).
    no_notes: bool,
    out_closed: bool,
    /// Answer text was printed without a final newline yet.
    text_open: bool,
    interactive: bool,
    /// Approval class of each call seen (MCP tools are not in the built-in registry).
    kinds: HashMap<String, tools::ToolKind>,
}

impl Printer {
    /// A printer showing through `view` and answering with the turn's `commands`; the finish
    /// reason goes to `done`.
    pub(super) fn new(
        view: View,
        commands: Commands,
        done: Sender<(FinishReason, Usage)>,
    ) -> Printer {
        Printer {
            view,
            commands,
            done: Some(done),
        }
    }
}

impl View {
    /// A view printing JSON lines or text (or, with `hide_text`, nothing on stdout); it asks
    /// on the terminal when stdin and stderr are one.
    pub(super) fn new(json: bool, hide_text: bool, quiet: bool) -> View {
        View {
            json,
            hide_text,
            no_notes: quiet,
            out_closed: false,
            text_open: false,
            interactive: std::io::stdin().is_terminal() && std::io::stderr().is_terminal(),
            kinds: HashMap::new(),
        }
    }

    fn write(&mut self, b: &[u8]) {
        if self.out_closed {
            return;
        }
        // Unbuffered on purpose: deltas are shown as they arrive. A closed pipe stops the
        // printing, not the turn (the session is still written).
        let mut o = std::io::stdout().lock();
        if o.write_all(b).and_then(|_| o.flush()).is_err() {
            self.out_closed = true;
        }
    }

    fn end_text(&mut self) {
        if self.text_open && !self.json {
            self.write(b"\n");
        }
        self.text_open = false;
    }

    fn note(&mut self, s: &str) {
        if self.json || self.no_notes {
            return;
        }
        self.end_text();
        let mut e = std::io::stderr().lock();
        let _ = writeln!(e, "{s}");
    }

    /// Prints an event; returns the answer to an approval request.
    fn show(&mut self, ev: &TurnEvent) -> Option<TurnCommand> {
        if self.json {
            for v in crate::bridge::protocol::turn_lines(ev) {
                // Model and tool text: C1 and bidi characters escaped, losslessly.
                let mut line = sanitize::json(&v.to_string()).into_owned();
                line.push('\n');
                self.write(line.as_bytes());
            }
        }
        match ev {
            TurnEvent::TextDelta(t) if !self.json && !self.hide_text => {
                self.write(sanitize::text(t).as_bytes());
                self.text_open = !t.ends_with('\n');
            }
            TurnEvent::ToolCall {
                call,
                kind,
                summary,
            } => {
                self.kinds.insert(call.id.clone(), *kind);
                self.note(&format!("→ {}", short(summary, 100)))
            }
            TurnEvent::ToolResult {
                text,
                is_error,
                permission,
                ..
            } => self.tool_result(text, *is_error, permission.as_ref()),
            TurnEvent::Warning { message, .. }
            | TurnEvent::Compacting { message }
            | TurnEvent::CompactionFailed { message } => {
                self.note(&format!("neocode: warning: {}", sanitize::line(message)))
            }
            TurnEvent::ApprovalNeeded { .. } => return self.approval_of(ev),
            TurnEvent::PlanProposed {
                plan,
                layers,
                approved,
            } => {
                if !self.json {
                    self.note(&plan_text(plan, layers));
                }
                if !approved {
                    return Some(self.plan_answer());
                }
            }
            TurnEvent::StepStarted {
                step_id,
                title,
                session_id,
                retry,
            } => {
                if let Some(r) = retry {
                    self.note(&format!("neocode: {}", sanitize::line(r)));
                }
                self.note(&format!(
                    "▶ step {}: {} (conversation {})",
                    sanitize::line(step_id),
                    short(title, 80),
                    &session_id[..session_id.len().min(8)]
                ));
            }
            TurnEvent::Subagent {
                session_id,
                agent,
                event,
                ..
            } => return self.subagent(session_id, agent.as_deref(), event),
            TurnEvent::Step { event, .. } => {
                // The step's own lines; the json form was written above with its step id.
                let json = std::mem::replace(&mut self.json, false);
                let answer = if json { None } else { self.show(event) };
                self.json = json;
                return answer;
            }
            TurnEvent::StepFinished {
                step_id,
                outcome,
                elapsed_ms,
                ..
            } => {
                let id = sanitize::line(step_id);
                let secs = *elapsed_ms as f64 / 1000.0;
                self.note(&match outcome {
                    Ok(answer) => format!("✔ step {id} done in {secs:.1} s: {}", short(answer, 80)),
                    Err(f) if f.error_type == "skipped" => {
                        format!("⊘ step {id} {}", short(&f.message, 100))
                    }
                    Err(f) => format!(
                        "✗ step {id} failed ({}): {}",
                        sanitize::line(&f.error_type),
                        short(&f.message, 100)
                    ),
                });
            }
            _ => {}
        }
        None
    }

    /// A call's result, and why it ran without asking (or did not run) when a rule or a hook
    /// decided.
    fn tool_result(&mut self, text: &str, is_error: bool, permission: Option<&Permission>) {
        let mark = if is_error {
            "✗"
        } else if text.contains(crate::tui::app::CANCELLED_MARK) {
            // Killed by the cancel: never "✓".
            "⊘"
        } else {
            "✓"
        };
        self.note(&format!("  {mark} {}", short(text, 100)));
        if let Some(p) = permission.filter(|p| p.by == "rule" || p.by == "hook") {
            self.note(&format!("    {}", sanitize::line(&p.describe())));
        }
    }

    /// A sub-agent's event: its start and end as notes, its calls and questions as the
    /// turn's own (the json form was written by `show` with its `subagent_id`).
    fn subagent(
        &mut self,
        session_id: &str,
        agent: Option<&str>,
        event: &TurnEvent,
    ) -> Option<TurnCommand> {
        let who = match agent {
            Some(a) => format!("sub-agent {} ({})", short_id(session_id), sanitize::line(a)),
            None => format!("sub-agent {}", short_id(session_id)),
        };
        match event {
            TurnEvent::Started { .. } => self.note(&format!("▶ {who} started")),
            TurnEvent::Finished { reason, .. } => {
                self.note(&format!("■ {who} ended: {}", reason.as_str()));
            }
            TurnEvent::ApprovalNeeded { .. } => return self.approval_of(event),
            TurnEvent::ToolCall { .. } | TurnEvent::ToolResult { .. } if !self.json => {
                return self.show(event);
            }
            _ => {}
        }
        None
    }

    /// Asks whether to run the proposed plan.
    fn plan_answer(&mut self) -> TurnCommand {
        self.end_text();
        prompt::plan_answer(self.interactive)
    }

    /// The user's answer to an `ApprovalNeeded` (`None` for any other event).
    fn approval_of(&mut self, ev: &TurnEvent) -> Option<TurnCommand> {
        let TurnEvent::ApprovalNeeded {
            call,
            summary,
            reason,
            rules,
        } = ev
        else {
            return None;
        };
        self.end_text();
        let kind = self.kinds.get(&call.id).copied().unwrap_or_else(|| {
            tools::spec(&call.name).map_or(tools::ToolKind::Command, |s| s.kind)
        });
        Some(prompt::approval(
            self.interactive,
            kind,
            call,
            summary,
            reason,
            rules,
        ))
    }
}

/// The first 8 characters of a session id, sanitised.
fn short_id(id: &str) -> String {
    sanitize::line(&id.chars().take(8).collect::<String>()).into_owned()
}
