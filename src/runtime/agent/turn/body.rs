//! The loop itself: prompt stored, then model call, tool calls, model call ... until it ends.

use super::completion::assistant_message;
use super::structured;
use super::{Flow, Turn, store_failed, title_from};
use crate::runtime::agent::events::{FailCode, FinishReason, TurnEvent, WarningCode};
use crate::runtime::agent::{ledger, window};
use crate::runtime::provider::openai::redact;
use crate::runtime::provider::{Completion, ErrorKind, ProviderError, StopNote, StreamEvent};
use crate::session::{NewMessage, Part, Role, Session, SessionHeader, StateUpdate, Status};
use serde_json::json;

/// The result of a call that came without one in a history neocode did not record making.
const NOT_RUN: &str = "Not run: this call came in the conversation's history without a result, and neocode did not make it (it runs only the calls its own model turns made). Call the tool again if it is still needed.";

/// What the loop remembers from one model call to the next.
#[derive(Default)]
struct Sampling {
    /// A Stop hook made the turn go on once already.
    stop_active: bool,
    /// The prompt's size was looked at (once per turn).
    warned_size: bool,
    /// The last call overflowed the window and the context was compacted for it.
    overflow_compacted: bool,
    /// Reasoning from another provider or model was said to be left out.
    told_foreign: bool,
    /// A model call of this prompt was made (`tool_choice = "required"` binds only the first).
    sampled: bool,
}

/// What a model call gave.
enum Sampled {
    Reply(Completion),
    /// The context was compacted after an overflow: ask again.
    Again,
}

impl Turn {
    /// The turn: prepared (prompt stored), then model call and settling its reply (tool
    /// calls run) until the model answers without calls.
    pub(super) fn body(&mut self, prompt: Option<String>) -> Flow {
        let mut session = self.prepare(prompt)?;
        let mut sampling = Sampling::default();
        let mut fresh = true;
        loop {
            if self.io.cancel.is_cancelled() {
                return Err(FinishReason::Cancelled);
            }
            if !fresh {
                self.catch_up(&mut session)?;
            }
            fresh = false;
            // A compaction's summary at the end answers nothing: what came before it waits.
            match session.messages.iter().rev().find(|m| !m.is_compaction()) {
                Some(m) if m.role == Role::User || m.role == Role::Tool => {}
                // A reply that was cut off is asked for again.
                Some(m) if window::is_incomplete(m) => {}
                // Nothing unanswered (e.g. continuing a finished session without a prompt).
                _ => return Ok(()),
            }
            let completion = match self.sample(&mut session, &mut sampling)? {
                Sampled::Reply(c) => c,
                Sampled::Again => continue,
            };
            if !self.settle(&completion, &mut sampling)? {
                return Ok(());
            }
        }
    }

    /// Everything before the first model call: the gate read, the session marked running,
    /// calls left over from the history answered or replayed, the prompt stored. Returns the
    /// model's context, read once (the messages a compaction summarised stay stored but are
    /// not read); before each model call only what changed since is read.
    fn prepare(&mut self, prompt: Option<String>) -> Result<Session, FinishReason> {
        let header = self
            .io
            .sessions
            .header(&self.ctx.session_id)
            .map_err(store_failed)?;
        self.state.caps_start = self.state.ledger.usage.clone();
        self.ctx.gate.load().map_err(|e| FinishReason::Failed {
            code: FailCode::Config,
            message: e.to_string(),
        })?;
        if let Some(message) = self.ctx.gate.left_out_unsaid() {
            self.emit(TurnEvent::Warning {
                code: WarningCode::WorkspaceUntrusted,
                message,
            });
        }
        // A server that says its window is smaller than the configured one wins: compaction
        // and the size warning then work for a small local window.
        if let Some(w) = self.io.provider.context_window()
            && w < self.ctx.settings.context_window
        {
            self.ctx.settings.context_window = w.max(1);
        }
        self.set_status(Status::Running)?;
        self.ctx.tools_allowed =
            crate::runtime::agent::subagent::restriction(&self.io.sessions, &header);
        let context = self.ctx.gate.session_start(header.message_count > 0);
        self.answer_history()?;
        if let Some(p) = prompt {
            self.store_prompt(p, &header, context)?;
        }
        self.io
            .sessions
            .load_context(&self.ctx.session_id)
            .map_err(store_failed)
    }

    /// Calls that came in a history neocode did not make (a bridge caller's, an imported
    /// session's) are answered, never run, whatever the approval policy; calls this runtime
    /// made whose results were never stored are offered again.
    fn answer_history(&mut self) -> Flow {
        // (The two lists name calls of one message, marked or not: never both.)
        let opened = self
            .io
            .sessions
            .open_session(&self.ctx.session_id)
            .map_err(store_failed)?;
        for call in &opened.unrecorded {
            self.store_result(
                call,
                crate::runtime::tools::ToolOutput::error(NOT_RUN),
                false,
            )?;
        }
        let dangling = opened.interrupted;
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
        Ok(())
    }

    /// Stores the prompt (with the hooks' context, its metadata and images), unless it is a
    /// retry of the session's last, unanswered prompt. A queued message is stored (never
    /// skipped as a retry) and marked delivered by the same append.
    fn store_prompt(
        &mut self,
        p: String,
        header: &SessionHeader,
        mut context: Vec<String>,
    ) -> Flow {
        let queued = super::steer::queued_id(self.state.prompt_meta.as_ref());
        if queued.is_none() && self.unanswered(&p, header.last_seq)? {
            return Ok(());
        }
        let title = header.title.trim().is_empty().then(|| title_from(&p));
        let update = StateUpdate {
            title,
            delivers: queued.into_iter().collect(),
            ..self.update(Some(Status::Running))
        };
        context.extend(self.prompt_submitted(&p)?);
        let mut msg = NewMessage::text(Role::User, p);
        msg.parts
            .extend(crate::runtime::policy::gate::context_parts(&context));
        msg.tool_metadata = self.state.prompt_meta.take();
        for img in std::mem::take(&mut self.state.images) {
            let a = self
                .io
                .sessions
                .save_asset(&self.ctx.session_id, img.mime, &img.bytes)
                .map_err(store_failed)?;
            msg.parts.push(Part::Image {
                asset_id: a.id,
                mime_type: Some(img.mime.to_string()),
            });
        }
        if queued.is_some() {
            super::steer::test_pause();
        }
        self.append(msg, update).map(drop)
    }

    /// One model call: the limits checked, the context compacted when full, the request
    /// built (with the extensions' system text and tools) and streamed to the front end.
    fn sample(
        &mut self,
        session: &mut Session,
        sampling: &mut Sampling,
    ) -> Result<Sampled, FinishReason> {
        if let Some(why) = ledger::model_call_blocked(&self.state.ledger).or_else(|| {
            self.ctx
                .caps
                .model_call_blocked(&self.state.ledger, &self.state.caps_start)
        }) {
            return Err(FinishReason::LimitReached(why));
        }
        self.compact_if_full(session)?;
        let mut warnings = Vec::new();
        let extra = self
            .ctx
            .ext
            .prepare(session, &mut |code, message| warnings.push((code, message)));
        for (code, message) in warnings {
            self.emit(TurnEvent::Warning { code, message });
        }
        let mut req = window::build_with(&self.io.sessions, session, &extra.system, extra.tools);
        if let Some(allowed) = &self.ctx.tools_allowed {
            req.tools.retain(|t| allowed.contains(&t.name));
        }
        req.output_schema =
            self.ctx.output_schema.clone().filter(|_| {
                !structured::refused(self.io.provider.name(), self.io.provider.model())
            });
        req.require_tool = self.ctx.settings.first_call_requires_tool && !sampling.sampled;
        sampling.sampled = true;
        let foreign = req.foreign_reasoning(self.io.provider.name(), self.io.provider.model());
        if foreign > 0 && !sampling.told_foreign {
            sampling.told_foreign = true;
            self.emit(TurnEvent::Warning {
                code: WarningCode::ReasoningLeftOut,
                message: format!(
                    "{foreign} reasoning part(s) from another provider or model are left out of the request (they are only valid where they were made)"
                ),
            });
        }
        // Reserved as late as possible: the request is made right after.
        if let Some(b) = &self.state.budget
            && let Err(ledger::LimitReached(why)) = b.reserve_model_call()
        {
            return Err(FinishReason::LimitReached(why));
        }
        if !sampling.warned_size {
            sampling.warned_size = true;
            self.warn_if_prompt_large(&req);
        }
        let sink = &mut self.io.sink;
        let mut on = |e: StreamEvent| sink.event(stream_event(e));
        let mut got = self.io.provider.stream(&req, &self.io.cancel, &mut on);
        if let Err(e) = &got
            && req.output_schema.is_some()
            && structured::refusal(e)
        {
            // A server without the structured-output option (or with a partial one, such as
            // llama.cpp's grammar that cannot go with tools): asked again without it,
            // remembered for the process, said once. The answer is still validated.
            let (name, model) = (self.io.provider.name(), self.io.provider.model());
            let message = structured::remember(name, model, &redact(&e.message, self.key()));
            req.output_schema = None;
            self.emit(TurnEvent::Warning {
                code: WarningCode::StructuredOutputRefused,
                message,
            });
            let sink = &mut self.io.sink;
            let mut on = |e: StreamEvent| sink.event(stream_event(e));
            got = self.io.provider.stream(&req, &self.io.cancel, &mut on);
        }
        match got {
            Ok(c) => {
                // The call fit: a later overflow in this prompt (its tool results grew the
                // context again) may compact once more.
                sampling.overflow_compacted = false;
                Ok(Sampled::Reply(c))
            }
            Err(e) => self.sample_failed(e, session, sampling),
        }
    }

    /// A model call that failed: past the window, compacted once (in pieces if need be) and
    /// asked again; otherwise what the stream gave is stored and the turn ends.
    fn sample_failed(
        &mut self,
        e: ProviderError,
        session: &mut Session,
        sampling: &mut Sampling,
    ) -> Result<Sampled, FinishReason> {
        if e.kind == ErrorKind::ContextOverflow
            && !sampling.overflow_compacted
            && session.messages.len() > 2
        {
            sampling.overflow_compacted = true;
            let why = format!(
                "{}; compacting what the model is sent and asking again",
                redact(&e.message, self.key())
            );
            if self.compact_now(session, why)? {
                return Ok(Sampled::Again);
            }
            return Err(FinishReason::Failed {
                code: e.kind.into(),
                message: redact(&e.message, self.key()),
            });
        }
        if let Some(partial) = e.partial.as_ref() {
            self.store_partial(partial, e.kind)?;
        }
        Err(match e.kind {
            ErrorKind::Cancelled => FinishReason::Cancelled,
            kind => FinishReason::Failed {
                code: kind.into(),
                message: redact(&e.message, self.key()),
            },
        })
    }

    /// A reply settled: counted, stored, and its tool calls run (then the steering messages
    /// delivered). True when the loop goes on to another model call.
    fn settle(
        &mut self,
        completion: &Completion,
        sampling: &mut Sampling,
    ) -> Result<bool, FinishReason> {
        ledger::add_model_call(&mut self.state.ledger, completion.usage);
        self.add_detail(completion);
        if let Some(b) = &self.state.budget {
            b.add_tokens(completion.usage);
        }
        self.state.usage.input_tokens += completion.usage.input_tokens;
        self.state.usage.output_tokens += completion.usage.output_tokens;
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
        let msg = assistant_message(completion, meta);
        let go_on = if completion.tool_calls.is_empty() && !cut {
            self.ctx.gate.turn_end(sampling.stop_active)
        } else {
            None
        };
        let seq = self.append(msg, self.update(None))?;
        self.emit(TurnEvent::AssistantStored {
            seq,
            usage: completion.usage,
        });
        if cut {
            return Err(self.reply_cut(completion));
        }
        if completion.tool_calls.is_empty() {
            // A Stop hook that blocks makes the turn go on once, with its reason.
            return match go_on {
                Some(reason) if !sampling.stop_active => {
                    sampling.stop_active = true;
                    self.stop_hook_continues(&reason)?;
                    Ok(true)
                }
                // A steering message that came while the answer was written goes in, and
                // the model answers it in this turn.
                _ => Ok(self.deliver_steer()? > 0),
            };
        }
        self.run_calls(&completion.tool_calls, false)?;
        self.deliver_steer()?;
        Ok(true)
    }

    /// Whether `prompt` is the session's last message, still unanswered (a retry of a prompt
    /// whose model call failed): it is not stored a second time.
    fn unanswered(&self, prompt: &str, last_seq: i64) -> Result<bool, FinishReason> {
        if !self.state.images.is_empty() || last_seq < 1 {
            return Ok(false);
        }
        // The last messages: a compaction (of a retry that overflowed) may follow the prompt.
        let tail = self
            .io
            .sessions
            .messages(&self.ctx.session_id, last_seq - 3, last_seq)
            .map_err(store_failed)?;
        Ok(tail
            .iter()
            .rev()
            .find(|m| !m.is_compaction())
            .is_some_and(|m| m.role == Role::User && m.text() == prompt))
    }

    /// Brings the loaded session up to date for the next model call: the header and plan
    /// progress (tools change them) and the messages stored since it was read (this turn's
    /// appends), not the whole transcript again.
    fn catch_up(&self, session: &mut crate::session::Session) -> Flow {
        let id = &self.ctx.session_id;
        session.header = self.io.sessions.header(id).map_err(store_failed)?;
        session.plan_progress = self.io.sessions.plan_progress(id).map_err(store_failed)?;
        let last = session.messages.last().map_or(0, |m| m.seq);
        let new = self
            .io
            .sessions
            .messages(id, last + 1, i64::MAX)
            .map_err(store_failed)?;
        session.messages.extend(new);
        Ok(())
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
