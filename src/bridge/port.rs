//! What the bridge hands the agent and how it was started: a turn's spec, the runner that
//! starts it, the options of one bridge process.

use std::path::PathBuf;
use std::sync::Arc;

use super::error::BridgeError;
use crate::runtime::Sessions;
use crate::runtime::agent::adopt::Adopt;
use crate::runtime::agent::{Sink, Started};
use crate::session::RuntimeLimits;

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
    pub(super) runner: Box<dyn PreparedTurn>,
    pub(super) spec: TurnSpec,
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
