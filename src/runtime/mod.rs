//! The runtime: decides when sessions are created, appended, updated, compacted, resumed and
//! forked, and serialises writes per session. The TUI and the command line act on sessions
//! only through [`Sessions`]; neither touches the store or SQL. The agent (provider, turn
//! loop, tools, ledger) lives beside it in this folder.

pub mod agent;
pub(crate) mod cancel;
pub(crate) mod codes;
pub mod config;
pub(crate) mod cost;
pub mod dangling;
pub(crate) mod decide;
pub mod export_md;
pub mod extensions;
pub mod import;
pub(crate) mod key_command;
pub mod lease;
pub(crate) mod location;
pub(crate) mod net;
pub mod policy;
pub mod provider;
pub mod rewind;
mod session_entry;
pub(crate) mod session_report;
pub(crate) mod sessions;
pub(crate) mod shell;
pub mod tools;
pub mod trust;

pub(crate) use cancel::CancelFlag;
pub use dangling::dangling_tool_calls;
pub use decide::{Decision, SessionRequest};
pub use sessions::Sessions;

pub use location::{Location, LocationError};
