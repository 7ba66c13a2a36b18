//! A turn's `task` and `task_wait` calls: children started side by side, their approvals
//! relayed to the parent's front end, their answers stored as the calls' results in order.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde_json::json;

use super::Turn;
use crate::runtime::agent::events::{FinishReason, TurnCommand, TurnEvent, WarningCode};
use crate::runtime::agent::ledger::{self, SharedBudget};
use crate::runtime::agent::subagent::replay::{self, Earlier};
use crate::runtime::agent::subagent::{Child, Parent, TaskArgs, add_spent};
use crate::runtime::policy::gate::Permission;
use crate::runtime::tools::{ToolKind, ToolOutput};
use crate::session::{Message, Role, Session, Status, ToolCall};

/// How long `task_wait` waits when the call does not say.
const DEFAULT_WAIT: Duration = Duration::from_secs(600);

/// The arguments of a `task_wait` call.
#[derive(serde::Deserialize)]
struct WaitArgs {
    id: String,
    #[serde(default)]
    timeout_secs: Option<f64>,
}

/// A `task` call of a batch: decided, then waiting, running, or answered.
struct Slot {
    permission: Option<Permission>,
    out: Option<ToolOutput>,
    /// Its result is stored (a denial is stored when it is decided).
    stored: bool,
}

impl Turn {
    /// The call at `calls[*answered]` when it is this module's: a tool outside a
    /// sub-agent's profile (answered with an error), or the first of a reply's consecutive
    /// `task` calls (run together). Whether it (and the calls run with it) was answered.
    pub(in crate::runtime::agent) fn calls_of_subagents(
        &mut self,
        calls: &[ToolCall],
        replay: bool,
        answered: &mut usize,
    ) -> Result<bool, FinishReason> {
        let from = *answered;
        let Some(call) = calls.get(from) else {
            return Ok(false);
        };
        if let Some(allowed) = &self.ctx.tools_allowed
            && !allowed.contains(&call.name)
        {
            let out = ToolOutput::error(format!(
                "`{}` is not among this sub-agent's tools ({})",
                call.name,
                allowed.join(", ")
            ));
            self.store_result(call, out, false)?;
            *answered += 1;
            return Ok(true);
        }
        if call.name != crate::runtime::agent::subagent::TASK {
            return Ok(false);
        }
        let group = calls[from..]
            .iter()
            .take_while(|c| c.name == crate::runtime::agent::subagent::TASK)
            .count();
        self.run_tasks(&calls[from..from + group], replay, answered)?;
        Ok(true)
    }

    /// Runs `calls` (consecutive `task` calls of one reply): each decided like any call, then
    /// the children started side by side, at most `[agents] max_parallel` at once, and the
    /// results stored in call order once all have ended. `answered` counts the calls whose
    /// result is stored; on cancel every call is answered.
    fn run_tasks(
        &mut self,
        calls: &[ToolCall],
        replay: bool,
        answered: &mut usize,
    ) -> Result<(), FinishReason> {
        let mut slots = Vec::with_capacity(calls.len());
        let mut queue = VecDeque::new();
        let mut stop = None;
        for (i, call) in calls.iter().enumerate() {
            let decided = if stop.is_some() {
                None
            } else {
                let summary = summary(call);
                self.emit(TurnEvent::ToolCall {
                    call: call.clone(),
                    kind: ToolKind::Agent,
                    summary: summary.clone(),
                });
                match self.decide_call(call, ToolKind::Agent, &summary, replay) {
                    Ok(Some(p)) => {
                        queue.push_back(i);
                        Some(Some(p))
                    }
                    // Denied: its result is stored.
                    Ok(None) => Some(None),
                    Err(r) => {
                        self.state.permission = None;
                        stop = Some(r);
                        None
                    }
                }
            };
            slots.push(Slot {
                stored: matches!(decided, Some(None)),
                permission: decided.flatten(),
                out: None,
            });
        }
        if stop.is_none() {
            stop = self.run_children(calls, &mut slots, queue, replay);
        }
        for (call, slot) in calls.iter().zip(slots.iter_mut()) {
            if slot.stored {
                continue;
            }
            let ran = slot.out.is_some();
            let out = slot.out.take().unwrap_or_else(|| {
                ToolOutput::error(match &stop {
                    Some(FinishReason::LimitReached(l)) => {
                        format!("Not run: a budget was reached ({l}).")
                    }
                    _ => "Not run: the user cancelled the turn.".to_string(),
                })
            });
            self.state.permission = if ran { slot.permission.take() } else { None };
            self.store_result(call, out, ran)?;
            slot.stored = true;
        }
        *answered += calls.len();
        match stop {
            Some(r) => Err(r),
            None => Ok(()),
        }
    }

    /// Starts the queued calls' children (at most `max_parallel` running) and waits for them;
    /// returns why the batch stopped early, if it did (every child is then cancelled).
    fn run_children(
        &mut self,
        calls: &[ToolCall],
        slots: &mut [Slot],
        mut queue: VecDeque<usize>,
        replay: bool,
    ) -> Option<FinishReason> {
        let budget = self
            .state
            .budget
            .clone()
            .unwrap_or_else(|| SharedBudget::new(&self.state.ledger));
        let width = self.ctx.settings.agents.max_parallel.max(1);
        let mut active: Vec<(usize, Child)> = Vec::new();
        let mut stop = None;
        loop {
            if self.io.cancel.is_cancelled() && stop.is_none() {
                stop = Some(FinishReason::Cancelled);
                for (_, c) in &active {
                    c.handle.cancel();
                }
            }
            while stop.is_none() && active.len() < width {
                let Some(i) = queue.pop_front() else { break };
                if let Some(why) = budget.tool_blocked().or_else(|| budget.blocked()) {
                    stop = Some(FinishReason::LimitReached(why));
                    break;
                }
                let _ = budget.reserve_tool_call();
                match self.start_task(&calls[i], &budget, replay) {
                    Ok((child, false)) => active.push((i, child)),
                    Ok((child, true)) => {
                        slots[i].out = Some(started_in_background(&child));
                        self.ctx.agent.children.insert(child);
                    }
                    Err(out) => slots[i].out = Some(out),
                }
            }
            if active.is_empty() {
                return stop;
            }
            self.drain_commands();
            if let Some(k) = active.iter().position(|(_, c)| c.ended.get().is_some()) {
                let (i, child) = active.remove(k);
                slots[i].out = Some(self.collect(child));
                continue;
            }
            // Its events reach the front end from its own thread; here only its end is read.
            active[0].1.ended.wait(Duration::from_millis(20));
        }
    }

    /// Starts one `task` call's child; `true` when it runs in the background. A bad call is
    /// its error result. A `replay` of a call whose child exists resumes that child, or
    /// takes its answer when it completed.
    fn start_task(
        &mut self,
        call: &ToolCall,
        budget: &SharedBudget,
        replay: bool,
    ) -> Result<(Child, bool), ToolOutput> {
        let args: TaskArgs = serde_json::from_str(&call.arguments)
            .map_err(|e| ToolOutput::error(format!("task: bad arguments: {e}")))?;
        if args.prompt.trim().is_empty() {
            return Err(ToolOutput::error("task: `prompt` is empty"));
        }
        let parent = Parent {
            id: &self.ctx.session_id,
            call_id: &call.id,
            policy: self.ctx.policy,
            ledger: &self.state.ledger,
            budget: budget.clone(),
            caps: self.ctx.caps,
            sink: self.io.sink.clone(),
            routes: self.io.routes.clone(),
        };
        let earlier = replay
            .then(|| replay::earlier(&self.io.sessions, &self.ctx.session_id, &call.id))
            .flatten();
        let started = match earlier {
            Some(Earlier::Completed(s)) => {
                if let Some(l) = &s.header.ledger {
                    add_spent(&mut self.state.ledger.usage, &l.usage);
                }
                return Err(result_of(
                    &s.header.id,
                    None,
                    &FinishReason::Completed,
                    &s,
                    0,
                ));
            }
            Some(Earlier::Unfinished(id)) => self.ctx.agent.resume_child(&parent, &id),
            None => self.ctx.agent.start_child(&parent, &args),
        };
        match started {
            Ok(child) => Ok((child, args.background)),
            Err(e) => Err(ToolOutput::error(format!("task: {e}"))),
        }
    }

    /// Reads the front end's commands while children run: answers about a child's call were
    /// routed to it on the way ([`crate::runtime::agent::Commands::send`]); a cancel raised the flag
    /// the loop reads; anything else is said to be ignored.
    fn drain_commands(&self) {
        while let Ok(cmd) = self.io.commands.try_recv() {
            let message = match &cmd {
                TurnCommand::Cancel => continue,
                TurnCommand::Approve { call_id, .. }
                | TurnCommand::AlwaysAllow { call_id, .. }
                | TurnCommand::Deny { call_id, .. } => {
                    format!("no sub-agent waits for an answer about {call_id}")
                }
                other => format!("ignored {other:?}: sub-agents are running"),
            };
            self.emit(TurnEvent::Warning {
                code: WarningCode::UnexpectedCommand,
                message,
            });
        }
    }

    /// An ended child's result: its answer (or how it stopped), its spending added to the
    /// parent's ledger.
    fn collect(&mut self, child: Child) -> ToolOutput {
        self.collect_with(child, false)
    }

    /// [`Self::collect`]; `keep` keeps its worktree whatever its end (nobody reads the
    /// result that says where its changes are).
    fn collect_with(&mut self, child: Child, keep: bool) -> ToolOutput {
        let Child {
            handle,
            ended,
            agent,
            started,
            worktree,
            ..
        } = child;
        let id = handle.session_id.clone();
        handle.join();
        let reason = ended.get().unwrap_or(FinishReason::Cancelled);
        // A failed or cancelled child's worktree is kept for a look (or a resume).
        let from_worktree = worktree.map(|wt| {
            let keep = keep
                || self.ctx.settings.agents.keep_worktrees
                || reason != FinishReason::Completed;
            crate::runtime::agent::subagent::worktree::finish(
                &wt,
                &id,
                keep,
                self.ctx.settings.output_cap,
            )
        });
        let session = match self.io.sessions.load(&id) {
            Ok(s) => s,
            Err(e) => return ToolOutput::error(format!("sub-agent {id}: cannot read it: {e}")),
        };
        if let Some(l) = &session.header.ledger {
            add_spent(&mut self.state.ledger.usage, &l.usage);
        }
        let elapsed_ms = started.elapsed().as_millis() as u64;
        let mut out = result_of(&id, agent.as_deref(), &reason, &session, elapsed_ms);
        if let Some(text) = from_worktree {
            out.text.push_str(&text);
        }
        out
    }

    /// The end of the turn: background children of this session that still run are waited
    /// for (said once; a cancel stops them), so none of their events comes after the turn's
    /// `Finished`, and what they spent is added to its ledger. Their answers stay in their
    /// sessions (a later `task_wait` reads them); their worktrees are kept. The turn's end:
    /// `reason`, or a cancel that came meanwhile.
    pub(in crate::runtime::agent) fn settle_background(
        &mut self,
        mut reason: FinishReason,
    ) -> FinishReason {
        let children = self.ctx.agent.children.take_of(&self.ctx.session_id);
        let running = children.iter().filter(|c| c.ended.get().is_none()).count();
        if running > 0 && !self.io.cancel.is_cancelled() {
            self.emit(TurnEvent::Warning {
                code: WarningCode::SubagentsRunning,
                message: format!(
                    "{running} sub-agent{} started in the background still running: the turn \
                     ends when {} (cancelling it stops them)",
                    if running == 1 { "" } else { "s" },
                    if running == 1 { "it does" } else { "they do" },
                ),
            });
        }
        for child in children {
            while child.ended.get().is_none() {
                if self.io.cancel.is_cancelled() {
                    child.handle.cancel();
                    if reason == FinishReason::Completed {
                        reason = FinishReason::Cancelled;
                    }
                }
                self.drain_commands();
                child.ended.wait(Duration::from_millis(20));
            }
            self.collect_with(child, true);
        }
        reason
    }

    /// `task_wait`: waits for a background child of this session until it ends or the
    /// timeout passes (then says it still runs); a child that is no longer running in this
    /// process is read from the store.
    pub(in crate::runtime::agent) fn task_wait(&mut self, arguments: &str) -> ToolOutput {
        let args: WaitArgs = match serde_json::from_str(arguments) {
            Ok(a) => a,
            Err(e) => return ToolOutput::error(format!("task_wait: bad arguments: {e}")),
        };
        let timeout = args
            .timeout_secs
            .filter(|t| t.is_finite() && *t >= 0.0)
            .map_or(DEFAULT_WAIT, Duration::from_secs_f64);
        let Some(child) = self.ctx.agent.children.take(&args.id) else {
            return self.stored_child(&args.id);
        };
        if child.parent != self.ctx.session_id {
            self.ctx.agent.children.insert(child);
            return ToolOutput::error(format!(
                "task_wait: {} is not a sub-agent of this session",
                args.id
            ));
        }
        let deadline = Instant::now() + timeout;
        while child.ended.get().is_none() {
            if self.io.cancel.is_cancelled() {
                child.handle.cancel();
            }
            self.drain_commands();
            if Instant::now() >= deadline && !self.io.cancel.is_cancelled() {
                let id = child.id().to_string();
                self.ctx.agent.children.insert(child);
                return ToolOutput {
                    text: format!(
                        "Sub-agent {id} is still running after {:.0} s; wait again later.",
                        timeout.as_secs_f64()
                    ),
                    is_error: false,
                    metadata: Some(json!({"subagent": {"session_id": id, "status": "running"}})),
                    files: Vec::new(),
                };
            }
            child.ended.wait(Duration::from_millis(20));
        }
        self.collect(child)
    }

    /// A child not running here: its stored answer, or its state.
    fn stored_child(&self, id: &str) -> ToolOutput {
        let session = match self
            .io
            .sessions
            .resolve(id)
            .and_then(|id| self.io.sessions.load(&id))
        {
            Ok(s) => s,
            Err(e) => return ToolOutput::error(format!("task_wait: {id}: {e}")),
        };
        if session.header.subagent_of.as_deref() != Some(self.ctx.session_id.as_str()) {
            return ToolOutput::error(format!(
                "task_wait: {id} is not a sub-agent of this session"
            ));
        }
        let reason = match session.header.status {
            Status::Completed => FinishReason::Completed,
            Status::Cancelled => FinishReason::Cancelled,
            other => {
                return ToolOutput {
                    text: format!(
                        "Sub-agent {} is not running in this process; its state: {}.",
                        session.header.id,
                        other.as_str()
                    ),
                    is_error: false,
                    metadata: None,
                    files: Vec::new(),
                };
            }
        };
        result_of(&session.header.id, None, &reason, &session, 0)
    }
}

/// One line for a `task` call's card.
fn summary(call: &ToolCall) -> String {
    let v: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_default();
    let prompt = v.get("prompt").and_then(|p| p.as_str()).unwrap_or("");
    let agent = v.get("agent").and_then(|p| p.as_str());
    let first: String = prompt
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(80)
        .collect();
    match agent {
        Some(a) => format!("task ({a}) {first}"),
        None => format!("task {first}"),
    }
}

fn started_in_background(child: &Child) -> ToolOutput {
    let id = child.id();
    ToolOutput {
        text: format!(
            "Sub-agent {id} started in the background. Call task_wait with id \"{id}\" for its answer."
        ),
        is_error: false,
        metadata: Some(
            json!({"subagent": {"session_id": id, "status": "running", "agent": child.agent}}),
        ),
        files: Vec::new(),
    }
}

/// A child's result from how it ended and its session.
fn result_of(
    id: &str,
    agent: Option<&str>,
    reason: &FinishReason,
    session: &Session,
    elapsed_ms: u64,
) -> ToolOutput {
    let answer = session
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)
        .map(Message::text)
        .unwrap_or_default();
    let (status, text, is_error) = match reason {
        FinishReason::Completed => (
            "completed",
            format!("Sub-agent {id} answered:\n\n{answer}"),
            false,
        ),
        FinishReason::Cancelled => (
            "cancelled",
            format!(
                "Sub-agent {id} was cancelled (resume it alone with `neocode run --resume {id}`)."
            ),
            true,
        ),
        FinishReason::LimitReached(why) => (
            "paused",
            format!("Sub-agent {id} stopped: {why} ({}).", ledger::flag_for(why)),
            true,
        ),
        FinishReason::Failed { message, .. } => {
            ("failed", format!("Sub-agent {id} failed: {message}"), true)
        }
    };
    ToolOutput {
        text,
        is_error,
        metadata: Some(json!({"subagent": {
            "session_id": id,
            "status": status,
            "agent": agent,
            "elapsed_ms": elapsed_ms,
        }})),
        files: Vec::new(),
    }
}
