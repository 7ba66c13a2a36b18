//! Drafting a plan run: the drafting turn in the plan session, and the proposal the user
//! approves, edits or rejects.

use super::*;

impl Run {
    /// The drafting turn: the plan session's own conversation, run by the turn loop.
    pub(super) fn draft(&mut self, goal: &str) -> Result<(), FinishReason> {
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
                    plan: crate::session::Change::Clear,
                    title: untitled.then(|| crate::runtime::agent::turn::title_from(goal)),
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
                    output_schema: None,
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
    pub(super) fn follow(
        &mut self,
        h: &TurnHandle,
        events: &Receiver<TurnEvent>,
    ) -> (FinishReason, Usage) {
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
                            code: FailCode::Internal,
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
    pub(super) fn approve(&mut self, mut plan: Plan) -> Result<Plan, FinishReason> {
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
                        code: WarningCode::UnexpectedCommand,
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
                        code: FailCode::PlanRejected,
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
                            code: WarningCode::UnknownStep,
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
                            code: WarningCode::EmptyPlan,
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
                                plan: crate::session::Change::Set(edited.clone()),
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
}
