//! The loop itself: prompt stored, then model call, tool calls, model call ... until it ends.

use serde_json::json;

use super::completion::assistant_message;
use super::{Flow, Turn, store_failed, title_from};
use crate::runtime::agent::{FailCode, FinishReason, TurnEvent, WarningCode, ledger, window};
use crate::runtime::provider::openai::redact;
use crate::runtime::provider::{ErrorKind, StopNote, StreamEvent};
use crate::session::{NewMessage, Part, Role, StateUpdate, Status};

/// The result of a call that came without one in a history neocode did not record making.
const NOT_RUN: &str = "Not run: this call came in the conversation's history without a result, and neocode did not make it (it runs only the calls its own model turns made). Call the tool again if it is still needed.";

impl Turn {
    #[expect(clippy::too_many_lines)]
    pub(super) fn body(&mut self, prompt: Option<String>) -> Flow {
        let header = self
            .sessions
            .header(&self.session_id)
            .map_err(store_failed)?;
        self.caps_start = self.ledger.usage.clone();
        self.gate.load().map_err(|e| FinishReason::Failed {
            code: FailCode::Config,
            message: e.to_string(),
        })?;
        if let Some(message) = self.gate.left_out_unsaid() {
            self.emit(TurnEvent::Warning {
                code: WarningCode::WorkspaceUntrusted,
                message,
            });
        }
        // A server that says its window is smaller than the configured one wins: compaction
        // and the size warning then work for a small local window.
        if let Some(w) = self.provider.context_window()
            && w < self.settings.context_window
        {
            self.settings.context_window = w.max(1);
        }
        self.set_status(Status::Running)?;
        let mut context = self.gate.session_start(header.message_count > 0);
        // Calls that came in a history neocode did not make (a bridge caller's, an imported
        // session's) are answered, never run, whatever the approval policy.
        // (The two lists name calls of one message, marked or not: never both.)
        let opened = self
            .sessions
            .open_session(&self.session_id)
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
        // A queued message is stored (never skipped as a retry) and marked delivered by the
        // same append.
        let queued = super::steer::queued_id(self.prompt_meta.as_ref());
        if let Some(p) = prompt
            && (queued.is_some() || !self.unanswered(&p, header.last_seq)?)
        {
            let title = header.title.trim().is_empty().then(|| title_from(&p));
            let update = StateUpdate {
                title,
                delivers: queued.into_iter().collect(),
                ..self.state(Some(Status::Running))
            };
            context.extend(self.prompt_submitted(&p)?);
            let mut msg = NewMessage::text(Role::User, p);
            msg.parts
                .extend(crate::runtime::agent::gate::context_parts(&context));
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
            if queued.is_some() {
                super::steer::test_pause();
            }
            self.append(msg, update)?;
        }
        // The model's context read once (the messages a compaction summarised stay stored but
        // are not read); before each model call only what changed since is read.
        let mut session = self
            .sessions
            .load_context(&self.session_id)
            .map_err(store_failed)?;
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
            // A compaction's summary at the end answers nothing: what came before it waits.
            match session.messages.iter().rev().find(|m| !m.is_compaction()) {
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
                        "{}; compacting what the model is sent and asking again",
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
            // The call fit: a later overflow in this prompt (its tool results grew the context
            // again) may compact once more.
            overflow_compacted = false;
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
        // The last messages: a compaction (of a retry that overflowed) may follow the prompt.
        let tail = self
            .sessions
            .messages(&self.session_id, last_seq - 3, last_seq)
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
