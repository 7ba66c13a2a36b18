//! The command line: clap definitions, dispatch, and the one-shot commands that print.
//!
//! `main.rs` only calls [`main`]. Every command reports errors as one line
//! `neocode: <message>` on stderr with exit code 1 (runtime failure) or 2 (bad usage, unknown
//! or ambiguous id).

mod agents;
pub(crate) mod args;
mod catalog;
mod common;
mod dispatch;
mod doctor;
mod doctor_probe;
pub(crate) mod fmt;
mod hooks;
mod import_from;
mod list;
mod lsp;
mod manage;
mod mcp;
pub(crate) mod out;
mod plugin;
mod rewind;
mod rules;
pub mod run;
mod search;
mod show;
mod skill;
pub(crate) mod transfer;
mod trust;
mod value;
mod worktree;

pub use dispatch::{main, run};
