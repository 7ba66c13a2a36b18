//! What a turn knows beyond the conversation: the project's instructions and skills
//! (`project_context/`), MCP servers (`mcp/`), and the per-process bundle of them an agent
//! carries (`project.rs`).

pub(crate) mod agents;
pub mod commands;
pub(crate) mod front_matter;
pub mod lsp;
pub mod mcp;
pub(crate) mod plugins;
pub(crate) mod project;
pub(crate) mod project_context;
