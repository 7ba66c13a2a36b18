//! Language servers over stdio (the Language Server Protocol, JSON-RPC with
//! `Content-Length` framing; protocol types from `lsp-types`). After `write_file` /
//! `edit_file` (and a command that changed files) the changed files a server serves are
//! synced with it and, within a short bounded wait, their new errors and warnings are
//! appended to the tool result; `definition`, `references`, `hover` and `symbols` ask the
//! same servers. Servers start on demand from a table (file extensions → command, root
//! markers; `[lsp]` in `config.toml`), stay warm for the process and are shut down with it.
//! A workspace whose files no server serves pays nothing: no process, no wait.

mod client;
mod error;
mod framing;
mod manager;
mod navigate;
mod report;
mod status;
mod uri;

// The settings are plain data of the configuration layer.
pub use crate::runtime::config::lsp::{LspConfigError, LspServerConfig, LspSettings};
pub use error::{FrameError, LspError};
pub use manager::LspManager;
pub use navigate::{NAV_TOOLS, NavError, NavTool, schema as nav_schema};
pub use report::{Diagnosed, DiagnosticItem, DiagnosticReport};
pub use status::{LspState, LspStatus};
