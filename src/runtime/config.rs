//! Settings: `<home>/config.toml` (a commented default is written on first use), then the
//! environment (`NEOCODE_API`, `NEOCODE_BASE_URL`, `NEOCODE_MODEL`, `NEOCODE_API_KEY`, else
//! the variable `api_key_env` names, else `api_key_command`'s output, else `OPENAI_API_KEY` or
//! `ANTHROPIC_API_KEY`), then flags. The key lives in memory only: it is never written to the
//! config, the database, exports, logs or error messages.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::provider::{ApiSettings, OpenAiSettings};
use super::tools::{SandboxMode, SandboxSettings};
use crate::session::RuntimeLimits;

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
    pub fn parse(s: &str) -> Option<ApprovalPolicy> {
        match s {
            "ask" => Some(ApprovalPolicy::Ask),
            "auto-edit" => Some(ApprovalPolicy::AutoEdit),
            "never-ask" => Some(ApprovalPolicy::NeverAsk),
            _ => None,
        }
    }

    /// The name as written in config and flags.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalPolicy::Ask => "ask",
            ApprovalPolicy::AutoEdit => "auto-edit",
            ApprovalPolicy::NeverAsk => "never-ask",
        }
    }
}

/// The wire API a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Api {
    /// OpenAI Chat Completions (`/chat/completions`): OpenAI, Ollama, llama.cpp, vLLM, most
    /// gateways.
    #[default]
    Chat,
    /// OpenAI Responses (`/responses`): OpenAI's reasoning models with reasoning kept.
    Responses,
    /// Anthropic Messages (`/messages`): Claude with thinking and prompt caching.
    Anthropic,
}

impl Api {
    /// Parses `chat`, `responses`, `anthropic`.
    pub fn parse(s: &str) -> Option<Api> {
        match s.trim() {
            "chat" => Some(Api::Chat),
            "responses" => Some(Api::Responses),
            "anthropic" => Some(Api::Anthropic),
            _ => None,
        }
    }

    /// The name as written in config and flags.
    pub fn as_str(self) -> &'static str {
        match self {
            Api::Chat => "chat",
            Api::Responses => "responses",
            Api::Anthropic => "anthropic",
        }
    }

    /// A model name with an api in front (`anthropic:claude-sonnet-4-5`, as `/model` and
    /// `--model` accept it) split in two; a name without one (or with another prefix, such
    /// as Ollama's `qwen2.5-coder:7b`) is left whole.
    pub fn split_model(name: &str) -> (Option<Api>, &str) {
        match name.split_once(':') {
            Some((api, model)) if !model.trim().is_empty() => match Api::parse(api) {
                Some(a) => (Some(a), model.trim()),
                None => (None, name),
            },
            _ => (None, name),
        }
    }

    /// The base URL used when a key is set and none is configured.
    fn default_url(self) -> &'static str {
        match self {
            Api::Chat | Api::Responses => OPENAI_URL,
            Api::Anthropic => ANTHROPIC_URL,
        }
    }

    /// The vendor's own key variable, read when no other key is configured.
    fn key_variable(self) -> &'static str {
        match self {
            Api::Chat | Api::Responses => "OPENAI_API_KEY",
            Api::Anthropic => "ANTHROPIC_API_KEY",
        }
    }
}

/// The default config file, written on first use. Everything is commented or a default, so
/// the file documents itself.
pub const DEFAULT_CONFIG: &str = r#"# neocode settings. The environment overrides this file, flags override both:
#   NEOCODE_BASE_URL   OpenAI-compatible base URL ending in /v1
#   NEOCODE_MODEL      model name
#   NEOCODE_API        chat | responses | anthropic (the wire API; see api below)
#   NEOCODE_API_KEY    API key (else api_key_env, api_key_command, then OPENAI_API_KEY, or
#                      ANTHROPIC_API_KEY for api = "anthropic"). Keys are never written here.
#
# OpenAI:            base_url = "https://api.openai.com/v1"   model = "gpt-4o-mini"
# Ollama (local):    base_url = "http://localhost:11434/v1"   model = "qwen2.5-coder:7b"
# llama.cpp server:  base_url = "http://localhost:8080/v1"    model = "local"

[provider]
# chat: Chat Completions (OpenAI-compatible servers); responses: OpenAI Responses (reasoning
# models, reasoning kept across turns); anthropic: Anthropic Messages (thinking, caching).
# api = "chat"
# base_url = "https://api.openai.com/v1"
# model = "gpt-4o-mini"
# api_key_env = "MY_KEY_VARIABLE"      # read the key from this variable
# api_key_command = "pass show openai"  # or from this command's output (run once per process)
# reasoning_effort = "medium"          # responses: minimal | low | medium | high
# thinking_budget = 4000               # anthropic: extended thinking budget in tokens (0: off)
# max_output_tokens = 16000            # anthropic: max_tokens of a reply
# The model's context window in tokens; past compact_at of it the transcript is compacted.
# Unset: a server that says its window (llama.cpp's /props, vLLM's /v1/models, an overflow
# error) is believed, 128000 is assumed otherwise, and the TUI's gauge says "window unknown".
# context_window = 128000
compact_at = 0.8
# Longest reply in tokens (sent as max_tokens); unset: the server's default. A reply cut
# there is kept marked incomplete and the turn pauses (reason `reply_cut`).
# max_tokens = 4096
connect_timeout_secs = 10
# Longest silence while waiting for the reply (local models can be slow to start).
idle_timeout_secs = 300
# 429 and 5xx answers are retried this often, with backoff (Retry-After honoured).
max_retries = 3
retry_backoff_ms = 500

# Named profiles with the keys of [provider], chosen by --provider NAME or NEOCODE_PROVIDER
# (keys a profile leaves out come from [provider]):
# [providers.claude]
# api = "anthropic"
# model = "claude-sonnet-4-5"
# thinking_budget = 4000

[limits]
# What one prompt (a `neocode run`, a message in the TUI, a resume) may spend before the
# session pauses (exit 3); 0 = no cap. A --max-tool-calls / --max-turns flag replaces the
# cap of its kind for that run.
max_tool_calls_per_prompt = 200
max_turns_per_prompt = 100
# Budgets per session (restored on resume; only an explicit flag raises them).
# max_turns = 50
# max_tool_calls = 200
# max_input_tokens = 2000000
# max_output_tokens = 200000
# max_wall_secs = 3600
# max_cost_usd = 5.0   (counts model calls that have a price, see [prices])

# Prices in dollars per million tokens, over the built-in ones (OpenAI and Anthropic list
# prices as of 2025-10, by model family). A model without a price shows tokens only.
# [prices."my-model"]
# input = 1.0
# cached_input = 0.1
# cache_write = 1.25
# output = 5.0

[approval]
# ask: edits and commands ask; auto-edit: edits run, commands ask; never-ask: nothing asks.
policy = "ask"

[sandbox]
# workspace-write | read-only | off
mode = "workspace-write"
network = false
# Environment variables passed to commands although their names look secret.
env_allow = []
# Behave as if the kernel had no Landlock (every command then asks).
simulate_unavailable = false
# Behave as if user namespaces were refused: the weaker fallback box (every command asks).
simulate_no_userns = false

[tools]
command_timeout_secs = 120
output_cap_bytes = 30000

# MCP servers (stdio), in the shape Codex uses. Tools appear as mcp__NAME__TOOL; the server
# gets only `env` plus PATH, HOME and a few locale variables.
# [mcp_servers.everything]
# command = "npx"
# args = ["-y", "@modelcontextprotocol/server-everything"]
# env = { EXAMPLE_TOKEN = "..." }
# enabled_tools = ["echo", "add"]
# startup_timeout_sec = 20
# tool_timeout_sec = 60
"#;

/// `[limits]`: the session budgets and the caps of one prompt.
#[derive(Debug, Default, Deserialize)]
struct FileLimits {
    #[serde(flatten)]
    session: RuntimeLimits,
    max_tool_calls_per_prompt: Option<u64>,
    max_turns_per_prompt: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    provider: FileProvider,
    /// Named profiles (`[providers.NAME]`, the keys of `[provider]`), chosen by
    /// `--provider NAME` or `NEOCODE_PROVIDER`.
    #[serde(default)]
    providers: std::collections::BTreeMap<String, FileProvider>,
    #[serde(default)]
    limits: FileLimits,
    /// `[prices."MODEL"]`: dollars per million tokens, over the defaults.
    #[serde(default)]
    prices: std::collections::BTreeMap<String, super::cost::Price>,
    #[serde(default)]
    approval: FileApproval,
    #[serde(default)]
    sandbox: FileSandbox,
    #[serde(default)]
    tools: FileTools,
    /// Read by `runtime::mcp::config` (its own error per server).
    #[serde(default, rename = "mcp_servers")]
    _mcp_servers: Option<toml::Value>,
    /// Read by `runtime::permissions` (errors with their line).
    #[serde(default, rename = "permissions")]
    _permissions: Option<toml::Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileProvider {
    api: Option<String>,
    api_key_env: Option<String>,
    api_key_command: Option<String>,
    reasoning_effort: Option<String>,
    thinking_budget: Option<u32>,
    max_output_tokens: Option<u32>,
    base_url: Option<String>,
    model: Option<String>,
    context_window: Option<u64>,
    compact_at: Option<f64>,
    max_tokens: Option<u64>,
    connect_timeout_secs: Option<u64>,
    idle_timeout_secs: Option<f64>,
    max_retries: Option<u32>,
    retry_backoff_ms: Option<u64>,
}

impl FileProvider {
    /// `self` with every key `profile` sets taken from it.
    fn overlay(self, profile: FileProvider) -> FileProvider {
        FileProvider {
            api: profile.api.or(self.api),
            api_key_env: profile.api_key_env.or(self.api_key_env),
            api_key_command: profile.api_key_command.or(self.api_key_command),
            reasoning_effort: profile.reasoning_effort.or(self.reasoning_effort),
            thinking_budget: profile.thinking_budget.or(self.thinking_budget),
            max_output_tokens: profile.max_output_tokens.or(self.max_output_tokens),
            base_url: profile.base_url.or(self.base_url),
            model: profile.model.or(self.model),
            context_window: profile.context_window.or(self.context_window),
            compact_at: profile.compact_at.or(self.compact_at),
            max_tokens: profile.max_tokens.or(self.max_tokens),
            connect_timeout_secs: profile.connect_timeout_secs.or(self.connect_timeout_secs),
            idle_timeout_secs: profile.idle_timeout_secs.or(self.idle_timeout_secs),
            max_retries: profile.max_retries.or(self.max_retries),
            retry_backoff_ms: profile.retry_backoff_ms.or(self.retry_backoff_ms),
        }
    }
}

/// `[provider]` with the chosen profile's keys over it; a profile that is not in the file is
/// an error naming the ones that are.
fn chosen_provider(file: &mut FileConfig, name: Option<&str>) -> Result<FileProvider, String> {
    let base = std::mem::take(&mut file.provider);
    let Some(name) = name else {
        return Ok(base);
    };
    match file.providers.remove(name) {
        Some(profile) => Ok(base.overlay(profile)),
        None => {
            let known: Vec<&str> = file.providers.keys().map(String::as_str).collect();
            Err(if known.is_empty() {
                format!("no provider profile `{name}`: add a [providers.{name}] table")
            } else {
                format!(
                    "no provider profile `{name}` (profiles: {}); add a [providers.{name}] table",
                    known.join(", ")
                )
            })
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileApproval {
    policy: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSandbox {
    mode: Option<String>,
    network: Option<bool>,
    env_allow: Option<Vec<String>>,
    simulate_unavailable: Option<bool>,
    simulate_no_userns: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTools {
    command_timeout_secs: Option<u64>,
    output_cap_bytes: Option<usize>,
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
pub enum ProviderStatus {
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
    /// `reasoning_effort` (Responses), if set.
    pub reasoning_effort: Option<String>,
    /// `thinking_budget` in tokens (Anthropic); 0: no extended thinking.
    pub thinking_budget: u32,
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
    pub prompt_caps: crate::runtime::agent::ledger::PromptCaps,
    /// Approval policy.
    pub approval: ApprovalPolicy,
    /// Sandbox of commands.
    pub sandbox: SandboxSettings,
    /// Default command time limit.
    pub command_timeout: Duration,
    /// Bytes of tool output kept.
    pub output_cap: usize,
    /// MCP servers (`[mcp_servers.NAME]`); a bad table is kept, marked invalid.
    pub mcp_servers: Vec<crate::runtime::mcp::ServerConfig>,
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

const OPENAI_URL: &str = "https://api.openai.com/v1";
const ANTHROPIC_URL: &str = "https://api.anthropic.com/v1";

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
}

impl From<ConfigError> for String {
    fn from(e: ConfigError) -> String {
        e.to_string()
    }
}

impl Settings {
    /// Reads `<home>/config.toml` (writing the default first if there is none), the process
    /// environment and `flags`. A config file that does not parse is an error naming it.
    pub fn load(home: &Path, flags: &Overrides) -> Result<Settings, ConfigError> {
        Settings::load_with(home, flags, &|k| std::env::var(k).ok())
    }

    /// [`Settings::load`] with an explicit environment (tests).
    #[expect(clippy::too_many_lines)]
    pub fn load_with(
        home: &Path,
        flags: &Overrides,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Settings, ConfigError> {
        let path = home.join("config.toml");
        let bad = |message: String| ConfigError::Bad {
            path: path.clone(),
            message,
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // Best effort: a read-only home must not stop browsing or sending.
                let _ = crate::session::private_dir(home);
                let _ = write_new(&path, DEFAULT_CONFIG);
                DEFAULT_CONFIG.to_string()
            }
            Err(e) => {
                return Err(ConfigError::Read {
                    path,
                    message: e.to_string(),
                });
            }
        };
        let mut file: FileConfig =
            toml::from_str(&text).map_err(|e| bad(e.message().to_string()))?;
        let mcp_servers = crate::runtime::mcp::config::parse(&text).map_err(&bad)?;
        let env = |k: &str| {
            env(k)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let profile = flags
            .provider
            .clone()
            .or_else(|| env("NEOCODE_PROVIDER"))
            .filter(|s| !s.trim().is_empty());
        let p = chosen_provider(&mut file, profile.as_deref()).map_err(&bad)?;
        let api = match flags.api {
            Some(a) => a,
            None => match env("NEOCODE_API").or_else(|| p.api.clone()) {
                None => Api::Chat,
                Some(s) => Api::parse(&s).ok_or_else(|| {
                    bad(format!(
                        "api `{s}` is not one of chat, responses, anthropic (NEOCODE_API or api in [provider])"
                    ))
                })?,
            },
        };
        let model = flags
            .model
            .clone()
            .or_else(|| env("NEOCODE_MODEL"))
            .or(p.model.clone())
            .filter(|s| !s.trim().is_empty());
        // `api:model` names both; an explicit --api still wins.
        let (api, model) = match model.as_deref().map(Api::split_model) {
            Some((Some(a), m)) => (flags.api.unwrap_or(a), Some(m.to_string())),
            _ => (api, model),
        };
        let key_env = p_str(p.api_key_env.as_deref()).map(str::to_string);
        let key_command = p_str(p.api_key_command.as_deref()).map(str::to_string);
        let (api_key, explicit_source) = match env("NEOCODE_API_KEY") {
            Some(k) => (Some(k), Some("NEOCODE_API_KEY".to_string())),
            None => match &key_env {
                Some(name) => (env(name), Some(name.clone())),
                None => (None, None),
            },
        };
        // A named variable wins over the command; the command is only run when needed.
        let key_command = key_command.filter(|_| explicit_source.is_none());
        let vendor_keys = [
            env(Api::Chat.key_variable()),
            env(Api::Anthropic.key_variable()),
        ];
        let approval = match flags.approval {
            Some(a) => a,
            None => match p_str(file.approval.policy.as_deref()) {
                None => ApprovalPolicy::Ask,
                Some(s) => ApprovalPolicy::parse(s).ok_or_else(|| {
                    bad(format!(
                        "approval policy `{s}` is not one of ask, auto-edit, never-ask"
                    ))
                })?,
            },
        };
        let mode = match p_str(file.sandbox.mode.as_deref()) {
            None | Some("workspace-write") => SandboxMode::WorkspaceWrite,
            Some("read-only") => SandboxMode::ReadOnly,
            Some("off") => SandboxMode::Off,
            Some(other) => {
                return Err(bad(format!(
                    "sandbox mode `{other}` is not one of workspace-write, read-only, off"
                )));
            }
        };
        let compact_at = p.compact_at.unwrap_or(0.8);
        if !(0.1..=1.0).contains(&compact_at) {
            return Err(bad("compact_at must be between 0.1 and 1.0".into()));
        }
        Ok(Settings {
            base_url: flags
                .base_url
                .clone()
                .or_else(|| env("NEOCODE_BASE_URL"))
                .or(p.base_url)
                .filter(|s| !s.trim().is_empty())
                .map(|s| s.trim().trim_end_matches('/').to_string()),
            model,
            model_from_flag: flags.model.as_ref().is_some_and(|m| !m.trim().is_empty()),
            path,
            api,
            profile,
            reasoning_effort: p_str(p.reasoning_effort.as_deref()).map(str::to_string),
            thinking_budget: p.thinking_budget.unwrap_or(0),
            max_output_tokens: p.max_output_tokens.unwrap_or(16_000).max(1),
            key_command,
            api_key,
            explicit_source,
            vendor_keys,
            context_window: p.context_window.unwrap_or(128_000).max(1),
            context_window_known: p.context_window.is_some(),
            compact_at,
            max_tokens: p.max_tokens.filter(|n| *n > 0),
            connect_timeout: Duration::from_secs(p.connect_timeout_secs.unwrap_or(10)),
            idle_timeout: Duration::from_secs_f64(p.idle_timeout_secs.unwrap_or(300.0).max(0.05)),
            max_retries: p.max_retries.unwrap_or(3),
            retry_backoff: Duration::from_millis(p.retry_backoff_ms.unwrap_or(500)),
            prompt_caps: crate::runtime::agent::ledger::PromptCaps {
                tool_calls: match file.limits.max_tool_calls_per_prompt {
                    Some(0) => None,
                    Some(n) => Some(n),
                    None => Some(crate::runtime::agent::ledger::DEFAULT_TOOL_CALLS_PER_PROMPT),
                },
                turns: match file.limits.max_turns_per_prompt {
                    Some(0) => None,
                    Some(n) => Some(n),
                    None => Some(crate::runtime::agent::ledger::DEFAULT_TURNS_PER_PROMPT),
                },
            },
            limits: file.limits.session,
            prices: super::cost::PriceTable::new(file.prices),
            approval,
            sandbox: SandboxSettings {
                mode,
                network: file.sandbox.network.unwrap_or(false),
                simulate_unavailable: file.sandbox.simulate_unavailable.unwrap_or(false),
                simulate_no_userns: file.sandbox.simulate_no_userns.unwrap_or(false),
                home: Some(home.to_path_buf()),
                env_allow: file.sandbox.env_allow.unwrap_or_default(),
            },
            command_timeout: Duration::from_secs(file.tools.command_timeout_secs.unwrap_or(120)),
            output_cap: file.tools.output_cap_bytes.unwrap_or(30_000),
            mcp_servers,
        })
    }

    /// The base URL a request would go to: the configured one, else OpenAI's when a key is set.
    /// The base URL requests go to (the OpenAI default when only a key is set), if any.
    pub fn effective_base_url(&self) -> Option<String> {
        self.base_url.clone().or_else(|| {
            self.has_api_key()
                .then(|| self.api.default_url().to_string())
        })
    }

    /// Whether sending can work, else exactly which setting is missing.
    pub fn provider_status(&self) -> ProviderStatus {
        let file = self.path.display();
        let Some(base_url) = self.effective_base_url() else {
            return ProviderStatus::Missing(format!(
                "no model provider configured: set NEOCODE_BASE_URL (e.g. http://localhost:11434/v1 for Ollama) or NEOCODE_API_KEY / OPENAI_API_KEY for OpenAI, and NEOCODE_MODEL (or base_url and model in {file})"
            ));
        };
        if base_url.contains("api.openai.com") && !self.has_api_key() {
            return ProviderStatus::Missing(
                "no API key for api.openai.com: set NEOCODE_API_KEY or OPENAI_API_KEY".into(),
            );
        }
        if base_url.contains("api.anthropic.com") && !self.has_api_key() {
            return ProviderStatus::Missing(
                "no API key for api.anthropic.com: set NEOCODE_API_KEY or ANTHROPIC_API_KEY".into(),
            );
        }
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return ProviderStatus::Missing(format!(
                "base URL `{base_url}` must start with http:// or https:// (NEOCODE_BASE_URL, --base-url or base_url in {file})"
            ));
        }
        let Some(model) = self.model.clone() else {
            return ProviderStatus::Missing(format!(
                "no model configured: set NEOCODE_MODEL, pass --model, or set model in {file}"
            ));
        };
        ProviderStatus::Ready { base_url, model }
    }

    /// Settings for the OpenAI provider, or what is missing.
    pub fn openai(&self) -> Result<OpenAiSettings, ConfigError> {
        match self.provider_status() {
            ProviderStatus::Missing(m) => Err(ConfigError::Missing(m)),
            ProviderStatus::Ready { base_url, model } => {
                let key = self.resolved_key().map_err(ConfigError::Missing)?;
                let mut s = OpenAiSettings::new(&base_url, &model, key);
                s.connect_timeout = self.connect_timeout;
                s.idle_timeout = self.idle_timeout;
                s.max_retries = self.max_retries;
                s.backoff = self.retry_backoff;
                s.max_tokens = self.max_tokens;
                Ok(s)
            }
        }
    }

    /// Settings for the configured wire API's provider, or what is missing.
    pub fn wire(&self) -> Result<ApiSettings, ConfigError> {
        Ok(ApiSettings {
            http: self.openai()?,
            reasoning_effort: self.reasoning_effort.clone(),
            thinking_budget: self.thinking_budget,
            max_output_tokens: self.max_output_tokens,
        })
    }

    /// Whether an API key is set or a command gives one (the key itself is never shown).
    pub fn has_api_key(&self) -> bool {
        self.api_key.is_some() || self.key_command.is_some() || self.vendor_key().is_some()
    }

    /// Where the key comes from (a variable's name, or `api_key_command`), for messages.
    pub fn key_source(&self) -> Option<String> {
        if self.api_key.is_some() {
            return self.explicit_source.clone();
        }
        if self.key_command.is_some() {
            return Some("api_key_command".to_string());
        }
        self.vendor_key()
            .map(|_| self.api.key_variable().to_string())
    }

    /// The key of the api's own variable (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`), if set.
    fn vendor_key(&self) -> Option<&str> {
        let i = usize::from(self.api == Api::Anthropic);
        self.vendor_keys[i].as_deref()
    }

    /// The key, for redacting it from text (never for printing): the variable's, else the
    /// command's once it has run.
    pub(crate) fn api_key(&self) -> Option<&str> {
        self.api_key
            .as_deref()
            .or_else(|| {
                let cmd = self.key_command.as_deref()?;
                super::key_command::cached(cmd)
            })
            .or_else(|| self.vendor_key())
    }

    /// The key to send: the variable's, else `api_key_command`'s output (the command runs
    /// once per process); an error says why the command gave none, never what it printed.
    fn resolved_key(&self) -> Result<Option<String>, String> {
        if let Some(k) = &self.api_key {
            return Ok(Some(k.clone()));
        }
        match &self.key_command {
            Some(cmd) => super::key_command::run_once(cmd).map(Some),
            None => Ok(self.vendor_key().map(str::to_string)),
        }
    }
}

fn p_str(s: Option<&str>) -> Option<&str> {
    s.map(str::trim).filter(|s| !s.is_empty())
}

fn write_new(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    // create_new: two processes starting together must not clobber each other's file.
    let mut f = crate::session::private_file(path, true)?;
    f.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let v: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| v.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn openai_without_a_provider_is_the_missing_error_in_words() {
        let home = tempfile::tempdir().unwrap();
        let s = Settings::load_with(home.path(), &Overrides::default(), &env_of(&[])).unwrap();
        let ProviderStatus::Missing(why) = s.provider_status() else {
            panic!("a provider is configured");
        };
        let e = s.openai().unwrap_err();
        assert_eq!(e, ConfigError::Missing(why.clone()));
        assert_eq!(e.to_string(), why);
        assert!(why.starts_with("no model provider configured"), "{why}");
    }

    #[test]
    fn first_use_writes_a_commented_default_and_says_what_to_set() {
        let home = tempfile::tempdir().unwrap();
        let s = Settings::load_with(home.path(), &Overrides::default(), &env_of(&[])).unwrap();
        let text = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
        assert_eq!(text, DEFAULT_CONFIG);
        match s.provider_status() {
            ProviderStatus::Missing(m) => {
                assert!(
                    m.contains("NEOCODE_BASE_URL") && m.contains("NEOCODE_MODEL"),
                    "{m}"
                )
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(s.approval, ApprovalPolicy::Ask);
        assert_eq!(s.sandbox.mode, SandboxMode::WorkspaceWrite);
    }

    #[test]
    fn env_overrides_file_and_flags_override_env() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join("config.toml"),
            "[provider]\nbase_url = \"http://file/v1\"\nmodel = \"file-model\"\n[limits]\nmax_turns = 7\n",
        )
        .unwrap();
        let env = env_of(&[("NEOCODE_MODEL", "env-model"), ("OPENAI_API_KEY", "sk-x")]);
        let s = Settings::load_with(home.path(), &Overrides::default(), &env).unwrap();
        assert_eq!(
            s.provider_status(),
            ProviderStatus::Ready {
                base_url: "http://file/v1".into(),
                model: "env-model".into()
            }
        );
        assert_eq!(s.limits.max_turns, Some(7));
        assert_eq!(s.key_source().as_deref(), Some("OPENAI_API_KEY"));
        let flags = Overrides {
            model: Some("flag-model".into()),
            base_url: Some("http://flag/v1/".into()),
            approval: Some(ApprovalPolicy::NeverAsk),
            api: None,
            provider: None,
        };
        let s = Settings::load_with(home.path(), &flags, &env).unwrap();
        let o = s.openai().unwrap();
        assert_eq!(o.base_url, "http://flag/v1");
        assert_eq!(o.model, "flag-model");
        assert_eq!(s.approval, ApprovalPolicy::NeverAsk);
        assert!(!format!("{s:?}").contains("sk-x"));
    }

    #[test]
    fn key_alone_means_openai_but_model_is_still_required() {
        let home = tempfile::tempdir().unwrap();
        let env = env_of(&[("NEOCODE_API_KEY", "k")]);
        let s = Settings::load_with(home.path(), &Overrides::default(), &env).unwrap();
        match s.provider_status() {
            ProviderStatus::Missing(m) => assert!(m.starts_with("no model configured"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_api_picks_its_key_variable_and_base_url() {
        let home = tempfile::tempdir().unwrap();
        let env = env_of(&[
            ("NEOCODE_API", "anthropic"),
            ("ANTHROPIC_API_KEY", "ant-k"),
            ("OPENAI_API_KEY", "oa-k"),
            ("NEOCODE_MODEL", "claude-sonnet-4-5"),
        ]);
        let s = Settings::load_with(home.path(), &Overrides::default(), &env).unwrap();
        assert_eq!(s.api, Api::Anthropic);
        assert_eq!(s.key_source().as_deref(), Some("ANTHROPIC_API_KEY"));
        let w = s.wire().unwrap();
        assert_eq!(w.http.base_url, "https://api.anthropic.com/v1");
        assert_eq!(w.http.api_key.as_deref(), Some("ant-k"));
        // The flag wins over the environment.
        let flags = Overrides {
            api: Some(Api::Responses),
            ..Overrides::default()
        };
        let s = Settings::load_with(home.path(), &flags, &env).unwrap();
        assert_eq!(s.api, Api::Responses);
        assert_eq!(s.wire().unwrap().http.base_url, "https://api.openai.com/v1");
        assert_eq!(s.wire().unwrap().http.api_key.as_deref(), Some("oa-k"));
        // Without a key, api.anthropic.com is not assumed.
        let env = env_of(&[("NEOCODE_API", "anthropic"), ("NEOCODE_MODEL", "m")]);
        let s = Settings::load_with(home.path(), &Overrides::default(), &env).unwrap();
        assert!(matches!(s.provider_status(), ProviderStatus::Missing(_)));
    }

    #[test]
    fn a_profile_overlays_provider_and_an_unknown_one_is_named() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join("config.toml"),
            "[provider]\nmodel = \"local\"\nbase_url = \"http://localhost:8080/v1\"\nmax_retries = 1\n\
             [providers.claude]\napi = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\nbase_url = \"https://api.anthropic.com/v1\"\n",
        )
        .unwrap();
        let env = env_of(&[("NEOCODE_PROVIDER", "claude"), ("ANTHROPIC_API_KEY", "k")]);
        let s = Settings::load_with(home.path(), &Overrides::default(), &env).unwrap();
        assert_eq!(s.api, Api::Anthropic);
        assert_eq!(s.profile.as_deref(), Some("claude"));
        assert_eq!(s.model.as_deref(), Some("claude-sonnet-4-5"));
        assert_eq!(
            s.max_retries, 1,
            "keys the profile leaves out come from [provider]"
        );
        let flags = Overrides {
            provider: Some("gpt".into()),
            ..Overrides::default()
        };
        let e = Settings::load_with(home.path(), &flags, &env)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no provider profile `gpt` (profiles: claude)"),
            "{e}"
        );
        // Without a choice, [provider] alone applies.
        let s = Settings::load_with(home.path(), &Overrides::default(), &env_of(&[])).unwrap();
        assert_eq!((s.api, s.model.as_deref()), (Api::Chat, Some("local")));
    }

    #[test]
    fn a_model_may_name_its_api() {
        assert_eq!(
            Api::split_model("anthropic:claude-sonnet-4-5"),
            (Some(Api::Anthropic), "claude-sonnet-4-5")
        );
        assert_eq!(
            Api::split_model("qwen2.5-coder:7b"),
            (None, "qwen2.5-coder:7b")
        );
        assert_eq!(Api::split_model("gpt-5"), (None, "gpt-5"));
        let home = tempfile::tempdir().unwrap();
        let env = env_of(&[
            ("NEOCODE_MODEL", "responses:gpt-5"),
            ("OPENAI_API_KEY", "k"),
        ]);
        let s = Settings::load_with(home.path(), &Overrides::default(), &env).unwrap();
        assert_eq!((s.api, s.model.as_deref()), (Api::Responses, Some("gpt-5")));
    }

    #[test]
    fn api_key_env_names_the_variable_and_a_bad_api_is_named() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join("config.toml"),
            "[provider]\napi = \"responses\"\napi_key_env = \"MY_KEY\"\nmodel = \"gpt-5\"\n",
        )
        .unwrap();
        let env = env_of(&[("MY_KEY", "mine"), ("OPENAI_API_KEY", "not-this")]);
        let s = Settings::load_with(home.path(), &Overrides::default(), &env).unwrap();
        assert_eq!(s.wire().unwrap().http.api_key.as_deref(), Some("mine"));
        assert_eq!(s.key_source().as_deref(), Some("MY_KEY"));
        let env = env_of(&[("NEOCODE_API", "gemini")]);
        let e = Settings::load_with(home.path(), &Overrides::default(), &env)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`gemini` is not one of chat, responses, anthropic"),
            "{e}"
        );
    }

    #[test]
    fn bad_file_is_one_clear_error() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("config.toml"), "[provider]\nmodle = 1\n").unwrap();
        let e = Settings::load_with(home.path(), &Overrides::default(), &env_of(&[]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("config.toml") && e.contains("modle"), "{e}");
        std::fs::write(
            home.path().join("config.toml"),
            "[approval]\npolicy = \"maybe\"\n",
        )
        .unwrap();
        let e = Settings::load_with(home.path(), &Overrides::default(), &env_of(&[]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("maybe"), "{e}");
    }
}
