//! MCP servers over stdio, through the official Rust SDK (`rmcp`). Servers start lazily (the
//! first time their tools are wanted) and in parallel; their tools are offered to the model as
//! `mcp__<server>__<tool>`; a call has a time limit, honours the turn's cancel flag, and comes
//! back as text, images and an error flag. A server that dies is reported and started again on
//! its next use. The child's environment is a minimal base plus the configured `env`: no
//! provider key or other secret of neocode's environment reaches it.
//!
//! tokio stays inside: the manager owns a small runtime, and its methods are blocking calls
//! that may be made from any thread, including from inside another runtime's blocking task.

pub mod config;

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ContentBlock, Implementation,
    InitializeRequestParams, ResourceContents,
};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::{Peer, ServiceExt};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::io::AsyncBufReadExt;

pub use config::ServerConfig;

use super::cancel::CancelFlag;
use super::tools::ToolKind;

/// Variables a server inherits from neocode's environment; everything else must be named in
/// its `env` table (Codex passes the same base).
const BASE_ENV: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR",
    "TZ",
];
/// Bytes of a call's text kept for the model.
const TEXT_CAP: usize = 64 * 1024;
/// Bytes of one image kept (larger ones are refused: the model could not use them anyway).
const IMAGE_CAP: usize = 10 * 1024 * 1024;
/// Lines of a server's stderr kept to explain a failure.
const STDERR_LINES: usize = 20;
/// Longest function name providers accept.
const NAME_MAX: usize = 64;

/// A tool of an MCP server as the model sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// `mcp__<server>__<tool>` (characters other than letters, digits, `_`, `-` become `_`;
    /// cut with a hash suffix past 64 characters).
    pub name: String,
    /// The server's name.
    pub server: String,
    /// The tool's name on the server.
    pub tool: String,
    /// What the model reads.
    pub description: String,
    /// JSON schema of the arguments.
    pub parameters: Value,
    /// [`ToolKind::Read`] only when the server annotates `readOnlyHint: true`; anything else
    /// may change the world outside the workspace, so it asks like a command does.
    pub kind: ToolKind,
}

/// Where a server stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    /// Configured, not started yet (servers start when their tools are first wanted).
    NotStarted,
    /// `enabled = false`.
    Disabled,
    /// The config table is wrong; the reason.
    Invalid(String),
    /// Running, tools listed.
    Ready,
    /// Could not start (spawn error, no answer within the startup timeout, refused the
    /// handshake); the reason. Not retried automatically.
    Failed(String),
    /// Died after starting; the reason. Started again on its next use.
    Crashed(String),
}

impl ServerState {
    /// One word for tables.
    pub fn label(&self) -> &'static str {
        match self {
            ServerState::NotStarted => "not started",
            ServerState::Disabled => "disabled",
            ServerState::Invalid(_) => "invalid",
            ServerState::Ready => "ready",
            ServerState::Failed(_) => "failed",
            ServerState::Crashed(_) => "crashed",
        }
    }

    /// The reason, for the states that have one.
    pub fn reason(&self) -> Option<&str> {
        match self {
            ServerState::Invalid(r) | ServerState::Failed(r) | ServerState::Crashed(r) => Some(r),
            ServerState::NotStarted | ServerState::Disabled | ServerState::Ready => None,
        }
    }

    /// Whether the status line should show the server as broken.
    pub fn is_problem(&self) -> bool {
        matches!(
            self,
            ServerState::Invalid(_) | ServerState::Failed(_) | ServerState::Crashed(_)
        )
    }
}

/// A server's state and tools, as the views show them.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerStatus {
    /// The config table's name.
    pub name: String,
    /// The command line, for people.
    pub command: String,
    /// Current state.
    pub state: ServerState,
    /// Tools offered (the last list known, also while crashed).
    pub tools: Vec<McpTool>,
    /// `name version` the server reported.
    pub server_info: Option<String>,
    /// Instructions the server sent with its handshake.
    pub instructions: Option<String>,
    /// Times it was started again after a crash.
    pub restarts: u32,
}

/// An image a tool returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpImage {
    /// e.g. `image/png`.
    pub mime_type: String,
    /// Decoded bytes.
    pub data: Vec<u8>,
}

/// What a call returned.
#[derive(Debug, Clone, PartialEq)]
pub struct McpOutput {
    /// Text for the model (images appear as a `[image: ...]` line).
    pub text: String,
    /// Images, to be stored as assets.
    pub images: Vec<McpImage>,
    /// The server said the call failed, or the call could not be made.
    pub is_error: bool,
    /// Server, tool, duration, for the views.
    pub metadata: Value,
}

impl McpOutput {
    fn error(text: impl Into<String>, metadata: Value) -> McpOutput {
        McpOutput {
            text: text.into(),
            images: Vec::new(),
            is_error: true,
            metadata,
        }
    }
}

type Client = RunningService<RoleClient, InitializeRequestParams>;

struct Live {
    client: Client,
    pid: Option<u32>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    stderr_task: Option<tokio::task::JoinHandle<()>>,
}

impl Live {
    /// Why the server went away: `what`, then the last lines it wrote to stderr (read to
    /// the end first, briefly, since they usually explain the exit).
    async fn died(&mut self, what: &str) -> String {
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
    fn stop(self) {
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

struct Slot {
    cfg: ServerConfig,
    cwd: PathBuf,
    live: tokio::sync::Mutex<Option<Live>>,
    status: Mutex<ServerStatus>,
}

impl Slot {
    fn status(&self) -> ServerStatus {
        self.status
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn set(&self, f: impl FnOnce(&mut ServerStatus)) {
        f(&mut self.status.lock().unwrap_or_else(|p| p.into_inner()));
    }
}

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

/// Why the MCP servers cannot be managed at all (one server failing is a
/// [`ServerState`], not this).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// The async runtime the servers run on cannot start.
    #[error("cannot start the MCP runtime: {0}")]
    Runtime(String),
    /// The `[mcp]` tables cannot be read.
    #[error("{0}")]
    Config(String),
}

impl From<McpError> for String {
    fn from(e: McpError) -> String {
        e.to_string()
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
                let command = std::iter::once(cfg.command.as_str())
                    .chain(cfg.args.iter().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join(" ");
                Arc::new(Slot {
                    cwd: cfg
                        .cwd
                        .as_ref()
                        .map_or_else(|| workdir.to_path_buf(), |c| workdir.join(c)),
                    status: Mutex::new(ServerStatus {
                        name: cfg.name.clone(),
                        command,
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

    /// A manager for the servers of `<home>/config.toml`.
    pub fn from_home(home: &Path, workdir: &Path) -> Result<McpManager, McpError> {
        McpManager::new(config::load(home).map_err(McpError::Config)?, workdir)
    }

    /// Whether any server is configured.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Every server's state and tools, without waiting for anything.
    pub fn statuses(&self) -> Vec<ServerStatus> {
        self.slots.iter().map(|s| s.status()).collect()
    }

    /// Servers in trouble (invalid, failed, crashed) not yet reported with the same reason:
    /// each problem is told once, not on every turn.
    pub fn unreported_problems(&self) -> Vec<(String, String)> {
        let mut seen = self.reported.lock().unwrap_or_else(|p| p.into_inner());
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
    pub fn start_all(&self) {
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
    pub fn tool(&self, name: &str) -> Option<McpTool> {
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
            Err(e) => return McpOutput::error(e, Value::Null),
        };
        let cancel = cancel.clone();
        self.block(async move { call(slot, tool, args, cancel).await })
    }

    fn block<T: Send + 'static>(&self, fut: impl Future<Output = T> + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        let rt = self.rt.as_ref().expect("runtime lives until drop");
        rt.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv().expect("MCP task panicked")
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

fn parse_arguments(arguments: &str) -> Result<Option<serde_json::Map<String, Value>>, String> {
    if arguments.trim().is_empty() {
        return Ok(None);
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(m)) => Ok(Some(m)),
        Ok(Value::Null) => Ok(None),
        Ok(_) => Err("arguments must be a JSON object".into()),
        Err(e) => Err(format!("arguments are not valid JSON: {e}")),
    }
}

fn tail(stderr: &Mutex<VecDeque<String>>) -> String {
    let lines = stderr.lock().unwrap_or_else(|p| p.into_inner());
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

/// Starts a server and lists its tools; records the outcome in the slot's status.
async fn start(slot: &Slot) -> Option<Live> {
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
    let fail = |why: String| {
        slot.set(|s| s.state = ServerState::Failed(why));
        None
    };
    if !slot.cwd.is_dir() {
        return fail(format!(
            "its working folder {} does not exist (cwd)",
            slot.cwd.display()
        ));
    }
    let (proc, stderr) = match TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(p) => p,
        Err(e) => return fail(format!("cannot start `{}`: {e}", cfg.command)),
    };
    let pid = proc.id();
    let lines: Arc<Mutex<VecDeque<String>>> = Arc::default();
    let stderr_task = stderr.map(|err| {
        let lines = lines.clone();
        tokio::spawn(async move {
            let mut rd = tokio::io::BufReader::new(err).lines();
            while let Ok(Some(l)) = rd.next_line().await {
                let mut g = lines.lock().unwrap_or_else(|p| p.into_inner());
                if g.len() == STDERR_LINES {
                    g.pop_front();
                }
                g.push_back(l);
            }
        })
    });
    let info = InitializeRequestParams::new(
        ClientCapabilities::default(),
        Implementation::new("neocode", env!("CARGO_PKG_VERSION")),
    );
    let handshake = async {
        let client = info.serve(proc).await.map_err(|e| e.to_string())?;
        let tools = client.list_all_tools().await.map_err(|e| e.to_string());
        Ok::<_, String>((client, tools))
    };
    let (client, tools) = match tokio::time::timeout(cfg.startup_timeout, handshake).await {
        Err(_) => {
            kill_group(pid);
            return fail(format!(
                "did not answer within {} s (startup_timeout_sec){}",
                secs(cfg.startup_timeout),
                tail(&lines)
            ));
        }
        Ok(Err(e)) => {
            kill_group(pid);
            return fail(format!("handshake failed: {e}{}", tail(&lines)));
        }
        Ok(Ok((client, Err(e)))) => {
            let live = Live {
                client,
                pid,
                stderr: lines.clone(),
                stderr_task: None,
            };
            live.stop();
            return fail(format!("listing its tools failed: {e}{}", tail(&lines)));
        }
        Ok(Ok((client, Ok(tools)))) => (client, tools),
    };
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
    Some(Live {
        client,
        pid,
        stderr: lines,
        stderr_task,
    })
}

fn kill_group(pid: Option<u32>) {
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        // SAFETY: signals the process group the server leads; no memory is touched.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}")
    } else {
        format!("{s}")
    }
}

/// The peer of a running server, starting it (again) if it is not running. A server found
/// dead is recorded as crashed before it is started again.
async fn connect(slot: &Slot) -> Result<Peer<RoleClient>, String> {
    let mut live = slot.live.lock().await;
    if live.as_ref().is_some_and(Live::is_closed)
        && let Some(mut l) = live.take()
    {
        let why = l.died("exited").await;
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
                return Err(format!(
                    "MCP server `{}` is not available: {why}",
                    slot.cfg.name
                ));
            }
            ServerState::Disabled => {
                return Err(format!("MCP server `{}` is disabled", slot.cfg.name));
            }
        }
        *live = start(slot).await;
    }
    match live.as_ref() {
        Some(l) => Ok(l.client.peer().clone()),
        None => Err(format!(
            "MCP server `{}` could not be started again: {}",
            slot.cfg.name,
            slot.status().state.reason().unwrap_or("unknown reason")
        )),
    }
}

async fn call(
    slot: Arc<Slot>,
    tool: McpTool,
    args: Option<serde_json::Map<String, Value>>,
    cancel: CancelFlag,
) -> McpOutput {
    let started = Instant::now();
    let meta = |ok: bool| {
        json!({
            "mcp_server": tool.server,
            "mcp_tool": tool.tool,
            "duration_ms": started.elapsed().as_millis() as u64,
            "ok": ok,
        })
    };
    let peer = match connect(&slot).await {
        Ok(p) => p,
        Err(e) => return McpOutput::error(e, meta(false)),
    };
    let mut params = CallToolRequestParams::new(tool.tool.clone());
    params.arguments = args;
    let timeout = slot.cfg.tool_timeout;
    let cancelled = async {
        while !cancel.is_cancelled() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    // Dropping the call future on timeout or cancel makes rmcp send `notifications/cancelled`.
    let outcome = tokio::select! {
        r = tokio::time::timeout(timeout, peer.call_tool(params)) => r,
        () = cancelled => {
            return McpOutput::error("cancelled by the user", meta(false));
        }
    };
    match outcome {
        Err(_) => McpOutput::error(
            format!(
                "`{}` timed out after {} s (tool_timeout_sec of server `{}`)",
                tool.name,
                secs(timeout),
                tool.server
            ),
            meta(false),
        ),
        Ok(Ok(result)) => {
            let mut out = convert(&result.content, result.structured_content.as_ref());
            out.is_error = result.is_error.unwrap_or(false);
            out.metadata = meta(!out.is_error);
            out
        }
        Ok(Err(ServiceError::McpError(e))) => McpOutput::error(
            format!(
                "MCP server `{}` refused the call: {}",
                tool.server, e.message
            ),
            meta(false),
        ),
        Ok(Err(e))
            if !matches!(
                e,
                ServiceError::TransportClosed | ServiceError::TransportSend(_)
            ) && !peer.is_transport_closed() =>
        {
            McpOutput::error(
                format!("the call to MCP server `{}` failed: {e}", tool.server),
                meta(false),
            )
        }
        Ok(Err(e)) => {
            // The transport is gone: the server died during the call.
            let mut live = slot.live.lock().await;
            let why = match live.take() {
                Some(mut l) => {
                    let why = l
                        .died(&format!("exited during a call to `{}`", tool.tool))
                        .await;
                    l.stop();
                    why
                }
                None => format!("{e}"),
            };
            slot.set(|s| s.state = ServerState::Crashed(why.clone()));
            McpOutput::error(
                format!(
                    "MCP server `{}` crashed: {why}. It will be started again on its next use.",
                    tool.server
                ),
                meta(false),
            )
        }
    }
}

/// Text and images of a result. Content the model cannot use here (audio, binary resources)
/// is named, not dropped silently.
fn convert(content: &[ContentBlock], structured: Option<&Value>) -> McpOutput {
    let mut text: Vec<String> = Vec::new();
    let mut images = Vec::new();
    for block in content {
        match block {
            ContentBlock::Text(t) => text.push(t.text.clone()),
            ContentBlock::Image(img) => {
                match base64::engine::general_purpose::STANDARD.decode(img.data.trim()) {
                    Ok(data) if data.len() <= IMAGE_CAP => {
                        text.push(format!("[image: {}, {} bytes]", img.mime_type, data.len()));
                        images.push(McpImage {
                            mime_type: img.mime_type.clone(),
                            data,
                        });
                    }
                    Ok(data) => text.push(format!(
                        "[image omitted: {}, {} bytes is over the {} MiB limit]",
                        img.mime_type,
                        data.len(),
                        IMAGE_CAP >> 20
                    )),
                    Err(_) => text.push(format!(
                        "[image omitted: {} data is not base64]",
                        img.mime_type
                    )),
                }
            }
            ContentBlock::Audio(a) => text.push(format!("[audio omitted: {}]", a.mime_type)),
            ContentBlock::Resource(r) => match &r.resource {
                ResourceContents::TextResourceContents { uri, text: t, .. } => {
                    text.push(format!("[resource {uri}]\n{t}"));
                }
                ResourceContents::BlobResourceContents { uri, mime_type, .. } => {
                    text.push(format!(
                        "[binary resource omitted: {uri} ({})]",
                        mime_type.as_deref().unwrap_or("unknown type")
                    ))
                }
                _ => text.push("[resource of an unknown kind omitted]".to_string()),
            },
            ContentBlock::ResourceLink(l) => {
                text.push(format!("[resource link: {} {}]", l.name, l.uri))
            }
            #[allow(unreachable_patterns)]
            _ => text.push("[content of an unknown kind omitted]".to_string()),
        }
    }
    if text.is_empty()
        && let Some(v) = structured
    {
        text.push(v.to_string());
    }
    let mut text = text.join("\n");
    if text.len() > TEXT_CAP {
        let total = text.len();
        let mut cut = TEXT_CAP;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str(&format!("\n[output cut: {cut} of {total} bytes kept]"));
    }
    McpOutput {
        text,
        images,
        is_error: false,
        metadata: Value::Null,
    }
}

/// `mcp__<server>__<tool>` made safe for providers (`[A-Za-z0-9_-]`, at most 64 characters)
/// and unique among `taken`.
pub fn tool_name(server: &str, tool: &str, taken: &[String]) -> String {
    let raw = format!("mcp__{server}__{tool}");
    let clean: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.len() <= NAME_MAX && !taken.contains(&clean) {
        return clean;
    }
    let digest = Sha256::digest(raw.as_bytes());
    let hex: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    format!("{}_{hex}", &clean[..clean.len().min(NAME_MAX - 9)])
}

/// Names of servers whose state is a problem, with the reason (for the status line).
pub fn problems(statuses: &[ServerStatus]) -> Vec<(String, String)> {
    statuses
        .iter()
        .filter(|s| s.state.is_problem())
        .map(|s| {
            (
                s.name.clone(),
                s.state.reason().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// One line per server for the views: `name: state (n tools)` or `name: failed — reason`.
pub fn status_lines(statuses: &[ServerStatus]) -> Vec<String> {
    statuses
        .iter()
        .map(|s| match s.state.reason() {
            Some(r) => format!("{}: {} — {r}", s.name, s.state.label()),
            None if s.state == ServerState::Ready => {
                format!("{}: ready ({} tools)", s.name, s.tools.len())
            }
            None => format!("{}: {}", s.name, s.state.label()),
        })
        .collect()
}

/// A map from tool name to server, for callers that route calls.
pub fn by_name(tools: &[McpTool]) -> HashMap<&str, &McpTool> {
    tools.iter().map(|t| (t.name.as_str(), t)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_are_safe_short_and_unique() {
        assert_eq!(tool_name("fs", "read", &[]), "mcp__fs__read");
        assert_eq!(tool_name("fs", "a.b/c d", &[]), "mcp__fs__a_b_c_d");
        let long = tool_name("server", &"x".repeat(100), &[]);
        assert_eq!(long.len(), 64);
        assert!(long.starts_with("mcp__server__xxx"));
        let taken = vec!["mcp__fs__a_b".to_string()];
        let second = tool_name("fs", "a.b", &taken);
        assert_ne!(second, "mcp__fs__a_b");
        assert!(second.starts_with("mcp__fs__a_b_"));
        assert_ne!(
            tool_name("s", &"y".repeat(80), &[]),
            tool_name("s", &"y".repeat(81), &[])
        );
    }

    #[test]
    fn results_keep_text_images_and_name_the_rest() {
        let png = base64::engine::general_purpose::STANDARD.encode([137u8, 80, 78, 71]);
        let out = convert(
            &[
                ContentBlock::text("hello"),
                ContentBlock::image(png, "image/png"),
                ContentBlock::image("%%%", "image/png"),
                ContentBlock::audio("AAAA", "audio/wav"),
                ContentBlock::embedded_text("file:///a", "inside"),
            ],
            None,
        );
        assert_eq!(out.images.len(), 1);
        assert_eq!(out.images[0].data, vec![137, 80, 78, 71]);
        assert_eq!(
            out.text,
            "hello\n[image: image/png, 4 bytes]\n[image omitted: image/png data is not base64]\n[audio omitted: audio/wav]\n[resource file:///a]\ninside"
        );
        let out = convert(&[], Some(&json!({"a": 1})));
        assert_eq!(out.text, "{\"a\":1}");
        let out = convert(&[ContentBlock::text("é".repeat(TEXT_CAP))], None);
        assert!(out.text.len() < TEXT_CAP + 100);
        assert!(out.text.ends_with(&format!(
            "[output cut: {TEXT_CAP} of {} bytes kept]",
            2 * TEXT_CAP
        )));
    }

    #[test]
    fn arguments_must_be_an_object() {
        assert_eq!(parse_arguments("").unwrap(), None);
        assert!(parse_arguments("{\"a\":1}").unwrap().is_some());
        assert!(parse_arguments("[1]").is_err());
        assert!(parse_arguments("{").unwrap_err().contains("not valid JSON"));
    }
}
