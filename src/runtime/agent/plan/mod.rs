//! Plan runs (seed 000 §3.1, §5.3): the model drafts a DAG of steps with `update_plan`, the user
//! approves (or drops steps, or rejects), then the steps run layer by layer, each as a focused
//! sub-turn of the same turn loop, and every outcome is stored as a step update merged by the
//! seed's three rules.
//!
//! Where things live:
//! - The plan run is a session (the *plan session*): the drafting conversation (its user message
//!   carries `{"plan_run": {"goal": ...}}` metadata), the plan, the step updates, the ledger and
//!   a closing summary message.
//! - Each attempt at a step is a *child session* (`parent_id` = the plan session, no fork
//!   point) whose first user message holds the goal, the plan and the results of the steps it
//!   depends on, with `{"plan_step": {"session_id", "step_id"}}` metadata; its final answer is
//!   the step's result. `Sessions::step_conversations` finds them (Enter on a step in the Plan
//!   tab opens the newest one).
//! - A step that cannot run because a dependency did not complete is stored as a failure with
//!   error type [`SKIPPED`] (no new status: the session file, the views and the merge rules
//!   stay as they are, and a skipped step is simply reconsidered on resume).
//!
//! - Steps of one layer side by side (width above 1) in a git repository each work in a
//!   worktree of their own, their changes merged into the workspace in step order at the end
//!   of the layer; a conflict fails the step (`plan_conflict`) and stops the run (`isolate`).
//!
//! Resume (same entry, no goal): completed steps never run again; a step left `running` by a
//! dead process runs again (at least once: said with a warning); steps skipped, stopped by a
//! budget, cancelled or whose changes conflicted run again; other failures only with `retry_failed` (a later result
//! clears the failure, rule 2).
//!
//! Budgets: the steps share one budget ([`ledger::SharedBudget`], the run's ledger) and each
//! sub-turn reserves a model call or a tool call there before making it, so steps running side
//! by side (width above 1) count what the others already started: once a limit is reached no
//! step makes another request or call, each in-flight step ends `limit_reached` at its next
//! one (a step already streaming its answer may complete), no step starts, and the run is
//! `paused`. What can still pass a limit: tokens (a response's are known only once it has
//! streamed, so by at most one response per in-flight step) and wall time (a model call or a
//! tool command already under way is not interrupted). The run's ledger is the shared one: a
//! model request counts when it is made, even if it then fails.

mod draft;
mod isolate;
mod prompts;
mod steps;

use super::base::{Agent, Opened};
use super::error::{StartCode, StartError, thread_error};
use super::events::{FailCode, FinishReason, TurnCommand, TurnEvent, WarningCode};
use super::handle::{Commands, Sink, TurnHandle, TurnSink, Watched};
use super::ledger;
use super::start::{Spawn, Target};
use super::turn::store_failed;
use crate::runtime::cancel::CancelFlag;
use crate::runtime::config::ApprovalPolicy;
use crate::runtime::lease::Lease;
use crate::runtime::provider::openai::redact;
use crate::session::{
    NewMessage, NewSession, Plan, PlanProgress, Role, RuntimeLedger, RuntimeLimits, Session,
    StateUpdate, Status, Step, StepFailure, StepStatus, StepUpdate, Usage,
};
use serde_json::json;
use std::sync::mpsc::{Receiver, TryRecvError, channel};
use std::time::{Duration, Instant};

pub(crate) use prompts::result_text;
use prompts::{DRAFT_INSTRUCTIONS, step_context, step_prompt};

/// Error type of a step that did not run because a dependency did not complete.
pub(crate) const SKIPPED: &str = "skipped";
/// Error type of a step stopped by a budget.
pub(crate) const LIMIT_REACHED: &str = "limit_reached";
/// Error type of a step the user cancelled.
pub(crate) const CANCELLED: &str = "cancelled";

/// What to run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PlanRequest {
    /// The goal; a new plan is drafted for it. `None` resumes the session's plan run.
    pub goal: Option<String>,
    /// Steps of one layer that may run at once (0 counts as 1).
    pub width: usize,
    /// Run failed steps again (skipped, interrupted and budget-stopped steps always are).
    pub retry_failed: bool,
    /// Run the drafted plan without asking ([`TurnEvent::PlanProposed`] is sent approved).
    pub approved: bool,
    /// Limits the user set for this run (replace the stored ones; unset ones stay).
    pub limits: RuntimeLimits,
    /// Approval policy for tool calls (default: from the settings).
    pub approval: Option<ApprovalPolicy>,
}

/// The goal of the latest plan run drafted in `session`, if it is one.
pub fn plan_goal(session: &Session) -> Option<String> {
    session.messages.iter().rev().find_map(|m| {
        m.tool_metadata
            .as_ref()?
            .get("plan_run")?
            .get("goal")?
            .as_str()
            .map(str::to_string)
    })
}

impl Agent {
    /// Starts a plan run in a new or existing session: with a goal, the model drafts a plan
    /// first; without, the session's plan run resumes. Events and commands as for a turn, plus
    /// the plan events ([`TurnEvent::PlanProposed`], [`TurnEvent::StepStarted`],
    /// [`TurnEvent::Step`], [`TurnEvent::StepFinished`]); the last event is `Finished`.
    pub(crate) fn start_plan(
        &self,
        target: Target,
        req: PlanRequest,
        sink: impl TurnSink,
    ) -> Result<TurnHandle, StartError> {
        self.start_plan_with(target, req, Sink::to(sink))
    }

    /// [`Agent::start_plan`] with a sink built from the run's commands.
    pub(crate) fn start_plan_with(
        &self,
        target: Target,
        req: PlanRequest,
        sink: Sink,
    ) -> Result<TurnHandle, StartError> {
        if let Some(g) = &req.goal
            && g.trim().is_empty()
        {
            return Err(usage("the goal of a plan run is empty"));
        }
        if target == Target::New && req.goal.is_none() {
            return Err(usage("a plan run needs a goal (or a session to resume)"));
        }
        let Opened { agent, id, lease } = self.open(target)?;
        agent.run_plan(id, lease, req, sink)
    }

    /// [`Agent::start_plan`] with a channel for the events.
    pub fn watch_plan(&self, target: Target, req: PlanRequest) -> Result<Watched, StartError> {
        let (tx, events) = channel();
        let handle = self.start_plan(target, req, tx)?;
        Ok(Watched { handle, events })
    }

    fn run_plan(
        &self,
        id: String,
        lease: Lease,
        req: PlanRequest,
        sink: Sink,
    ) -> Result<TurnHandle, StartError> {
        let session = self.sessions.load(&id)?;
        let goal = match &req.goal {
            Some(g) => g.clone(),
            None => {
                let has_plan = session
                    .header
                    .plan
                    .as_ref()
                    .is_some_and(|p| !p.steps.is_empty());
                match plan_goal(&session) {
                    Some(g) if has_plan => g,
                    _ => {
                        return Err(usage(&format!(
                            "session {id} has no plan run to resume; start one with a goal"
                        )));
                    }
                }
            }
        };
        let mut led = ledger::of(&session.header, &self.settings.limits);
        ledger::apply_user_limits(&mut led, &req.limits);
        led.termination = None;

        let (commands, inner_rx, cancel) = Commands::channel();
        let sink = sink.build(&commands);
        let run = Run {
            agent: self.clone(),
            policy: req.approval.unwrap_or(self.settings.approval),
            id: id.clone(),
            goal,
            req,
            sink,
            commands: inner_rx,
            cancel: cancel.clone(),
            ledger: led,
            budget: None,
            asked: 0,
            usage: Usage::default(),
            lease: Some(lease),
            merges: Vec::new(),
        };
        let thread = std::thread::Builder::new()
            .name("plan-run".into())
            .spawn(move || run.run())
            .map_err(thread_error)?;
        Ok(TurnHandle::new(id, commands, cancel, thread))
    }
}

fn usage(m: &str) -> StartError {
    StartError {
        code: StartCode::Usage,
        message: m.to_string(),
    }
}

fn add(a: &mut Usage, b: Usage) {
    a.input_tokens += b.input_tokens;
    a.output_tokens += b.output_tokens;
}

/// The plan's layers as ids.
fn layer_ids(plan: &Plan) -> Vec<Vec<String>> {
    plan.layers()
        .map(|ls| {
            ls.iter()
                .map(|l| l.iter().map(|s| s.id.clone()).collect())
                .collect()
        })
        .unwrap_or_default()
}

/// `plan` without the steps in `drop`; dependants no longer wait for a dropped step.
pub(crate) fn drop_steps(plan: &Plan, drop: &[String]) -> Plan {
    Plan {
        steps: plan
            .steps
            .iter()
            .filter(|s| !drop.contains(&s.id))
            .map(|s| Step {
                depends_on: s
                    .depends_on
                    .iter()
                    .filter(|d| !drop.contains(d))
                    .cloned()
                    .collect(),
                ..s.clone()
            })
            .collect(),
    }
}

struct Run {
    agent: Agent,
    policy: ApprovalPolicy,
    id: String,
    goal: String,
    req: PlanRequest,
    sink: Box<dyn TurnSink>,
    commands: Receiver<TurnCommand>,
    cancel: CancelFlag,
    ledger: RuntimeLedger,
    /// What the steps reserve before each model call and tool call (set while they run).
    budget: Option<ledger::SharedBudget>,
    /// Approval questions relayed so far (orders the answers when call ids repeat).
    asked: u64,
    usage: Usage,
    lease: Option<Lease>,
    /// The completed steps of the running layer whose changes wait to be merged.
    merges: Vec<Merge>,
}

/// Error type of a step whose changes conflict with those merged before it.
pub(crate) const CONFLICT: &str = "plan_conflict";

/// A completed step's change, waiting for the end of its layer to be merged.
pub(super) struct Merge {
    /// Its place in the layer.
    pub(super) order: usize,
    pub(super) step_id: String,
    pub(super) branch: String,
    pub(super) diff: String,
    pub(super) update: StepUpdate,
    pub(super) answer: String,
    pub(super) usage: Usage,
    pub(super) elapsed_ms: u64,
}

/// What a step's worktree gave when the step ended.
pub(super) enum Closed {
    /// It changed nothing.
    Nothing,
    /// Its changes, committed on `branch`.
    Changed { branch: String, diff: String },
}

/// How the run's steps went, for the summary.
#[derive(Default)]
struct Tally {
    done: usize,
    failed: Vec<String>,
    skipped: Vec<String>,
    open: usize,
}

impl Run {
    fn emit(&mut self, e: TurnEvent) {
        self.sink.event(e);
    }

    fn sessions(&self) -> &crate::runtime::sessions::Sessions {
        &self.agent.sessions
    }

    fn run(mut self) {
        self.emit(TurnEvent::Started {
            session_id: self.id.clone(),
        });
        let reason = self.body();
        self.finish(reason);
    }

    fn save_ledger(&self, status: Option<Status>) -> Result<(), FinishReason> {
        self.sessions()
            .update_state(
                &self.id,
                &StateUpdate {
                    status,
                    ledger: crate::session::Change::Set(self.ledger.clone()),
                    touch: true,
                    ..StateUpdate::default()
                },
            )
            .map_err(store_failed)
    }

    fn body(&mut self) -> FinishReason {
        if let Some(goal) = self.req.goal.clone()
            && let Err(r) = self.draft(&goal)
        {
            return r;
        }
        let header = match self.sessions().header(&self.id) {
            Ok(h) => h,
            Err(e) => return store_failed(e),
        };
        let Some(plan) = header.plan.filter(|p| !p.steps.is_empty()) else {
            return FinishReason::Failed {
                code: FailCode::NoPlan,
                message: "the model did not store a plan with update_plan".into(),
            };
        };
        let plan = match self.approve(plan) {
            Ok(p) => p,
            Err(r) => return r,
        };
        if let Err(r) = self.save_ledger(Some(Status::Running)) {
            return r;
        }
        match self.execute(&plan) {
            Ok(()) => self.outcome(&plan),
            Err(r) => r,
        }
    }

    fn tally(&self, plan: &Plan) -> Tally {
        let progress = self.progress().unwrap_or_default();
        let mut t = Tally::default();
        for s in &plan.steps {
            match progress.status(&s.id) {
                StepStatus::Completed => t.done += 1,
                StepStatus::Failed => match progress.failures.get(&s.id) {
                    Some(f) if f.error_type == SKIPPED => t.skipped.push(s.id.clone()),
                    Some(f) => t.failed.push(format!(
                        "{} ({}: {})",
                        s.id,
                        f.error_type,
                        f.message.lines().next().unwrap_or("")
                    )),
                    None => t.failed.push(s.id.clone()),
                },
                StepStatus::Pending | StepStatus::Running => t.open += 1,
            }
        }
        t
    }

    /// How the run ended once every layer was visited.
    fn outcome(&self, plan: &Plan) -> FinishReason {
        let t = self.tally(plan);
        if t.failed.is_empty() && t.skipped.is_empty() && t.open == 0 {
            FinishReason::Completed
        } else {
            FinishReason::Failed {
                code: FailCode::PlanFailed,
                message: format!(
                    "{} of {} steps failed: {}{}",
                    t.failed.len(),
                    plan.steps.len(),
                    t.failed.join("; "),
                    if t.skipped.is_empty() {
                        String::new()
                    } else {
                        format!("; skipped: {}", t.skipped.join(", "))
                    }
                ),
            }
        }
    }

    /// Writes the summary message and the final status, releases the session, says `Finished`.
    fn finish(&mut self, reason: FinishReason) {
        let header = self.sessions().header(&self.id).ok();
        let plan = header.and_then(|h| h.plan).unwrap_or_default();
        let t = self.tally(&plan);
        let (status, word) = super::turn::ending(&reason, "paused");
        let key = self.agent.settings.api_key();
        let word = redact(&word, key);
        let mut text = format!(
            "Plan run {word}.\n\n{} of {} steps completed",
            t.done,
            plan.steps.len()
        );
        if !t.failed.is_empty() {
            text.push_str(&format!(", {} failed", t.failed.len()));
        }
        if !t.skipped.is_empty() {
            text.push_str(&format!(
                ", {} skipped ({})",
                t.skipped.len(),
                t.skipped.join(", ")
            ));
        }
        if t.open > 0 {
            text.push_str(&format!(", {} not run yet", t.open));
        }
        text.push('.');
        if matches!(
            reason,
            FinishReason::LimitReached(_) | FinishReason::Cancelled
        ) || t.open > 0
            || !t.failed.is_empty()
        {
            text.push_str(
                "\nResuming runs what is not finished (failed steps again only on request).",
            );
        }
        let mut msg = NewMessage::text(Role::Assistant, text);
        msg.tool_metadata = Some(json!({"plan_run_summary": {
            "outcome": reason.as_str(),
            "completed": t.done,
            "failed": t.failed.len(),
            "skipped": t.skipped.len(),
            "open": t.open,
            "total": plan.steps.len(),
        }}));
        let sessions = &self.agent.sessions;
        let meta = self.agent.meta();
        super::turn::Closing {
            ledger: &mut self.ledger,
            lease: &mut self.lease,
            sink: self.sink.as_mut(),
            usage: self.usage,
        }
        .close(reason, status, word, |update| {
            sessions
                .append_with_state(&self.id, &[msg], &meta, update)
                .map(drop)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::plan::step;

    #[test]
    fn dropping_a_step_frees_its_dependants() {
        let plan = Plan {
            steps: vec![step("a", &[]), step("b", &["a"]), step("c", &["a", "b"])],
        };
        let p = drop_steps(&plan, &["b".to_string()]);
        assert_eq!(p.steps.len(), 2);
        assert_eq!(p.steps[1].depends_on, vec!["a".to_string()]);
        assert!(p.validate().is_ok());
    }

    #[test]
    fn step_prompt_carries_goal_plan_and_dependency_results() {
        let plan = Plan {
            steps: vec![step("a", &[]), step("b", &["a"])],
        };
        let mut progress = PlanProgress::default();
        progress.apply(
            "a",
            &StepUpdate::Result {
                result: json!({"answer": "found 3 files"}),
            },
        );
        let p = step_context("tidy the repo", &plan, &progress, &plan.steps[1]);
        assert!(p.contains("Goal of the plan: tidy the repo"));
        assert!(p.contains("- a: A [completed]"));
        assert!(p.contains("- b: B (after a) [this step]"));
        assert!(p.contains("### a\nfound 3 files"));
    }
}
