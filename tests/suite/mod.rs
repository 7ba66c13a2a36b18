//! Every test, grouped by what it tests. The tools suite runs in its own binary
//! (`tests/tool_env.rs`): it puts secrets into its process environment.

mod acp;
mod agent;
mod bridge;
mod cli;
mod import;
mod store;
mod tui;
