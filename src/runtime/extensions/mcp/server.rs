//! A server's lifecycle: starting it (environment, process group, handshake, tool listing),
//! finding it dead, starting it again and stopping it.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{ClientCapabilities, Implementation, InitializeRequestParams};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{Peer, ServiceExt};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

use super::error::{ConnectError, StartError};
use super::name::tool_name;
use super::remote;
use super::status::{McpTool, ServerState, ServerStatus};
use crate::runtime::config::mcp::{Remote, ServerConfig};
use crate::runtime::tools::ToolKind;

/// Variables a server inherits from neocode's environment; everything else must be named in
/// its `env` table (Codex passes the same base).
const BASE_ENV: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR",
    "TZ",
];
/// Lines of a server's stderr kept to explain a failure.
const STDERR_LINES: usize = 20;

type Client = RunningService<RoleClient, InitializeRequestParams>;

pub(super) struct Live {
    client: Client,
    pid: Option<u32>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    stderr_task: Option<tokio::task::JoinHandle<()>>,
}

impl Live {
    /// Why the server went away: `what`, then the last lines it wrote to stderr (read to
    /// the end first, briefly, since they usually explain the exit).
    pub(super) async fn died(&mut self, what: &str) -> String {
        if let Some(t) = self.stderr_task.take() {
            let _ = tokio::time::timeout(Duration::from_millis(500), t).await;
        }
        format!("{what}{}", tail(&self.stderr))
    }

    fn is_closed(&self) -> bool {
        self.client.is_closed() || self.client.peer().is_transport_closed()
    }

    /// Ends the server: its whole process group gets SIGTERM (an `npx` wrapper's children
    /// too); dropping the client closes stdin and kills the child.
    pub(super) fn stop(self) {
        if let Some(pid) = self.pid.and_then(|p| i32::try_from(p).ok()) {
            // SAFETY: kill(2) with a negative pid signals the process group the server leads
            // (it was started with process_group(0)); no memory is touched.
            unsafe {
                libc::kill(-pid, libc::SIGTERM);
            }
        }
        drop(self.client);
    }
}

pub(super) struct Slot {
    pub(super) cfg: ServerConfig,
    pub(super) cwd: PathBuf,
    pub(super) live: tokio::sync::Mutex<Option<Live>>,
    pub(super) status: Mutex<ServerStatus>,
}

impl Slot {
    pub(super) fn status(&self) -> ServerStatus {
        self.status
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// How the server went away: a process exits, an HTTP server's connection is lost.
    pub(super) fn gone(&self) -> &'static str {
        if self.cfg.remote.is_some() {
            "lost its connection"
        } else {
            "exited"
        }
    }

    pub(super) fn set(&self, f: impl FnOnce(&mut ServerStatus)) {
        f(&mut self.status.lock().unwrap_or_else(PoisonError::into_inner));
    }
}

fn tail(stderr: &Mutex<VecDeque<String>>) -> String {
    let lines = stderr.lock().unwrap_or_else(PoisonError::into_inner);
    let last: Vec<&str> = lines
        .iter()
        .rev()
        .take(3)
        .rev()
        .map(String::as_str)
        .collect();
    if last.is_empty() {
        String::new()
    } else {
        format!(" (stderr: {})", last.join(" / "))
    }
}

/// A server whose handshake and tool listing succeeded, before its tools are named.
struct Opened {
    client: Client,
    tools: Vec<rmcp::model::Tool>,
    pid: Option<u32>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    stderr_task: Option<tokio::task::JoinHandle<()>>,
}

fn client_info() -> InitializeRequestParams {
    InitializeRequestParams::new(
        ClientCapabilities::default(),
        Implementation::new("neocode", env!("CARGO_PKG_VERSION")),
    )
}

/// Starts (or connects to) a server and lists its tools; records the outcome in the slot's
/// status.
pub(super) async fn start(slot: &Slot) -> Option<Live> {
    let opened = match &slot.cfg.remote {
        Some(remote) => open_remote(&slot.cfg, remote).await,
        None => open_stdio(slot).await,
    };
    match opened {
        Ok(o) => Some(ready(slot, o)),
        Err(why) => {
            slot.set(|s| s.state = ServerState::Failed(why.to_string()));
            None
        }
    }
}

/// Starts a stdio server: its environment, process group, handshake and tool listing.
async fn open_stdio(slot: &Slot) -> Result<Opened, StartError> {
    let cfg = &slot.cfg;
    let mut cmd = tokio::process::Command::new(&cfg.command);
    cmd.args(&cfg.args).env_clear().current_dir(&slot.cwd);
    for k in BASE_ENV {
        if let Some(v) = std::env::var_os(k) {
            cmd.env(k, v);
        }
    }
    cmd.envs(&cfg.env);
    // Its own process group, so stopping it reaches what it started (npx → node).
    cmd.process_group(0);
    #[cfg(target_os = "linux")]
    // SAFETY: only prctl(2) between fork and exec: async-signal-safe, no allocation. The
    // server dies with neocode instead of outliving it.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    if !slot.cwd.is_dir() {
        return Err(StartError::NoCwd(slot.cwd.display().to_string()));
    }
    let (proc, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| StartError::Spawn {
            command: cfg.command.clone(),
            error: e.to_string(),
        })?;
    let pid = proc.id();
    let lines: Arc<Mutex<VecDeque<String>>> = Arc::default();
    let stderr_task = stderr.map(|err| {
        let lines = lines.clone();
        tokio::spawn(async move {
            let mut rd = tokio::io::BufReader::new(err).lines();
            while let Ok(Some(l)) = rd.next_line().await {
                let mut g = lines.lock().unwrap_or_else(PoisonError::into_inner);
                if g.len() == STDERR_LINES {
                    g.pop_front();
                }
                g.push_back(l);
            }
        })
    });
    let handshake = async {
        let client = client_info().serve(proc).await.map_err(|e| e.to_string())?;
        let tools = client.list_all_tools().await.map_err(|e| e.to_string());
        Ok((client, tools))
    };
    let (client, tools) = match tokio::time::timeout(cfg.startup_timeout, handshake).await {
        Err(_) => {
            kill_group(pid);
            return Err(StartError::Timeout {
                secs: secs(cfg.startup_timeout),
                tail: tail(&lines),
            });
        }
        Ok(Err(error)) => {
            kill_group(pid);
            return Err(StartError::Handshake {
                error,
                tail: tail(&lines),
            });
        }
        Ok(Ok((client, Err(error)))) => {
            let live = Live {
                client,
                pid,
                stderr: lines.clone(),
                stderr_task: None,
            };
            live.stop();
            return Err(StartError::List {
                error,
                tail: tail(&lines),
            });
        }
        Ok(Ok((client, Ok(tools)))) => (client, tools),
    };
    Ok(Opened {
        client,
        tools,
        pid,
        stderr: lines,
        stderr_task,
    })
}

/// Connects to an HTTP server: its token, the streamable HTTP handshake, the tool listing.
async fn open_remote(cfg: &ServerConfig, remote: &Remote) -> Result<Opened, StartError> {
    let url = remote.shown_url();
    let handshake = async {
        let transport = remote::transport(&cfg.name, remote).await?;
        let client = match client_info().serve(transport).await {
            Ok(c) => c,
            Err(e) => {
                let error = remote::why_unreachable(&cfg.name, remote, &e.to_string()).await;
                return Err(StartError::Unreachable {
                    url: url.clone(),
                    error,
                });
            }
        };
        match client.list_all_tools().await {
            Ok(tools) => Ok((client, tools)),
            Err(e) => Err(StartError::List {
                error: remote::cause(&e),
                tail: String::new(),
            }),
        }
    };
    let (client, tools) = match tokio::time::timeout(cfg.startup_timeout, handshake).await {
        Err(_) => {
            return Err(StartError::Timeout {
                secs: secs(cfg.startup_timeout),
                tail: String::new(),
            });
        }
        Ok(r) => r?,
    };
    Ok(Opened {
        client,
        tools,
        pid: None,
        stderr: Arc::default(),
        stderr_task: None,
    })
}

/// Names the tools of a server that answered and records it ready.
fn ready(slot: &Slot, opened: Opened) -> Live {
    let cfg = &slot.cfg;
    let Opened {
        client,
        tools,
        pid,
        stderr,
        stderr_task,
    } = opened;
    let peer = client.peer().peer_info();
    let mut taken: Vec<String> = Vec::new();
    let tools: Vec<McpTool> = tools
        .into_iter()
        .filter(|t| cfg.offers(&t.name))
        .map(|t| {
            let name = tool_name(&cfg.name, &t.name, &taken);
            taken.push(name.clone());
            let read_only = t
                .annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false);
            let mut parameters = Value::Object((*t.input_schema).clone());
            if parameters.get("type").is_none() {
                parameters["type"] = json!("object");
            }
            McpTool {
                name,
                server: cfg.name.clone(),
                description: t
                    .description
                    .as_deref()
                    .or(t.title.as_deref())
                    .unwrap_or(&t.name)
                    .to_string(),
                tool: t.name.to_string(),
                parameters,
                kind: if read_only {
                    ToolKind::Read
                } else {
                    ToolKind::Command
                },
            }
        })
        .collect();
    slot.set(|s| {
        s.state = ServerState::Ready;
        s.tools = tools;
        s.server_info = peer
            .as_ref()
            .and_then(|p| p.server_info.as_ref())
            .map(|i| format!("{} {}", i.name, i.version));
        s.instructions = peer.as_ref().and_then(|p| p.instructions.clone());
    });
    Live {
        client,
        pid,
        stderr,
        stderr_task,
    }
}

fn kill_group(pid: Option<u32>) {
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        // SAFETY: signals the process group the server leads; no memory is touched.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

pub(super) fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}")
    } else {
        format!("{s}")
    }
}

/// The peer of a running server, starting it (again) if it is not running. A server found
/// dead is recorded as crashed before it is started again.
pub(super) async fn connect(slot: &Slot) -> Result<Peer<RoleClient>, ConnectError> {
    let mut live = slot.live.lock().await;
    if live.as_ref().is_some_and(Live::is_closed)
        && let Some(mut l) = live.take()
    {
        let why = l.died(slot.gone()).await;
        l.stop();
        slot.set(|s| s.state = ServerState::Crashed(why));
    }
    if live.is_none() {
        let state = slot.status().state;
        match state {
            ServerState::Crashed(_) => slot.set(|s| s.restarts += 1),
            ServerState::NotStarted => {}
            ServerState::Ready => {}
            ServerState::Failed(why) | ServerState::Invalid(why) => {
                return Err(ConnectError::Unavailable {
                    server: slot.cfg.name.clone(),
                    why,
                });
            }
            ServerState::Disabled => {
                return Err(ConnectError::Disabled {
                    server: slot.cfg.name.clone(),
                });
            }
        }
        *live = start(slot).await;
    }
    match live.as_ref() {
        Some(l) => Ok(l.client.peer().clone()),
        None => {
            let server = slot.cfg.name.clone();
            let why = slot
                .status()
                .state
                .reason()
                .unwrap_or("unknown reason")
                .to_string();
            Err(if slot.cfg.remote.is_some() {
                ConnectError::NotReconnected { server, why }
            } else {
                ConnectError::NotRestarted { server, why }
            })
        }
    }
}
