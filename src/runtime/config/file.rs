//! The file format: the tables of `config.toml` as read, before defaults and overrides.

use serde::Deserialize;

use crate::session::RuntimeLimits;

/// `[limits]`: the session budgets and the caps of one prompt.
#[derive(Debug, Default, Deserialize)]
pub(super) struct FileLimits {
    #[serde(flatten)]
    pub(super) session: RuntimeLimits,
    pub(super) max_tool_calls_per_prompt: Option<u64>,
    pub(super) max_turns_per_prompt: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileConfig {
    #[serde(default)]
    pub(super) provider: FileProvider,
    /// Named profiles (`[providers.NAME]`, the keys of `[provider]`), chosen by
    /// `--provider NAME` or `NEOCODE_PROVIDER`.
    #[serde(default)]
    pub(super) providers: std::collections::BTreeMap<String, FileProvider>,
    #[serde(default)]
    pub(super) limits: FileLimits,
    /// `[prices."MODEL"]`: dollars per million tokens, over the defaults.
    #[serde(default)]
    pub(super) prices: std::collections::BTreeMap<String, crate::runtime::cost::Price>,
    #[serde(default)]
    pub(super) approval: FileApproval,
    #[serde(default)]
    pub(super) sandbox: FileSandbox,
    #[serde(default)]
    pub(super) tools: FileTools,
    #[serde(default)]
    pub(super) agents: FileAgents,
    #[serde(default)]
    pub(super) web_fetch: FileWebFetch,
    /// Read by `runtime::config::mcp` (its own error per server).
    #[serde(default, rename = "mcp_servers")]
    pub(super) _mcp_servers: Option<toml::Value>,
    /// Read by `config::lsp`.
    #[serde(default, rename = "lsp")]
    pub(super) _lsp: Option<toml::Value>,
    /// Read by `runtime::policy::permissions` (errors with their line).
    #[serde(default, rename = "permissions")]
    pub(super) _permissions: Option<toml::Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileProvider {
    pub(super) api: Option<String>,
    pub(super) api_key_env: Option<String>,
    pub(super) api_key_command: Option<String>,
    pub(super) reasoning_effort: Option<String>,
    pub(super) thinking_budget: Option<u32>,
    pub(super) system_as_text: Option<bool>,
    pub(super) tool_choice: Option<String>,
    pub(super) max_output_tokens: Option<u32>,
    pub(super) base_url: Option<String>,
    pub(super) model: Option<String>,
    pub(super) context_window: Option<u64>,
    pub(super) compact_at: Option<f64>,
    pub(super) max_tokens: Option<u64>,
    pub(super) connect_timeout_secs: Option<u64>,
    pub(super) idle_timeout_secs: Option<f64>,
    pub(super) max_retries: Option<u32>,
    pub(super) retry_backoff_ms: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileApproval {
    pub(super) policy: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileSandbox {
    pub(super) mode: Option<String>,
    pub(super) network: Option<bool>,
    pub(super) env_allow: Option<Vec<String>>,
    pub(super) simulate_unavailable: Option<bool>,
    pub(super) simulate_no_userns: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileTools {
    pub(super) command_timeout_secs: Option<u64>,
    pub(super) output_cap_bytes: Option<usize>,
}

/// `[web_fetch]`: what the `web_fetch` tool may reach and read.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileWebFetch {
    pub(super) allow_hosts: Option<Vec<String>>,
    pub(super) max_bytes: Option<usize>,
    pub(super) timeout_secs: Option<u64>,
}

/// `[agents]`: sub-agents the model starts with the `task` tool.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileAgents {
    pub(super) max_parallel: Option<usize>,
    pub(super) keep_worktrees: Option<bool>,
}

impl FileAgents {
    /// The settings, defaults filled in.
    pub(super) fn settings(&self) -> super::AgentsSettings {
        super::AgentsSettings {
            max_parallel: self.max_parallel.unwrap_or(3).max(1),
            keep_worktrees: self.keep_worktrees.unwrap_or(false),
        }
    }
}
