//! The agent: real turns against an OpenAI-compatible model, with tools, approvals, the
//! runtime ledger, compaction and resume (seed 000 §3.3, §5; seed 003's append points).
//!
//! One event type, three consumers: the TUI, `neocode run` and `neocode bridge` only read
//! [`TurnEvent`]s and send [`TurnCommand`]s; none of them knows how a turn works.
//!
//! Plan runs ([`Agent::start_plan`], `plan.rs`) come through the same handle: the drafting turn's
//! events as they are, then [`TurnEvent::PlanProposed`] (answered with
//! [`TurnCommand::ApprovePlan`], [`TurnCommand::EditPlan`] or [`TurnCommand::RejectPlan`]),
//! then per step [`TurnEvent::StepStarted`], its sub-turn's events wrapped in
//! [`TurnEvent::Step`] and [`TurnEvent::StepFinished`]; `Finished` ends the run. Each step's
//! sub-turn is the same turn loop started by `Agent::spawn` in a child session.

pub mod approval;
pub mod compact;
pub mod images;
pub mod lease;
pub mod ledger;
pub mod plan;
pub mod project;
mod turn;
pub mod window;

use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;

use serde_json::Value;

use crate::session::{
    AppendMeta, NewSession, Plan, RuntimeLimits, StepFailure, StoreError, ToolCall, Usage,
};

use super::Sessions;
use super::cancel::CancelFlag;
use super::config::{ApprovalPolicy, ProviderStatus, Settings};
use super::provider::{OpenAi, Provider, ProviderError};
use super::tools::ToolKind;

pub use compact::Compacted;
pub use lease::{Lease, LeaseError};
pub use plan::{PlanRequest, plan_goal};
pub use turn::title_from;

/// Something that happened in a running turn, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEvent {
    /// The turn runs in this session (sent first; a new session's id is known from here).
    Started {
        /// The session.
        session_id: String,
    },
    /// Answer text as it streams.
    TextDelta(String),
    /// Reasoning text as it streams (models that send it).
    ReasoningDelta(String),
    /// The assistant message of one model call was stored.
    AssistantStored {
        /// Its seq.
        seq: i64,
        /// Usage of that model call.
        usage: Usage,
    },
    /// The model asked for a tool call (it runs now, or waits for approval).
    ToolCall {
        /// The call as the model made it.
        call: ToolCall,
        /// Approval class.
        kind: ToolKind,
        /// One line: what it does (path, command, pattern).
        summary: String,
    },
    /// The call needs the user's yes/no; answer with [`TurnCommand::Approve`] or
    /// [`TurnCommand::Deny`].
    ApprovalNeeded {
        /// The call waiting.
        call: ToolCall,
        /// One line: what it does.
        summary: String,
        /// Why it asks (policy, sandbox off, replay of an interrupted call).
        reason: String,
    },
    /// A call finished and its result was stored.
    ToolResult {
        /// The call answered.
        call_id: String,
        /// Result text (as the model reads it).
        text: String,
        /// The call failed or was denied.
        is_error: bool,
        /// Seq of the stored result.
        seq: i64,
    },
    /// Something the user should know that does not stop the turn.
    Warning {
        /// Stable machine-readable code, e.g. `replaying_interrupted_calls`.
        code: String,
        /// What happened, in words.
        message: String,
    },
    /// The context window filled: the turn compacts the transcript before its next model
    /// call (the wire shows it as warning `compacting`).
    Compacting {
        /// What happens, in words.
        message: String,
    },
    /// The compaction failed; nothing changed and the turn goes on (warning
    /// `compaction_failed` on the wire).
    CompactionFailed {
        /// Why, in words.
        message: String,
    },
    /// A plan run: the model drafted this plan (or the user's edit changed it); it runs when
    /// the front end answers [`TurnCommand::ApprovePlan`], is changed by
    /// [`TurnCommand::EditPlan`] (proposed again) and dropped by [`TurnCommand::RejectPlan`].
    /// Sent already approved (no answer awaited) when `approved` is true.
    PlanProposed {
        /// The steps.
        plan: Plan,
        /// Step ids by layer: a layer runs after every earlier one.
        layers: Vec<Vec<String>>,
        /// The run goes on without asking (`--yes`, or a resumed run that already started).
        approved: bool,
    },
    /// A plan step's sub-turn started in its own child session.
    StepStarted {
        /// The step.
        step_id: String,
        /// Its title.
        title: String,
        /// The child session holding the step's conversation.
        session_id: String,
        /// Why it runs again, when it does (interrupted by a crash, retry of a failure).
        retry: Option<String>,
    },
    /// An event of a step's sub-turn (text, tool calls, approvals, warnings). Approvals are
    /// answered with the usual commands; the plan run routes them by call id.
    Step {
        /// The step.
        step_id: String,
        /// What happened in it.
        event: Box<TurnEvent>,
    },
    /// A plan step ended: its result or error is stored (a step whose dependency did not
    /// complete ends at once with error type `skipped`).
    StepFinished {
        /// The step.
        step_id: String,
        /// The final answer, or why it failed.
        outcome: Result<String, StepFailure>,
        /// Usage of the step's model calls.
        usage: Usage,
        /// Wall time of the step.
        elapsed_ms: u64,
    },
    /// The turn ended; nothing follows.
    Finished {
        /// Why.
        reason: FinishReason,
        /// Usage of all model calls of this turn.
        usage: Usage,
    },
}

/// The runtime's own failure codes of [`FinishReason::Failed`] (a provider failure carries
/// its [`super::provider::ErrorKind::code`]). The strings are stable: the bridge, `--json`
/// and the exit messages show them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailCode {
    /// The session could not be written.
    Store,
    /// The provider could not be built.
    Config,
    /// A turn or plan run ended without saying why.
    Internal,
    /// The drafting turn stored no plan.
    NoPlan,
    /// The plan's dependencies do not form layers.
    BadPlan,
    /// The user rejected the plan.
    PlanRejected,
    /// Steps of a plan run failed.
    PlanFailed,
}

impl FailCode {
    /// The stable code.
    pub fn as_str(self) -> &'static str {
        match self {
            FailCode::Store => "store",
            FailCode::Config => "config",
            FailCode::Internal => "internal",
            FailCode::NoPlan => "no_plan",
            FailCode::BadPlan => "bad_plan",
            FailCode::PlanRejected => "plan_rejected",
            FailCode::PlanFailed => "plan_failed",
        }
    }
}

impl From<FailCode> for String {
    fn from(c: FailCode) -> String {
        c.as_str().to_string()
    }
}

/// The runtime's warning codes of [`TurnEvent::Warning`] (project context and MCP servers
/// report their own). Stable strings, as the wire shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarningCode {
    /// Commands are not confined.
    Sandbox,
    /// Calls interrupted by a crash are offered again.
    ReplayingInterruptedCalls,
    /// The provider is retried.
    Retrying,
    /// A command arrived that nothing waits for.
    UnexpectedCommand,
    /// An edit of the plan named steps it does not have.
    UnknownStep,
    /// An edit would leave the plan empty.
    EmptyPlan,
    /// A step left running by a dead process runs again.
    StepRerun,
}

impl WarningCode {
    /// The stable code.
    pub fn as_str(self) -> &'static str {
        match self {
            WarningCode::Sandbox => "sandbox",
            WarningCode::ReplayingInterruptedCalls => "replaying_interrupted_calls",
            WarningCode::Retrying => "retrying",
            WarningCode::UnexpectedCommand => "unexpected_command",
            WarningCode::UnknownStep => "unknown_step",
            WarningCode::EmptyPlan => "empty_plan",
            WarningCode::StepRerun => "step_rerun",
        }
    }
}

impl From<WarningCode> for String {
    fn from(c: WarningCode) -> String {
        c.as_str().to_string()
    }
}

/// Why a turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    /// The model answered without further tool calls. Status `completed`.
    Completed,
    /// The user cancelled. Status `cancelled`; the session can be continued.
    Cancelled,
    /// A ledger limit stopped the turn (which limit, in words). Status `paused`.
    LimitReached(String),
    /// The provider or the runtime failed. Status `failed`.
    Failed {
        /// Stable code, e.g. `auth`, `not_found`, `rate_limited`, `unreachable`, `timeout`,
        /// `stream_cut`, `busy`, `config`.
        code: String,
        /// What went wrong, in words a user can act on; never contains the key.
        message: String,
    },
}

/// Where a running turn's events go: the turn's (or plan run's) own thread calls it, in
/// order, ending with [`TurnEvent::Finished`]. A channel's sender is one; so is any
/// `FnMut(TurnEvent)`. A front end that went away does not stop the turn: the session is still
/// written.
pub trait TurnSink: Send + 'static {
    /// One event.
    fn event(&mut self, event: TurnEvent);
}

impl TurnSink for Sender<TurnEvent> {
    fn event(&mut self, event: TurnEvent) {
        let _ = self.send(event);
    }
}

impl<F: FnMut(TurnEvent) + Send + 'static> TurnSink for F {
    fn event(&mut self, event: TurnEvent) {
        self(event);
    }
}

/// The sender of a running turn's commands: [`TurnCommand::Cancel`] raises the turn's cancel
/// flag on the sender's side at once (the turn thread may be blocked in a stream or a
/// command), then reaches the turn like every other command.
#[derive(Debug, Clone)]
pub struct Commands {
    tx: Sender<TurnCommand>,
    cancel: CancelFlag,
}

impl Commands {
    /// A sender, the turn's receiver and the flag a cancel raises.
    pub(crate) fn channel() -> (Commands, Receiver<TurnCommand>, CancelFlag) {
        let (tx, rx) = channel();
        let cancel = CancelFlag::default();
        (
            Commands {
                tx,
                cancel: cancel.clone(),
            },
            rx,
            cancel,
        )
    }

    /// Sends a command; fails when the turn has ended.
    pub fn send(&self, cmd: TurnCommand) -> Result<(), std::sync::mpsc::SendError<TurnCommand>> {
        if cmd == TurnCommand::Cancel {
            self.cancel.cancel();
        }
        self.tx.send(cmd)
    }
}

/// What a front end tells a running turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnCommand {
    /// Run the waiting call; `always` allows this tool for the rest of the session (stored
    /// with the session, survives a restart).
    Approve {
        /// The call.
        call_id: String,
        /// Allow this tool from now on in this session.
        always: bool,
    },
    /// Do not run the call; the model is told, with the user's reason if given.
    Deny {
        /// The call.
        call_id: String,
        /// Passed to the model.
        reason: Option<String>,
    },
    /// Stop the turn: the stream stops, running commands are killed, what arrived is kept.
    Cancel,
    /// Run the proposed plan.
    ApprovePlan,
    /// Drop these steps from the proposed plan (dependants no longer wait for them); the plan
    /// is proposed again.
    EditPlan {
        /// Step ids to drop.
        drop: Vec<String>,
    },
    /// Do not run the proposed plan; the run ends cancelled.
    RejectPlan,
}

/// Makes the provider a turn talks to (called on the turn's thread).
pub type ProviderFactory = Arc<dyn Fn() -> Result<Box<dyn Provider>, ProviderError> + Send + Sync>;

/// Which session a turn runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A new session.
    New,
    /// An existing session (full id, unique prefix, or `last`).
    Resume(String),
}

/// What to start.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TurnRequest {
    /// The user's message; `None` continues (answers interrupted calls, or a user message that
    /// never got its reply).
    pub prompt: Option<String>,
    /// Image files the prompt carries: read and checked before anything is written, stored
    /// as assets of the session with the user message.
    pub images: Vec<std::path::PathBuf>,
    /// Limits the user set for this run (flags): an explicit action, so they replace the
    /// stored ones. Unset ones stay.
    pub limits: RuntimeLimits,
    /// Approval policy for this run (default: from the settings).
    pub approval: Option<ApprovalPolicy>,
}

#[allow(clippy::derivable_impls)]
impl Default for Target {
    fn default() -> Target {
        Target::New
    }
}

fn thread_error(e: std::io::Error) -> StartError {
    StartError {
        code: StartCode::Store,
        message: format!("cannot start a thread: {e}"),
    }
}

/// Why a turn (or a one-call intent) could not start: the stable code the bridge, `run` and
/// the TUI show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartCode {
    /// No provider is configured (or it cannot be built).
    Config,
    /// Another process runs the session.
    Busy,
    /// No such session.
    NotFound,
    /// The request is wrong (ambiguous id, empty goal, a file that is not an image ...).
    Usage,
    /// The store (or a thread) failed.
    Store,
    /// The provider failed (a compaction's summary).
    Provider,
}

impl StartCode {
    /// `config`, `busy`, `not_found`, `usage`, `store` or `provider`.
    pub fn as_str(self) -> &'static str {
        match self {
            StartCode::Config => "config",
            StartCode::Busy => "busy",
            StartCode::NotFound => "not_found",
            StartCode::Usage => "usage",
            StartCode::Store => "store",
            StartCode::Provider => "provider",
        }
    }
}

impl std::fmt::Display for StartCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for StartCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A turn that could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct StartError {
    /// Why, as a stable code ([`StartError::code`] spells it).
    pub code: StartCode,
    /// What to do, in words; never contains the key.
    pub message: String,
}

impl StartError {
    /// A start error.
    pub fn new(code: StartCode, message: impl Into<String>) -> StartError {
        StartError {
            code,
            message: message.into(),
        }
    }

    /// The stable code: `config`, `busy`, `not_found`, `usage`, `store` or `provider`.
    pub fn code(&self) -> &'static str {
        self.code.as_str()
    }
}

impl From<StoreError> for StartError {
    fn from(e: StoreError) -> StartError {
        let code = if e.is_usage() {
            StartCode::Usage
        } else {
            StartCode::Store
        };
        StartError::new(code, e.to_string())
    }
}

/// A running turn (or plan run): its events go to the sink it was started with; send
/// [`TurnCommand`]s here.
pub struct TurnHandle {
    /// The session the turn runs in.
    pub session_id: String,
    /// Commands (approve, deny, cancel).
    pub commands: Commands,
    /// The turn's cancel flag (raised by [`TurnHandle::cancel`] and a sent
    /// [`TurnCommand::Cancel`]).
    pub cancel: CancelFlag,
    thread: Option<JoinHandle<()>>,
}

impl TurnHandle {
    /// Cancels the turn (same as sending [`TurnCommand::Cancel`], usable from a signal path).
    pub fn cancel(&self) {
        let _ = self.commands.send(TurnCommand::Cancel);
    }

    /// A clone of the turn's cancel flag.
    pub fn cancel_flag(&self) -> CancelFlag {
        self.cancel.clone()
    }

    /// Whether the turn's thread has ended (its last event was sent).
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Waits for the turn's thread to end.
    pub fn join(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A turn started with a channel for its events ([`Agent::watch`]): the handle, and the
/// events to read.
pub struct Watched {
    /// The running turn.
    pub handle: TurnHandle,
    /// Its events, in order; the last is [`TurnEvent::Finished`].
    pub events: Receiver<TurnEvent>,
}

impl std::ops::Deref for Watched {
    type Target = TurnHandle;
    fn deref(&self) -> &TurnHandle {
        &self.handle
    }
}

impl Watched {
    /// Waits for the turn's thread to end.
    pub fn join(self) {
        self.handle.join();
    }
}

/// A session opened for a run: the agent that runs it (the session's own model unless this
/// run was given one), its id and its lease.
pub(crate) struct Opened {
    pub agent: Agent,
    pub id: String,
    pub lease: Lease,
}

/// What [`Agent::spawn`] runs: the turn's own ledger, policy and first message.
pub(crate) struct Spawn {
    pub ledger: crate::session::RuntimeLedger,
    /// A budget shared with other turns running at once (plan steps), if any.
    pub budget: Option<ledger::SharedBudget>,
    pub policy: ApprovalPolicy,
    pub prompt: Option<String>,
    pub prompt_meta: Option<Value>,
    /// Images stored with the prompt.
    pub images: Vec<images::Image>,
    /// What this prompt may spend on its own ([`ledger::PromptCaps`]).
    pub caps: ledger::PromptCaps,
}

/// Starts turns on a workspace's sessions.
#[derive(Clone)]
pub struct Agent {
    sessions: Sessions,
    settings: Settings,
    factory: ProviderFactory,
    ext: Arc<project::Extensions>,
    /// The provider is the OpenAI-compatible one built from `settings` (so another model
    /// means another provider); false for a test's or demo's own provider.
    openai: bool,
}

/// The model a session keeps: the one its header names, once neocode has run it or `/model`
/// chose one (an imported session's header names the other tool's model, which is not one
/// to send here). `None`: the configured default applies.
pub fn session_model(h: &crate::session::SessionHeader) -> Option<&str> {
    (h.ledger.is_some() && !h.model.trim().is_empty()).then_some(h.model.as_str())
}

fn openai_factory(settings: &Settings) -> ProviderFactory {
    let s = settings.clone();
    Arc::new(move || {
        let o = s.openai().map_err(|m| ProviderError {
            kind: super::provider::ErrorKind::Protocol,
            message: m,
            partial: None,
        })?;
        Ok(Box::new(OpenAi::new(o)?) as Box<dyn Provider>)
    })
}

impl Agent {
    /// An agent using the OpenAI-compatible provider from `settings`.
    pub fn new(sessions: Sessions, settings: Settings) -> Agent {
        let factory = openai_factory(&settings);
        let mut a = Agent::with_provider(sessions, settings, factory);
        a.openai = true;
        a
    }

    /// This agent with another model (same extensions, no MCP restart).
    pub fn with_model(&self, model: &str) -> Agent {
        let mut settings = self.settings.clone();
        settings.model = Some(model.to_string());
        let factory = if self.openai {
            openai_factory(&settings)
        } else {
            self.factory.clone()
        };
        Agent {
            sessions: self.sessions.clone(),
            settings,
            factory,
            ext: self.ext.clone(),
            openai: self.openai,
        }
    }

    /// The agent a turn in session `id` runs with: the session's own model unless this run
    /// was given one (`--model`). `None`: this one.
    pub(crate) fn for_session(&self, id: &str) -> Result<Option<Agent>, StartError> {
        if self.settings.model_from_flag {
            return Ok(None);
        }
        let h = self.sessions.header(id)?;
        Ok(match session_model(&h) {
            Some(m) if self.settings.model.as_deref() != Some(m) => {
                let mut a = self.with_model(m);
                // The session's model, settled: it is not looked up again.
                a.settings.model_from_flag = true;
                Some(a)
            }
            _ => None,
        })
    }

    /// Switches session `key` to `model` from its next request on (`/model NAME`): stored in
    /// its header, so it survives a restart; `run --model` overrides it for one run.
    pub fn set_model(&self, key: &str, model: &str) -> Result<String, StartError> {
        let model = model.trim();
        if model.is_empty() {
            return Err(StartError {
                code: StartCode::Usage,
                message: "the model name is empty".into(),
            });
        }
        let id = self.sessions.resolve(key)?;
        let _lease = self.lease(&id)?;
        let header = self.sessions.header(&id)?;
        let ledger = ledger::of(&header, &self.settings.limits);
        self.sessions.update_state(
            &id,
            &crate::session::StateUpdate {
                model: Some(model.to_string()),
                ledger: crate::session::Change::Set(ledger),
                ..Default::default()
            },
        )?;
        Ok(id)
    }

    /// An agent with another provider (tests, demos).
    pub fn with_provider(
        sessions: Sessions,
        settings: Settings,
        factory: ProviderFactory,
    ) -> Agent {
        let ext = project::Extensions::new(&settings, sessions.root());
        Agent {
            sessions,
            settings,
            factory,
            ext,
            openai: false,
        }
    }

    /// Instruction files, skills and MCP servers of this agent.
    pub fn extensions(&self) -> &project::Extensions {
        &self.ext
    }

    /// Activates a skill in a session for the user (`/skill NAME`): recorded in the header,
    /// its body joins the system prompt from the next model call on. Returns whether it was
    /// newly activated.
    pub fn activate_skill(&self, key: &str, name: &str) -> Result<bool, StartError> {
        let id = self.sessions.resolve(key)?;
        let skills = self.ext.skills();
        let Some(skill) = skills.get(name) else {
            let known: Vec<&str> = skills.skills.iter().map(|s| s.name.as_str()).collect();
            return Err(StartError {
                code: StartCode::Usage,
                message: format!(
                    "no skill named `{name}`; available: {}",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            });
        };
        Ok(crate::runtime::project_context::skills::activate(
            &self.sessions,
            &id,
            skill,
        )?)
    }

    /// Opens the network to the commands of session `key` from its next turn on
    /// (`/approve network`): stored with the session like an "always" answer, so it survives a
    /// restart; only the user raises it. Refused while a turn runs (the turn owns the ledger).
    pub fn allow_network(&self, key: &str) -> Result<String, StartError> {
        let id = self.sessions.resolve(key)?;
        let _lease = self.lease(&id)?;
        let header = self.sessions.header(&id)?;
        let mut ledger = ledger::of(&header, &self.settings.limits);
        if !ledger
            .approved_tools
            .iter()
            .any(|t| t == approval::NETWORK_GRANT)
        {
            ledger
                .approved_tools
                .push(approval::NETWORK_GRANT.to_string());
            self.sessions.update_state(
                &id,
                &crate::session::StateUpdate {
                    ledger: crate::session::Change::Set(ledger),
                    ..Default::default()
                },
            )?;
        }
        Ok(id)
    }

    /// Whether sending works, or exactly which setting is missing.
    pub fn provider_status(&self) -> ProviderStatus {
        self.settings.provider_status()
    }

    /// The sessions.
    pub fn sessions(&self) -> &Sessions {
        &self.sessions
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The model requests go to.
    pub(crate) fn model_name(&self) -> Option<String> {
        match self.settings.provider_status() {
            ProviderStatus::Ready { model, .. } => Some(model),
            ProviderStatus::Missing(_) => None,
        }
    }

    /// What appends record. A model given for one run (`--model`) is not recorded as the
    /// session's: the session keeps its own.
    pub(crate) fn meta(&self) -> AppendMeta {
        let model = if self.settings.model_from_flag {
            None
        } else {
            self.model_name()
        };
        AppendMeta {
            provider: Some(super::provider::openai::NAME.into()),
            model,
            workdir: Some(self.sessions.root().display().to_string()),
        }
    }

    pub(crate) fn check_provider(&self) -> Result<(), StartError> {
        match self.settings.provider_status() {
            ProviderStatus::Ready { .. } => Ok(()),
            ProviderStatus::Missing(m) => Err(StartError {
                code: StartCode::Config,
                message: m,
            }),
        }
    }

    pub(crate) fn lease(&self, id: &str) -> Result<Lease, StartError> {
        Lease::acquire(self.sessions.data_dir(), id).map_err(|e| match e {
            LeaseError::Busy { pid } => StartError {
                code: StartCode::Busy,
                message: match pid {
                    Some(p) => format!("session {id} is running in pid {p}"),
                    None => format!("session {id} is running in another process"),
                },
            },
            LeaseError::Io(m) => StartError {
                code: StartCode::Store,
                message: m,
            },
        })
    }

    /// Opens the session a run goes to (a turn or a plan run): resolves and leases an
    /// existing one, with the agent of its own model; or creates a new one. Fails before
    /// anything is written when no provider is configured, the session is unknown, or another
    /// process runs it.
    pub(crate) fn open(&self, target: Target) -> Result<Opened, StartError> {
        self.check_provider()?;
        match target {
            Target::Resume(key) => {
                let id = self.sessions.resolve(&key)?;
                let agent = match self.for_session(&id)? {
                    Some(a) => {
                        a.check_provider()?;
                        a
                    }
                    None => self.clone(),
                };
                let lease = agent.lease(&id)?;
                Ok(Opened { agent, id, lease })
            }
            Target::New => {
                let meta = self.meta();
                let h = self.sessions.new_session(NewSession {
                    provider: meta.provider.clone().unwrap_or_default(),
                    model: self.model_name().unwrap_or_default(),
                    workdir: meta.workdir.clone().unwrap_or_default(),
                    ..NewSession::default()
                })?;
                let lease = self.lease(&h.id)?;
                Ok(Opened {
                    agent: self.clone(),
                    id: h.id,
                    lease,
                })
            }
        }
    }

    /// Starts a turn; its events go to `sink` from the turn's thread. Fails before anything
    /// is written when no provider is configured, the session is unknown, or another process
    /// runs it.
    pub fn start(
        &self,
        target: Target,
        req: TurnRequest,
        sink: impl TurnSink,
    ) -> Result<TurnHandle, StartError> {
        if !req.images.is_empty() && req.prompt.is_none() {
            return Err(StartError {
                code: StartCode::Usage,
                message: "images go with a message".into(),
            });
        }
        let images = images::load(&req.images)?;
        let Opened { agent, id, lease } = self.open(target)?;
        let header = agent.sessions.header(&id)?;
        // Resume restores the ledger, never recreates it: a restart cannot bypass a budget.
        let mut ledger = ledger::of(&header, &agent.settings.limits);
        ledger::apply_user_limits(&mut ledger, &req.limits);
        ledger.termination = None;
        let policy = req.approval.unwrap_or(agent.settings.approval);
        agent.spawn(
            id,
            Some(lease),
            Spawn {
                ledger,
                budget: None,
                policy,
                prompt: req.prompt,
                prompt_meta: None,
                images,
                caps: agent.settings.prompt_caps.for_run(&req.limits),
            },
            Box::new(sink),
        )
    }

    /// [`Agent::start`] with a channel for the events (tests, benches).
    pub fn watch(&self, target: Target, req: TurnRequest) -> Result<Watched, StartError> {
        let (tx, events) = channel();
        let handle = self.start(target, req, tx)?;
        Ok(Watched { handle, events })
    }

    /// Runs the turn loop on its own thread in session `id` (the hook plan runs use for a
    /// drafting turn and for each step's sub-turn: same loop, their own session, ledger and
    /// first message). `lease` is released when the turn ends; `None` when the caller holds
    /// the session's lease itself.
    pub(crate) fn spawn(
        &self,
        id: String,
        lease: Option<Lease>,
        s: Spawn,
        mut sink: Box<dyn TurnSink>,
    ) -> Result<TurnHandle, StartError> {
        let mut meta = self.meta();
        let Spawn {
            ledger,
            budget,
            policy,
            prompt,
            prompt_meta,
            images,
            caps,
        } = s;
        let (commands, inner_rx, cancel) = Commands::channel();
        let sessions = self.sessions.clone();
        let settings = self.settings.clone();
        let factory = self.factory.clone();
        let ext = self.ext.clone();
        let sid = id.clone();
        let cancel2 = cancel.clone();
        let thread = std::thread::Builder::new()
            .name("turn".into())
            .spawn(move || {
                sink.event(TurnEvent::Started {
                    session_id: sid.clone(),
                });
                let provider = match factory() {
                    Ok(p) => p,
                    Err(e) => {
                        drop(lease);
                        sink.event(TurnEvent::Finished {
                            reason: FinishReason::Failed {
                                code: FailCode::Config.into(),
                                message: e.message,
                            },
                            usage: Usage::default(),
                        });
                        return;
                    }
                };
                // What the turn stores names the provider that answered.
                meta.provider = Some(provider.name().to_string());
                let t = turn::Turn {
                    sessions,
                    settings,
                    session_id: sid,
                    provider,
                    sink,
                    commands: inner_rx,
                    cancel: cancel2,
                    ledger,
                    budget,
                    policy,
                    usage: Usage::default(),
                    meta,
                    lease,
                    prompt_meta,
                    images,
                    ext,
                    caps,
                    caps_start: Default::default(),
                };
                t.run(prompt);
            })
            .map_err(thread_error)?;
        Ok(TurnHandle {
            session_id: id,
            commands,
            cancel,
            thread: Some(thread),
        })
    }

    /// Compacts a session now (`neocode compact`, the TUI's `/compact`). Blocks; fails without
    /// changing anything when the summary cannot be made or the session is running.
    pub fn compact(&self, key: &str) -> Result<Compacted, StartError> {
        self.check_provider()?;
        let id = self.sessions.resolve(key)?;
        if let Some(a) = self.for_session(&id)? {
            return a.compact(&id);
        }
        let _lease = self.lease(&id)?;
        let mut provider = (self.factory)().map_err(|e| StartError {
            code: StartCode::Config,
            message: e.message,
        })?;
        let c = compact::compact_with(
            &self.sessions,
            &id,
            provider.as_mut(),
            &CancelFlag::default(),
            &self.meta(),
        )
        .map_err(|m| StartError {
            code: StartCode::Provider,
            message: m,
        })?;
        let header = self.sessions.header(&id)?;
        let mut ledger = ledger::of(&header, &self.settings.limits);
        ledger.usage.input_tokens += c.usage.input_tokens;
        ledger.usage.output_tokens += c.usage.output_tokens;
        self.sessions.update_state(
            &id,
            &crate::session::StateUpdate {
                ledger: crate::session::Change::Set(ledger),
                ..Default::default()
            },
        )?;
        Ok(c)
    }
}

impl FinishReason {
    /// `completed`, `cancelled`, `limit_reached` or `failed`.
    pub fn as_str(&self) -> &'static str {
        match self {
            FinishReason::Completed => "completed",
            FinishReason::Cancelled => "cancelled",
            FinishReason::LimitReached(_) => "limit_reached",
            FinishReason::Failed { .. } => "failed",
        }
    }
}
