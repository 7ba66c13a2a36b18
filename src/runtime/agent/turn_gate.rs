//! The turn's side of [`crate::runtime::policy::gate`]: deciding a call (rules, hooks, policy, the user),
//! keeping an "always" answer's rule, a refused prompt, a `Stop` hook that makes the turn go
//! on, and showing what hooks said.

use super::events::{FailCode, FinishReason, TurnEvent, WarningCode};
use super::turn::{Answer, Turn};
use crate::runtime::config::ApprovalPolicy;
use crate::runtime::policy::approval;
use crate::runtime::policy::gate::{Gated, Permission};
use crate::runtime::tools::{ToolKind, ToolOutput};
use crate::session::{NewMessage, Role, Status, ToolCall};

impl Turn {
    /// Decides `call`: `Some` with who let it run, or `None` when it did not run (its result,
    /// the denial, is stored). `replay`: a call interrupted by a crash, which asks again.
    pub(super) fn decide_call(
        &mut self,
        call: &ToolCall,
        kind: ToolKind,
        summary: &str,
        replay: bool,
    ) -> Result<Option<Permission>, FinishReason> {
        let grants = self.state.ledger.approved_tools.clone();
        let (policy, sandbox) = (self.ctx.policy, self.ctx.settings.sandbox.clone());
        let ext = self.ctx.ext.clone();
        let name = call.name.clone();
        let gated = self.ctx.gate.decide(call, &grants, || {
            if ext.is_mcp(&name) {
                ext.mcp_approval(kind, &name, policy, &grants)
            } else {
                approval::needs_approval(kind, &name, policy, &grants, &sandbox)
            }
        });
        self.notices();
        let replay_asks = replay
            && match kind {
                ToolKind::Edit | ToolKind::Command => self.ctx.policy != ApprovalPolicy::NeverAsk,
                // A sub-agent may have changed files before the crash: `ask` asks again.
                ToolKind::Agent => self.ctx.policy == ApprovalPolicy::Ask,
                ToolKind::Read | ToolKind::Plan | ToolKind::Fetch => false,
            };
        let gated = match gated {
            Gated::Run(_) if replay_asks => Gated::Ask {
                reason: "replay of a call interrupted by a crash: it may already have run"
                    .to_string(),
                rules_can_allow: true,
            },
            Gated::Ask {
                reason,
                rules_can_allow,
            } if replay_asks => Gated::Ask {
                reason: format!(
                    "replay of a call interrupted by a crash: it may already have run; {reason}"
                ),
                rules_can_allow,
            },
            other => other,
        };
        let (reason, rules_can_allow) = match gated {
            Gated::Run(p) => return Ok(Some(p)),
            Gated::Deny { permission, text } => {
                self.state.permission = Some(permission);
                self.store_result(call, ToolOutput::error(text), false)?;
                return Ok(None);
            }
            Gated::Ask {
                reason,
                rules_can_allow,
            } => (reason, rules_can_allow),
        };
        match self.ask(call, summary, reason, rules_can_allow)? {
            Answer::Run { always } => {
                self.set_status(Status::Running)?;
                let Some((rules, scope)) = always.filter(|(rules, _)| !rules.is_empty()) else {
                    return Ok(Some(Permission::user(None)));
                };
                let mut grants = std::mem::take(&mut self.state.ledger.approved_tools);
                let kept = self.ctx.gate.keep(&rules, scope, &mut grants);
                self.state.ledger.approved_tools = grants;
                self.notices();
                if let Err(e) = kept {
                    let named: Vec<String> = rules.iter().map(|r| format!("`{r}`")).collect();
                    self.emit(TurnEvent::Warning {
                        code: WarningCode::Hook,
                        message: format!(
                            "{} {} not kept ({e}); the call runs once",
                            named.join(", "),
                            if rules.len() == 1 { "was" } else { "were" }
                        ),
                    });
                    return Ok(Some(Permission::user(None)));
                }
                Ok(Some(Permission::user(Some((&rules, scope)))))
            }
            Answer::Denied(why) => {
                self.set_status(Status::Running)?;
                let text = match why.filter(|w| !w.trim().is_empty()) {
                    Some(w) => format!("The user denied this call: {w}"),
                    None => "The user denied this call.".to_string(),
                };
                self.state.permission = Some(Permission::user_denied());
                self.store_result(call, ToolOutput::error(text), false)?;
                Ok(None)
            }
            Answer::Cancelled => Err(FinishReason::Cancelled),
        }
    }

    /// `UserPromptSubmit`: the context its hooks add, or the turn ends refused (nothing of
    /// the prompt is stored) with the hook's reason; the runs are named in that reason, which
    /// the session keeps as its ledger's termination.
    pub(super) fn prompt_submitted(&mut self, prompt: &str) -> Result<Vec<String>, FinishReason> {
        let r = self.ctx.gate.prompt_submit(prompt);
        self.notices();
        r.map_err(|refused| {
            let runs: Vec<String> = std::mem::take(&mut self.ctx.gate.pending)
                .iter()
                .map(|r| {
                    let exit = r
                        .exit_code
                        .map_or("no exit".to_string(), |c| format!("exit {c}"));
                    format!("`{}` {exit}, {} ms", r.command, r.duration_ms)
                })
                .collect();
            FinishReason::Failed {
                code: FailCode::PromptRefused,
                message: format!(
                    "a UserPromptSubmit hook refused the prompt: {} (hooks run: {})",
                    refused.reason.trim(),
                    runs.join("; ")
                ),
            }
        })
    }

    /// A `Stop` hook blocked the end of the turn: its reason goes to the model as a user
    /// message (marked as the hook's) and the turn goes on.
    pub(super) fn stop_hook_continues(&mut self, reason: &str) -> Result<(), FinishReason> {
        let mut msg = NewMessage::text(
            Role::User,
            format!("[a Stop hook asks to go on] {}", reason.trim()),
        );
        msg.tool_metadata = Some(serde_json::json!({"hook_event": "Stop"}));
        let update = self.update(None);
        self.append(msg, update).map(|_| ())
    }

    /// Shows the user what hooks said (errors, messages) as `hook` warnings.
    pub(super) fn notices(&mut self) {
        for message in std::mem::take(&mut self.ctx.gate.notices) {
            self.emit(TurnEvent::Warning {
                code: WarningCode::Hook,
                message,
            });
        }
    }
}
