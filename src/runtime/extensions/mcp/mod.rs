//! MCP servers over stdio and streamable HTTP (`remote.rs`), through the official Rust SDK
//! (`rmcp`). Servers start lazily (the
//! first time their tools are wanted) and in parallel; their tools are offered to the model as
//! `mcp__<server>__<tool>`; a call has a time limit, honours the turn's cancel flag, and comes
//! back as text, images and an error flag. A server that dies (an HTTP server whose connection
//! is lost) is reported and started again (reconnected) once on its next use. The child's environment is a minimal base plus the configured `env`: no
//! provider key or other secret of neocode's environment reaches it.
//!
//! tokio stays inside: the manager owns a small runtime, and its methods are blocking calls
//! that may be made from any thread, including from inside another runtime's blocking task.

mod auth;
mod call;
mod error;
mod name;
pub mod oauth;
mod remote;
mod server;
mod status;

use std::future::Future;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;

pub use crate::runtime::config::mcp::{OAuthSettings, ServerConfig};
pub(crate) use error::McpError;
pub use status::{
    McpImage, McpOutput, McpTool, ServerState, ServerStatus, by_name, problems, status_lines,
};

use crate::runtime::cancel::CancelFlag;
use call::{call, parse_arguments};
use server::{Slot, start};

/// The configured MCP servers of one neocode process.
pub struct McpManager {
    rt: Option<tokio::runtime::Runtime>,
    slots: Vec<Arc<Slot>>,
    reported: Mutex<Vec<(String, String)>>,
}

impl std::fmt::Debug for McpManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpManager")
            .field("servers", &self.statuses())
            .finish()
    }
}

impl McpManager {
    /// A manager for `servers`; nothing starts yet. Servers run in `workdir` (the workspace
    /// root) unless their table says `cwd` (relative to `workdir`).
    pub fn new(servers: Vec<ServerConfig>, workdir: &Path) -> Result<McpManager, McpError> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("neocode-mcp")
            .enable_all()
            .build()
            .map_err(|e| McpError::Runtime(e.to_string()))?;
        let slots = servers
            .into_iter()
            .map(|cfg| {
                let state = match (&cfg.invalid, cfg.enabled) {
                    (Some(why), _) => ServerState::Invalid(why.clone()),
                    (None, false) => ServerState::Disabled,
                    (None, true) => ServerState::NotStarted,
                };
                let command = match &cfg.remote {
                    Some(r) => r.shown_url(),
                    None => std::iter::once(cfg.command.as_str())
                        .chain(cfg.args.iter().map(String::as_str))
                        .collect::<Vec<_>>()
                        .join(" "),
                };
                Arc::new(Slot {
                    cwd: cfg
                        .cwd
                        .as_ref()
                        .map_or_else(|| workdir.to_path_buf(), |c| workdir.join(c)),
                    status: Mutex::new(ServerStatus {
                        name: cfg.name.clone(),
                        command,
                        transport: cfg.transport(),
                        state,
                        tools: Vec::new(),
                        server_info: None,
                        instructions: None,
                        restarts: 0,
                    }),
                    live: tokio::sync::Mutex::new(None),
                    cfg,
                })
            })
            .collect();
        Ok(McpManager {
            rt: Some(rt),
            slots,
            reported: Mutex::default(),
        })
    }

    /// Every server's state and tools, without waiting for anything.
    pub fn statuses(&self) -> Vec<ServerStatus> {
        self.slots.iter().map(|s| s.status()).collect()
    }

    /// Servers in trouble (invalid, failed, crashed) not yet reported with the same reason:
    /// each problem is told once, not on every turn.
    pub fn unreported_problems(&self) -> Vec<(String, String)> {
        let mut seen = self.reported.lock().unwrap_or_else(PoisonError::into_inner);
        problems(&self.statuses())
            .into_iter()
            .filter(|p| {
                let new = !seen.contains(p);
                if new {
                    seen.push(p.clone());
                }
                new
            })
            .collect()
    }

    /// Starts every server that has not been started yet, all at once, and waits until each
    /// is ready or has failed (each within its startup timeout).
    pub(crate) fn start_all(&self) {
        let pending: Vec<Arc<Slot>> = self
            .slots
            .iter()
            .filter(|s| s.status().state == ServerState::NotStarted)
            .cloned()
            .collect();
        if pending.is_empty() {
            return;
        }
        self.block(async move {
            let starts = pending.into_iter().map(|slot| async move {
                let mut live = slot.live.lock().await;
                if live.is_none() && slot.status().state == ServerState::NotStarted {
                    *live = start(&slot).await;
                }
            });
            futures_util::future::join_all(starts).await;
        });
        // A start that could not run leaves its servers NotStarted: the next call tries again.
    }

    /// The tools to offer the model: servers are started first if needed. Tools of a crashed
    /// server stay listed (a call starts it again); failed servers offer nothing.
    pub fn tools(&self) -> Vec<McpTool> {
        self.start_all();
        self.slots
            .iter()
            .flat_map(|s| {
                let st = s.status();
                match st.state {
                    ServerState::Ready | ServerState::Crashed(_) => st.tools,
                    _ => Vec::new(),
                }
            })
            .collect()
    }

    /// The tool called `name` (`mcp__...`), among the tools listed so far.
    pub(crate) fn tool(&self, name: &str) -> Option<McpTool> {
        self.slots
            .iter()
            .find_map(|s| s.status().tools.into_iter().find(|t| t.name == name))
    }

    /// Calls `name` with `arguments` (a JSON object, or empty). Waits at most the server's
    /// `tool_timeout`; a raised `cancel` ends the wait. Every failure is an error result.
    pub fn call(&self, name: &str, arguments: &str, cancel: &CancelFlag) -> McpOutput {
        let Some(tool) = self.tool(name) else {
            return McpOutput::error(format!("unknown tool `{name}`"), Value::Null);
        };
        let Some(slot) = self
            .slots
            .iter()
            .find(|s| s.cfg.name == tool.server)
            .cloned()
        else {
            return McpOutput::error(format!("unknown tool `{name}`"), Value::Null);
        };
        let args = match parse_arguments(arguments) {
            Ok(a) => a,
            Err(e) => return McpOutput::error(e.to_string(), Value::Null),
        };
        let cancel = cancel.clone();
        self.block(async move { call(slot, tool, args, cancel).await })
            .unwrap_or_else(|| {
                McpOutput::error(
                    format!("the MCP call `{name}` stopped: its task ended unexpectedly"),
                    Value::Null,
                )
            })
    }

    /// Runs `fut` on the manager's runtime and waits for it; `None` if the runtime is gone
    /// (only while dropping) or the task panicked.
    fn block<T: Send + 'static>(&self, fut: impl Future<Output = T> + Send + 'static) -> Option<T> {
        let (tx, rx) = std::sync::mpsc::channel();
        let rt = self.rt.as_ref()?;
        rt.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv().ok()
    }
}

impl Drop for McpManager {
    fn drop(&mut self) {
        let Some(rt) = self.rt.take() else { return };
        {
            // Dropping a client spawns its child's cleanup on the runtime: do it inside.
            let _g = rt.enter();
            for slot in &self.slots {
                if let Ok(mut live) = slot.live.try_lock()
                    && let Some(l) = live.take()
                {
                    l.stop();
                }
            }
        }
        if tokio::runtime::Handle::try_current().is_ok() {
            // Blocking on a shutdown inside another runtime would panic.
            rt.shutdown_background();
        } else {
            rt.shutdown_timeout(Duration::from_secs(1));
        }
    }
}
