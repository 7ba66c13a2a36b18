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
