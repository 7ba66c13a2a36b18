//! Why something about the MCP servers failed: the manager as a whole, the config tables,
//! a call's arguments, reaching a server. Each reads as the one line the user sees.

/// Why the MCP servers cannot be managed at all (one server failing is a
/// [`ServerState`](super::status::ServerState), not this).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// The async runtime the servers run on cannot start.
    #[error("cannot start the MCP runtime: {0}")]
    Runtime(String),
    /// The `[mcp]` tables cannot be read.
    #[error("{0}")]
    Config(#[from] crate::runtime::config::mcp_error::ConfigFileError),
}

impl From<McpError> for String {
    fn from(e: McpError) -> String {
        e.to_string()
    }
}

/// Why a tool call's arguments cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum ArgumentsError {
    /// JSON, but not an object.
    #[error("arguments must be a JSON object")]
    NotAnObject,
    /// Not JSON.
    #[error("arguments are not valid JSON: {0}")]
    NotJson(String),
}

/// Why a server cannot be reached for a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum ConnectError {
    /// It failed to start, or its table is invalid.
    #[error("MCP server `{server}` is not available: {why}")]
    Unavailable { server: String, why: String },
    /// Its table says `enabled = false`.
    #[error("MCP server `{server}` is disabled")]
    Disabled { server: String },
    /// It died and would not start again.
    #[error("MCP server `{server}` could not be started again: {why}")]
    NotRestarted { server: String, why: String },
}
