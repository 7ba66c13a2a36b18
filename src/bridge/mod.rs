//! `neocode bridge`: other front ends (editor plugins, OpenCode-style providers, scripts)
//! drive neocode sessions over JSON lines on stdin/stdout, one turn per process if they wish
//! (seed 000 §1-2). Only the session id crosses between processes; everything else lives in
//! the workspace's store. The protocol is `docs/bridge.md`.
//!
//! The bridge is a front end beside the TUI: it reads requests, asks the runtime which
//! session a chat belongs to ([`handoff`]), runs the turn through a [`TurnRunner`] (the
//! agent), and writes the turn's events. It never opens the database itself.
mod agent;
mod core;
mod error;
pub(crate) mod handoff;
pub(crate) mod history;
mod native;
pub(crate) mod nonoka;
mod port;
pub(crate) mod protocol;
mod serve;

pub(crate) use agent::agent_runner;
pub use error::{BridgeError, ErrorCode};
pub use port::{BridgeOptions, MAX_LINE_BYTES, PreparedTurn, TurnRunner, TurnSpec};
pub use serve::serve;
pub(crate) use serve::{Dialect, serve_dialect};
