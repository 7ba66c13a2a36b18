//! `neocode bridge --dialect nonoka`: the bridge as nonoka's OpenCode provider
//! (`nonoka-opencode-provider`) drives it, one process per turn. The dialect sits at the
//! bridge's edge: requests are translated into the bridge's own terms ([`inbound`]), the
//! same decision chain and history reconciliation choose the session (`handoff`), the same
//! agent runs the turn, and its events are written in nonoka's shape ([`outbound`]).
//! `docs/bridge.md` ("The nonoka dialect") is the contract.

pub(crate) mod contract;
pub(crate) mod inbound;
pub(crate) mod outbound;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::Duration;

use serde_json::Value;

use crate::runtime::agent::{TurnCommand, TurnEvent};
use crate::runtime::{Location, Sessions};
use crate::session::{
    NewMessage, NewSession, Role, RuntimeLimits, Usage, WorkspacePaths, conversation_key,
};

use super::core::{Bridge, Input, Voice};
use super::error::{BridgeError, ErrorCode};
use super::history::History;
use super::port::{Prepared, TurnSpec};
use super::protocol::{ChatRequest, Event};

/// What the dialect keeps between lines of one process.
#[derive(Debug, Default)]
pub(in crate::bridge) struct State {
    /// Tool names by call id (nonoka's `tool_result` names its tool).
    names: HashMap<String, String>,
    /// Answers the provider already gave (`tool-approval-response` parts, or standalone
    /// `approval` lines of older providers), by call id: `true` approves.
    answers: HashMap<String, bool>,
    /// Usage of the running turn's model calls so far.
    usage: Usage,
    /// The running turn answers a title request: its throwaway store, removed at its end.
    scratch: Option<PathBuf>,
    /// Names of the caller's own tools offered in the running turn.
    host: HashSet<String>,
    /// The running turn's store and session: a tool result's stored metadata (its
    /// verification receipt) is read back from it.
    store: Option<(Sessions, String)>,
    /// The running turn resumes a paused one: what was answered, said instead of the agent's
    /// "interrupted calls are offered again" (these calls were paused on purpose).
    resumed: Option<String>,
}

/// What a chat's turn starts with besides its spec.
struct Begin {
    /// Why the session was recovered by its conversation key, if it was.
    recovery: Option<&'static str>,
    /// The decision chain's warnings.
    warnings: Vec<Event>,
    /// The caller's own tools.
    host_tools: Vec<crate::runtime::provider::ToolDef>,
    /// Approval answers the provider already gave.
    answers: HashMap<String, bool>,
}

static SIGNALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    SIGNALLED.store(true, Ordering::SeqCst);
}

/// SIGTERM and SIGINT become an [`Input::Signal`]: the running turn is cancelled and
/// recorded so before the process ends (the provider kills the process when OpenCode aborts).
pub(super) fn watch_signals(tx: Sender<Input>) {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe; child
    // processes get the default dispositions back on exec.
    unsafe {
        for sig in [libc::SIGTERM, libc::SIGINT] {
            libc::signal(
                sig,
                on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
            );
        }
    }
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(Duration::from_millis(20));
            if SIGNALLED.swap(false, Ordering::SeqCst) && tx.send(Input::Signal).is_err() {
                return;
            }
        }
    });
}

/// A store of its own under `scratch` (a throwaway home) for the workspace `root`, and a
/// session in it.
/// Why the scratch store for a title could not be opened.
#[derive(Debug, thiserror::Error)]
enum ScratchError {
    /// The scratch folder cannot be made.
    #[error("{0}")]
    Dir(#[from] std::io::Error),
    /// The store in it cannot be opened or written.
    #[error("{0}")]
    Store(#[from] crate::session::StoreError),
}

fn scratch_session(
    scratch: &std::path::Path,
    root: &str,
) -> Result<(Sessions, String), ScratchError> {
    crate::session::private_dir(scratch)?;
    let loc = Location {
        home: scratch.to_path_buf(),
        paths: WorkspacePaths::new(scratch, std::path::Path::new(root)),
    };
    let sessions = Sessions::open(&loc)?;
    let header = sessions.new_session(NewSession {
        workdir: root.to_string(),
        ..NewSession::default()
    })?;
    Ok((sessions, header.id))
}

/// The caller's results of calls waiting in session `id` (`pending`), checked (read only) and
/// made into the tool messages the turn stores under its lease. A result for a call already
/// answered in the store (a retried request) is left out; one for a call the session never
/// made is refused, nothing written.
fn results_to_store(
    sessions: &Sessions,
    id: &str,
    pending: &[crate::session::ToolCall],
    results: &[inbound::HostResult],
) -> Result<Vec<NewMessage>, BridgeError> {
    if results.is_empty() {
        return Ok(Vec::new());
    }
    let storage = |e: crate::session::StoreError| {
        let m = crate::sanitize::line(&e.to_string()).into_owned();
        BridgeError::new(ErrorCode::Storage, m)
    };
    let stored = sessions.load(id).map_err(storage)?.messages;
    let mut new = Vec::new();
    for r in results {
        if pending.iter().any(|c| c.id == r.call_id) {
            let mut m = NewMessage::tool_result(r.call_id.clone(), r.text.clone(), false);
            m.tool_metadata = r.metadata();
            new.push(m);
        } else if !stored
            .iter()
            .any(|m| m.tool_call_id.as_deref() == Some(r.call_id.as_str()))
        {
            return Err(BridgeError::new(
                ErrorCode::UnknownCall,
                format!(
                    "no call {} waits for its result in session {id}",
                    crate::sanitize::line(&r.call_id)
                ),
            ));
        }
    }
    Ok(new)
}

fn no_session() -> BridgeError {
    BridgeError::new(
        ErrorCode::SessionIdMissing,
        "the answers and results need the session of the paused turn, and the request names none \
         (was .nonoka/provider-session.id removed?)",
    )
}

/// What a resume answered, in words: `call_w1 approved (it runs now)`, `call_w2 denied`,
/// `the host's result of call_h1 stored`; `None` when the request answers nothing.
fn resumed_note(
    answers: &HashMap<String, bool>,
    results: &[inbound::HostResult],
) -> Option<String> {
    let mut ids: Vec<(&String, &bool)> = answers.iter().collect();
    ids.sort();
    let mut parts: Vec<String> = ids
        .into_iter()
        .map(|(id, ok)| {
            let id = crate::sanitize::line(id);
            if *ok {
                format!("call {id} approved (it runs now)")
            } else {
                format!("call {id} denied (the model is told)")
            }
        })
        .collect();
    parts.extend(results.iter().map(|r| {
        format!(
            "the host's result of call {} stored",
            crate::sanitize::line(&r.call_id)
        )
    }));
    (!parts.is_empty()).then(|| {
        format!(
            "the paused turn goes on: {}; any later calls of the same reply follow in order",
            parts.join(", ")
        )
    })
}

impl Voice for State {
    const ENDS_WITH_INPUT: bool = true;

    fn begin(b: &mut Bridge<'_, Self>) {
        watch_signals(b.tx.clone());
    }

    fn line(b: &mut Bridge<'_, Self>, line: Vec<u8>) {
        b.nonoka_line(line.trim_ascii());
    }

    fn turn_event(b: &mut Bridge<'_, Self>, turn: u64, ev: TurnEvent) {
        b.nonoka_turn_event(turn, ev);
    }
}

impl Bridge<'_, State> {
    /// The stored `tool_metadata` of message `seq` of the running turn's session.
    fn stored_metadata(&self, seq: i64) -> Option<Value> {
        let (sessions, id) = self.dialect.store.as_ref()?;
        sessions
            .messages(id, seq, seq)
            .ok()?
            .into_iter()
            .next()?
            .tool_metadata
    }

    /// One request line in nonoka's dialect.
    pub(super) fn nonoka_line(&mut self, line: &[u8]) {
        let value: Value = match std::str::from_utf8(line)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str(t).map_err(|e| e.to_string()))
        {
            Ok(v) => v,
            Err(e) => return self.send_value(&outbound::error("invalid_json", &e, None)),
        };
        match value.get("type").and_then(Value::as_str) {
            Some("chat") => match serde_path_to_error::deserialize::<_, inbound::Chat>(value) {
                Ok(c) => self.nonoka_chat(c),
                Err(e) => {
                    let message = format!("invalid chat request at {}: {}", e.path(), e.inner());
                    self.send_value(&outbound::error("invalid_request", &message, None));
                }
            },
            // Nothing running: nothing to cancel (as nonoka does).
            Some("cancel") => self.cancel_running(),
            // Older providers answer approvals on lines of their own before the chat.
            Some("approval") => {
                let id = value.get("id").and_then(Value::as_str).unwrap_or_default();
                let approved = value.get("approved").and_then(Value::as_bool);
                match approved {
                    Some(a) if !id.is_empty() => {
                        self.dialect.answers.insert(id.to_string(), a);
                    }
                    _ => self.send_value(&outbound::error(
                        "invalid_request",
                        "an approval needs `id` and a boolean `approved`",
                        None,
                    )),
                }
            }
            other => {
                let message = format!(
                    "unknown message type {:?} (chat, cancel or approval)",
                    crate::sanitize::line(other.unwrap_or_default())
                );
                self.send_value(&outbound::error("unknown_type", &message, None));
            }
        }
    }

    fn nonoka_chat(&mut self, req: inbound::Chat) {
        if self.running.is_some() {
            let busy = outbound::error(
                ErrorCode::Busy.as_str(),
                "a chat turn is already running",
                None,
            );
            return self.send_value(&busy);
        }
        if let Err(r) = contract::check_contract(req.protocol.as_ref()) {
            return self.send_value(&outbound::error(r.code, &r.message, Some(r.details)));
        }
        self.send_value(&outbound::ack());
        let (limits, ignored) = contract::limits(&req.limits);
        if !ignored.is_empty() {
            let mut message = format!(
                "neocode has no equivalent of {}; ignored",
                ignored.join(", ")
            );
            if ignored.contains(&"require_focused_verification") {
                message.push_str(
                    " (a turn is not held back for a missing focused verification; checks \
                     still carry their verification receipts)",
                );
            }
            self.send_value(&outbound::warning("limits_ignored", &message));
        }
        let title = req.purpose.as_deref() == Some("title");
        let (host_tools, hidden) = inbound::host_tools(req.tools.as_deref().unwrap_or_default());
        if !hidden.is_empty() && !title {
            let message = format!(
                "not offered to the model: the host's {} (neocode has a tool of the same name, \
                 which the model gets instead)",
                hidden.join(", ")
            );
            self.send_value(&outbound::warning("host_tool_hidden", &message));
        }
        let unsupported = req
            .external_mcp_servers
            .as_ref()
            .is_some_and(|t| !t.is_empty())
            || req.external_skills.as_ref().is_some_and(|t| !t.is_empty());
        if unsupported && !title {
            self.send_value(&outbound::warning(
                "host_extensions_ignored",
                "external_mcp_servers and external_skills are not offered to the model",
            ));
        }
        let tr = inbound::translate(&req.messages, &|name| {
            host_tools.iter().any(|t| t.name == name)
        });
        let rid = req.request_id.clone();
        if title {
            self.dialect.store = None;
            let started = self
                .nonoka_title(&req, &tr)
                .and_then(|p| self.start(p, rid));
            if let Err(e) = started {
                self.send_value(&outbound::error(e.code(), &e.message, None));
            }
            return;
        }
        for r in tr.results.iter().filter(|r| r.invalid.is_some()) {
            let message = format!(
                "the host's verification receipt for call {} was not accepted ({}); the result \
                 is stored with it, and proves no check",
                crate::sanitize::line(&r.call_id),
                r.invalid.as_deref().unwrap_or_default()
            );
            self.send_value(&outbound::warning("invalid_verification_receipt", &message));
        }
        let mut answers = std::mem::take(&mut self.dialect.answers);
        answers.extend(tr.approvals.iter().cloned());
        self.dialect.resumed = resumed_note(&answers, &tr.results);
        let prepared = if answers.is_empty() && tr.results.is_empty() {
            self.nonoka_prepare(&req, tr, limits)
        } else {
            let key = tr
                .history
                .iter()
                .find(|m| m.role == Role::User)
                .map(|m| conversation_key(&m.text));
            self.nonoka_resume(&req, &answers, &tr.results, limits, key)
        };
        match prepared {
            Ok((prepared, recovery, warnings)) => {
                let begin = Begin {
                    recovery,
                    warnings,
                    host_tools,
                    answers,
                };
                self.nonoka_begin(prepared, begin, rid);
            }
            Err(e) => self.send_value(&outbound::error(e.code(), &e.message, None)),
        }
    }

    /// Starts a prepared turn: it adopts the history under its lease (and may fork), so the
    /// session it runs in is the one announced, then the warnings.
    fn nonoka_begin(&mut self, mut prepared: Prepared, b: Begin, rid: Option<String>) {
        let host: HashSet<String> = b.host_tools.iter().map(|t| t.name.clone()).collect();
        prepared.spec.host_tools = b.host_tools;
        let sessions = prepared.spec.sessions.clone();
        let (session_id, adopted) = match self.start(prepared, rid.clone()) {
            Ok(started) => started,
            Err(e) => return self.send_value(&outbound::error(e.code(), &e.message, None)),
        };
        self.dialect.host = host;
        if self.announced.as_deref() != Some(session_id.as_str()) {
            self.send_value(&outbound::session_init(&session_id, b.recovery));
            self.announced = Some(session_id.clone());
        }
        let adopted = super::handoff::adopted_warnings(rid.as_ref(), adopted.as_ref(), 0);
        for w in b.warnings.into_iter().chain(adopted) {
            if let Event::Warning { code, message, .. } = w {
                self.send_value(&outbound::warning(&code, &message));
            }
        }
        self.dialect.answers = b.answers;
        self.dialect.usage = Usage::default();
        self.dialect.store = Some((sessions, session_id));
    }

    /// A new user message: the bridge's decision chain and history reconciliation, with the
    /// conversation key computed here (the provider sends none).
    fn nonoka_prepare(
        &self,
        req: &inbound::Chat,
        tr: inbound::Translated,
        limits: Option<RuntimeLimits>,
    ) -> Result<(Prepared, Option<&'static str>, Vec<Event>), BridgeError> {
        let history = History {
            messages: tr.history,
            dropped_parts: 0,
        };
        match history.messages.last() {
            Some(m) if m.role == Role::User && !m.text.trim().is_empty() => {}
            _ => {
                return Err(BridgeError::new(
                    ErrorCode::InvalidRequest,
                    "the last message must be the new user message, with text (or the history \
                     must end with approval answers)",
                ));
            }
        }
        let key = history
            .has_continuation()
            .then(|| history.first_user_text().map(conversation_key))
            .flatten();
        let native = ChatRequest {
            request_id: req.request_id.clone(),
            session_id: req.session_id.clone(),
            new_session: req.new_session,
            conversation_key: key,
            cwd: req.cwd.clone(),
            model: req.model.clone(),
            limits,
            ..ChatRequest::default()
        };
        let (prepared, chosen) = self.prepare_history(&native, history)?;
        Ok((prepared, chosen.recovery_reason, chosen.warnings))
    }

    /// A history ending with approval answers or with results of the caller's own tools: the
    /// paused turn of `session_id` goes on. Answered calls run or are denied, results are
    /// stored as the calls' results; nothing else of the history is written.
    fn nonoka_resume(
        &self,
        req: &inbound::Chat,
        answers: &HashMap<String, bool>,
        results: &[inbound::HostResult],
        limits: Option<RuntimeLimits>,
        key: Option<String>,
    ) -> Result<(Prepared, Option<&'static str>, Vec<Event>), BridgeError> {
        let model = req.model.clone().filter(|m| !m.is_empty());
        let runner = self.opts.runner.prepare(model.as_deref())?;
        let (sessions, _) = self.workspace(req.cwd.as_deref())?;
        let storage = |e: crate::session::StoreError| {
            let m = crate::sanitize::line(&e.to_string()).into_owned();
            BridgeError::new(ErrorCode::Storage, m)
        };
        // Without an id, a history that still holds its first user message (older providers
        // resend everything) finds the session by its conversation key.
        let (id, recovery) = match req.session_id.clone().filter(|s| !s.is_empty()) {
            Some(id) => (id, None),
            None => match key {
                Some(k) => match sessions
                    .store()
                    .find_by_conversation_key(&k)
                    .map_err(storage)?
                {
                    Some(found) => (found.id, Some("session_id_missing")),
                    None => return Err(no_session()),
                },
                None => return Err(no_session()),
            },
        };
        if sessions.header(&id).is_err() {
            return Err(BridgeError::new(
                ErrorCode::SessionNotFound,
                format!(
                    "session {} is not in this workspace; its paused call cannot be answered",
                    crate::sanitize::line(&id)
                ),
            ));
        }
        let pending = sessions.interrupted_tool_calls(&id).map_err(storage)?;
        let mut ids: Vec<&String> = answers.keys().collect();
        ids.sort();
        for call_id in ids {
            if !pending.iter().any(|c| &c.id == call_id) {
                return Err(BridgeError::new(
                    ErrorCode::UnknownCall,
                    format!(
                        "no call {} waits for an approval in session {id}",
                        crate::sanitize::line(call_id)
                    ),
                ));
            }
        }
        let results = results_to_store(&sessions, &id, &pending, results)?;
        let spec = TurnSpec {
            sessions,
            session_id: id,
            adopt: None,
            prompt: None,
            results,
            limits,
            host_tools: Vec::new(),
        };
        Ok((Prepared { runner, spec }, recovery, Vec::new()))
    }

    /// A title request: the model answers in a throwaway store (nothing of the workspace is
    /// written), without tools.
    fn nonoka_title(
        &mut self,
        req: &inbound::Chat,
        tr: &inbound::Translated,
    ) -> Result<Prepared, BridgeError> {
        let Some(prompt) = tr
            .history
            .iter()
            .rev()
            .find(|m| m.role == Role::User && !m.text.trim().is_empty())
        else {
            return Err(BridgeError::new(
                ErrorCode::InvalidRequest,
                "no title prompt in the request",
            ));
        };
        let model = req.model.clone().filter(|m| !m.is_empty());
        let runner = self.opts.runner.prepare(model.as_deref())?;
        let (_, root) = self.workspace(req.cwd.as_deref())?;
        let scratch = std::env::temp_dir().join(format!("neocode-title-{}", uuid::Uuid::new_v4()));
        let opened = scratch_session(&scratch, &root);
        let (sessions, session_id) = match opened {
            Ok(s) => s,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&scratch);
                return Err(BridgeError::new(
                    ErrorCode::Storage,
                    crate::sanitize::line(&e.to_string()).into_owned(),
                ));
            }
        };
        self.dialect.scratch = Some(scratch);
        let spec = TurnSpec {
            sessions,
            session_id,
            adopt: None,
            prompt: Some(prompt.text.clone()),
            results: Vec::new(),
            limits: Some(RuntimeLimits {
                max_turns: Some(1),
                max_tool_calls: Some(0),
                ..RuntimeLimits::default()
            }),
            host_tools: Vec::new(),
        };
        Ok(Prepared { runner, spec })
    }

    /// One event of the running turn, in nonoka's shape. A call that needs an approval the
    /// provider has not given ends the turn `approval_required` and the process with it.
    pub(super) fn nonoka_turn_event(&mut self, turn: u64, ev: TurnEvent) {
        let Some(r) = self.running.as_mut().filter(|r| r.turn == turn) else {
            return;
        };
        let title = self.dialect.scratch.is_some();
        let Some(asked) = in_this_dialect(&ev) else {
            return;
        };
        match asked {
            TurnEvent::ApprovalNeeded { call, .. } => {
                if let Some(approved) = self.dialect.answers.remove(&call.id) {
                    let call_id = call.id.clone();
                    let _ = r.commands.send(if approved {
                        TurnCommand::Approve {
                            call_id,
                            always: false,
                        }
                    } else {
                        TurnCommand::Deny {
                            call_id,
                            reason: None,
                        }
                    });
                } else {
                    self.pause_for(call);
                }
                return;
            }
            TurnEvent::AssistantStored { usage, .. } => {
                self.dialect.usage.input_tokens += usage.input_tokens;
                self.dialect.usage.output_tokens += usage.output_tokens;
            }
            TurnEvent::ToolCall { call, .. } => {
                self.dialect
                    .names
                    .insert(call.id.clone(), call.name.clone());
            }
            TurnEvent::Warning {
                code: crate::runtime::codes::WarningCode::ReplayingInterruptedCalls,
                ..
            } if self.dialect.resumed.is_some() => {
                let note = self.dialect.resumed.take().unwrap_or_default();
                return self.send_value(&outbound::warning("paused_turn_resumed", &note));
            }
            TurnEvent::Finished { reason, usage } => {
                self.running = None;
                let lines = if title {
                    // A title is its text; a limit on the throwaway turn is no failure.
                    match reason {
                        crate::runtime::agent::FinishReason::Failed { .. } => {
                            outbound::finish(reason, *usage)
                        }
                        _ => outbound::finish(
                            &crate::runtime::agent::FinishReason::Completed,
                            *usage,
                        ),
                    }
                } else {
                    outbound::finish(reason, *usage)
                };
                if let Some(dir) = self.dialect.scratch.take() {
                    let _ = std::fs::remove_dir_all(dir);
                }
                for l in &lines {
                    self.send_value(l);
                }
                return;
            }
            _ => {}
        }
        if title && !matches!(ev, TurnEvent::TextDelta(_)) {
            return;
        }
        let names = &self.dialect.names;
        let mut lines = outbound::turn_lines(&ev, &|id| names.get(id).cloned().unwrap_or_default());
        if let TurnEvent::ToolResult { seq, text, .. } = &ev
            && let Some(meta) = self.stored_metadata(*seq)
            && let Some(receipt) = outbound::receipt(text, &meta)
        {
            for l in &mut lines {
                l["result"] = receipt.clone();
            }
        }
        if let TurnEvent::ToolCall { call, .. } = &ev
            && self.dialect.host.contains(&call.name)
        {
            for l in &mut lines {
                l["metadata"]["executor"] = "host".into();
            }
        }
        for l in &lines {
            self.send_value(l);
        }
    }
}

impl Bridge<'_, State> {
    /// A call that needs an answer the provider has not given: it stays stored without a
    /// result (status paused); the next process gets the answer (or the host's result) in
    /// its history and runs or denies exactly this call (or stores the result). The turn and
    /// the process end here.
    fn pause_for(&mut self, call: &crate::session::ToolCall) {
        let lines = if self.dialect.host.contains(&call.name) {
            vec![outbound::host_tool_calls(self.dialect.usage)]
        } else {
            vec![
                outbound::approval_request(call),
                outbound::approval_required(self.dialect.usage),
            ]
        };
        for l in &lines {
            self.send_value(l);
        }
        self.running = None;
        self.stop = true;
    }
}

/// The event as this dialect reads it: a sub-agent's question is the turn's own, as before
/// children were tagged; its other events have no line here (`None`).
fn in_this_dialect(ev: &TurnEvent) -> Option<&TurnEvent> {
    match ev {
        TurnEvent::Subagent { event, .. }
            if matches!(event.as_ref(), TurnEvent::ApprovalNeeded { .. }) =>
        {
            Some(event.as_ref())
        }
        TurnEvent::Subagent { .. } => None,
        e => Some(e),
    }
}
