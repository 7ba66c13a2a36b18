//! The turn loop, on its own thread: model call, tool calls (with approvals), model call ...
//! until the model answers without calls, the user cancels, a budget stops it, or something
//! fails. Persisted at seed 003's append points: the user message when submitted, the
//! assistant message when its stream ends, each tool result as it completes, each together
//! with the header state (status, ledger) in one transaction.

use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use serde_json::{Value, json};

use super::lease::Lease;
use super::{FailCode, FinishReason, TurnCommand, TurnEvent, WarningCode, compact, ledger, window};
use crate::runtime::Sessions;
use crate::runtime::cancel::CancelFlag;
use crate::runtime::config::{ApprovalPolicy, Settings};
use crate::runtime::provider::openai::redact;
use crate::runtime::provider::{Completion, ErrorKind, Provider, StopNote, StreamEvent};
use crate::runtime::tools::{self, ToolContext, ToolKind, ToolOutput};
use crate::session::{
    AppendMeta, NewMessage, Part, Plan, Role, RuntimeLedger, StateUpdate, Status, Step, StepStatus,
    StepUpdate, ToolCall, Usage, now_ms,
};

/// Everything a turn thread owns.
pub(super) struct Turn {
    pub sessions: Sessions,
    pub settings: Settings,
    pub session_id: String,
    pub provider: Box<dyn Provider>,
    /// Where the events go (called on this thread).
    pub sink: Box<dyn super::TurnSink>,
    pub commands: Receiver<TurnCommand>,
    pub cancel: CancelFlag,
    pub ledger: RuntimeLedger,
    /// The plan run's budget when turns run side by side: reserved before each model call and
    /// tool call, on top of this turn's own ledger.
    pub budget: Option<ledger::SharedBudget>,
    pub policy: ApprovalPolicy,
    pub usage: Usage,
    pub meta: AppendMeta,
    /// Held until the end is recorded; released before `Finished` is sent, so a front end
    /// may start the next turn as soon as it reads it.
    pub lease: Option<Lease>,
    /// Metadata stored with the prompt's user message.
    pub prompt_meta: Option<Value>,
    /// Images stored with the prompt's user message.
    pub images: Vec<super::images::Image>,
    /// Project context, `skill` and MCP tools.
    pub ext: std::sync::Arc<super::project::Extensions>,
    /// What this prompt may spend on its own, counted from `caps_start`.
    pub caps: ledger::PromptCaps,
    /// The ledger's usage when this prompt started.
    pub caps_start: crate::session::RuntimeUsage,
    /// Permission rules and hooks (read when the turn starts).
    pub gate: super::gate::Gate,
    /// Who decided the call now running: stored with its result.
    pub permission: Option<super::gate::Permission>,
}

/// How a step of the loop ended early.
type Flow = Result<(), FinishReason>;

fn store_failed(e: impl std::fmt::Display) -> FinishReason {
    FinishReason::Failed {
        code: FailCode::Store,
        message: format!("cannot write the session: {e}"),
    }
}

/// The title a first prompt gives a session: its first line, at most 60 characters.
pub fn title_from(prompt: &str) -> String {
    let first = prompt.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let t: String = first.trim().chars().take(60).collect();
    if first.trim().chars().count() > 60 {
        format!("{}…", t.trim_end())
    } else {
        t
    }
}

pub(super) enum Answer {
    /// Run it; with "always", the rule to keep and where.
    Run {
        always: Option<(String, super::gate::RuleScope)>,
    },
    Denied(Option<String>),
    Cancelled,
}

impl Turn {
    pub(super) fn emit(&mut self, e: TurnEvent) {
        self.sink.event(e);
    }

    fn key(&self) -> Option<&str> {
        self.settings.api_key()
    }

    /// Runs the turn and reports how it ended (always ends with `Finished`).
    pub fn run(mut self, prompt: Option<String>) {
        let started = std::time::Instant::now();
        if let Some(w) = tools::sandbox::status(&self.settings.sandbox).warning() {
            self.emit(TurnEvent::Warning {
                code: WarningCode::Sandbox,
                message: w,
            });
        }
        let reason = match self.body(prompt) {
            Ok(()) => FinishReason::Completed,
            Err(r) => r,
        };
        self.ledger.usage.wall_ms += started.elapsed().as_millis() as u64;
        self.finish(reason);
    }

    pub(super) fn state(&self, status: Option<Status>) -> StateUpdate {
        StateUpdate {
            status,
            ledger: crate::session::Change::Set(self.ledger.clone()),
            touch: true,
            ..StateUpdate::default()
        }
    }

    pub(super) fn append(
        &mut self,
        msg: NewMessage,
        update: StateUpdate,
    ) -> Result<i64, FinishReason> {
        self.append_files(msg, update, &[])
    }

    /// [`Self::append`] with the workspace files a tool changed, stored in the same
    /// transaction (their before-images make the turn rewindable).
    pub(super) fn append_files(
        &mut self,
        mut msg: NewMessage,
        mut update: StateUpdate,
        files: &[crate::session::FileChange],
    ) -> Result<i64, FinishReason> {
        let runs = std::mem::take(&mut self.gate.pending);
        msg.tool_metadata = super::gate::with_hook_runs(msg.tool_metadata.take(), runs);
        self.notices();
        if update.ledger.is_keep() {
            update.ledger = crate::session::Change::Set(self.ledger.clone());
        }
        let seqs = if files.is_empty() {
            self.sessions
                .append_with_state(&self.session_id, &[msg], &self.meta, &update)
        } else {
            self.sessions
                .append_with_files(&self.session_id, &[msg], &self.meta, &update, files)
        }
        .map_err(store_failed)?;
        Ok(seqs.first().copied().unwrap_or(0))
    }

    pub(super) fn set_status(&self, status: Status) -> Flow {
        self.sessions
            .update_state(&self.session_id, &self.state(Some(status)))
            .map_err(store_failed)
    }

    #[expect(clippy::too_many_lines)]
    fn body(&mut self, prompt: Option<String>) -> Flow {
        let header = self
            .sessions
            .header(&self.session_id)
            .map_err(store_failed)?;
        self.caps_start = self.ledger.usage.clone();
        self.gate.load().map_err(|message| FinishReason::Failed {
            code: FailCode::Config,
            message,
        })?;
        // A server that says its window is smaller than the configured one wins: compaction
        // and the size warning then work for a small local window.
        if let Some(w) = self.provider.context_window()
            && w < self.settings.context_window
        {
            self.settings.context_window = w.max(1);
        }
        self.set_status(Status::Running)?;
        let mut context = self.gate.session_start(header.message_count > 0);
        let dangling = self
            .sessions
            .interrupted_tool_calls(&self.session_id)
            .map_err(store_failed)?;
        if !dangling.is_empty() {
            self.emit(TurnEvent::Warning {
                code: WarningCode::ReplayingInterruptedCalls,
                message: format!(
                    "{} tool call(s) were interrupted before their results were stored; they are offered again (at least once: a replayed call may repeat its effects)",
                    dangling.len()
                ),
            });
            self.run_calls(&dangling, true)?;
        }
        if let Some(p) = prompt
            && !self.unanswered(&p, header.last_seq)?
        {
            let title = header.title.trim().is_empty().then(|| title_from(&p));
            let update = StateUpdate {
                title,
                ..self.state(Some(Status::Running))
            };
            context.extend(self.prompt_submitted(&p)?);
            let mut msg = NewMessage::text(Role::User, p);
            msg.parts.extend(super::gate::context_parts(&context));
            msg.tool_metadata = self.prompt_meta.take();
            for img in std::mem::take(&mut self.images) {
                let a = self
                    .sessions
                    .save_asset(&self.session_id, img.mime, &img.bytes)
                    .map_err(store_failed)?;
                msg.parts.push(Part::Image {
                    asset_id: a.id,
                    mime_type: Some(img.mime.to_string()),
                });
            }
            self.append(msg, update)?;
        }
        // Read whole once; before each model call only what changed since is read.
        let mut session = self.sessions.load(&self.session_id).map_err(store_failed)?;
        let mut fresh = true;
        let mut stop_active = false;
        let mut warned_size = false;
        let mut overflow_compacted = false;
        let mut told_foreign = false;
        loop {
            if self.cancel.is_cancelled() {
                return Err(FinishReason::Cancelled);
            }
            if !fresh {
                self.catch_up(&mut session)?;
            }
            fresh = false;
            match session.messages.last() {
                Some(m) if m.role == Role::User || m.role == Role::Tool => {}
                // A reply that was cut off is asked for again.
                Some(m) if window::is_incomplete(m) => {}
                // Nothing unanswered (e.g. continuing a finished session without a prompt).
                _ => return Ok(()),
            }
            if let Some(why) = ledger::model_call_blocked(&self.ledger)
                .or_else(|| self.caps.model_call_blocked(&self.ledger, &self.caps_start))
            {
                return Err(FinishReason::LimitReached(why));
            }
            self.compact_if_full(&mut session)?;
            let mut warnings = Vec::new();
            let extra = self.ext.prepare(&session, &mut |code, message| {
                warnings.push((code, message))
            });
            for (code, message) in warnings {
                self.emit(TurnEvent::Warning { code, message });
            }
            let req = window::build_with(&self.sessions, &session, &extra.system, extra.tools);
            let foreign = req.foreign_reasoning(self.provider.name(), self.provider.model());
            if foreign > 0 && !told_foreign {
                told_foreign = true;
                self.emit(TurnEvent::Warning {
                    code: WarningCode::ReasoningLeftOut,
                    message: format!(
                        "{foreign} reasoning part(s) from another provider or model are left out of the request (they are only valid where they were made)"
                    ),
                });
            }
            // Reserved as late as possible: the request is made right after.
            if let Some(b) = &self.budget
                && let Err(ledger::LimitReached(why)) = b.reserve_model_call()
            {
                return Err(FinishReason::LimitReached(why));
            }
            if !warned_size {
                warned_size = true;
                self.warn_if_prompt_large(&req);
            }
            let sink = &mut self.sink;
            let mut on = |e: StreamEvent| sink.event(stream_event(e));
            let result = self.provider.stream(&req, &self.cancel, &mut on);
            let completion = match result {
                Ok(c) => c,
                // Past the window: compacted once (in pieces if need be) and asked again.
                Err(e)
                    if e.kind == ErrorKind::ContextOverflow
                        && !overflow_compacted
                        && session.messages.len() > 2 =>
                {
                    overflow_compacted = true;
                    let why = format!(
                        "{}; compacting the transcript and asking again",
                        redact(&e.message, self.key())
                    );
                    if self.compact_now(&mut session, why)? {
                        continue;
                    }
                    return Err(FinishReason::Failed {
                        code: e.kind.into(),
                        message: redact(&e.message, self.key()),
                    });
                }
                Err(e) => {
                    if let Some(partial) = e.partial.as_ref() {
                        self.store_partial(partial, e.kind)?;
                    }
                    return Err(match e.kind {
                        ErrorKind::Cancelled => FinishReason::Cancelled,
                        kind => FinishReason::Failed {
                            code: kind.into(),
                            message: redact(&e.message, self.key()),
                        },
                    });
                }
            };
            ledger::add_model_call(&mut self.ledger, completion.usage);
            self.add_detail(&completion);
            if let Some(b) = &self.budget {
                b.add_tokens(completion.usage);
            }
            self.usage.input_tokens += completion.usage.input_tokens;
            self.usage.output_tokens += completion.usage.output_tokens;
            let cut = completion.finish_reason.as_deref() == Some("length");
            // A reply cut at the output limit is told once, by `reply_cut` below.
            if let Some(note) = completion.stop.as_ref().filter(|_| !cut) {
                self.emit(TurnEvent::Warning {
                    code: match note {
                        StopNote::Truncated(_) => WarningCode::ReplyTruncated,
                        StopNote::Refused => WarningCode::Refused,
                    },
                    message: note.message(),
                });
            }
            let meta = cut.then(|| {
                json!({"incomplete": true, "reason": "length",
                    "dropped_tool_calls": completion.tool_calls.len()})
            });
            let msg = assistant_message(&completion, meta);
            let go_on = if completion.tool_calls.is_empty() && !cut {
                self.gate.turn_end(stop_active)
            } else {
                None
            };
            let seq = self.append(msg, self.state(None))?;
            self.emit(TurnEvent::AssistantStored {
                seq,
                usage: completion.usage,
            });
            if cut {
                return Err(self.reply_cut(&completion));
            }
            if completion.tool_calls.is_empty() {
                // A Stop hook that blocks makes the turn go on once, with its reason.
                match go_on {
                    Some(reason) if !stop_active => {
                        stop_active = true;
                        self.stop_hook_continues(&reason)?;
                        continue;
                    }
                    _ => return Ok(()),
                }
            }
            self.run_calls(&completion.tool_calls, false)?;
            self.deliver_steer()?;
        }
    }

    /// Whether `prompt` is the session's last message, still unanswered (a retry of a prompt
    /// whose model call failed): it is not stored a second time.
    fn unanswered(&self, prompt: &str, last_seq: i64) -> Result<bool, FinishReason> {
        if !self.images.is_empty() || last_seq < 1 {
            return Ok(false);
        }
        let tail = self
            .sessions
            .messages(&self.session_id, last_seq, last_seq)
            .map_err(store_failed)?;
        Ok(tail
            .last()
            .is_some_and(|m| m.role == Role::User && m.text() == prompt))
    }

    /// The turn's end for a reply the output limit cut (`finish_reason: length`): stored
    /// marked incomplete, the user told, the session paused (continuing asks again).
    fn reply_cut(&mut self, c: &Completion) -> FinishReason {
        let est = if c.usage_estimated { ", estimated" } else { "" };
        let calls = if c.tool_calls.is_empty() {
            String::new()
        } else {
            format!("; its {} tool call(s) were not run", c.tool_calls.len())
        };
        self.emit(TurnEvent::Warning {
            code: WarningCode::ReplyCut,
            message: format!(
                "the reply was cut at the model's output limit after {} tokens{est} (finish_reason: length){calls}; it is kept marked incomplete, and continuing asks again (raise max_tokens in [provider] of config.toml, or the server's limit)",
                c.usage.output_tokens
            ),
        });
        FinishReason::LimitReached(
            "the reply hit the model's output token limit (finish_reason: length)".into(),
        )
    }

    /// Warns (once per session and process) when the system prompt and the tool definitions
    /// alone take more than a third of the context window: a small local window has little
    /// left, and a server that cuts prompts from the front drops the system prompt first.
    fn warn_if_prompt_large(&mut self, req: &crate::runtime::provider::ChatRequest) {
        static WARNED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
        use crate::runtime::provider::quirks::estimate_tokens;
        let tools: u64 = req
            .tools
            .iter()
            .map(|t| {
                estimate_tokens(&t.name)
                    + estimate_tokens(&t.description)
                    + estimate_tokens(&t.parameters.to_string())
            })
            .sum();
        let system = estimate_tokens(&req.system);
        let window = self.settings.context_window;
        if (system + tools) * 3 <= window {
            return;
        }
        {
            let mut warned = WARNED
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if warned.contains(&self.session_id) {
                return;
            }
            warned.push(self.session_id.clone());
        }
        self.emit(TurnEvent::Warning {
            code: WarningCode::PromptLarge,
            message: format!(
                "the system prompt (~{system} tokens) and {} tool definitions (~{tools} tokens) take {}% of the {window}-token context window before the conversation; check context_window in config.toml matches the server (a server that cuts long prompts from the front drops the system prompt)",
                req.tools.len(),
                (system + tools) * 100 / window.max(1)
            ),
        });
    }

    /// Messages queued to steer this turn (Alt-Enter in the TUI) go in at the tool boundary:
    /// stored as user messages, so the next model call reads them.
    fn deliver_steer(&mut self) -> Flow {
        let steer = self
            .sessions
            .take_steer(&self.session_id)
            .map_err(store_failed)?;
        for q in steer {
            let mut msg = NewMessage::text(Role::User, q.text.clone());
            msg.tool_metadata = Some(json!({"queued": {"id": q.id, "steer": true}}));
            self.append(msg, self.state(None))?;
            self.emit(TurnEvent::Warning {
                code: WarningCode::Steered,
                message: format!("Steering message delivered: {}", title_from(&q.text)),
            });
        }
        Ok(())
    }

    /// Cache tokens (kept apart) and the dollars of one model call, in the ledger; a model
    /// without a price adds no dollars.
    fn add_detail(&mut self, c: &Completion) {
        let u = &mut self.ledger.usage;
        u.cached_input_tokens += c.detail.cached_input_tokens;
        u.cache_write_tokens += c.detail.cache_write_tokens;
        if let Some(cost) = self
            .settings
            .prices
            .cost(self.provider.model(), c.usage, c.detail)
        {
            *u.cost_usd.get_or_insert(0.0) += cost;
        }
    }

    /// Compacts the transcript when the last prompt filled the context window past the
    /// threshold; the loaded session is read whole again afterwards.
    fn compact_if_full(&mut self, session: &mut crate::session::Session) -> Flow {
        let last_prompt = session
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant)
            // Cached prompt tokens are counted apart but fill the window all the same.
            .map_or(0, compact::prompt_tokens);
        let threshold = (self.settings.context_window as f64 * self.settings.compact_at) as u64;
        if last_prompt >= threshold && session.messages.len() > 2 {
            let message = format!(
                "the last prompt used {last_prompt} of {} context tokens; compacting the transcript",
                self.settings.context_window
            );
            self.compact_now(session, message)?;
        }
        Ok(())
    }

    /// Compacts the transcript now (telling why); true when it was replaced. The loaded
    /// session is read whole again either way.
    fn compact_now(
        &mut self,
        session: &mut crate::session::Session,
        message: String,
    ) -> Result<bool, FinishReason> {
        self.gate.pre_compact();
        self.emit(TurnEvent::Compacting { message });
        let done = match compact::compact_with(
            &self.sessions,
            &self.session_id,
            self.provider.as_mut(),
            &self.cancel,
            &self.meta,
        ) {
            Ok(c) => {
                // Lifetime usage stays in the ledger; only context totals reset.
                self.ledger.usage.input_tokens += c.usage.input_tokens;
                self.ledger.usage.output_tokens += c.usage.output_tokens;
                if let Some(b) = &self.budget {
                    b.add_tokens(c.usage);
                }
                self.usage.input_tokens += c.usage.input_tokens;
                self.usage.output_tokens += c.usage.output_tokens;
                self.set_status(Status::Running)?;
                true
            }
            Err(e) => {
                self.emit(TurnEvent::CompactionFailed {
                    message: format!("compaction failed, nothing changed: {e}"),
                });
                false
            }
        };
        // The transcript was replaced: read whole again.
        *session = self.sessions.load(&self.session_id).map_err(store_failed)?;
        Ok(done)
    }

    /// Brings the loaded session up to date for the next model call: the header and plan
    /// progress (tools change them) and the messages stored since it was read (this turn's
    /// appends), not the whole transcript again.
    fn catch_up(&self, session: &mut crate::session::Session) -> Flow {
        let id = &self.session_id;
        session.header = self.sessions.header(id).map_err(store_failed)?;
        session.plan_progress = self.sessions.plan_progress(id).map_err(store_failed)?;
        let last = session.messages.last().map_or(0, |m| m.seq);
        let new = self
            .sessions
            .messages(id, last + 1, i64::MAX)
            .map_err(store_failed)?;
        session.messages.extend(new);
        Ok(())
    }

    /// Stores what arrived of a reply that stopped early (tool calls of an unfinished reply
    /// are dropped: their arguments may be cut).
    fn store_partial(&mut self, c: &Completion, kind: ErrorKind) -> Flow {
        ledger::add_model_call(&mut self.ledger, c.usage);
        self.add_detail(c);
        if let Some(b) = &self.budget {
            b.add_tokens(c.usage);
        }
        self.usage.input_tokens += c.usage.input_tokens;
        self.usage.output_tokens += c.usage.output_tokens;
        if c.text.is_empty() && c.reasoning.is_empty() {
            return self
                .sessions
                .update_state(&self.session_id, &self.state(None))
                .map_err(store_failed);
        }
        let meta = json!({
            "incomplete": true,
            "reason": kind.code(),
            "dropped_tool_calls": c.tool_calls.len(),
        });
        let seq = self.append(assistant_message(c, Some(meta)), self.state(None))?;
        self.emit(TurnEvent::AssistantStored {
            seq,
            usage: c.usage,
        });
        Ok(())
    }

    /// Runs calls in order; stops early on cancel or a budget. `replay`: calls interrupted by
    /// a crash, offered again.
    fn run_calls(&mut self, calls: &[ToolCall], replay: bool) -> Flow {
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
        self.permission = None;
        for call in &calls[answered..] {
            let out = ToolOutput::error(format!("Not run: {why}."));
            self.store_result(call, out, false)?;
        }
        flow
    }

    fn run_calls_from(&mut self, calls: &[ToolCall], replay: bool, answered: &mut usize) -> Flow {
        for call in calls {
            if self.cancel.is_cancelled() {
                return Err(FinishReason::Cancelled);
            }
            if let Some(why) = ledger::tool_call_blocked(&self.ledger)
                .or_else(|| self.caps.tool_call_blocked(&self.ledger, &self.caps_start))
                .or_else(|| self.budget.as_ref().and_then(|b| b.tool_blocked()))
            {
                return Err(FinishReason::LimitReached(why));
            }
            let kind = tools::spec(&call.name)
                .map(|s| s.kind)
                .or_else(|| self.ext.kind(&call.name))
                .unwrap_or(ToolKind::Read);
            let summary = tools::summary(&call.name, &call.arguments);
            self.emit(TurnEvent::ToolCall {
                call: call.clone(),
                kind,
                summary: summary.clone(),
            });
            match self.decide_call(call, kind, &summary, replay)? {
                Some(p) => self.permission = Some(p),
                None => {
                    *answered += 1;
                    continue;
                }
            }
            // Reserved once approved (a denied call does not count); another turn may have
            // taken the last call while the user was asked.
            if let Some(b) = &self.budget
                && let Err(ledger::LimitReached(why)) = b.reserve_tool_call()
            {
                return Err(FinishReason::LimitReached(why));
            }
            let ours = if kind == ToolKind::Plan {
                None
            } else {
                self.ext.run(
                    &call.name,
                    &call.arguments,
                    &self.sessions,
                    &self.session_id,
                    &self.cancel,
                )
            };
            let out = if let Some((out, images)) = ours {
                self.store_result_with_images(call, out, images)?;
                if self.cancel.is_cancelled() {
                    return Err(FinishReason::Cancelled);
                }
                continue;
            } else if kind == ToolKind::Plan {
                self.update_plan(&call.arguments)
            } else {
                let ctx = ToolContext {
                    root: self.sessions.root().to_path_buf(),
                    cancel: self.cancel.clone(),
                    sandbox: super::approval::session_sandbox(
                        &self.settings.sandbox,
                        &self.ledger.approved_tools,
                    ),
                    command_timeout: self.settings.command_timeout,
                    output_cap: self.settings.output_cap,
                    home: self
                        .settings
                        .path
                        .parent()
                        .map(std::path::Path::to_path_buf),
                    read_rules: Some(self.gate.read_rules()),
                };
                tools::run(&call.name, &call.arguments, &ctx)
            };
            self.store_result(call, out, true)?;
            *answered += 1;
            if self.cancel.is_cancelled() {
                return Err(FinishReason::Cancelled);
            }
        }
        Ok(())
    }

    pub(super) fn store_result(&mut self, call: &ToolCall, out: ToolOutput, ran: bool) -> Flow {
        self.store_result_parts(call, out, ran, Vec::new())
    }

    /// A result with images (MCP tools): each image becomes an asset of the session, shown in
    /// the views; the model reads the result's text, which names them.
    fn store_result_with_images(
        &mut self,
        call: &ToolCall,
        mut out: ToolOutput,
        images: Vec<crate::runtime::mcp::McpImage>,
    ) -> Flow {
        let mut parts = Vec::new();
        for img in images {
            match self
                .sessions
                .save_asset(&self.session_id, &img.mime_type, &img.data)
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
            self.ledger.usage.tool_calls += 1;
        }
        let permission = self.permission.take();
        let mut text = redact(&out.text, self.key());
        if ran && let Some(reason) = self.gate.post_tool_use(call, &text, out.is_error) {
            text.push_str(&format!("\n\nA PostToolUse hook says: {reason}"));
        }
        let mut msg = NewMessage::tool_result(call.id.clone(), text.clone(), out.is_error);
        msg.parts.extend(images);
        msg.tool_metadata = match &permission {
            Some(p) => super::gate::with_permission(out.metadata, p),
            None => out.metadata,
        };
        let seq = self.append_files(msg, self.state(None), &out.files)?;
        self.emit(TurnEvent::ToolResult {
            call_id: call.id.clone(),
            text,
            is_error: out.is_error,
            seq,
            permission,
        });
        Ok(())
    }

    pub(super) fn ask(
        &mut self,
        call: &ToolCall,
        summary: &str,
        reason: String,
    ) -> Result<Answer, FinishReason> {
        self.set_status(Status::Paused)?;
        let rule = self.gate.propose(call);
        self.gate.notify(
            "permission_prompt",
            &format!("neocode asks to run {summary}"),
        );
        self.notices();
        self.emit(TurnEvent::ApprovalNeeded {
            call: call.clone(),
            summary: summary.to_string(),
            reason,
            rule: rule.clone(),
        });
        loop {
            if self.cancel.is_cancelled() {
                return Ok(Answer::Cancelled);
            }
            match self.commands.recv_timeout(Duration::from_millis(50)) {
                Ok(TurnCommand::Approve { call_id, always }) if call_id == call.id => {
                    let always = always.then(|| (rule.clone(), super::gate::RuleScope::Session));
                    return Ok(Answer::Run { always });
                }
                Ok(TurnCommand::AlwaysAllow {
                    call_id,
                    rule,
                    scope,
                }) if call_id == call.id => {
                    return Ok(Answer::Run {
                        always: Some((rule, scope)),
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
    fn update_plan(&mut self, arguments: &str) -> ToolOutput {
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
        if let Err(e) = self.sessions.update_state(&self.session_id, &upd) {
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
            if let Err(e) =
                self.sessions
                    .step_update(&self.session_id, &s.id, &StepUpdate::Status { status })
            {
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

    fn finish(&mut self, reason: FinishReason) {
        let (status, termination) = match &reason {
            FinishReason::Completed => (Status::Completed, "completed".to_string()),
            FinishReason::Cancelled => (Status::Cancelled, "cancelled by the user".to_string()),
            FinishReason::LimitReached(why) => (Status::Paused, format!("limit reached: {why}")),
            FinishReason::Failed { code, message } => {
                (Status::Failed, format!("failed ({code}): {message}"))
            }
        };
        if matches!(reason, FinishReason::Cancelled) {
            self.ledger.cancelled_at_ms = Some(now_ms());
        }
        self.ledger.termination = Some(redact(&termination, self.key()));
        let mut reason = reason;
        if let Err(e) = self
            .sessions
            .update_state(&self.session_id, &self.state(Some(status)))
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

/// What a provider's stream event is for the front ends.
fn stream_event(e: StreamEvent) -> TurnEvent {
    match e {
        StreamEvent::Text(t) => TurnEvent::TextDelta(t),
        StreamEvent::Reasoning(r) => TurnEvent::ReasoningDelta(r),
        StreamEvent::Retrying {
            status,
            attempt,
            of,
            wait,
        } => TurnEvent::Warning {
            code: WarningCode::Retrying,
            message: StreamEvent::retry_text(status, attempt, of, wait),
        },
        StreamEvent::NotStreamed(message) => TurnEvent::Warning {
            code: WarningCode::NotStreamed,
            message,
        },
        StreamEvent::UsageEstimated(message) => TurnEvent::Warning {
            code: WarningCode::UsageEstimated,
            message,
        },
    }
}

/// The stored form of a completion: reasoning (with what replaying it needs), then text;
/// tool calls; usage with its cache and reasoning counts (marked `usage_estimated` in the
/// metadata when the server reported none); a stop reason that cut it short. `incomplete`:
/// the metadata of a reply that stopped early (its calls are dropped).
fn assistant_message(c: &Completion, incomplete: Option<Value>) -> NewMessage {
    let cut = incomplete.is_some();
    let mut meta = incomplete;
    if c.usage_estimated {
        let m = meta.get_or_insert_with(|| json!({}));
        m["usage_estimated"] = Value::Bool(true);
    }
    if let Some(stop) = &c.stop {
        let m = meta.get_or_insert_with(|| json!({}));
        m["stop_reason"] = json!(stop.code());
    }
    let mut parts = Vec::new();
    if !c.reasoning_items.is_empty() {
        parts.extend(c.reasoning_items.iter().map(|r| Part::Reasoning {
            text: r.text.clone(),
            replay: r.replay.clone(),
        }));
    } else if !c.reasoning.is_empty() {
        parts.push(Part::reasoning(c.reasoning.clone()));
    }
    if !c.text.is_empty() {
        parts.push(Part::text(c.text.clone()));
    }
    NewMessage {
        role: Some(Role::Assistant),
        parts,
        tool_calls: if cut {
            Vec::new()
        } else {
            c.tool_calls.clone()
        },
        is_error: cut,
        tool_metadata: meta,
        usage: c.usage,
        extra: crate::session::MessageExtra {
            cached_input_tokens: c.detail.cached_input_tokens,
            cache_write_tokens: c.detail.cache_write_tokens,
            reasoning_tokens: c.detail.reasoning_tokens,
            ..crate::session::MessageExtra::default()
        },
        ..NewMessage::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_come_from_the_first_line() {
        assert_eq!(title_from("\n  Fix the build\nplease"), "Fix the build");
        let long = "x".repeat(80);
        assert_eq!(title_from(&long).chars().count(), 61);
    }
}
