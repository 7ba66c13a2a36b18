//! One way into the agent: every front end (the TUI, `neocode run`, the bridge) submits an
//! [`Op`] to [`Agent::submit`] and gets a typed [`OpOutcome`] or [`OpError`]. What the user
//! reads about them is worded by each front end; nothing here is screen text.
//!
//! A turn's events go to the [`Sink`] given with the op, built when the turn is built from
//! the turn's own [`Commands`](super::handle::Commands) (a sink that answers approvals or cancels the turn holds them
//! from the start; nothing is patched in once the turn runs).

use super::adopt::Adopted;
use super::base::Agent;
use super::compact::Compacted;
use super::error::StartError;
use super::events::{TurnCommand, TurnEvent};
use super::handle::{Running, Sink};
use super::handle::{TurnHandle, TurnSink};
use super::plan::PlanRequest;
use super::start::{Target, TurnRequest};
use crate::runtime::config::{ApprovalPolicy, ConfigError, ProviderStatus};
use crate::runtime::extensions::project_context::skills::Skills;
use crate::session::StoreError;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What a front end asks of the agent.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Run a turn (with the caller's history to adopt first, when it carries one).
    Turn(TurnRequest),
    /// Run a turn in the session whose message is its queued message `qid` (the append that
    /// stores it marks the row delivered).
    Queued {
        /// The queued message's row.
        qid: i64,
        /// Approval policy for this turn (default: from the settings).
        approval: Option<ApprovalPolicy>,
    },
    /// Start a plan run (or resume the session's).
    Plan(PlanRequest),
    /// Steer the turn (or plan run) this process runs in the session: cancel, an approval
    /// answer, "always allow", a plan answer.
    Command(TurnCommand),
    /// Put a message in the session's queue: the process running the session sends it when
    /// its turn ends, or at the running turn's next tool boundary (`steer`).
    Queue {
        /// The message.
        text: String,
        /// Deliver at the next tool boundary instead of after the turn.
        steer: bool,
    },
    /// Summarise the session's transcript now (blocks on the provider).
    Compact,
    /// The models the configured server lists (asked once per process and server).
    ListModels,
    /// The session's model from its next turn (kept with it).
    SetModel(String),
    /// The `[providers.NAME]` profile: with a session, the session takes the profile's model
    /// too (kept with it).
    Provider(String),
    /// Open the network to the session's commands from its next turn (kept with it).
    AllowNetwork,
    /// List the skills (`None`) or activate one in the session.
    Skill(Option<String>),
}

/// What an op did.
pub enum OpOutcome {
    /// A turn or plan run started; its events go to the op's sink.
    Started(Started),
    /// The command reached the running turn.
    Sent,
    /// The message waits in the session's queue.
    Queued {
        /// The full id of the session.
        session_id: String,
        /// The queued row.
        queue_id: i64,
        /// Whether a process runs the session now (it sends the message); otherwise it waits
        /// until the session is next opened.
        running: bool,
    },
    /// The session was compacted.
    Compacted(Compacted),
    /// The models the server lists (empty: it lists none).
    Models(Vec<String>),
    /// The session uses the model from its next turn.
    ModelSet {
        /// The full id of the session.
        session_id: String,
    },
    /// The profile's agent (same extensions: MCP servers are not started again), its model
    /// (`api:model`), and the session that took it, if one was named.
    Provider {
        /// The agent on the profile: the front end uses it from now on.
        agent: Box<Agent>,
        /// The profile's model with its api.
        model: String,
        /// The session that now uses it.
        session_id: Option<String>,
    },
    /// The network is open to the session's commands from its next turn.
    NetworkAllowed {
        /// The full id of the session.
        session_id: String,
    },
    /// A skill was activated (`newly` false: it already was).
    SkillActivated {
        /// The skill.
        name: String,
        /// Whether this activated it (false: it was active already).
        newly: bool,
    },
    /// The skills there are (`Op::Skill(None)`).
    Skills(Skills),
}

/// A turn (or plan run) an op started.
pub struct Started {
    /// The running turn.
    pub handle: TurnHandle,
    /// What the caller's history did to the session (`TurnRequest::history`); `None` when
    /// the request carried none.
    pub adopted: Option<Adopted>,
}

/// Why an op failed.
#[derive(Debug, thiserror::Error)]
pub enum OpError {
    /// The turn or one-call intent could not start (its code says why).
    #[error(transparent)]
    Start(#[from] StartError),
    /// A turn command, but this process runs no turn in the session.
    #[error("no turn is running")]
    NoTurn,
    /// A turn command, but the turn has already ended.
    #[error("the turn has already ended")]
    Ended,
    /// The op needs an existing session (a queued message, a skill to activate ...).
    #[error("no session is open")]
    NoSession,
    /// The settings (or the profile) cannot be read.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The server could not list its models.
    #[error("{0}")]
    Provider(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The sink of a submitted turn: takes the turn out of [`Running`] when it finishes.
struct Tracked {
    inner: Box<dyn TurnSink>,
    running: Running,
    id: Option<String>,
    /// Raised at `Finished`: a turn that ends before it was entered is not entered.
    done: Arc<AtomicBool>,
}

impl TurnSink for Tracked {
    fn event(&mut self, event: TurnEvent) {
        match &event {
            TurnEvent::Started { session_id } if self.id.is_none() => {
                self.id = Some(session_id.clone());
            }
            TurnEvent::Finished { .. } => {
                self.done.store(true, Ordering::SeqCst);
                if let Some(id) = &self.id {
                    self.running.remove(id);
                }
            }
            _ => {}
        }
        self.inner.event(event);
    }
}

impl Agent {
    /// Carries out `op` on `target` (`Target::New` for ops that need no session: a turn in
    /// a new session, the model list, the skill list, a profile for new sessions). Ops that
    /// start a turn return at once with [`OpOutcome::Started`]; the others block until done
    /// (a front end with a render loop calls them off it).
    pub fn submit(&self, target: Target, op: Op, sink: Sink) -> Result<OpOutcome, OpError> {
        let session = |t: &Target| match t {
            Target::Resume(key) => Ok(key.clone()),
            Target::New => Err(OpError::NoSession),
        };
        match op {
            Op::Turn(req) => {
                let (sink, done) = self.tracked(sink);
                let (handle, adopted) = self.start_with(target, req, sink)?;
                Ok(self.started(handle, adopted, &done))
            }
            Op::Queued { qid, approval } => {
                let key = session(&target)?;
                let (sink, done) = self.tracked(sink);
                let handle = self.start_queued_with(&key, qid, approval, sink)?;
                Ok(self.started(handle, None, &done))
            }
            Op::Plan(req) => {
                let (sink, done) = self.tracked(sink);
                let handle = self.start_plan_with(target, req, sink)?;
                Ok(self.started(handle, None, &done))
            }
            Op::Command(cmd) => {
                let id = session(&target).map_err(|_| OpError::NoTurn)?;
                let commands = self.running.get(&id).ok_or(OpError::NoTurn)?;
                commands.send(cmd).map_err(|_| {
                    self.running.remove(&id);
                    OpError::Ended
                })?;
                Ok(OpOutcome::Sent)
            }
            Op::Queue { text, steer } => {
                let id = self.sessions.resolve(&session(&target)?)?;
                let queued = self.sessions.enqueue(&id, &text, steer)?;
                Ok(OpOutcome::Queued {
                    running: crate::runtime::lease::is_held(self.sessions.data_dir(), &id),
                    session_id: id,
                    queue_id: queued.id,
                })
            }
            Op::Compact => Ok(OpOutcome::Compacted(self.compact(&session(&target)?)?)),
            Op::ListModels => Ok(OpOutcome::Models(self.models()?)),
            Op::SetModel(name) => Ok(OpOutcome::ModelSet {
                session_id: self.set_model(&session(&target)?, &name)?,
            }),
            Op::Provider(name) => {
                let agent = self.with_profile(&name)?;
                if let ProviderStatus::Missing(m) = agent.provider_status() {
                    return Err(ConfigError::Missing(m).into());
                }
                let model = agent.api_model().unwrap_or_default();
                let session_id = match &target {
                    Target::Resume(key) => Some(agent.set_model(key, &model)?),
                    Target::New => None,
                };
                Ok(OpOutcome::Provider {
                    agent: Box::new(agent),
                    model,
                    session_id,
                })
            }
            Op::AllowNetwork => Ok(OpOutcome::NetworkAllowed {
                session_id: self.allow_network(&session(&target)?)?,
            }),
            Op::Skill(None) => Ok(OpOutcome::Skills(self.ext.skills())),
            Op::Skill(Some(name)) => {
                let newly = self.activate_skill(&session(&target)?, &name)?;
                Ok(OpOutcome::SkillActivated { name, newly })
            }
        }
    }

    /// `sink`, taking the turn out of the running ones when it finishes; the flag says it
    /// did.
    fn tracked(&self, sink: Sink) -> (Sink, Arc<AtomicBool>) {
        let running = self.running.clone();
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let sink = Sink(Box::new(move |c| {
            Box::new(Tracked {
                inner: sink.build(c),
                running,
                id: None,
                done: flag,
            })
        }));
        (sink, done)
    }

    /// Enters a started turn among the running ones (out again at once when its `Finished`
    /// already passed).
    fn started(
        &self,
        handle: TurnHandle,
        adopted: Option<Adopted>,
        done: &AtomicBool,
    ) -> OpOutcome {
        let id = &handle.session_id;
        self.running.insert(id, handle.commands.clone());
        if done.load(Ordering::SeqCst) {
            self.running.remove(id);
        }
        OpOutcome::Started(Started { handle, adopted })
    }
}
