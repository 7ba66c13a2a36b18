//! What a turn adds beyond the built-in tools: the project context (instruction files, the
//! skill catalogue, active skills) in the system prompt, the `skill` tool, and the tools of
//! the configured MCP servers. Every turn rebuilds the context from disk, so an edited
//! `AGENTS.md` or a new skill counts from the next model call on.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::runtime::Sessions;
use crate::runtime::cancel::CancelFlag;
use crate::runtime::config::{ApprovalPolicy, Settings};
use crate::runtime::extensions::lsp::{LspManager, NAV_TOOLS, nav_schema};
use crate::runtime::extensions::mcp::{McpImage, McpManager};
use crate::runtime::extensions::project_context::{self, ProjectContext, Skills, skills};
use crate::runtime::policy::permissions::Rules;
use crate::runtime::provider::ToolDef;
use crate::runtime::tools::{ToolKind, ToolOutput};
use crate::session::Session;

use crate::runtime::codes::WarningCode;

/// The per-process extensions of an [`crate::runtime::agent::Agent`]: where personal instructions and skills
/// live, and the MCP servers (started on first use, shared by all turns of the process).
pub(crate) struct Extensions {
    home: PathBuf,
    root: PathBuf,
    mcp: Option<McpManager>,
    /// Language servers (`None` when `[lsp] enabled = false`); none runs until an edit of a
    /// file one serves.
    lsp: Option<LspManager>,
    /// The calling front end's own tools (the bridge's nonoka dialect: OpenCode's): offered to
    /// the model, never run here; a call of one always waits for the front end.
    host: Vec<ToolDef>,
    /// The front end holding the workspace's files (an editor over ACP), for the file tools.
    files: Option<Arc<dyn crate::runtime::tools::FileAccess>>,
    /// The front end whose terminal runs `run_command` (an editor over ACP).
    terminal: Option<Arc<dyn crate::runtime::tools::CommandTerminal>>,
    /// What the workspace's trust lets these extensions use.
    admitted: Arc<dyn Admitted>,
}

/// What a workspace's trust lets the extensions use: whether its declared settings are in
/// use, and the skills (the home's, and the workspace's when it is trusted). `runtime::trust`
/// implements it; the agent builds the extensions with it.
pub trait Admitted: Send + Sync {
    /// The workspace's declared settings are used (it is trusted as it is, or declares none).
    fn uses_workspace(&self) -> bool;
    /// The skills in use.
    fn skills(&self) -> Skills;
}

/// Files of one call whose diagnostics are collected (a command may change many).
const MAX_DIAGNOSED_FILES: usize = 10;

/// Why a call of a front end's own tool waits ([`Extensions::with_host_tools`]).
pub(crate) const HOST_TOOL_REASON: &str = "a tool of the front end: it runs there";

impl std::fmt::Debug for Extensions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Extensions")
            .field("home", &self.home)
            .field("mcp", &self.mcp)
            .finish()
    }
}

/// The additions to one model call.
pub(crate) struct Prepared {
    /// Appended to the system prompt (may be empty).
    pub system: String,
    /// Tool definitions beyond the built-in ones.
    pub tools: Vec<ToolDef>,
}

impl Extensions {
    /// Extensions for a workspace: home from the settings' file, MCP servers from its
    /// `[mcp_servers]` tables (none started yet).
    pub(crate) fn new(
        settings: &Settings,
        root: &Path,
        admitted: Arc<dyn Admitted>,
    ) -> Arc<Extensions> {
        let home = settings
            .path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        // An enabled plugin's servers start beside the configured ones.
        let mut servers = settings.mcp_servers.clone();
        servers.extend(super::plugins::mcp_servers(&home));
        let mcp = if servers.is_empty() {
            None
        } else {
            McpManager::new(servers, root).ok()
        };
        // A language server reads the workspace's own project files (and some load code
        // they name): none starts in a workspace whose declared settings are not trusted.
        let lsp = (settings.lsp.enabled && admitted.uses_workspace())
            .then(|| LspManager::new(settings.lsp.clone(), root));
        Arc::new(Extensions {
            home,
            root: root.to_path_buf(),
            mcp,
            lsp,
            host: Vec::new(),
            files: None,
            terminal: None,
            admitted,
        })
    }

    /// Extensions for a workspace whose turns also offer the front end's `host` tools.
    pub(crate) fn with_host_tools(
        settings: &Settings,
        root: &Path,
        admitted: Arc<dyn Admitted>,
        host: Vec<ToolDef>,
    ) -> Arc<Extensions> {
        let mut ext = Extensions::new(settings, root, admitted);
        if let Some(e) = Arc::get_mut(&mut ext) {
            e.host = host;
        }
        ext
    }

    /// Extensions for a workspace whose file tools go through the front end's `files` and
    /// whose commands run in its `terminal` (each when given).
    pub(crate) fn with_front_end(
        settings: &Settings,
        root: &Path,
        admitted: Arc<dyn Admitted>,
        files: Option<Arc<dyn crate::runtime::tools::FileAccess>>,
        terminal: Option<Arc<dyn crate::runtime::tools::CommandTerminal>>,
    ) -> Arc<Extensions> {
        let mut ext = Extensions::new(settings, root, admitted);
        if let Some(e) = Arc::get_mut(&mut ext) {
            e.files = files;
            e.terminal = terminal;
        }
        ext
    }

    /// The front end holding the files, if one does.
    pub(crate) fn files(&self) -> Option<Arc<dyn crate::runtime::tools::FileAccess>> {
        self.files.clone()
    }

    /// The front end whose terminal runs commands, if one does.
    pub(crate) fn terminal(&self) -> Option<Arc<dyn crate::runtime::tools::CommandTerminal>> {
        self.terminal.clone()
    }

    /// Whether `name` is one of the front end's own tools.
    pub(crate) fn is_host(&self, name: &str) -> bool {
        self.host.iter().any(|t| t.name == name)
    }

    /// After a call of a built-in tool that changed files: their language servers' new
    /// errors and warnings end the result's text and go in its metadata (`diagnostics`).
    /// Files no server serves cost nothing.
    pub(crate) fn diagnose(&self, out: &mut ToolOutput) {
        let Some(lsp) = &self.lsp else { return };
        if out.is_error {
            return;
        }
        let rels: Vec<&str> = out
            .files
            .iter()
            .map(|f| match f {
                crate::session::FileChange::Written { path, .. }
                | crate::session::FileChange::ByCommand { path, .. } => path.as_str(),
            })
            .filter(|p| lsp.serves(p))
            .take(MAX_DIAGNOSED_FILES)
            .collect();
        if rels.is_empty() {
            return;
        }
        let Some(d) = lsp.after_edit(&rels) else {
            return;
        };
        out.text.push_str(&d.text);
        match &mut out.metadata {
            Some(Value::Object(m)) => {
                m.insert("diagnostics".to_string(), d.metadata());
            }
            m @ None => *m = Some(json!({"diagnostics": d.metadata()})),
            Some(_) => {}
        }
    }

    /// Whether `name` is a navigation tool (`definition`, ...) offered in this workspace.
    fn nav_tool(&self, name: &str) -> bool {
        NAV_TOOLS.iter().any(|t| t.name == name)
            && self.lsp.as_ref().is_some_and(LspManager::any_installed)
    }

    /// The project context of `session` as it stands on disk now.
    pub(crate) fn context(&self, session: &Session) -> ProjectContext {
        ProjectContext::gather(
            &self.home,
            &self.root,
            &project_context::touched_paths(&session.messages),
            session.header.skills.as_ref(),
            self.admitted.skills(),
        )
    }

    /// The agent profiles on disk (the workspace's used only when the user trusts it).
    pub(crate) fn agent_profiles(&self) -> super::agents::Profiles {
        super::agents::Profiles::load(&self.home, &self.root, self.admitted.uses_workspace())
    }

    /// The skills on disk (the workspace's only when the user trusts it).
    pub(crate) fn skills(&self) -> Skills {
        self.admitted.skills()
    }

    /// What the next model call of `session` gets beyond the built-ins. Starts MCP servers
    /// on first use. Problems (a malformed `SKILL.md`, a server that failed) go to `warn`
    /// once each.
    pub(crate) fn prepare(
        &self,
        session: &Session,
        warn: &mut dyn FnMut(WarningCode, String),
    ) -> Prepared {
        let ctx = self.context(session);
        for p in ctx.skills.unreported_problems() {
            warn(
                WarningCode::SkillSkipped,
                format!("skipped {}: {}", p.path.display(), p.reason),
            );
        }
        for s in ctx.instructions.unreported_skips() {
            warn(
                WarningCode::InstructionsSkipped,
                format!(
                    "skipped {}: {}",
                    project_context::instructions::display_path(&s.path, &self.root),
                    s.reason
                ),
            );
        }
        for (path, e) in &ctx.instructions.unreadable {
            warn(
                WarningCode::InstructionsUnreadable,
                format!("cannot read {}: {e}", path.display()),
            );
        }
        let mut tools = Vec::new();
        if !ctx.skills.skills.is_empty() {
            tools.push(ToolDef::new(
                skills::SKILL_TOOL.name,
                skills::SKILL_TOOL.description,
                (skills::SKILL_TOOL.parameters)(),
            ));
        }
        tools.extend(self.host.iter().cloned());
        // Sub-agents start no sub-agents of their own.
        if session.header.subagent_of.is_none() {
            tools.extend(super::agents::tool_defs(&self.agent_profiles()));
        }
        if let Some(mcp) = &self.mcp {
            for t in mcp.tools() {
                tools.push(ToolDef::new(&t.name, &t.description, t.parameters.clone()));
            }
            for (name, why) in mcp.unreported_problems() {
                warn(
                    WarningCode::McpServerFailed,
                    format!("MCP server `{name}`: {why}"),
                );
            }
        }
        if self.lsp.as_ref().is_some_and(LspManager::any_installed) {
            for t in NAV_TOOLS {
                tools.push(ToolDef::new(t.name, t.description, nav_schema(t.name)));
            }
        }
        if let Some(lsp) = &self.lsp {
            for (name, why) in lsp.unreported_problems() {
                warn(
                    WarningCode::LspServerFailed,
                    format!("language server `{name}`: {why}"),
                );
            }
        }
        Prepared {
            system: ctx.prompt_section(&self.root, &session.messages),
            tools,
        }
    }

    /// The approval class of a tool that is not built in, if it is one of ours.
    pub(crate) fn kind(&self, name: &str) -> Option<ToolKind> {
        if name == skills::SKILL_TOOL.name {
            return Some(skills::SKILL_TOOL.kind);
        }
        if name == super::agents::TASK || name == super::agents::TASK_WAIT {
            return Some(ToolKind::Agent);
        }
        if self.is_host(name) {
            return Some(ToolKind::Command);
        }
        if self.nav_tool(name) {
            return Some(ToolKind::Read);
        }
        self.mcp_tool(name).map(|t| t.kind)
    }

    /// The MCP tool `name`, starting the servers first if needed (a call replayed after a
    /// restart comes before any model call has listed the tools).
    fn mcp_tool(&self, name: &str) -> Option<crate::runtime::extensions::mcp::McpTool> {
        let mcp = self.mcp.as_ref()?;
        if !name.starts_with("mcp__") {
            return None;
        }
        mcp.tool(name).or_else(|| {
            mcp.tools();
            mcp.tool(name)
        })
    }

    /// Whether an MCP call asks first: only tools the server marks read-only run without
    /// asking, under every policy but `never-ask` (the sandbox does not reach them, so its
    /// state does not matter here).
    pub(crate) fn mcp_approval(
        &self,
        kind: ToolKind,
        name: &str,
        policy: ApprovalPolicy,
        always: &[String],
    ) -> Option<String> {
        if self.is_host(name) {
            return Some(HOST_TOOL_REASON.to_string());
        }
        if kind == ToolKind::Read || always.iter().any(|t| t == name) {
            return None;
        }
        match policy {
            ApprovalPolicy::Ask | ApprovalPolicy::AutoEdit => Some(format!(
                "policy `{}`: MCP tools not marked read-only need approval",
                policy.as_str()
            )),
            ApprovalPolicy::NeverAsk => None,
        }
    }

    /// Whether `name` is an MCP tool or a front end's own tool (both ask by
    /// [`Extensions::mcp_approval`]; a front end's always waits).
    pub(crate) fn is_mcp(&self, name: &str) -> bool {
        self.is_host(name) || self.mcp_tool(name).is_some()
    }

    /// Carries out a call of ours (`skill`, `mcp__...`); `None` for anything else.
    pub(crate) fn run(
        &self,
        name: &str,
        arguments: &str,
        sessions: &Sessions,
        session_id: &str,
        (cancel, rules): (&CancelFlag, &Rules),
    ) -> Option<(ToolOutput, Vec<McpImage>)> {
        if name == skills::SKILL_TOOL.name {
            return Some((self.activate(arguments, sessions, session_id), Vec::new()));
        }
        if self.is_host(name) {
            let text =
                format!("`{name}` is a tool of the front end that offered it; it cannot run here");
            return Some((ToolOutput::error(text), Vec::new()));
        }
        if self.nav_tool(name)
            && let Some(lsp) = &self.lsp
            && let Some(r) = lsp.navigate(name, arguments, &|p| rules.read_denied(p).is_some())
        {
            let out = match r {
                Ok(text) => ToolOutput {
                    text,
                    ..ToolOutput::default()
                },
                Err(e) => ToolOutput::error(e.to_string()),
            };
            return Some((out, Vec::new()));
        }
        self.mcp_tool(name)?;
        let out = self.mcp.as_ref()?.call(name, arguments, cancel);
        Some((
            ToolOutput {
                text: out.text,
                is_error: out.is_error,
                metadata: Some(out.metadata),
                files: Vec::new(),
            },
            out.images,
        ))
    }

    fn activate(&self, arguments: &str, sessions: &Sessions, session_id: &str) -> ToolOutput {
        let name = serde_json::from_str::<Value>(arguments)
            .ok()
            .and_then(|v| v.get("name").and_then(Value::as_str).map(str::to_string));
        let Some(name) = name else {
            return ToolOutput::error("skill needs {\"name\": \"<skill name>\"}");
        };
        let all = self.skills();
        let Some(skill) = all.get(&name) else {
            let known: Vec<&str> = all.skills.iter().map(|s| s.name.as_str()).collect();
            return ToolOutput::error(format!(
                "no skill named `{name}`; available: {}",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ));
        };
        match skills::activate(sessions, session_id, skill) {
            Ok(newly) => ToolOutput {
                text: skills::activation_text(skill),
                is_error: false,
                metadata: Some(json!({
                    "skill": skill.name,
                    "source": skill.source.as_str(),
                    "dir": skill.dir.display().to_string(),
                    "newly_activated": newly,
                })),
                files: Vec::new(),
            },
            Err(e) => ToolOutput::error(format!("cannot record the skill's activation: {e}")),
        }
    }
}
