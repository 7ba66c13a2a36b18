//! Why something about the MCP servers failed: the manager as a whole, the config tables,
//! a call's arguments, reaching a server. Each reads as the one line the user sees.

use std::path::PathBuf;

/// Why the MCP servers cannot be managed at all (one server failing is a
/// [`ServerState`](super::status::ServerState), not this).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// The async runtime the servers run on cannot start.
    #[error("cannot start the MCP runtime: {0}")]
    Runtime(String),
    /// The `[mcp]` tables cannot be read.
    #[error("{0}")]
    Config(#[from] ConfigFileError),
}

impl From<McpError> for String {
    fn from(e: McpError) -> String {
        e.to_string()
    }
}

/// Why the `[mcp_servers]` part of a config file's text cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServersError {
    /// The text is not TOML (the parser's first line, with the position).
    #[error("{0}")]
    Toml(String),
    /// `mcp_servers` is a value, not a table of servers.
    #[error("`mcp_servers` must be a table of servers ([mcp_servers.NAME])")]
    NotATable,
}

/// Why `<home>/config.toml` gave no server list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigFileError {
    /// The file exists but cannot be read.
    #[error("cannot read {}: {message}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error, worded.
        message: String,
    },
    /// The file's text is wrong.
    #[error("{}: {source}", path.display())]
    Servers {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        source: ServersError,
    },
}

/// A timeout of a server table out of range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("`{key}` must be between 0 and 86400 seconds, not {value}")]
pub(super) struct BadTimeout {
    pub(super) key: &'static str,
    pub(super) value: f64,
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
