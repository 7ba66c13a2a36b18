//! What the app asks the outside world to do. [`App`](crate::tui::app::App) never does IO: its
//! transitions return effects as data, and the event loop (or a test) carries them out and
//! feeds the answers back (atuin's `fsm/effects.rs` is the model).

use crate::runtime::agent::TurnCommand;
use crate::runtime::config::ApprovalPolicy;
use crate::tui::worker::Job;

/// One thing to do outside the app.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Storage work for the worker thread; its answer comes back as a
    /// [`Done`](crate::tui::worker::Done).
    Storage(Job),
    /// Something for the agent; what happens comes back as
    /// [`TurnEvent`](crate::runtime::agent::TurnEvent)s.
    Turn(TurnEffect),
    /// Write this escape sequence to the terminal as it is: OSC 52, which puts text on the
    /// clipboard (built by [`crate::tui::clipboard::osc52`] from neutralised text).
    Clipboard(String),
}

/// What the app asks of the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnEffect {
    /// Start a turn: in this session (`None`: a new one), with the user's message (`None`:
    /// continue what is pending, e.g. rerun interrupted calls), under this approval policy.
    Start {
        session_id: Option<String>,
        text: Option<String>,
        /// Image files the message carries (the runtime stores them with it).
        images: Vec<std::path::PathBuf>,
        approval: ApprovalPolicy,
    },
    /// Start a turn in session `session_id` with its queued message `qid` (whose `text` the
    /// live cell shows): the runtime marks the row delivered under the session's lease.
    StartQueued {
        session_id: String,
        qid: i64,
        text: String,
        approval: ApprovalPolicy,
    },
    /// Start a plan run (`/plan GOAL`): in this session (`None`: a new one), the model drafts
    /// a plan for the goal (`None`: resume the session's unfinished plan run) and proposes it.
    /// `width` steps of a layer may run at once (`--width N`); `retry_failed` runs failed
    /// steps again on resume (`--retry-failed`), as `neocode run --plan` does.
    Plan {
        session_id: Option<String>,
        goal: Option<String>,
        approval: ApprovalPolicy,
        width: usize,
        retry_failed: bool,
    },
    /// Steer the running turn: approve or deny a waiting call, answer a proposed plan, or cancel.
    Command(TurnCommand),
    /// A command to one sub-agent of the running turn, by its session (cancel it alone).
    CommandTo {
        session_id: String,
        cmd: TurnCommand,
    },
    /// Summarise the session's transcript now (`/compact`); the outcome comes back as a
    /// [`Outcome`].
    Compact { session_id: String },
    /// Use this model for the session's turns from now on (`/model NAME`): stored with the
    /// session (outcome: a [`Outcome`]); with no
    /// session (a new one being written), the model of the new sessions this TUI starts.
    Model {
        session_id: Option<String>,
        name: String,
    },
    /// List the models the server offers (`/model` without a name); the outcome comes back
    /// as an [`Outcome`] whose text is the names, one a line.
    Models,
    /// Switch to the `[providers.NAME]` profile for the next turns (`/provider NAME`; the
    /// open session, if any, takes the profile's model, kept with it), or list the profiles
    /// (`name: None`); the outcome comes back as an [`Outcome`].
    Provider {
        session_id: Option<String>,
        name: Option<String>,
    },
    /// Open the network to this session's commands from its next turn (`/approve network`);
    /// the outcome comes back as a [`Outcome`].
    AllowNetwork { session_id: String },
    /// List the skills (`name: None`, `/skill`) or activate one in the session (`/skill
    /// NAME`); the outcome comes back as a [`Outcome`].
    Skill {
        session_id: Option<String>,
        name: Option<String>,
    },
    /// Read every permission rule in force for the session (`/permissions`; `None`: a new
    /// session, the files' only); the answer comes back as
    /// [`Msg::Rules`](crate::tui::Msg::Rules).
    Permissions { session_id: Option<String> },
    /// Take `grant` out of the session's own rules (`/permissions`, `d`); the outcome comes
    /// back as an [`Outcome`].
    RevokeGrant { session_id: String, grant: String },
}

/// A one-call intent of the agent, run off the loop: `/compact`, `/approve network`,
/// `/skill`, `/model NAME`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    /// Compact the session's transcript now.
    Compact,
    /// Open the network to the session's commands.
    Network,
    /// List or activate skills.
    Skill,
    /// Switch the session's model.
    Model,
    /// List the server's models (the names, one a line).
    Models,
    /// List or switch the provider profiles.
    Provider,
    /// Revoke one of the session's own rules.
    Revoke,
}

/// What an [`Intent`] came to: what to say, or why it could not be done (both in words).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// What was asked.
    pub intent: Intent,
    /// What to say on the status line, or the error.
    pub result: Result<String, crate::tui::error::Failure>,
}

impl From<Job> for Effect {
    fn from(job: Job) -> Effect {
        Effect::Storage(job)
    }
}
