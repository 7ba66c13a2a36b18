//! Why the `[mcp_servers]` tables of a config file cannot be read: the whole file, its text,
//! or one server's timeout. Each reads as the one line the user sees.

use std::path::PathBuf;

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
pub(crate) struct BadTimeout {
    pub(crate) key: &'static str,
    pub(crate) value: f64,
}

/// Why the HTTP part of a `url` server's table is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RemoteError {
    /// A key only a stdio server uses.
    #[error("`{0}` applies only to `command` servers, not to `url` ones")]
    StdioKey(&'static str),
    /// Not an http(s) URL.
    #[error("`url` is not a usable HTTP address: {0}")]
    Url(String),
    /// A header name that HTTP does not allow.
    #[error("`headers`: `{0}` is not a valid header name")]
    HeaderName(String),
    /// A header value with characters HTTP does not allow (the value is not repeated).
    #[error("`headers`: the value of `{0}` has characters a header cannot carry")]
    HeaderValue(String),
    /// Both token sources given.
    #[error("give either `bearer_token_env` or `bearer_token_command`, not both")]
    TwoTokens,
    /// A token source that names nothing.
    #[error("`bearer_token_env` / `bearer_token_command` must not be empty")]
    EmptyTokenSource,
    /// A bearer token and an `Authorization` header.
    #[error("an `Authorization` header and a bearer token would both set Authorization; keep one")]
    TwoAuthorizations,
    /// `oauth = true` beside another way of setting Authorization.
    #[error(
        "`oauth = true` sets Authorization itself: drop the bearer token or `Authorization` header"
    )]
    OAuthAndToken,
    /// `client_id` or `scopes` without `oauth = true`.
    #[error("`{0}` applies only with `oauth = true`")]
    OAuthKey(&'static str),
}
