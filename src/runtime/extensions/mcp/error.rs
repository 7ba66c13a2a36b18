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
    /// An HTTP server's connection was lost and could not be made again.
    #[error("MCP server `{server}` could not be reconnected: {why}")]
    NotReconnected { server: String, why: String },
}

/// Why a server did not start; the line its `failed` state shows. `tail` is the last lines
/// of a stdio server's stderr (` (stderr: ...)`), or empty.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum StartError {
    /// `cwd` names no folder.
    #[error("its working folder {0} does not exist (cwd)")]
    NoCwd(String),
    /// The program could not be started.
    #[error("cannot start `{command}`: {error}")]
    Spawn { command: String, error: String },
    /// No answer to the handshake and the tool listing in time.
    #[error("did not answer within {secs} s (startup_timeout_sec){tail}")]
    Timeout { secs: String, tail: String },
    /// The handshake was refused or broke off.
    #[error("handshake failed: {error}{tail}")]
    Handshake { error: String, tail: String },
    /// The tool listing failed.
    #[error("listing its tools failed: {error}{tail}")]
    List { error: String, tail: String },
    /// An HTTP server could not be reached or refused the streamable HTTP handshake.
    #[error("cannot reach {url}: {error}")]
    Unreachable { url: String, error: String },
    /// The HTTP client could not be set up.
    #[error("cannot set up the HTTP client: {0}")]
    Client(String),
    /// The bearer token could not be read.
    #[error("{0}")]
    Token(#[from] TokenError),
    /// An OAuth server has no usable login.
    #[error("{0}")]
    OAuth(#[from] super::oauth::OAuthError),
}

/// Why a bearer token could not be read: how it failed, never what a command printed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TokenError {
    /// `bearer_token_env` names a variable that is not set (or is empty).
    #[error("bearer_token_env names `{0}`, which is not set")]
    Unset(String),
    /// `bearer_token_command` cannot be split into words.
    #[error("bearer_token_command cannot be split into words: {0}")]
    Words(String),
    /// The command could not be started (the I/O error, in words).
    #[error("bearer_token_command cannot be started: {0}")]
    Start(String),
    /// The command exited unsuccessfully: with this status, or (`None`) by a signal.
    #[error("bearer_token_command failed with {}; run it yourself to see why", exit_how(*.0))]
    Failed(Option<i32>),
    /// The output is empty or more than one word.
    #[error(
        "bearer_token_command printed no token (its output must be the token alone, on one line)"
    )]
    NoToken,
}

fn exit_how(code: Option<i32>) -> String {
    match code {
        Some(c) => format!("exit status {c}"),
        None => "a signal".to_string(),
    }
}
