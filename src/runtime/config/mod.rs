//! Settings: `<home>/config.toml` (a commented default is written on first use), then the
//! environment (`NEOCODE_API`, `NEOCODE_BASE_URL`, `NEOCODE_MODEL`, `NEOCODE_API_KEY`, else
//! the variable `api_key_env` names, else `api_key_command`'s output, else `OPENAI_API_KEY` or
//! `ANTHROPIC_API_KEY`), then flags. The key lives in memory only: it is never written to the
//! config, the database, exports, logs or error messages.

mod api;
pub(crate) mod caps;
mod default_config;
mod file;
mod load;
pub mod lsp;
pub(crate) mod mcp;
pub(crate) mod mcp_error;
mod profile;
mod resolve;
#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::time::Duration;

use super::tools::SandboxSettings;
use crate::session::RuntimeLimits;

pub(crate) use api::Api;
pub(crate) use default_config::DEFAULT_CONFIG;

/// When tool calls ask the user first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ApprovalPolicy {
    /// Reads run; edits and commands ask.
    #[default]
    Ask,
    /// Reads and edits run; commands ask.
    AutoEdit,
    /// Nothing asks (commands still ask when the sandbox is not enforced).
    NeverAsk,
}

impl ApprovalPolicy {
    /// Parses `ask`, `auto-edit`, `never-ask`.
    pub(crate) fn parse(s: &str) -> Option<ApprovalPolicy> {
        match s {
            "ask" => Some(ApprovalPolicy::Ask),
            "auto-edit" => Some(ApprovalPolicy::AutoEdit),
            "never-ask" => Some(ApprovalPolicy::NeverAsk),
            _ => None,
        }
    }

    /// The name as written in config and flags.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ApprovalPolicy::Ask => "ask",
            ApprovalPolicy::AutoEdit => "auto-edit",
            ApprovalPolicy::NeverAsk => "never-ask",
        }
    }
}

/// Flags that override the file and the environment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// `--model`.
    pub model: Option<String>,
    /// `--base-url`.
    pub base_url: Option<String>,
    /// `--approve`.
    pub approval: Option<ApprovalPolicy>,
    /// `--api`.
    pub api: Option<Api>,
    /// `--provider`: a `[providers.NAME]` profile.
    pub provider: Option<String>,
}

/// Whether a model can be called, and if not, what to set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ProviderStatus {
    /// Ready to send.
    Ready {
        /// Base URL.
        base_url: String,
        /// Model.
        model: String,
    },
    /// Something is missing; the text says exactly what to set.
    Missing(String),
}

/// The effective settings.
#[derive(Clone)]
pub struct Settings {
    /// The config file read.
    pub path: PathBuf,
    /// Base URL (ending in `/v1`), if set anywhere.
    pub base_url: Option<String>,
    /// Model, if set anywhere.
    pub model: Option<String>,
    /// The model was given for this invocation (`--model`): it wins over a session's own
    /// model for this run and is not stored as the session's.
    pub model_from_flag: bool,
    /// The wire API (`api`, `NEOCODE_API`, `--api`).
    pub api: Api,
    /// The `[providers.NAME]` profile chosen (`--provider`, `NEOCODE_PROVIDER`), if any.
    pub profile: Option<String>,
    /// Every `[providers.NAME]` profile of the config file, by name (what `/provider` lists).
    pub profiles: Vec<String>,
    /// `reasoning_effort` (Responses `reasoning.effort`, Chat Completions `reasoning_effort`), if set.
    pub reasoning_effort: Option<String>,
    /// `thinking_budget` in tokens (Anthropic); 0: no extended thinking.
    pub thinking_budget: u32,
    /// `system_as_text` (Anthropic): the system prompt as one plain string, not text blocks
    /// with a cache breakpoint (for gateways and servers that refuse blocks).
    pub system_as_text: bool,
    /// `tool_choice = "required"`: the first model call of each prompt must call a tool
    /// (for small local models that otherwise answer in words); later calls are free.
    pub first_call_requires_tool: bool,
    /// `max_output_tokens` (Anthropic's required `max_tokens`).
    pub max_output_tokens: u32,
    /// `api_key_command`: run (once per process) when no key variable is set.
    key_command: Option<String>,
    /// The key of `NEOCODE_API_KEY` or the `api_key_env` variable, whatever the api.
    api_key: Option<String>,
    /// Which of those it came from.
    explicit_source: Option<String>,
    /// `OPENAI_API_KEY` and `ANTHROPIC_API_KEY`: the api's own is used when no other key is
    /// set (so switching the api with `/model api:model` takes its vendor's key).
    vendor_keys: [Option<String>; 2],
    /// Context window in tokens (128,000 when the config does not say).
    pub context_window: u64,
    /// `context_window` was set in the config (else it is assumed, "window unknown").
    pub context_window_known: bool,
    /// Share of the window past which the transcript is compacted.
    pub compact_at: f64,
    /// `max_tokens` of each request (`[provider] max_tokens`); `None`: the server's default.
    pub max_tokens: Option<u64>,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Idle timeout of the stream.
    pub idle_timeout: Duration,
    /// Retries of 429 / 5xx.
    pub max_retries: u32,
    /// First retry backoff.
    pub retry_backoff: Duration,
    /// Default budgets of new sessions.
    pub limits: RuntimeLimits,
    /// Prices of models (`[prices."MODEL"]` over the defaults).
    pub prices: super::cost::PriceTable,
    /// What one prompt may spend (`max_tool_calls_per_prompt`, `max_turns_per_prompt`).
    pub prompt_caps: caps::PromptCaps,
    /// Approval policy.
    pub approval: ApprovalPolicy,
    /// Sandbox of commands.
    pub sandbox: SandboxSettings,
    /// Default command time limit.
    pub command_timeout: Duration,
    /// Bytes of tool output kept.
    pub output_cap: usize,
    /// `[agents]`: the sub-agents of the `task` tool.
    pub agents: AgentsSettings,
    /// MCP servers (`[mcp_servers.NAME]`); a bad table is kept, marked invalid.
    pub mcp_servers: Vec<mcp::ServerConfig>,
    /// Language servers (`[lsp]`): the table and the diagnostics wait.
    pub lsp: lsp::LspSettings,
    /// What `web_fetch` may reach (`[web_fetch]`).
    pub web_fetch: crate::runtime::tools::WebFetchSettings,
}

/// `[agents]`: the sub-agents the model starts with the `task` tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentsSettings {
    /// `task` calls of one model reply run at once (`max_parallel`, default 3, at least 1).
    pub max_parallel: usize,
    /// A `worktree: true` sub-agent's worktree stays after it completed (`keep_worktrees`,
    /// default false; a failed, stopped or cancelled one's always stays).
    pub keep_worktrees: bool,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("path", &self.path)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("approval", &self.approval)
            .finish_non_exhaustive()
    }
}

/// Why the settings could not be read: one line naming the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The config file exists but cannot be read.
    #[error("cannot read {}: {message}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The config file does not parse, or a value is out of range.
    #[error("bad settings in {}: {message}", path.display())]
    Bad {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// No usable provider is configured (what to set, in words: [`ProviderStatus::Missing`]).
    #[error("{0}")]
    Missing(String),
    /// `api_key_command` gave no key.
    #[error("{0}")]
    KeyCommand(#[from] crate::runtime::key_command::KeyCommandError),
}

impl From<ConfigError> for String {
    fn from(e: ConfigError) -> String {
        e.to_string()
    }
}
