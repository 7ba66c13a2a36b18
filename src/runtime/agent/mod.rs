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

pub mod adopt;
mod base;
mod child_start;
pub(crate) mod compact;
mod error;
mod events;
mod handle;
pub(crate) mod images;
pub(crate) mod ledger;
mod op;
pub(crate) mod plan;
mod session_ops;
mod start;
mod subagent;
mod turn;
mod turn_gate;
pub(crate) mod window;
pub(crate) mod worktrees;

pub use crate::runtime::codes::WarningCode;
pub use crate::runtime::lease::{Lease, LeaseError};
pub use crate::runtime::policy::gate::{Permission, RuleScope};
pub use base::{Agent, ProviderFactory, session_model};
pub use error::{StartCode, StartError};
pub use events::{FailCode, FinishReason, TurnCommand, TurnEvent};
pub use handle::Sink;
pub use handle::{Commands, TurnHandle, TurnSink, Watched};
pub use op::{Op, OpError, OpOutcome, Started};
pub use plan::{PlanRequest, plan_goal};
pub use session_ops::RulesInForce;
pub use start::{Target, TurnRequest};
pub(crate) use subagent::worktree;
