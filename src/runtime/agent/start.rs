//! Starting a run: the [`Target`] session and [`TurnRequest`], opening (resolve, lease or
//! create) the session, and spawning the turn loop on its own thread.

use super::adopt::{Adopt, Adopted};
use super::base::{Agent, Opened};
use super::error::{StartCode, StartError, thread_error};
use super::events::{FailCode, FinishReason, TurnEvent};
use super::handle::{Commands, Sink, TurnHandle, TurnSink, Watched};
use super::{images, ledger, turn};
use crate::runtime::config::ApprovalPolicy;
use crate::runtime::lease::Lease;
use crate::session::{NewSession, RuntimeLimits, Usage};
use serde_json::Value;
use std::sync::mpsc::channel;

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
    /// The caller's whole conversation (the bridge), adopted into the session under the
    /// turn's lease before the turn runs: what the store lacks is appended, a history that
    /// parted from the store continues in a fork. Its last message is the prompt (`prompt`
    /// is not read).
    pub adopt: Option<Adopt>,
    /// Results of the session's waiting calls that the front end's own tools produced (tool
    /// messages), stored under the turn's lease before it runs
    /// ([`adopt::store_results`](super::adopt::store_results)).
    pub results: Vec<crate::session::NewMessage>,
    /// The JSON Schema the final answer must follow (`run --output-schema`): sent with every
    /// model call as the API's structured-output option, dropped (said once) where a server
    /// refuses it. neocode validates the answer itself either way.
    pub output_schema: Option<Value>,
}

#[allow(clippy::derivable_impls)]
impl Default for Target {
    fn default() -> Target {
        Target::New
    }
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
    /// The schema the final answer must follow ([`TurnRequest::output_schema`]).
    pub output_schema: Option<Value>,
}

impl Agent {
    /// Opens the session a run goes to (a turn or a plan run): resolves and leases an
    /// existing one, with the agent of its own model and profile; or creates a new one. Fails
    /// before anything is written when no provider is configured (for an existing session:
    /// neither the settings nor the profile it keeps give one), the session is unknown, or
    /// another process runs it.
    pub(crate) fn open(&self, target: Target) -> Result<Opened, StartError> {
        match target {
            Target::Resume(key) => {
                let id = self.sessions.resolve(&key)?;
                // A session that keeps a profile runs on it even when the environment that
                // configured the provider before is gone.
                let agent = self.for_session(&id)?.unwrap_or_else(|| self.clone());
                agent.check_provider()?;
                let lease = agent.lease(&id)?;
                Ok(Opened { agent, id, lease })
            }
            Target::New => {
                self.check_provider()?;
                let meta = self.meta();
                // The provider is named by the turn's first append (it is built there).
                let h = self.sessions.new_session(NewSession {
                    model: self.model_name().unwrap_or_default(),
                    workdir: meta.workdir.unwrap_or_default(),
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
    pub(crate) fn start(
        &self,
        target: Target,
        req: TurnRequest,
        sink: impl TurnSink,
    ) -> Result<TurnHandle, StartError> {
        self.start_with(target, req, Sink::to(sink)).map(|(h, _)| h)
    }

    /// [`Agent::start`] with a sink built from the turn's commands; says what adopting the
    /// request's conversation did, when it carried one.
    pub(crate) fn start_with(
        &self,
        target: Target,
        mut req: TurnRequest,
        sink: Sink,
    ) -> Result<(TurnHandle, Option<Adopted>), StartError> {
        if !req.images.is_empty() && req.prompt.is_none() {
            return Err(StartError {
                code: StartCode::Usage,
                message: "images go with a message".into(),
            });
        }
        let images = images::load(&req.images)?;
        let mut opened = self.open(target)?;
        super::adopt::store_results(&opened.agent.sessions, &opened.id, &req.results)?;
        let mut adopted = None;
        if let Some(a) = req.adopt.take() {
            let (o, done, prompt) = Agent::adopt(opened, &a)?;
            opened = o;
            req.prompt = prompt;
            adopted = Some(done);
        }
        let handle = Agent::start_opened(opened, req, images, None, sink)?;
        Ok((handle, adopted))
    }

    /// Starts a turn in session `key` whose message is queued message `qid`: under the
    /// session's lease its text becomes the prompt, and the append that stores it marks the
    /// row delivered in the same transaction (a kill before then leaves it queued). Fails
    /// (nothing written) when the message no longer waits (removed, or sent already).
    pub fn start_queued(
        &self,
        key: &str,
        qid: i64,
        approval: Option<ApprovalPolicy>,
        sink: impl TurnSink,
    ) -> Result<TurnHandle, StartError> {
        self.start_queued_with(key, qid, approval, Sink::to(sink))
    }

    /// [`Agent::start_queued`] with a sink built from the turn's commands.
    pub(crate) fn start_queued_with(
        &self,
        key: &str,
        qid: i64,
        approval: Option<ApprovalPolicy>,
        sink: Sink,
    ) -> Result<TurnHandle, StartError> {
        let opened = self.open(Target::Resume(key.to_string()))?;
        let Some(q) = opened.agent.sessions.waiting(&opened.id, qid)? else {
            return Err(StartError {
                code: StartCode::Usage,
                message: "that queued message no longer waits (removed, or sent already)".into(),
            });
        };
        let req = TurnRequest {
            prompt: Some(q.text),
            approval,
            ..TurnRequest::default()
        };
        let meta = serde_json::json!({"queued": {"id": q.id}});
        Agent::start_opened(opened, req, Vec::new(), Some(meta), sink)
    }

    /// The turn of a session [`Agent::open`] opened; `prompt_meta` is stored with its prompt.
    fn start_opened(
        opened: Opened,
        req: TurnRequest,
        images: Vec<images::Image>,
        prompt_meta: Option<Value>,
        sink: Sink,
    ) -> Result<TurnHandle, StartError> {
        let Opened { agent, id, lease } = opened;
        let header = agent.sessions.header(&id)?;
        // Resume restores the ledger, never recreates it: a restart cannot bypass a budget.
        let mut ledger = ledger::of(&header, &agent.settings.limits);
        ledger::apply_user_limits(&mut ledger, &req.limits);
        ledger.termination = None;
        let policy = req.approval.unwrap_or(agent.settings.approval);
        agent.spawn_on(
            id,
            Some(lease),
            Spawn {
                ledger,
                budget: None,
                policy,
                prompt: req.prompt,
                prompt_meta,
                images,
                caps: agent.settings.prompt_caps.for_run(&req.limits),
                output_schema: req.output_schema,
            },
            sink,
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
        sink: Box<dyn TurnSink>,
    ) -> Result<TurnHandle, StartError> {
        self.spawn_on(id, lease, s, Sink::to(sink))
    }

    /// [`Agent::spawn`] with a sink built from the turn's commands.
    pub(super) fn spawn_on(
        &self,
        id: String,
        lease: Option<Lease>,
        s: Spawn,
        sink: Sink,
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
            output_schema,
        } = s;
        let (commands, inner_rx, cancel) = Commands::channel();
        let sink = super::handle::SharedSink::new(sink.build(&commands));
        let routes = commands.routes().clone();
        let sessions = self.sessions.clone();
        let settings = self.settings.clone();
        let factory = self.factory.clone();
        let ext = self.ext.clone();
        let sid = id.clone();
        let cancel2 = cancel.clone();
        // Trust and the workspace's rules are the workspace's, also in a worktree.
        let root = self.sessions.workspace_root().to_path_buf();
        let home = self
            .settings
            .path
            .parent()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_default();
        let sid_gate = id.clone();
        let agent = self.clone();
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
                                code: FailCode::Config,
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
                    ctx: turn::TurnContext {
                        settings,
                        session_id: sid,
                        policy,
                        meta,
                        ext,
                        caps,
                        output_schema,
                        gate: crate::runtime::trust::gate(&home, &root, &sid_gate),
                        agent,
                        tools_allowed: None,
                    },
                    state: turn::TurnState::new(ledger, budget, prompt_meta, images),
                    io: turn::TurnIo {
                        sessions,
                        provider,
                        sink,
                        routes,
                        commands: inner_rx,
                        cancel: cancel2,
                        lease,
                    },
                };
                t.run(prompt);
            })
            .map_err(thread_error)?;
        Ok(TurnHandle::new(id, commands, cancel, thread))
    }
}
