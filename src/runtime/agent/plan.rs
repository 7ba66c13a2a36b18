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
//! Resume (same entry, no goal): completed steps never run again; a step left `running` by a
//! dead process runs again (at least once: said with a warning); steps skipped, stopped by a
//! budget or cancelled run again; other failures only with `retry_failed` (a later result
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

use std::sync::mpsc::{Receiver, TryRecvError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::lease::Lease;
use super::{
    Agent, Commands, FinishReason, Opened, Spawn, StartError, Target, TurnCommand, TurnEvent,
    TurnHandle, TurnSink, Watched, ledger, thread_error,
};
use crate::runtime::cancel::CancelFlag;
use crate::runtime::config::ApprovalPolicy;
use crate::runtime::provider::openai::redact;
use crate::session::{
    NewMessage, NewSession, Plan, PlanProgress, Role, RuntimeLedger, RuntimeLimits, Session,
    StateUpdate, Status, Step, StepFailure, StepStatus, StepUpdate, Usage, now_ms,
};

/// Error type of a step that did not run because a dependency did not complete.
pub const SKIPPED: &str = "skipped";
/// Error type of a step stopped by a budget.
pub const LIMIT_REACHED: &str = "limit_reached";
/// Error type of a step the user cancelled.
pub const CANCELLED: &str = "cancelled";

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
    pub fn start_plan(
        &self,
        target: Target,
        req: PlanRequest,
        sink: impl TurnSink,
    ) -> Result<TurnHandle, StartError> {
        self.check_provider()?;
        if let Some(g) = &req.goal
            && g.trim().is_empty()
        {
            return Err(usage("the goal of a plan run is empty"));
        }
        if target == Target::New && req.goal.is_none() {
            return Err(usage("a plan run needs a goal (or a session to resume)"));
        }
        let Opened { agent, id, lease } = self.open(target)?;
        agent.run_plan(id, lease, req, Box::new(sink))
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
        sink: Box<dyn TurnSink>,
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
        };
        let thread = std::thread::Builder::new()
            .name("plan-run".into())
            .spawn(move || run.run())
            .map_err(thread_error)?;
        Ok(TurnHandle {
            session_id: id,
            commands,
            cancel,
            thread: Some(thread),
        })
    }
}

fn usage(m: &str) -> StartError {
    StartError {
        code: "usage",
        message: m.to_string(),
    }
}

fn store_failed(e: impl std::fmt::Display) -> FinishReason {
    FinishReason::Failed {
        code: "store".into(),
        message: format!("cannot write the session: {e}"),
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
pub fn drop_steps(plan: &Plan, drop: &[String]) -> Plan {
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

/// The drafting turn's instructions, stored as a system message before the goal (so the
/// session's first prompt, which lists and filters show, is the goal itself).
const DRAFT_INSTRUCTIONS: &str = "The user's next message is a goal to plan before any of it \
     is done. Call update_plan once with the whole plan: steps with short ids, one-line titles \
     and depends_on naming the steps each needs first (no cycles, no unknown ids, unique ids); \
     steps that do not depend on each other may run in parallel. Each step will be carried out \
     later by a separate agent that sees the goal, the plan and the results of the steps it \
     depends on. Do not carry out the steps now; reply with one line when the plan is stored.";

/// A step's context, stored as the system message its conversation starts with: the goal, the
/// plan, the results of the steps it depends on, and what its answer is for.
fn step_context(goal: &str, plan: &Plan, progress: &PlanProgress, step: &Step) -> String {
    let mut p =
        format!("You carry out one step of a plan.\n\nGoal of the plan: {goal}\n\nThe plan:\n");
    for s in &plan.steps {
        let mark = if s.id == step.id {
            "this step".to_string()
        } else {
            progress.status(&s.id).as_str().to_string()
        };
        let deps = if s.depends_on.is_empty() {
            String::new()
        } else {
            format!(" (after {})", s.depends_on.join(", "))
        };
        p.push_str(&format!("- {}: {}{deps} [{mark}]\n", s.id, s.title));
    }
    if !step.depends_on.is_empty() {
        p.push_str("\nResults of the steps this one depends on:\n");
        for d in &step.depends_on {
            let r = progress.results.get(d).map(result_text).unwrap_or_default();
            p.push_str(&format!("\n### {d}\n{r}\n"));
        }
    }
    p.push_str(
        "\nDo the step the user names, and only that one, with the tools you need. Your final \
         answer is the step's result, read by the steps that come after: state what you did and \
         what they need to know. If the step cannot be done, answer with a first line starting \
         with `FAILED:` and the reason.",
    );
    p
}

/// A step's prompt (the conversation's first user message).
fn step_prompt(step: &Step) -> String {
    format!("Your step: {} — {}", step.id, step.title)
}

/// The text of a stored step result (`{"answer": ...}` or any other JSON).
pub fn result_text(v: &Value) -> String {
    match v.get("answer").and_then(Value::as_str) {
        Some(a) => a.to_string(),
        None => match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        },
    }
}

/// A step whose sub-turn is running.
struct Active {
    step: Step,
    handle: TurnHandle,
    /// The sub-turn's events.
    events: Receiver<TurnEvent>,
    started: Instant,
    /// Calls waiting for an approval in this step: id, and when it was asked (the run's
    /// count of questions relayed).
    waiting: Vec<(String, u64)>,
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

    fn sessions(&self) -> &crate::runtime::Sessions {
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
                    ledger: Some(Some(self.ledger.clone())),
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
                code: "no_plan".into(),
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

    /// The drafting turn: the plan session's own conversation, run by the turn loop.
    fn draft(&mut self, goal: &str) -> Result<(), FinishReason> {
        // A new goal replaces an earlier plan (and its progress) of this session; an untitled
        // session is named after the goal, not the drafting instructions.
        let untitled = self
            .sessions()
            .header(&self.id)
            .map_err(store_failed)?
            .title
            .trim()
            .is_empty();
        self.sessions()
            .update_state(
                &self.id,
                &StateUpdate {
                    plan: Some(None),
                    title: untitled.then(|| super::title_from(goal)),
                    ..StateUpdate::default()
                },
            )
            .map_err(store_failed)?;
        let mut instructions = NewMessage::text(Role::System, DRAFT_INSTRUCTIONS);
        instructions.tool_metadata = Some(json!({"plan_instructions": "draft"}));
        self.sessions()
            .append(&self.id, &[instructions], &self.agent.meta())
            .map_err(store_failed)?;
        let (ev_tx, ev_rx) = channel();
        let h = self
            .agent
            .spawn(
                self.id.clone(),
                None,
                Spawn {
                    ledger: self.ledger.clone(),
                    budget: None,
                    policy: self.policy,
                    prompt: Some(goal.to_string()),
                    prompt_meta: Some(json!({"plan_run": {"goal": goal}})),
                    images: Vec::new(),
                    caps: self.agent.settings().prompt_caps,
                },
                Box::new(ev_tx),
            )
            .map_err(|e| FinishReason::Failed {
                code: e.code.into(),
                message: e.message,
            })?;
        let (reason, usage) = self.follow(&h, &ev_rx);
        h.join();
        add(&mut self.usage, usage);
        // The drafting turn wrote what it spent into the session's ledger.
        if let Ok(h) = self.sessions().header(&self.id)
            && let Some(l) = h.ledger
        {
            self.ledger = l;
        }
        match reason {
            FinishReason::Completed => Ok(()),
            other => Err(other),
        }
    }

    /// Relays one sub-turn of the plan session itself until it finishes.
    fn follow(&mut self, h: &TurnHandle, events: &Receiver<TurnEvent>) -> (FinishReason, Usage) {
        loop {
            if self.cancel.is_cancelled() {
                h.cancel();
            }
            while let Ok(cmd) = self.commands.try_recv() {
                let _ = h.commands.send(cmd);
            }
            match events.recv_timeout(Duration::from_millis(20)) {
                Ok(TurnEvent::Finished { reason, usage }) => return (reason, usage),
                Ok(TurnEvent::Started { .. }) => {}
                Ok(e) => self.emit(e),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return (
                        FinishReason::Failed {
                            code: "internal".into(),
                            message: "the drafting turn ended without saying why".into(),
                        },
                        Usage::default(),
                    );
                }
            }
        }
    }

    /// Proposes the plan and waits for the user's answer (edits are proposed again). A plan
    /// run that already started (some step has progress) is not asked about again.
    fn approve(&mut self, mut plan: Plan) -> Result<Plan, FinishReason> {
        let progress = self
            .sessions()
            .plan_progress(&self.id)
            .map_err(store_failed)?;
        let started = progress
            .statuses
            .values()
            .any(|s| *s != StepStatus::Pending);
        let auto = self.req.approved || started;
        loop {
            self.emit(TurnEvent::PlanProposed {
                layers: layer_ids(&plan),
                plan: plan.clone(),
                approved: auto,
            });
            if auto {
                return Ok(plan);
            }
            self.sessions()
                .update_state(
                    &self.id,
                    &StateUpdate {
                        status: Some(Status::Paused),
                        ..StateUpdate::default()
                    },
                )
                .map_err(store_failed)?;
            let answer = loop {
                if self.cancel.is_cancelled() {
                    return Err(FinishReason::Cancelled);
                }
                match self.commands.recv_timeout(Duration::from_millis(50)) {
                    Ok(
                        c @ (TurnCommand::ApprovePlan
                        | TurnCommand::RejectPlan
                        | TurnCommand::EditPlan { .. }),
                    ) => break c,
                    Ok(TurnCommand::Cancel) => return Err(FinishReason::Cancelled),
                    Ok(other) => self.emit(TurnEvent::Warning {
                        code: "unexpected_command".into(),
                        message: format!("ignored {other:?}: waiting for an answer about the plan"),
                    }),
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                        return Err(FinishReason::Cancelled);
                    }
                }
            };
            match answer {
                TurnCommand::ApprovePlan => return Ok(plan),
                TurnCommand::RejectPlan => {
                    return Err(FinishReason::Failed {
                        code: "plan_rejected".into(),
                        message: "the user rejected the plan; nothing ran".into(),
                    });
                }
                TurnCommand::EditPlan { drop } => {
                    let unknown: Vec<&String> = drop
                        .iter()
                        .filter(|d| !plan.steps.iter().any(|s| &s.id == *d))
                        .collect();
                    if !unknown.is_empty() {
                        self.emit(TurnEvent::Warning {
                            code: "unknown_step".into(),
                            message: format!(
                                "no step {} in the plan; nothing dropped",
                                unknown
                                    .iter()
                                    .map(|s| s.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        });
                        continue;
                    }
                    let edited = drop_steps(&plan, &drop);
                    if edited.steps.is_empty() {
                        self.emit(TurnEvent::Warning {
                            code: "empty_plan".into(),
                            message:
                                "dropping every step leaves nothing to run; reject the plan instead"
                                    .into(),
                        });
                        continue;
                    }
                    self.sessions()
                        .update_state(
                            &self.id,
                            &StateUpdate {
                                plan: Some(Some(edited.clone())),
                                ..StateUpdate::default()
                            },
                        )
                        .map_err(store_failed)?;
                    plan = edited;
                }
                _ => unreachable!("only plan answers leave the loop above"),
            }
        }
    }

    fn progress(&self) -> Result<PlanProgress, FinishReason> {
        self.sessions()
            .plan_progress(&self.id)
            .map_err(store_failed)
    }

    fn record(&self, step: &str, u: &StepUpdate) -> Result<(), FinishReason> {
        self.sessions()
            .step_update(&self.id, step, u)
            .map_err(store_failed)
    }

    /// Runs the layers in order, skipping what is done (seed §5.3).
    fn execute(&mut self, plan: &Plan) -> Result<(), FinishReason> {
        let layers = plan.layers().map_err(|e| FinishReason::Failed {
            code: "bad_plan".into(),
            message: e.to_string(),
        })?;
        self.budget = Some(ledger::SharedBudget::new(&self.ledger));
        for layer in layers {
            let progress = self.progress()?;
            let mut queue: Vec<(Step, Option<String>)> = Vec::new();
            for step in layer {
                let status = progress.status(&step.id);
                if status == StepStatus::Completed {
                    continue;
                }
                if let Some(dep) = step
                    .depends_on
                    .iter()
                    .find(|d| progress.status(d) != StepStatus::Completed)
                {
                    let why = match progress.failures.get(dep) {
                        Some(f) if f.error_type == SKIPPED => format!("step {dep} was skipped"),
                        Some(_) => format!("step {dep} failed"),
                        None => format!("step {dep} did not complete"),
                    };
                    let failure = StepFailure {
                        error_type: SKIPPED.into(),
                        message: format!("skipped: {why}"),
                        traceback: None,
                    };
                    self.record(
                        &step.id,
                        &StepUpdate::Error {
                            error: failure.clone(),
                        },
                    )?;
                    self.emit(TurnEvent::StepFinished {
                        step_id: step.id.clone(),
                        outcome: Err(failure),
                        usage: Usage::default(),
                        elapsed_ms: 0,
                    });
                    continue;
                }
                let retry = match status {
                    StepStatus::Pending => None,
                    StepStatus::Running => {
                        let m = format!(
                            "step {} was running when the process stopped; it runs again (at least once: what it already did may be repeated)",
                            step.id
                        );
                        self.emit(TurnEvent::Warning {
                            code: "step_rerun".into(),
                            message: m.clone(),
                        });
                        Some(m)
                    }
                    StepStatus::Failed => {
                        let f = progress.failures.get(&step.id);
                        let kind = f.map(|f| f.error_type.as_str()).unwrap_or("");
                        if matches!(kind, SKIPPED | LIMIT_REACHED | CANCELLED) {
                            Some(format!(
                                "step {} was stopped before it finished ({kind})",
                                step.id
                            ))
                        } else if self.req.retry_failed {
                            Some(format!("retrying failed step {}", step.id))
                        } else {
                            continue;
                        }
                    }
                    StepStatus::Completed => continue,
                };
                queue.push((step.clone(), retry));
            }
            self.run_layer(plan, queue)?;
        }
        Ok(())
    }

    /// Runs the queued steps of one layer, at most `width` at once.
    fn run_layer(
        &mut self,
        plan: &Plan,
        mut queue: Vec<(Step, Option<String>)>,
    ) -> Result<(), FinishReason> {
        queue.reverse();
        let width = self.req.width.max(1);
        let mut active: Vec<Active> = Vec::new();
        let mut stop: Option<FinishReason> = None;
        loop {
            if self.cancel.is_cancelled() && stop.is_none() {
                stop = Some(FinishReason::Cancelled);
                for a in &active {
                    a.handle.cancel();
                }
            }
            while stop.is_none() && active.len() < width {
                let Some((step, retry)) = queue.pop() else {
                    break;
                };
                if let Some(why) = self.blocked() {
                    stop = Some(FinishReason::LimitReached(why));
                    break;
                }
                active.push(self.start_step(plan, step, retry)?);
            }
            if active.is_empty() {
                return match stop {
                    Some(r) => Err(r),
                    None => Ok(()),
                };
            }
            self.route_commands(&mut active);
            let mut idle = true;
            let mut i = 0;
            while i < active.len() {
                match active[i].events.try_recv() {
                    Ok(TurnEvent::Started { .. }) => idle = false,
                    Ok(TurnEvent::Finished { reason, usage }) => {
                        idle = false;
                        let a = active.remove(i);
                        if let Some(r) = self.end_step(a, reason, usage)?
                            && stop.is_none()
                        {
                            stop = Some(r);
                        }
                        continue;
                    }
                    Ok(e) => {
                        idle = false;
                        if let TurnEvent::ApprovalNeeded { call, .. } = &e {
                            self.asked += 1;
                            active[i].waiting.push((call.id.clone(), self.asked));
                        }
                        self.emit(TurnEvent::Step {
                            step_id: active[i].step.id.clone(),
                            event: Box::new(e),
                        });
                    }
                    Err(TryRecvError::Empty) => {}
                    Err(TryRecvError::Disconnected) => {
                        idle = false;
                        let a = active.remove(i);
                        let r = FinishReason::Failed {
                            code: "internal".into(),
                            message: "the step's turn ended without saying why".into(),
                        };
                        self.end_step(a, r, Usage::default())?;
                        continue;
                    }
                }
                i += 1;
            }
            if idle {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }

    /// The limit that forbids starting a step, if one is reached.
    fn blocked(&self) -> Option<String> {
        match &self.budget {
            Some(b) => b.blocked(),
            None => ledger::model_call_blocked(&self.ledger),
        }
    }

    /// Sends approvals to the step that asked; cancel reaches every step through the flag.
    fn route_commands(&mut self, active: &mut [Active]) {
        while let Ok(cmd) = self.commands.try_recv() {
            let call_id = match &cmd {
                TurnCommand::Approve { call_id, .. } | TurnCommand::Deny { call_id, .. } => {
                    call_id.clone()
                }
                TurnCommand::Cancel => {
                    for a in active.iter() {
                        a.handle.cancel();
                    }
                    continue;
                }
                TurnCommand::ApprovePlan
                | TurnCommand::EditPlan { .. }
                | TurnCommand::RejectPlan => {
                    self.emit(TurnEvent::Warning {
                        code: "unexpected_command".into(),
                        message: "the plan is already running".into(),
                    });
                    continue;
                }
            };
            // Steps side by side may use the same call ids: the answer goes to the question
            // asked first, which is the one front ends show first.
            let asked_at = |a: &Active| {
                a.waiting
                    .iter()
                    .find(|(c, _)| *c == call_id)
                    .map(|(_, n)| *n)
            };
            match active
                .iter_mut()
                .filter(|a| asked_at(a).is_some())
                .min_by_key(|a| asked_at(a))
            {
                Some(a) => {
                    let n = asked_at(a);
                    a.waiting.retain(|(c, k)| !(c == &call_id && Some(*k) == n));
                    let _ = a.handle.commands.send(cmd);
                }
                None => self.emit(TurnEvent::Warning {
                    code: "unexpected_command".into(),
                    message: format!("no step waits for an answer about {call_id}"),
                }),
            }
        }
    }

    fn start_step(
        &mut self,
        plan: &Plan,
        step: Step,
        retry: Option<String>,
    ) -> Result<Active, FinishReason> {
        let meta = self.agent.meta();
        let progress = self.progress()?;
        let child = self
            .sessions()
            .new_session(NewSession {
                title: crate::runtime::agent::title_from(&format!(
                    "step {}: {}",
                    step.id, step.title
                )),
                provider: meta.provider.clone().unwrap_or_default(),
                model: self.agent.model_name().unwrap_or_default(),
                workdir: meta.workdir.clone().unwrap_or_default(),
                parent_id: Some(self.id.clone()),
                ..NewSession::default()
            })
            .map_err(store_failed)?;
        let lease = self
            .agent
            .lease(&child.id)
            .map_err(|e| FinishReason::Failed {
                code: e.code.into(),
                message: e.message,
            })?;
        self.record(
            &step.id,
            &StepUpdate::Status {
                status: StepStatus::Running,
            },
        )?;
        self.emit(TurnEvent::StepStarted {
            step_id: step.id.clone(),
            title: step.title.clone(),
            session_id: child.id.clone(),
            retry,
        });
        // The context opens the conversation; its metadata links it to the step.
        let mut context = NewMessage::text(
            Role::System,
            step_context(&self.goal, plan, &progress, &step),
        );
        context.tool_metadata =
            Some(json!({"plan_step": {"session_id": self.id, "step_id": step.id}}));
        self.sessions()
            .append(&child.id, &[context], &meta)
            .map_err(store_failed)?;
        // The step's session records what the step spends (its lifetime usage starts at 0):
        // the run's limits stop it through the shared budget, which every model and tool
        // call reserves in; the run's ledger counts every step.
        let mut base = self.ledger.clone();
        base.termination = None;
        if self.budget.is_some() {
            base.usage = crate::session::RuntimeUsage {
                wall_ms: base.usage.wall_ms,
                ..Default::default()
            };
        }
        let (ev_tx, events) = channel();
        let handle = self
            .agent
            .spawn(
                child.id.clone(),
                Some(lease),
                Spawn {
                    ledger: base.clone(),
                    budget: self.budget.clone(),
                    policy: self.policy,
                    prompt: Some(step_prompt(&step)),
                    prompt_meta: None,
                    images: Vec::new(),
                    caps: self.agent.settings().prompt_caps,
                },
                Box::new(ev_tx),
            )
            .map_err(|e| FinishReason::Failed {
                code: e.code.into(),
                message: e.message,
            })?;
        Ok(Active {
            step,
            handle,
            events,
            started: Instant::now(),
            waiting: Vec::new(),
        })
    }

    /// Stores a step's outcome; returns why the run must stop, if it must.
    fn end_step(
        &mut self,
        a: Active,
        reason: FinishReason,
        usage: Usage,
    ) -> Result<Option<FinishReason>, FinishReason> {
        let child_id = a.handle.session_id.clone();
        a.handle.join();
        add(&mut self.usage, usage);
        let child = self.sessions().load(&child_id).map_err(store_failed)?;
        // The shared budget holds what every step spent (and what the steps still running
        // reserved); "always" approvals carry over from the step.
        if let Some(b) = &self.budget {
            let u = b.usage();
            let r = &mut self.ledger.usage;
            r.input_tokens = u.input_tokens;
            r.output_tokens = u.output_tokens;
            r.tool_calls = u.tool_calls;
            r.turns = u.turns;
        }
        if let Some(l) = &child.header.ledger {
            for t in &l.approved_tools {
                if !self.ledger.approved_tools.contains(t) {
                    self.ledger.approved_tools.push(t.clone());
                }
            }
        }
        self.save_ledger(None)?;
        let elapsed_ms = a.started.elapsed().as_millis() as u64;
        let fail = |t: &str, m: String| StepFailure {
            error_type: t.to_string(),
            message: m,
            traceback: None,
        };
        let (outcome, stop) = match reason {
            FinishReason::Completed => (answer_of(&child), None),
            FinishReason::Cancelled => (
                Err(fail(CANCELLED, "cancelled by the user".into())),
                Some(FinishReason::Cancelled),
            ),
            FinishReason::LimitReached(why) => (
                Err(fail(LIMIT_REACHED, why.clone())),
                Some(FinishReason::LimitReached(why)),
            ),
            FinishReason::Failed { code, message } => (Err(fail(&code, message)), None),
        };
        let update = match &outcome {
            Ok(answer) => StepUpdate::Result {
                result: json!({
                    "answer": answer,
                    "session_id": child_id,
                    "elapsed_ms": elapsed_ms,
                    "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
                }),
            },
            Err(f) => StepUpdate::Error { error: f.clone() },
        };
        if outcome.is_err() && child.header.status == Status::Completed {
            // The sub-turn ended well but the step failed (its answer says so): the step's
            // session is marked failed like the step, not completed.
            self.sessions()
                .update_state(
                    &child_id,
                    &crate::session::StateUpdate {
                        status: Some(Status::Failed),
                        ..Default::default()
                    },
                )
                .map_err(store_failed)?;
        }
        self.record(&a.step.id, &update)?;
        self.emit(TurnEvent::StepFinished {
            step_id: a.step.id.clone(),
            outcome,
            usage,
            elapsed_ms,
        });
        Ok(stop)
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
                code: "plan_failed".into(),
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
        let (status, word) = match &reason {
            FinishReason::Completed => (Status::Completed, "completed".to_string()),
            FinishReason::Cancelled => (Status::Cancelled, "cancelled by the user".to_string()),
            FinishReason::LimitReached(why) => (Status::Paused, format!("paused: {why}")),
            FinishReason::Failed { code, message } => {
                (Status::Failed, format!("failed ({code}): {message}"))
            }
        };
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
        if matches!(reason, FinishReason::Cancelled) {
            self.ledger.cancelled_at_ms = Some(now_ms());
        }
        self.ledger.termination = Some(word.clone());
        let mut msg = NewMessage::text(Role::Assistant, text);
        msg.tool_metadata = Some(json!({"plan_run_summary": {
            "outcome": reason.as_str(),
            "completed": t.done,
            "failed": t.failed.len(),
            "skipped": t.skipped.len(),
            "open": t.open,
            "total": plan.steps.len(),
        }}));
        let update = StateUpdate {
            status: Some(status),
            ledger: Some(Some(self.ledger.clone())),
            touch: true,
            ..StateUpdate::default()
        };
        let mut reason = reason;
        if let Err(e) =
            self.sessions()
                .append_with_state(&self.id, &[msg], &self.agent.meta(), &update)
            && !matches!(reason, FinishReason::Failed { .. })
        {
            reason = store_failed(e);
        }
        drop(self.lease.take());
        self.emit(TurnEvent::Finished {
            reason,
            usage: self.usage,
        });
    }
}

/// A completed sub-turn's final answer, or the failure it declared.
fn answer_of(child: &Session) -> Result<String, StepFailure> {
    let msgs = &child.messages;
    let last = msgs.iter().rposition(|m| m.role == Role::Assistant);
    let answer = last.map(|i| msgs[i].text()).unwrap_or_default();
    let first = answer.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let declared = first
        .trim_start()
        .get(..7)
        .is_some_and(|p| p.eq_ignore_ascii_case("failed:"));
    if !declared {
        return Ok(answer);
    }
    // A step that gives up right after a failing tool call failed because of the tool.
    let tool_error = last.and_then(|i| msgs[..i].iter().rev().find(|m| m.role != Role::Assistant));
    let (kind, detail) = match tool_error {
        Some(m) if m.role == Role::Tool && m.is_error => {
            ("tool_error", format!("\n\nLast tool error: {}", m.text()))
        }
        _ => ("step_failed", String::new()),
    };
    let reason = first.trim_start()[7..].trim();
    let rest: String = answer
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .skip(1)
        .collect::<Vec<_>>()
        .join("\n");
    let message = if rest.trim().is_empty() {
        reason.to_string()
    } else {
        format!("{reason}\n{}", rest.trim())
    };
    Err(StepFailure {
        error_type: kind.to_string(),
        message: format!("{message}{detail}").trim().to_string(),
        traceback: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(id: &str, deps: &[&str]) -> Step {
        Step {
            id: id.into(),
            title: id.to_uppercase(),
            depends_on: deps.iter().map(|d| d.to_string()).collect(),
        }
    }

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
