//! Running a plan's steps: layer by layer, each step a sub-turn in its own child session,
//! approvals routed to the step that asked, each outcome stored as a step update.

use super::*;

/// A step whose sub-turn is running.
pub(super) struct Active {
    step: Step,
    handle: TurnHandle,
    /// The sub-turn's events.
    events: Receiver<TurnEvent>,
    started: Instant,
    /// Its place in the layer (the order its changes are merged in).
    order: usize,
    /// Its worktree, when the layer's steps run in worktrees.
    worktree: Option<crate::runtime::tools::worktree::Worktree>,
    /// Calls waiting for an approval in this step: id, and when it was asked (the run's
    /// count of questions relayed).
    waiting: Vec<(String, u64)>,
}

impl Run {
    pub(super) fn progress(&self) -> Result<PlanProgress, FinishReason> {
        self.sessions()
            .plan_progress(&self.id)
            .map_err(store_failed)
    }

    pub(super) fn record(&self, step: &str, u: &StepUpdate) -> Result<(), FinishReason> {
        self.sessions()
            .step_update(&self.id, step, u)
            .map_err(store_failed)
    }

    /// Runs the layers in order, skipping what is done (seed §5.3).
    pub(super) fn execute(&mut self, plan: &Plan) -> Result<(), FinishReason> {
        let layers = plan.layers().map_err(|e| FinishReason::Failed {
            code: FailCode::BadPlan,
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
                            code: WarningCode::StepRerun,
                            message: m.clone(),
                        });
                        Some(m)
                    }
                    StepStatus::Failed => {
                        let f = progress.failures.get(&step.id);
                        let kind = f.map(|f| f.error_type.as_str()).unwrap_or("");
                        if matches!(kind, SKIPPED | LIMIT_REACHED | CANCELLED | CONFLICT) {
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
    pub(super) fn run_layer(
        &mut self,
        plan: &Plan,
        queue: Vec<(Step, Option<String>)>,
    ) -> Result<(), FinishReason> {
        let (width, base) = self.layer_mode(queue.len())?;
        let mut queue: Vec<(usize, Step, Option<String>)> = queue
            .into_iter()
            .enumerate()
            .map(|(i, (s, r))| (i, s, r))
            .collect();
        queue.reverse();
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
                let Some((order, step, retry)) = queue.pop() else {
                    break;
                };
                if let Some(why) = self.blocked() {
                    stop = Some(FinishReason::LimitReached(why));
                    break;
                }
                let mut a = self.start_step(plan, step, retry, base.as_deref())?;
                a.order = order;
                active.push(a);
            }
            if active.is_empty() {
                // The completed steps' changes land even when the run stops.
                let conflict = self.merge_layer()?;
                return match stop.or(conflict) {
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
                            code: FailCode::Internal,
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
    pub(super) fn blocked(&self) -> Option<String> {
        match &self.budget {
            Some(b) => b.blocked(),
            None => ledger::model_call_blocked(&self.ledger),
        }
    }

    /// Sends approvals to the step that asked; cancel reaches every step through the flag.
    pub(super) fn route_commands(&mut self, active: &mut [Active]) {
        while let Ok(cmd) = self.commands.try_recv() {
            let call_id = match &cmd {
                TurnCommand::Approve { call_id, .. }
                | TurnCommand::AlwaysAllow { call_id, .. }
                | TurnCommand::Deny { call_id, .. } => call_id.clone(),
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
                        code: WarningCode::UnexpectedCommand,
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
                    code: WarningCode::UnexpectedCommand,
                    message: format!("no step waits for an answer about {call_id}"),
                }),
            }
        }
    }

    pub(super) fn start_step(
        &mut self,
        plan: &Plan,
        step: Step,
        retry: Option<String>,
        base: Option<&str>,
    ) -> Result<Active, FinishReason> {
        let meta = self.agent.meta();
        let progress = self.progress()?;
        let child = self
            .sessions()
            .new_session(NewSession {
                title: crate::runtime::agent::turn::title_from(&format!(
                    "step {}: {}",
                    step.id, step.title
                )),
                // The provider is named by the step's turn, which builds it.
                model: self.agent.model_name().unwrap_or_default(),
                workdir: meta.workdir.unwrap_or_default(),
                parent_id: Some(self.id.clone()),
                ..NewSession::default()
            })
            .map_err(store_failed)?;
        let lease = self.agent.lease(&child.id).map_err(start_failed)?;
        // In a worktree, the step's turn and its opening record work there.
        let (agent, worktree) = self.step_agent(&child.id, base)?;
        let meta = agent.meta();
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
        let handle = agent
            .spawn(
                child.id,
                Some(lease),
                Spawn {
                    ledger: base,
                    budget: self.budget.clone(),
                    policy: self.policy,
                    prompt: Some(step_prompt(&step)),
                    prompt_meta: None,
                    images: Vec::new(),
                    caps: self.agent.settings().prompt_caps,
                    output_schema: None,
                },
                Box::new(ev_tx),
            )
            .map_err(start_failed)?;
        Ok(Active {
            step,
            handle,
            events,
            started: Instant::now(),
            order: 0,
            worktree,
            waiting: Vec::new(),
        })
    }

    /// Takes what a step spent and approved into the run's ledger: the shared budget holds
    /// what every step spent (and what the steps still running reserved); "always"
    /// approvals carry over from the step.
    fn absorb(&mut self, child: &Session) -> Result<(), FinishReason> {
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
        self.save_ledger(None)
    }

    /// Stores a step's outcome (or, when its changes wait to be merged, holds it for the
    /// end of the layer); returns why the run must stop, if it must.
    pub(super) fn end_step(
        &mut self,
        a: Active,
        reason: FinishReason,
        usage: Usage,
    ) -> Result<Option<FinishReason>, FinishReason> {
        let child_id = a.handle.session_id.clone();
        a.handle.join();
        add(&mut self.usage, usage);
        let child = self.sessions().load(&child_id).map_err(store_failed)?;
        self.absorb(&child)?;
        let elapsed_ms = a.started.elapsed().as_millis() as u64;
        let fail = |t: &str, m: String| StepFailure {
            error_type: t.to_string(),
            message: m,
            traceback: None,
        };
        let (mut outcome, stop) = match reason {
            FinishReason::Completed => (answer_of(&child), None),
            FinishReason::Cancelled => (
                Err(fail(CANCELLED, "cancelled by the user".into())),
                Some(FinishReason::Cancelled),
            ),
            FinishReason::LimitReached(why) => (
                Err(fail(LIMIT_REACHED, why.clone())),
                Some(FinishReason::LimitReached(why)),
            ),
            FinishReason::Failed { code, message } => (Err(fail(code.as_str(), message)), None),
        };
        let closed = match &a.worktree {
            Some(wt) => Self::close_worktree(wt, &a.step.id),
            None => Ok(Closed::Nothing),
        };
        match (closed, &mut outcome) {
            (Ok(Closed::Nothing), _) => {}
            (Ok(Closed::Changed { branch, diff }), Ok(answer)) => {
                // Merged (and stored) once every step of the layer has ended.
                let answer = std::mem::take(answer);
                self.merges.push(Merge {
                    order: a.order,
                    step_id: a.step.id,
                    update: completed(&answer, &child_id, elapsed_ms, usage),
                    branch,
                    diff,
                    answer,
                    usage,
                    elapsed_ms,
                });
                return Ok(stop);
            }
            (Ok(Closed::Changed { branch, .. }), Err(f)) => f.message.push_str(&format!(
                " (its changes are on branch {branch}, not merged)"
            )),
            (Err(why), Ok(_)) => outcome = Err(fail("worktree", why.to_string())),
            (Err(why), Err(f)) => f.message.push_str(&format!(" ({why})")),
        }
        let update = match &outcome {
            Ok(answer) => completed(answer, &child_id, elapsed_ms, usage),
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
            step_id: a.step.id,
            outcome,
            usage,
            elapsed_ms,
        });
        Ok(stop)
    }
}

/// The update storing a completed step's result.
fn completed(answer: &str, child_id: &str, elapsed_ms: u64, usage: Usage) -> StepUpdate {
    StepUpdate::Result {
        result: json!({
            "answer": answer,
            "session_id": child_id,
            "elapsed_ms": elapsed_ms,
            "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
        }),
    }
}

/// A step's turn that could not start, as the run's failure.
fn start_failed(e: StartError) -> FinishReason {
    FinishReason::Failed {
        code: e.code.into(),
        message: e.message,
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
