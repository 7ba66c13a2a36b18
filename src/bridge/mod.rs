//! `neocode bridge`: other front ends (editor plugins, OpenCode-style providers, scripts)
//! drive neocode sessions over JSON lines on stdin/stdout, one turn per process if they wish
//! (seed 000 §1-2). Only the session id crosses between processes; everything else lives in
//! the workspace's store. The protocol is `docs/bridge.md`.
//!
//! The bridge is a front end beside the TUI: it reads requests, asks the runtime which
//! session a chat belongs to ([`handoff`]), runs the turn through a [`TurnRunner`] (the
//! agent), and writes the turn's events. It never opens the database itself.

mod agent;
mod error;
pub(crate) mod handoff;
pub(crate) mod history;
pub(crate) mod nonoka;
pub(crate) mod protocol;

use std::collections::HashSet;
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{self, Sender};

use crate::runtime::agent::adopt::{Adopt, Adopted};
use crate::runtime::agent::{
    Commands, FinishReason, Sink, Started, TurnCommand, TurnEvent, TurnHandle, TurnSink,
};
use crate::runtime::{Location, Sessions};
use crate::session::{RuntimeLimits, Usage, WorkspacePaths};

pub(crate) use agent::agent_runner;
pub use error::{BridgeError, ErrorCode};
use protocol::{ApprovalDecision, ChatRequest, Event, PROTOCOL_NAME, PROTOCOL_VERSION, Request};

/// The wire format a bridge process speaks (`neocode bridge --dialect`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Dialect {
    /// neocode's own protocol, `docs/bridge.md`.
    #[default]
    Native,
    /// nonoka's NDJSON bridge, as its OpenCode provider speaks it ([`nonoka`]).
    Nonoka,
}

/// Longest request line accepted unless `neocode bridge --max-line-mib` says otherwise (a
/// whole conversation with pasted files fits easily). A line costs up to about 17 times its
/// size in memory on its way through a turn (its text is parsed, stored, read back and sent),
/// so the limit bounds what one line can take.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// One turn to run, as the bridge hands it to the agent.
pub struct TurnSpec {
    /// The workspace's sessions.
    pub sessions: Sessions,
    /// The session the decision chain chose.
    pub session_id: String,
    /// The caller's conversation, adopted into the session by the turn under its own lease
    /// (appended, or continued in a fork where it parted from the store); its last message
    /// is the prompt. `None`: `prompt` is the turn's message.
    pub adopt: Option<Adopt>,
    /// The new user message when nothing is adopted; `None` with no `adopt`: answer what is
    /// pending (the nonoka dialect's paused calls).
    pub prompt: Option<String>,
    /// Results of the session's waiting calls that the caller's own tools produced (the
    /// nonoka dialect), stored by the turn under its lease before it runs.
    pub results: Vec<crate::session::NewMessage>,
    /// Ledger limit overrides.
    pub limits: Option<RuntimeLimits>,
    /// The caller's own tools, offered to the model beside neocode's and never run here (the
    /// nonoka dialect); empty in the native protocol.
    pub host_tools: Vec<crate::runtime::provider::ToolDef>,
}

/// Runs turns for the bridge: the agent in the binary, a scripted double in tests.
pub trait TurnRunner: Send + Sync {
    /// Reads the settings once for a chat with this model override and says whether a turn
    /// can run at all (a provider is configured), before anything is written; the error is
    /// an `error` event's code and message.
    fn prepare(&self, model: Option<&str>) -> Result<Box<dyn PreparedTurn>, BridgeError>;
}

/// A chat's turn, its settings read: [`PreparedTurn::start`] starts it.
pub trait PreparedTurn: Send {
    /// Starts the turn (adopting `spec.adopt` under the turn's lease first) and returns at
    /// once; its events go to `sink` from the turn's thread, in order, ending with
    /// `Finished`. An error (the session busy in another process, the store) means nothing
    /// runs.
    fn start(self: Box<Self>, spec: TurnSpec, sink: Sink) -> Result<Started, BridgeError>;
}

/// A chat's turn ready to start: its runner and what it runs.
pub(crate) struct Prepared {
    runner: Box<dyn PreparedTurn>,
    spec: TurnSpec,
}

/// How the bridge was started.
pub struct BridgeOptions {
    /// The neocode home (`$NEOCODE_HOME` or `~/.neocode`).
    pub home: PathBuf,
    /// `--workdir`: the workspace of chats without `cwd` (else the current directory).
    pub workdir: Option<PathBuf>,
    /// Runs the turns.
    pub runner: Arc<dyn TurnRunner>,
    /// Longest request line accepted ([`MAX_LINE_BYTES`] by default); a longer one is
    /// skipped, never held, and answered with a `line_too_long` error.
    pub max_line_bytes: usize,
}

enum Input {
    Line(Vec<u8>),
    /// A line over the limit (in bytes) was skipped.
    TooLong(usize),
    Eof,
    ReadFailed(String),
    /// An event of turn number `.0`.
    Turn(u64, TurnEvent),
    /// Turn number `.0`'s thread let go of its sink.
    TurnEnded(u64),
    /// SIGTERM or SIGINT arrived (the nonoka dialect records the running turn as cancelled).
    Signal,
}

struct Running {
    turn: u64,
    request_id: Option<String>,
    commands: Commands,
    pending_approvals: HashSet<String>,
}

/// The sink of a bridge turn: its events join the bridge's input, and when the turn's thread
/// lets go of it (after `Finished`, or a panic) the bridge hears that the turn ended.
struct ToBridge {
    tx: Sender<Input>,
    turn: u64,
}

impl TurnSink for ToBridge {
    fn event(&mut self, event: TurnEvent) {
        let _ = self.tx.send(Input::Turn(self.turn, event));
    }
}

impl Drop for ToBridge {
    fn drop(&mut self) {
        let _ = self.tx.send(Input::TurnEnded(self.turn));
    }
}

/// Serves requests from `input` until it ends (and the running turn, if any, finished).
/// Returns `Err` only when `output` could not be written.
pub fn serve(
    opts: BridgeOptions,
    input: impl Read + Send + 'static,
    output: &mut dyn Write,
) -> std::io::Result<()> {
    serve_dialect(opts, Dialect::Native, input, output)
}

/// [`serve`] in the given dialect. The nonoka dialect also records the running turn as
/// cancelled on SIGTERM or SIGINT, and returns at once after a turn paused for an approval
/// (its call stays stored without a result; the next process answers it).
pub(crate) fn serve_dialect(
    opts: BridgeOptions,
    dialect: Dialect,
    input: impl Read + Send + 'static,
    output: &mut dyn Write,
) -> std::io::Result<()> {
    let (tx, rx) = mpsc::channel();
    let reader_tx = tx.clone();
    let limit = opts.max_line_bytes.max(1);
    std::thread::spawn(move || read_lines(std::io::BufReader::new(input), reader_tx, limit));
    if dialect == Dialect::Nonoka {
        nonoka::watch_signals(tx.clone());
    }
    let mut b = Bridge {
        opts,
        tx,
        out: output,
        running: None,
        eof: false,
        announced: None,
        write_failed: None,
        turns: 0,
        last_runner: None,
        dialect,
        nonoka: nonoka::State::default(),
        stop: false,
        opened: std::cell::RefCell::new(Vec::new()),
    };
    if dialect == Dialect::Native {
        b.send(&Event::ProtocolAck {
            protocol: PROTOCOL_NAME,
            version: PROTOCOL_VERSION,
        });
    }
    while let Ok(input) = rx.recv() {
        b.handle(input);
        if b.stop {
            break;
        }
        if b.write_failed.is_some() {
            b.cancel_running();
        }
        if (b.eof || b.write_failed.is_some()) && b.running.is_none() {
            break;
        }
    }
    // A turn paused for an approval waits on a call this process will never answer: the
    // process ends under it, leaving the call stored without a result.
    if let Some(t) = b.last_runner.take()
        && !b.stop
    {
        t.join();
    }
    match b.write_failed {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn read_lines(mut r: impl BufRead, tx: Sender<Input>, limit: usize) {
    loop {
        let mut buf = Vec::new();
        let got = (&mut r).take(limit as u64 + 1).read_until(b'\n', &mut buf);
        let msg = match got {
            Ok(0) => Input::Eof,
            Ok(_) if buf.len() > limit && buf.last() != Some(&b'\n') => {
                // Skip the rest of the oversized line (without keeping it) so the next line
                // parses on its own.
                drop(buf);
                if skip_line(&mut r).is_err() {
                    let _ = tx.send(Input::TooLong(limit));
                    let _ = tx.send(Input::Eof);
                    return;
                }
                Input::TooLong(limit)
            }
            Ok(_) => Input::Line(buf),
            Err(e) => Input::ReadFailed(e.to_string()),
        };
        let end = matches!(msg, Input::Eof | Input::ReadFailed(_));
        if tx.send(msg).is_err() || end {
            return;
        }
    }
}

/// Reads past the next newline (or to the end), keeping nothing.
fn skip_line(r: &mut impl BufRead) -> std::io::Result<()> {
    loop {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            return Ok(());
        }
        match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => {
                r.consume(i + 1);
                return Ok(());
            }
            None => {
                let n = chunk.len();
                r.consume(n);
            }
        }
    }
}

struct Bridge<'a> {
    opts: BridgeOptions,
    tx: Sender<Input>,
    out: &'a mut dyn Write,
    running: Option<Running>,
    eof: bool,
    /// The session last named in a `session_init` by this process.
    announced: Option<String>,
    write_failed: Option<std::io::Error>,
    /// Turns started, numbering them so a late message of an ended turn is recognised.
    turns: u64,
    /// The latest turn: joined before the bridge returns, so the process never exits under
    /// a turn that is still writing.
    last_runner: Option<TurnHandle>,
    dialect: Dialect,
    /// What the nonoka dialect keeps between lines.
    nonoka: nonoka::State,
    /// End now, without waiting for the turn (nonoka: paused for an approval).
    stop: bool,
    /// The workspaces chats went to, by data folder, kept open: opening a store (a
    /// connection, its schema, every statement prepared again) was most of a chat's cost.
    opened: std::cell::RefCell<Vec<(PathBuf, Sessions)>>,
}

impl Bridge<'_> {
    fn send(&mut self, ev: &Event) {
        self.write_line(ev.to_line());
    }

    fn write_line(&mut self, line: String) {
        if self.write_failed.is_some() {
            return;
        }
        // Model and tool text is untrusted, and a person may run the bridge in a terminal.
        let mut line = crate::sanitize::json(&line).into_owned();
        line.push('\n');
        if let Err(e) = self
            .out
            .write_all(line.as_bytes())
            .and_then(|()| self.out.flush())
        {
            self.write_failed = Some(e);
        }
    }

    fn send_value(&mut self, v: &serde_json::Value) {
        // Keys in order at every level, as the turn lines (`protocol::turn_lines`).
        let mut v = v.clone();
        v.sort_all_objects();
        self.write_line(v.to_string());
    }

    fn handle(&mut self, input: Input) {
        match input {
            Input::Line(line) => {
                let trimmed = line.trim_ascii();
                if trimmed.is_empty() {
                    return;
                }
                if self.dialect == Dialect::Nonoka {
                    return self.nonoka_line(trimmed);
                }
                let parsed = protocol::parse_request(trimmed);
                // The request holds what it needs: the line's bytes go before the chat is
                // prepared.
                drop(line);
                match parsed {
                    Err(ev) => self.send(&ev),
                    Ok(Request::Chat(req)) => self.chat(*req),
                    Ok(Request::Cancel(c)) => self.cancel(c.request_id),
                    Ok(Request::Approval(a)) => self.approval(a),
                    Ok(Request::Queue(q)) => self.queue(q),
                }
            }
            Input::TooLong(limit) => self.send(&Event::error(
                None,
                ErrorCode::LineTooLong.as_str(),
                format!(
                    "a request line is limited to {} MiB (neocode bridge --max-line-mib raises it); it was skipped",
                    limit.div_ceil(1 << 20)
                ),
            )),
            Input::ReadFailed(e) => {
                self.send(&Event::error(None, ErrorCode::ReadFailed.as_str(), format!("stdin: {e}")));
                self.end_of_input();
            }
            Input::Eof | Input::Signal if self.dialect == Dialect::Nonoka => {
                // The provider closes stdin and kills the process when OpenCode aborts.
                self.cancel_running();
                self.end_of_input();
            }
            Input::Eof => self.end_of_input(),
            Input::Signal => {}
            Input::Turn(turn, ev) if self.dialect == Dialect::Nonoka => {
                self.nonoka_turn_event(turn, ev);
            }
            Input::Turn(turn, ev) => self.turn_event(turn, ev),
            Input::TurnEnded(turn) => {
                if self.running.as_ref().is_some_and(|r| r.turn == turn) {
                    // The runner returned without `Finished` (it panicked): say so rather
                    // than leave the caller waiting.
                    let ev = TurnEvent::Finished {
                        reason: FinishReason::Failed {
                            code: crate::runtime::agent::FailCode::Internal,
                            message: "the turn ended unexpectedly".into(),
                        },
                        usage: Usage::default(),
                    };
                    match self.dialect {
                        Dialect::Native => self.turn_event(turn, ev),
                        Dialect::Nonoka => self.nonoka_turn_event(turn, ev),
                    }
                }
            }
        }
    }

    /// No one can answer approvals any more: waiting ones are denied, later ones too.
    fn end_of_input(&mut self) {
        self.eof = true;
        if let Some(r) = &mut self.running {
            for call_id in r.pending_approvals.drain() {
                let _ = r.commands.send(TurnCommand::Deny {
                    call_id,
                    reason: Some(NO_ONE_TO_ASK.into()),
                });
            }
        }
    }

    fn cancel_running(&mut self) {
        if let Some(r) = &self.running {
            let _ = r.commands.send(TurnCommand::Cancel);
        }
    }

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
        match &ev {
            // The bridge sent its own session_init, which knows about recovery.
            TurnEvent::Started { .. } => return,
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
            TurnEvent::TextDelta(_)
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

    /// [`Bridge::prepare`] for a history already checked and converted: the settings read
    /// once, the session chosen (no lease taken: the turn takes it and adopts the history
    /// under it).
    fn prepare_history(
        &self,
        req: &ChatRequest,
        history: history::History,
    ) -> Result<(Prepared, handoff::Chosen), BridgeError> {
        let model = req.model.clone().filter(|m| !m.is_empty());
        let runner = self.opts.runner.prepare(model.as_deref())?;
        let (sessions, root) = self.workspace(req.cwd.as_deref())?;
        let chosen = handoff::choose(&sessions, req, &history, &root)?;
        let spec = TurnSpec {
            sessions,
            session_id: chosen.session_id.clone(),
            adopt: Some(Adopt {
                messages: history.messages,
                conversation_key: chosen.conversation_key.clone(),
            }),
            prompt: None,
            results: Vec::new(),
            limits: req.limits.clone(),
            host_tools: Vec::new(),
        };
        Ok((Prepared { runner, spec }, chosen))
    }

    /// The sessions of the workspace of `cwd` (default: `--workdir`, else the current
    /// directory) and its root, as the agent records it on every append.
    fn workspace(&self, cwd: Option<&str>) -> Result<(Sessions, String), BridgeError> {
        let dir: Option<PathBuf> = match cwd.filter(|c| !c.is_empty()) {
            Some(c) => Some(PathBuf::from(c)),
            None => self.opts.workdir.clone(),
        };
        let workdir = match &dir {
            Some(d) => {
                absolute(d).map_err(|e| BridgeError::new(ErrorCode::InvalidCwd, e.to_string()))?
            }
            None => std::env::current_dir().map_err(|e| {
                BridgeError::new(
                    ErrorCode::InvalidCwd,
                    format!("cannot read the current directory: {e}"),
                )
            })?,
        };
        if !workdir.is_dir() {
            return Err(BridgeError::new(
                ErrorCode::InvalidCwd,
                format!(
                    "cwd {} is not a directory",
                    crate::sanitize::line(&workdir.display().to_string())
                ),
            ));
        }
        let loc = Location {
            home: self.opts.home.clone(),
            paths: WorkspacePaths::resolve(&self.opts.home, &workdir).map_err(|e| {
                BridgeError::new(
                    ErrorCode::InvalidCwd,
                    crate::sanitize::line(&e.to_string()).into_owned(),
                )
            })?,
        };
        let root = loc.root().display().to_string();
        let dir = loc.paths.db();
        if let Some((_, s)) = self.opened.borrow().iter().find(|(d, _)| *d == dir) {
            return Ok((s.clone(), root));
        }
        let sessions = Sessions::open(&loc).map_err(|e| {
            BridgeError::new(
                ErrorCode::Storage,
                crate::sanitize::line(&e.to_string()).into_owned(),
            )
        })?;
        self.opened.borrow_mut().push((dir, sessions.clone()));
        Ok((sessions, root))
    }

    /// Starts the turn; its events then arrive as [`Input::Turn`]. Returns the session it
    /// runs in and what adopting the caller's history did.
    fn start(
        &mut self,
        prepared: Prepared,
        request_id: Option<String>,
    ) -> Result<(String, Option<Adopted>), BridgeError> {
        self.turns += 1;
        let turn = self.turns;
        let tx = self.tx.clone();
        let sink = Sink::to(ToBridge { tx, turn });
        let Prepared { runner, spec } = prepared;
        let Started { handle, adopted } = runner.start(spec, sink)?;
        self.running = Some(Running {
            turn,
            request_id,
            commands: handle.commands.clone(),
            pending_approvals: HashSet::new(),
        });
        let id = handle.session_id.clone();
        self.last_runner = Some(handle);
        Ok((id, adopted))
    }
}

const NO_ONE_TO_ASK: &str = "denied: the bridge's input is closed, so no one can approve it";

/// A `cwd` that cannot be made absolute (the current directory is gone).
#[derive(Debug, thiserror::Error)]
#[error("cwd {}: {source}", crate::sanitize::line(&path.display().to_string()))]
struct CwdError {
    path: PathBuf,
    source: std::io::Error,
}

fn absolute(p: &Path) -> Result<PathBuf, CwdError> {
    std::path::absolute(p).map_err(|source| CwdError {
        path: p.to_path_buf(),
        source,
    })
}
