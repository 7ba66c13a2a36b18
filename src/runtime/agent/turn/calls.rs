//! Running tool calls: budgets, approvals, the tools themselves, and their stored results.

use super::{Answer, Flow, Turn};
use crate::runtime::agent::events::{FinishReason, TurnCommand, TurnEvent, WarningCode};
use crate::runtime::agent::{ledger, subagent};
use crate::runtime::provider::openai::redact;
use crate::runtime::tools::{self, ReadDenials, ToolContext, ToolKind, ToolOutput};
use crate::session::{
    NewMessage, Part, Plan, StateUpdate, Status, Step, StepStatus, StepUpdate, ToolCall,
};
use serde_json::json;
use std::sync::Arc;
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

impl Turn {
    /// Runs calls in order; stops early on cancel or a budget. `replay`: calls interrupted by
    /// a crash, offered again.
    pub(super) fn run_calls(&mut self, calls: &[ToolCall], replay: bool) -> Flow {
        let mut answered = 0;
        let flow = self.run_calls_from(calls, replay, &mut answered);
        // Calls the turn stopped before are answered "not run", so the transcript stays valid
        // and the model knows; only a crash leaves calls without results (offered again on
        // resume, where they may have run).
        let why = match &flow {
            Err(FinishReason::Cancelled) => "the user cancelled the turn".to_string(),
            Err(FinishReason::LimitReached(l)) => format!("a budget was reached ({l})"),
            Ok(()) | Err(FinishReason::Completed | FinishReason::Failed { .. }) => return flow,
        };
        // A call decided but stopped before it ran keeps no decision.
        self.state.permission = None;
        for call in &calls[answered..] {
            let out = ToolOutput::error(format!("Not run: {why}."));
            self.store_result(call, out, false)?;
        }
        flow
    }

    fn run_calls_from(&mut self, calls: &[ToolCall], replay: bool, answered: &mut usize) -> Flow {
        while let Some(call) = calls.get(*answered) {
            if self.io.cancel.is_cancelled() {
                return Err(FinishReason::Cancelled);
            }
            if let Some(why) = ledger::tool_call_blocked(&self.state.ledger)
                .or_else(|| {
                    self.ctx
                        .caps
                        .tool_call_blocked(&self.state.ledger, &self.state.caps_start)
                })
                .or_else(|| self.state.budget.as_ref()?.tool_blocked())
            {
                return Err(FinishReason::LimitReached(why));
            }
            // Calls outside a sub-agent's tools, and the `task` calls (side by side).
            if self.calls_of_subagents(calls, replay, answered)? {
                continue;
            }
            let kind = tools::spec(&call.name)
                .map(|s| s.kind)
                .or_else(|| self.ctx.ext.kind(&call.name))
                .unwrap_or(ToolKind::Read);
            if kind == ToolKind::Command {
                self.tell_sandbox();
            }
            let summary = tools::summary(&call.name, &call.arguments);
            self.emit(TurnEvent::ToolCall {
                call: call.clone(),
                kind,
                summary: summary.clone(),
            });
            match self.decide_call(call, kind, &summary, replay)? {
                Some(p) => self.state.permission = Some(p),
                None => {
                    *answered += 1;
                    continue;
                }
            }
            // Reserved once approved (a denied call does not count); another turn may have
            // taken the last call while the user was asked.
            if let Some(b) = &self.state.budget
                && let Err(ledger::LimitReached(why)) = b.reserve_tool_call()
            {
                return Err(FinishReason::LimitReached(why));
            }
            let ours = if matches!(kind, ToolKind::Plan | ToolKind::Agent) {
                None
            } else {
                self.ctx.ext.run(
                    &call.name,
                    &call.arguments,
                    &self.io.sessions,
                    &self.ctx.session_id,
                    (&self.io.cancel, &self.ctx.gate.read_rules()),
                )
            };
            let out = if let Some((out, images)) = ours {
                self.store_result_with_images(call, out, images)?;
                *answered += 1;
                if self.io.cancel.is_cancelled() {
                    return Err(FinishReason::Cancelled);
                }
                continue;
            } else if kind == ToolKind::Plan {
                self.update_plan(&call.arguments)
            } else if call.name == subagent::TASK_WAIT {
                self.task_wait(&call.arguments)
            } else {
                let ctx = ToolContext {
                    root: self.io.sessions.root().to_path_buf(),
                    cancel: self.io.cancel.clone(),
                    sandbox: crate::runtime::policy::approval::session_sandbox(
                        &self.ctx.settings.sandbox,
                        &self.state.ledger.approved_tools,
                    ),
                    command_timeout: self.ctx.settings.command_timeout,
                    output_cap: self.ctx.settings.output_cap,
                    home: self
                        .ctx
                        .settings
                        .path
                        .parent()
                        .map(std::path::Path::to_path_buf),
                    read_rules: Some(self.ctx.gate.read_rules() as Arc<dyn ReadDenials>),
                    files: self.ctx.ext.files(),
                    web: self.ctx.settings.web_fetch.clone(),
                    terminal: self.ctx.ext.terminal(),
                    call_id: call.id.clone(),
                };
                let mut out = tools::run(&call.name, &call.arguments, &ctx);
                self.ctx.ext.diagnose(&mut out);
                out
            };
            self.store_result(call, out, true)?;
            *answered += 1;
            if self.io.cancel.is_cancelled() {
                return Err(FinishReason::Cancelled);
            }
        }
        Ok(())
    }

    pub(in crate::runtime::agent) fn store_result(
        &mut self,
        call: &ToolCall,
        out: ToolOutput,
        ran: bool,
    ) -> Flow {
        self.store_result_parts(call, out, ran, Vec::new())
    }

    /// A result with images (MCP tools): each image becomes an asset of the session, shown in
    /// the views; the model reads the result's text, which names them.
    fn store_result_with_images(
        &mut self,
        call: &ToolCall,
        mut out: ToolOutput,
        images: Vec<crate::runtime::extensions::mcp::McpImage>,
    ) -> Flow {
        let mut parts = Vec::new();
        for img in images {
            match self
                .io
                .sessions
                .save_asset(&self.ctx.session_id, &img.mime_type, &img.data)
            {
                Ok(a) => parts.push(Part::Image {
                    asset_id: a.id,
                    mime_type: Some(img.mime_type),
                }),
                Err(e) => out
                    .text
                    .push_str(&format!("\n[an image could not be stored: {e}]")),
            }
        }
        self.store_result_parts(call, out, true, parts)
    }

    fn store_result_parts(
        &mut self,
        call: &ToolCall,
        out: ToolOutput,
        ran: bool,
        images: Vec<Part>,
    ) -> Flow {
        if ran {
            self.state.ledger.usage.tool_calls += 1;
        }
        let permission = self.state.permission.take();
        let mut text = redact(&out.text, self.key());
        if ran && let Some(reason) = self.ctx.gate.post_tool_use(call, &text, out.is_error) {
            text.push_str(&format!("\n\nA PostToolUse hook says: {reason}"));
        }
        let diagnostics =
            crate::runtime::extensions::lsp::DiagnosticReport::of_metadata(out.metadata.as_ref())
                .map(Box::new);
        let mut msg = NewMessage::tool_result(call.id.clone(), text.clone(), out.is_error);
        msg.parts.extend(images);
        msg.tool_metadata = match &permission {
            Some(p) => Some(crate::runtime::policy::gate::with_permission(
                out.metadata,
                p,
            )),
            None => out.metadata,
        };
        let seq = self.append_files(msg, self.update(None), &out.files)?;
        self.emit(TurnEvent::ToolResult {
            call_id: call.id.clone(),
            text,
            is_error: out.is_error,
            seq,
            permission,
            diagnostics,
        });
        Ok(())
    }

    pub(in crate::runtime::agent) fn ask(
        &mut self,
        call: &ToolCall,
        summary: &str,
        reason: String,
        rules_can_allow: bool,
    ) -> Result<Answer, FinishReason> {
        self.set_status(Status::Paused)?;
        let rules = self
            .ctx
            .gate
            .propose(call, &self.state.ledger.approved_tools, rules_can_allow);
        self.ctx.gate.notify(
            "permission_prompt",
            &format!("neocode asks to run {summary}"),
        );
        self.notices();
        self.emit(TurnEvent::ApprovalNeeded {
            call: call.clone(),
            summary: summary.to_string(),
            reason,
            rules: rules.clone(),
        });
        loop {
            if self.io.cancel.is_cancelled() {
                return Ok(Answer::Cancelled);
            }
            match self.io.commands.recv_timeout(Duration::from_millis(50)) {
                Ok(TurnCommand::Approve { call_id, always }) if call_id == call.id => {
                    let always = always.then(|| {
                        (
                            rules.clone(),
                            crate::runtime::policy::gate::RuleScope::Session,
                        )
                    });
                    return Ok(Answer::Run { always });
                }
                Ok(TurnCommand::AlwaysAllow {
                    call_id,
                    rules,
                    scope,
                }) if call_id == call.id => {
                    return Ok(Answer::Run {
                        always: Some((rules, scope)),
                    });
                }
                Ok(TurnCommand::Deny { call_id, reason }) if call_id == call.id => {
                    return Ok(Answer::Denied(reason));
                }
                Ok(TurnCommand::Cancel) => return Ok(Answer::Cancelled),
                Ok(other) => self.emit(TurnEvent::Warning {
                    code: WarningCode::UnexpectedCommand,
                    message: format!("ignored {other:?}: waiting for an answer about {}", call.id),
                }),
                Err(RecvTimeoutError::Timeout) => {}
                // Nobody is left to answer.
                Err(RecvTimeoutError::Disconnected) => return Ok(Answer::Cancelled),
            }
        }
    }

    /// `update_plan`: the whole plan, with step statuses, written through the store.
    fn update_plan(&self, arguments: &str) -> ToolOutput {
        #[derive(serde::Deserialize)]
        struct Args {
            steps: Vec<ArgStep>,
        }
        #[derive(serde::Deserialize)]
        struct ArgStep {
            id: String,
            title: String,
            #[serde(default)]
            depends_on: Vec<String>,
            #[serde(default)]
            status: Option<String>,
        }
        let args: Args = match serde_json::from_str(arguments) {
            Ok(a) => a,
            Err(e) => return ToolOutput::error(format!("bad update_plan arguments: {e}")),
        };
        let plan = Plan {
            steps: args
                .steps
                .iter()
                .map(|s| Step {
                    id: s.id.clone(),
                    title: s.title.clone(),
                    depends_on: s.depends_on.clone(),
                })
                .collect(),
        };
        if let Err(e) = plan.validate() {
            return ToolOutput::error(format!("plan rejected: {e}"));
        }
        let upd = StateUpdate {
            plan: crate::session::Change::Set(plan.clone()),
            ..StateUpdate::default()
        };
        if let Err(e) = self.io.sessions.update_state(&self.ctx.session_id, &upd) {
            return ToolOutput::error(format!("cannot store the plan: {e}"));
        }
        let mut done = 0;
        for s in &args.steps {
            let Some(st) = s.status.as_deref() else {
                continue;
            };
            let Some(status) = StepStatus::parse(st) else {
                return ToolOutput::error(format!("step {}: unknown status `{st}`", s.id));
            };
            if status == StepStatus::Completed {
                done += 1;
            }
            if let Err(e) = self.io.sessions.step_update(
                &self.ctx.session_id,
                &s.id,
                &StepUpdate::Status { status },
            ) {
                return ToolOutput::error(format!("cannot store step {}: {e}", s.id));
            }
        }
        ToolOutput {
            text: format!(
                "Plan updated: {} steps, {done} completed.",
                plan.steps.len()
            ),
            is_error: false,
            metadata: Some(json!({"steps": plan.steps.len(), "completed": done})),
            files: Vec::new(),
        }
    }
}
