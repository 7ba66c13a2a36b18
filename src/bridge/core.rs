//! One bridge process: its input (request lines read on a thread, the turn's events, signals)
//! in one channel, the [`Bridge`] that handles each in order and writes one JSON line per
//! event, and the [`Voice`] each dialect speaks in (`native`, `nonoka`).

use std::collections::HashSet;
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Sender};

use super::error::{BridgeError, ErrorCode};
use super::handoff;
use super::history;
use super::port::{BridgeOptions, Prepared, TurnSpec};
use super::protocol::{ChatRequest, Event};
use crate::runtime::agent::adopt::{Adopt, Adopted};
use crate::runtime::agent::{
    Commands, FinishReason, Sink, Started, TurnCommand, TurnEvent, TurnHandle, TurnSink,
};
use crate::runtime::{Location, Sessions};
use crate::session::{Usage, WorkspacePaths};

/// How a dialect speaks: what a request line does, how a turn's events are written, and
/// what it does when the process starts and when its input ends.
pub(super) trait Voice: Sized {
    /// The end of input (or a signal) cancels the running turn: the caller is gone.
    const ENDS_WITH_INPUT: bool;
    /// Before the first line: an acknowledgement, signal handlers.
    fn begin(b: &mut Bridge<'_, Self>);
    /// One request line (not blank).
    fn line(b: &mut Bridge<'_, Self>, line: Vec<u8>);
    /// An event of turn number `turn`.
    fn turn_event(b: &mut Bridge<'_, Self>, turn: u64, ev: TurnEvent);
}

/// Serves requests from `input` in dialect `D` until it ends (and the running turn, if any,
/// finished). Returns `Err` only when `output` could not be written.
pub(super) fn run<D: Voice>(
    opts: BridgeOptions,
    dialect: D,
    input: impl Read + Send + 'static,
    output: &mut dyn Write,
) -> std::io::Result<()> {
    let (tx, rx) = mpsc::channel();
    let reader_tx = tx.clone();
    let limit = opts.max_line_bytes.max(1);
    std::thread::spawn(move || read_lines(std::io::BufReader::new(input), reader_tx, limit));
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
        stop: false,
        opened: std::cell::RefCell::new(Vec::new()),
    };
    D::begin(&mut b);
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

pub(super) enum Input {
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

pub(super) struct Running {
    pub(super) turn: u64,
    pub(super) request_id: Option<String>,
    pub(super) commands: Commands,
    pub(super) pending_approvals: HashSet<String>,
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

pub(super) struct Bridge<'a, D> {
    pub(super) opts: BridgeOptions,
    pub(super) tx: Sender<Input>,
    pub(super) out: &'a mut dyn Write,
    pub(super) running: Option<Running>,
    pub(super) eof: bool,
    /// The session last named in a `session_init` by this process.
    pub(super) announced: Option<String>,
    pub(super) write_failed: Option<std::io::Error>,
    /// Turns started, numbering them so a late message of an ended turn is recognised.
    pub(super) turns: u64,
    /// The latest turn: joined before the bridge returns, so the process never exits under
    /// a turn that is still writing.
    pub(super) last_runner: Option<TurnHandle>,
    /// What the dialect keeps between lines.
    pub(super) dialect: D,
    /// End now, without waiting for the turn (nonoka: paused for an approval).
    pub(super) stop: bool,
    /// The workspaces chats went to, by data folder, kept open: opening a store (a
    /// connection, its schema, every statement prepared again) was most of a chat's cost.
    pub(super) opened: std::cell::RefCell<Vec<(PathBuf, Sessions)>>,
}

impl<D: Voice> Bridge<'_, D> {
    pub(super) fn send(&mut self, ev: &Event) {
        self.write_line(ev.to_line());
    }

    pub(super) fn write_line(&mut self, line: String) {
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

    pub(super) fn send_value(&mut self, v: &serde_json::Value) {
        // Keys in order at every level, as the turn lines (`protocol::turn_lines`).
        let mut v = v.clone();
        v.sort_all_objects();
        self.write_line(v.to_string());
    }

    pub(super) fn handle(&mut self, input: Input) {
        match input {
            Input::Line(line) => {
                if line.trim_ascii().is_empty() {
                    return;
                }
                D::line(self, line);
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
            Input::Eof | Input::Signal if D::ENDS_WITH_INPUT => {
                // The provider closes stdin and kills the process when OpenCode aborts.
                self.cancel_running();
                self.end_of_input();
            }
            Input::Eof => self.end_of_input(),
            Input::Signal => {}
            Input::Turn(turn, ev) => D::turn_event(self, turn, ev),
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
                    D::turn_event(self, turn, ev);
                }
            }
        }
    }

    /// No one can answer approvals any more: waiting ones are denied, later ones too.
    pub(super) fn end_of_input(&mut self) {
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

    pub(super) fn cancel_running(&self) {
        if let Some(r) = &self.running {
            let _ = r.commands.send(TurnCommand::Cancel);
        }
    }

    /// [`Bridge::prepare`] for a history already checked and converted: the settings read
    /// once, the session chosen (no lease taken: the turn takes it and adopts the history
    /// under it).
    pub(super) fn prepare_history(
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
    pub(super) fn workspace(&self, cwd: Option<&str>) -> Result<(Sessions, String), BridgeError> {
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
    pub(super) fn start(
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

pub(super) const NO_ONE_TO_ASK: &str =
    "denied: the bridge's input is closed, so no one can approve it";

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
