//! neocode: a terminal coding agent whose sessions are first-class.
//!
//! Layers, one direction only: `cli` → `tui` → `runtime` → `session`, `cli` → `bridge` →
//! `runtime` (the bridge beside the TUI, neither knowing the other), and `cli` → `runtime`.
//! `testkit` (the scripted model servers) is built for tests, benches and examples only.

pub(crate) mod acp;
pub mod bridge;
pub mod cli;
pub mod format;
pub mod runtime;
pub mod sanitize;
pub mod session;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
pub mod tui;

#[cfg(test)]
mod tests;
