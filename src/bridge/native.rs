//! neocode's own bridge protocol (`docs/bridge.md`): `chat`, `cancel`, `approval` and
//! `queue` requests, the turn's events as [`protocol::turn_lines`] with the chat's
//! `request_id`.

use super::core::{Bridge, NO_ONE_TO_ASK, Voice};
use super::error::{BridgeError, ErrorCode};
use super::handoff;
use super::history;
use super::port::Prepared;
use super::protocol::{
    self, ApprovalDecision, ChatRequest, Event, PROTOCOL_NAME, PROTOCOL_VERSION, Request,
};
use crate::runtime::agent::{TurnCommand, TurnEvent};

/// The native dialect keeps nothing between lines.
#[derive(Debug, Default)]
pub(super) struct Native;

impl Voice for Native {
    const ENDS_WITH_INPUT: bool = false;

    fn begin(b: &mut Bridge<'_, Self>) {
        b.send(&Event::ProtocolAck {
            protocol: PROTOCOL_NAME,
            version: PROTOCOL_VERSION,
        });
    }

    fn line(b: &mut Bridge<'_, Self>, line: Vec<u8>) {
        let parsed = protocol::parse_request(line.trim_ascii());
        // The request holds what it needs: the line's bytes go before the chat is prepared.
        drop(line);
        match parsed {
            Err(ev) => b.send(&ev),
            Ok(Request::Chat(req)) => b.chat(*req),
            Ok(Request::Cancel(c)) => b.cancel(c.request_id),
            Ok(Request::Approval(a)) => b.approval(a),
            Ok(Request::Queue(q)) => b.queue(q),
        }
    }

    fn turn_event(b: &mut Bridge<'_, Self>, turn: u64, ev: TurnEvent) {
        b.turn_event(turn, ev);
    }
}

impl Bridge<'_, Native> {
    /// `queue`: the message joins the session's queue (the process running the session
    /// sends it); answered with `queued`, or an `error`.
    fn queue(&mut self, q: protocol::QueueRequest) {
        let ev = match self.enqueue(&q) {
            Ok(ev) => ev,
            Err(e) => Event::error(q.request_id, e.code(), e.message),
        };
        self.send(&ev);
    }

    fn enqueue(&self, q: &protocol::QueueRequest) -> Result<Event, BridgeError> {
        if q.text.trim().is_empty() {
            return Err(BridgeError::new(
                ErrorCode::InvalidRequest,
                "the message to queue is empty",
            ));
        }
        let (sessions, _) = self.workspace(q.cwd.as_deref())?;
        let line = |e: &dyn std::fmt::Display| crate::sanitize::line(&e.to_string()).into_owned();
        let id = sessions.resolve(&q.session_id).map_err(|e| {
            let code = if e.is_usage() {
                ErrorCode::SessionNotFound
            } else {
                ErrorCode::Storage
            };
            BridgeError::new(code, line(&e))
        })?;
        let queued = sessions
            .enqueue(&id, &q.text, q.steer)
            .map_err(|e| BridgeError::new(ErrorCode::Storage, line(&e)))?;
        Ok(Event::Queued {
            request_id: q.request_id.clone(),
            running: crate::runtime::lease::is_held(sessions.data_dir(), &id),
            session_id: id,
            queue_id: queued.id,
            steer: q.steer,
        })
    }

    fn cancel(&mut self, request_id: Option<String>) {
        match &self.running {
            Some(r) if request_id.is_none() || request_id == r.request_id => {
                let _ = r.commands.send(TurnCommand::Cancel);
            }
            Some(_) => self.send(&Event::error(
                request_id,
                ErrorCode::UnknownRequest.as_str(),
                "no running turn has this request_id",
            )),
            None => self.send(&Event::error(
                request_id,
                ErrorCode::NoRunningTurn.as_str(),
                "there is no running turn to cancel",
            )),
        }
    }

    fn approval(&mut self, a: protocol::ApprovalAnswer) {
        let Some(r) = &mut self.running else {
            return self.send(&Event::error(
                None,
                ErrorCode::NoRunningTurn.as_str(),
                "there is no running turn waiting for an approval",
            ));
        };
        if !r.pending_approvals.remove(&a.call_id) {
            let rid = r.request_id.clone();
            return self.send(&Event::error(
                rid,
                ErrorCode::UnknownCall.as_str(),
                format!(
                    "no approval is waiting for call {:?}",
                    crate::sanitize::line(&a.call_id)
                ),
            ));
        }
        let cmd = match a.decision {
            ApprovalDecision::Approve | ApprovalDecision::Always => TurnCommand::Approve {
                call_id: a.call_id,
                always: a.decision == ApprovalDecision::Always,
            },
            ApprovalDecision::Deny => TurnCommand::Deny {
                call_id: a.call_id,
                reason: a.reason,
            },
        };
        let _ = r.commands.send(cmd);
    }

    fn turn_event(&mut self, turn: u64, ev: TurnEvent) {
        let Some(r) = self.running.as_mut().filter(|r| r.turn == turn) else {
            return;
        };
        let rid = r.request_id.clone();
        // A sub-agent's question is answered like the turn's own, by call id.
        let asked = match &ev {
            TurnEvent::Subagent { event, .. } => event.as_ref(),
            e => e,
        };
        match asked {
            // The bridge sent its own session_init, which knows about recovery.
            TurnEvent::Started { .. } if !matches!(ev, TurnEvent::Subagent { .. }) => return,
            TurnEvent::ApprovalNeeded { call, .. } => {
                if self.eof {
                    let _ = r.commands.send(TurnCommand::Deny {
                        call_id: call.id.clone(),
                        reason: Some(NO_ONE_TO_ASK.into()),
                    });
                } else {
                    r.pending_approvals.insert(call.id.clone());
                }
            }
            // Nothing follows `Finished`: the next chat may start now.
            TurnEvent::Finished { .. } => {}
            TurnEvent::Started { .. }
            | TurnEvent::Subagent { .. }
            | TurnEvent::TextDelta(_)
            | TurnEvent::ReasoningDelta(_)
            | TurnEvent::AssistantStored { .. }
            | TurnEvent::ToolCall { .. }
            | TurnEvent::ToolResult { .. }
            | TurnEvent::Warning { .. }
            | TurnEvent::Compacting { .. }
            | TurnEvent::CompactionFailed { .. } => {}
            // The bridge starts no plan runs.
            TurnEvent::PlanProposed { .. }
            | TurnEvent::StepStarted { .. }
            | TurnEvent::Step { .. }
            | TurnEvent::StepFinished { .. } => {}
        }
        if matches!(ev, TurnEvent::Finished { .. }) {
            self.running = None;
        }
        // The turn's wire lines, shared with `neocode run --json`; the bridge only adds the
        // chat's request_id.
        for mut line in protocol::turn_lines(&ev) {
            if let (Some(rid), Some(obj)) = (&rid, line.as_object_mut()) {
                obj.insert("request_id".into(), rid.clone().into());
            }
            self.send_value(&line);
        }
    }

    fn chat(&mut self, req: ChatRequest) {
        let rid = req.request_id.clone();
        if let Some(r) = &self.running {
            let busy = format!(
                "a turn is running (request {}); send one chat at a time",
                r.request_id.as_deref().unwrap_or("without id")
            );
            return self.send(&Event::error(rid, ErrorCode::Busy.as_str(), busy));
        }
        let prepared = self.prepare(&req);
        let (prepared, chosen, dropped) = match prepared {
            Ok(p) => p,
            Err(e) => return self.send(&Event::error(rid, e.code(), e.message)),
        };
        // The turn runs in the chosen session, or in a fork when the history parted from it.
        let (session_id, adopted) = match self.start(prepared, rid.clone()) {
            Ok(started) => started,
            Err(e) => return self.send(&Event::error(rid, e.code(), e.message)),
        };
        if self.announced.as_deref() != Some(session_id.as_str()) {
            self.send(&Event::SessionInit {
                request_id: rid.clone(),
                session_id: session_id.clone(),
                recovered: chosen.recovery_reason.is_some(),
                recovery_reason: chosen.recovery_reason,
            });
            self.announced = Some(session_id);
        }
        for w in &chosen.warnings {
            self.send(w);
        }
        for w in handoff::adopted_warnings(rid.as_ref(), adopted.as_ref(), dropped) {
            self.send(&w);
        }
    }

    /// Checks the request and chooses the session; the turn adopts the caller's history.
    /// Also says how many non-text parts the history dropped.
    fn prepare(
        &self,
        req: &ChatRequest,
    ) -> Result<(Prepared, handoff::Chosen, usize), BridgeError> {
        if let Some(v) = req.protocol_version
            && v > PROTOCOL_VERSION
        {
            return Err(BridgeError::new(
                ErrorCode::UnsupportedVersion,
                format!("this neocode speaks bridge protocol {PROTOCOL_VERSION}, not {v}"),
            ));
        }
        let history = history::parse(&req.messages)
            .map_err(|e| BridgeError::new(ErrorCode::InvalidRequest, e.0))?;
        let dropped = history.dropped_parts;
        let (p, chosen) = self.prepare_history(req, history)?;
        Ok((p, chosen, dropped))
    }
}
