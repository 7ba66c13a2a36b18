//! What every tool shares: its [`ToolSpec`], the [`ToolContext`] a call runs with, the
//! [`ToolOutput`] it returns, and the helpers tools parse and record with.
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::session::{FileChange, Image, snapshot::SNAPSHOT_LIMIT};

/// What a tool does, which decides whether it asks for approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolKind {
    /// Reads the workspace (`read_file`, `list_dir`, `grep`): never asks.
    Read,
    /// Changes files (`write_file`, `edit_file`): asks under policy `ask`.
    Edit,
    /// Runs a command (`run_command`): asks under `ask` and `auto-edit`, and always asks when
    /// the sandbox is not enforced.
    Command,
    /// Changes the session's plan (`update_plan`): never asks.
    Plan,
    /// Fetches a URL (`web_fetch`): asks under `ask` and `auto-edit`, like a command, since
    /// it reaches beyond the machine from inside neocode, outside the command sandbox.
    Fetch,
    /// Starts or waits for a sub-agent (`task`, `task_wait`): never asks itself; the child
    /// session asks for its own calls, under a policy never wider than its parent's.
    Agent,
}

/// One tool in the registry.
#[derive(Debug, Clone, Copy)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: &'static str,
    /// What the model reads to decide when to use it.
    pub description: &'static str,
    /// JSON schema of the arguments (OpenAI function `parameters`).
    pub parameters: fn() -> Value,
    /// Approval class.
    pub kind: ToolKind,
    /// Carries the call out (blocking); bad arguments are error results.
    pub run: fn(&str, &ToolContext) -> ToolOutput,
    /// One line saying what a call does, from its parsed arguments (`None`: the name and
    /// the `path` argument, if any).
    pub summary: Option<fn(&Value) -> String>,
    /// The change a call makes, from its parsed arguments, shown before and after it runs
    /// (`None`: it changes no file text).
    pub preview: Option<fn(&Value) -> Preview>,
}

/// The change a file tool's call makes: the text it replaces and the text it writes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Preview {
    /// The text replaced (`None`: a whole file written).
    pub old: Option<String>,
    /// The text written.
    pub new: Option<String>,
}

/// How commands are confined (see `docs/SECURITY.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxMode {
    /// Write only inside the workspace root and a private temporary folder (default).
    #[default]
    WorkspaceWrite,
    /// Write nowhere.
    ReadOnly,
    /// No confinement (explicit choice; shown in red).
    Off,
}

/// Sandbox settings of one session's commands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxSettings {
    /// Confinement mode.
    pub mode: SandboxMode,
    /// Outbound network allowed (the user said so for this session, or config).
    pub network: bool,
    /// Behave as if the kernel had no Landlock (config switch for tests and for people who
    /// want to see the fallback): every command then asks.
    pub simulate_unavailable: bool,
    /// Behave as if user namespaces were refused (config `simulate_no_userns`): commands run
    /// in the fallback (Landlock, seccomp, a subreaper), which is `partial`, so every command
    /// asks.
    pub simulate_no_userns: bool,
    /// neocode's home: hidden from commands in the namespace box; in the fallback a
    /// workspace that holds it refuses commands.
    pub home: Option<PathBuf>,
    /// Environment variables passed to commands although their names look secret
    /// (`*_KEY`, `*_TOKEN`, ...).
    pub env_allow: Vec<String>,
}

use crate::runtime::cancel::CancelFlag;

/// What `web_fetch` may reach and read (`[web_fetch]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebFetchSettings {
    /// Hosts, as URLs name them, that may resolve to loopback or private addresses.
    pub allow_hosts: Vec<String>,
    /// Bytes of one answer read at most.
    pub max_bytes: usize,
    /// Time one fetch may take, redirects included.
    pub timeout: Duration,
}

impl Default for WebFetchSettings {
    fn default() -> Self {
        WebFetchSettings {
            allow_hosts: Vec::new(),
            max_bytes: 5 * 1024 * 1024,
            timeout: Duration::from_secs(30),
        }
    }
}

/// Everything a tool call may use.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The workspace root (absolute, symlinks resolved): every path is confined to it.
    pub root: PathBuf,
    /// Raised when the user cancels.
    pub cancel: CancelFlag,
    /// How `run_command` confines its child.
    pub sandbox: SandboxSettings,
    /// Default time limit of one command (the model may ask for less, never more).
    pub command_timeout: Duration,
    /// Bytes of tool output kept (head and tail) before it is cut.
    pub output_cap: usize,
    /// neocode's home: the file tools never write inside it, even when it lies inside the
    /// workspace (`None`: no home to protect).
    pub home: Option<PathBuf>,
    /// Permission rules whose read denials (`read_file(.env)`) `grep` and `list_dir` honour
    /// while they walk: a covered file is neither searched nor listed (`None`: no rules).
    pub read_rules: Option<std::sync::Arc<dyn ReadDenials>>,
    /// The front end holding the files `read_file`, `write_file` and `edit_file` read and
    /// write (an editor's buffers over ACP); `None`: the disk, directly.
    pub files: Option<std::sync::Arc<dyn super::files::FileAccess>>,
    /// What `web_fetch` may reach.
    pub web: WebFetchSettings,
    /// The front end whose terminal `run_command` runs its (sandboxed) command in (an
    /// editor over ACP); `None`: the tool spawns it itself.
    pub terminal: Option<std::sync::Arc<dyn super::terminal::CommandTerminal>>,
    /// The id of the model's call being run (empty outside a turn).
    pub call_id: String,
}

/// Read denials the walking tools honour (the permission rules' `read_file(...)` denies).
pub trait ReadDenials: Send + Sync + std::fmt::Debug {
    /// Whether a denial covers `rel`, a path relative to `root`.
    fn denies(&self, root: &Path, rel: &str) -> bool;
}

impl ToolContext {
    /// Whether a read denial covers `rel` (a path relative to the root).
    pub(crate) fn read_denied(&self, rel: &str) -> bool {
        self.read_rules
            .as_ref()
            .is_some_and(|r| r.denies(&self.root, rel))
    }

    /// A context for `root` with the default sandbox, a fresh cancel flag,
    /// [`DEFAULT_COMMAND_TIMEOUT`], [`DEFAULT_OUTPUT_CAP`] and the home of the environment
    /// (`$NEOCODE_HOME`, else `~/.neocode`).
    pub fn new(root: impl Into<PathBuf>) -> ToolContext {
        ToolContext {
            root: root.into(),
            cancel: CancelFlag::default(),
            sandbox: SandboxSettings::default(),
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
            output_cap: DEFAULT_OUTPUT_CAP,
            home: crate::session::home_dir().ok(),
            read_rules: None,
            files: None,
            web: WebFetchSettings::default(),
            terminal: None,
            call_id: String::new(),
        }
    }
}

/// Time limit of one command unless the configuration says otherwise.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(600);
/// Bytes of one tool result kept unless the configuration says otherwise.
pub const DEFAULT_OUTPUT_CAP: usize = 30_000;

/// What a tool call returns to the model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    /// Result text as the model will read it.
    pub text: String,
    /// The call failed (bad arguments, path refused, command exit != 0 is *not* an error).
    pub is_error: bool,
    /// Structured details for the views (exit code, duration, path, diff ...).
    pub metadata: Option<Value>,
    /// The workspace files the call changed, stored with the result so a rewind can put
    /// them back (see `runtime::rewind`).
    pub files: Vec<FileChange>,
}

impl ToolOutput {
    /// An error result with `text`.
    pub(crate) fn error(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            text: text.into(),
            is_error: true,
            metadata: None,
            files: Vec::new(),
        }
    }
}

/// Parses a call's JSON arguments into the tool's argument struct; the error result names
/// the field that is wrong.
pub(crate) fn parse_args<T: serde::de::DeserializeOwned>(
    tool: &str,
    arguments: &str,
) -> Result<T, ToolOutput> {
    let text = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    let de = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        // `.` is the root and `?` a position serde_path_to_error could not name.
        if path == "." || path.contains('?') {
            ToolOutput::error(format!(
                "{tool}: bad arguments (expected a JSON object): {inner}"
            ))
        } else {
            ToolOutput::error(format!("{tool}: bad argument `{path}`: {inner}"))
        }
    })
}

/// The first line of `s`, at most 160 characters (` …` when cut).
pub(crate) fn one_line(s: &str) -> String {
    let first = s.lines().next().unwrap_or("");
    let mut out: String = first.chars().take(160).collect();
    if out.len() < s.len() {
        out.push_str(" …");
    }
    out
}

/// What `write_file` / `edit_file` record: the file before (`None`: it did not exist; its
/// bytes are dropped over [`SNAPSHOT_LIMIT`]) and after (the bytes written, the mode the file
/// has now). Returns the change and, when the before-image is not kept, the line the result
/// says so with.
pub(crate) fn written(
    rel: &str,
    abs: &std::path::Path,
    before: Option<(Vec<u8>, u32)>,
    after: Vec<u8>,
) -> (FileChange, Option<String>) {
    use std::os::unix::fs::PermissionsExt;
    let mut note = None;
    let before = match before {
        None => Image::Absent,
        Some((data, mode)) if data.len() as u64 > SNAPSHOT_LIMIT => {
            note = Some(format!(
                "[not snapshotted: {rel} was over the {} MiB cap, so a rewind cannot restore its earlier content]",
                SNAPSHOT_LIMIT / (1024 * 1024)
            ));
            Image::TooLarge {
                size: data.len() as u64,
                mode,
            }
        }
        Some((data, mode)) => Image::Bytes { data, mode },
    };
    let mode = std::fs::symlink_metadata(abs).map_or(0o644, |m| m.permissions().mode() & 0o7777);
    let after = Image::Bytes { data: after, mode };
    let change = FileChange::Written {
        path: rel.to_string(),
        before,
        after,
    };
    (change, note)
}

/// A string argument of a call.
pub(crate) fn arg<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}
