//! Loading: the file (written first if absent), the environment and the flags, into
//! [`Settings`].

use std::path::Path;
use std::time::Duration;

use super::file::{FileConfig, FileProvider};
use super::mcp;
use super::profile::chosen_provider;
use super::{Api, ApprovalPolicy, ConfigError, DEFAULT_CONFIG, Overrides, Settings};
use crate::runtime::tools::{SandboxMode, SandboxSettings, WebFetchSettings};

impl Settings {
    /// Reads `<home>/config.toml` (writing the default first if there is none), the process
    /// environment and `flags`. A config file that does not parse is an error naming it.
    pub(crate) fn load(home: &Path, flags: &Overrides) -> Result<Settings, ConfigError> {
        Settings::load_with(home, flags, &|k| std::env::var(k).ok())
    }

    /// [`Settings::load`] with an explicit environment (tests).
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
        let text = read_or_create(home, &path)?;
        // The text is parsed once; the settings, the MCP servers and the language servers
        // are each read from the one table.
        let doc: toml::Table = toml::from_str(&text).map_err(|e| bad(e.message().to_string()))?;
        let mut file: FileConfig = doc
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| bad(e.message().to_string()))?;
        let mut mcp_servers = mcp::from_table(&doc).map_err(|e| bad(e.to_string()))?;
        mcp::set_token_files(home, &mut mcp_servers);
        let lsp = super::lsp::from_table(&doc).map_err(|e| bad(e.to_string()))?;
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
        let profiles: Vec<String> = file.providers.keys().cloned().collect();
        let own = Own::of(&file, flags);
        let p = chosen_provider(&mut file, profile.as_deref()).map_err(|e| bad(e.to_string()))?;
        let (api, model) = api_and_model(flags, &own, &p, &env, &bad)?;
        let key = Key::of(&p, own.key, &env);
        let vendor_keys = [
            env(Api::Chat.key_variable()),
            env(Api::Anthropic.key_variable()),
        ];
        let approval = match flags.approval {
            Some(a) => a,
            None => approval_policy(file.approval.policy.as_deref(), &bad)?,
        };
        let mode = sandbox_mode(file.sandbox.mode.as_deref(), &bad)?;
        let compact_at = compact_at(p.compact_at, &bad)?;
        let first_call_requires_tool = tool_choice_required(p.tool_choice.as_deref(), &bad)?;
        Ok(Settings {
            base_url: flags
                .base_url
                .clone()
                .or(own.base_url)
                .or_else(|| env("NEOCODE_BASE_URL"))
                .or(p.base_url)
                .filter(|s| !s.trim().is_empty())
                .map(|s| s.trim().trim_end_matches('/').to_string()),
            model,
            model_from_flag: flags.model.as_ref().is_some_and(|m| !m.trim().is_empty()),
            path,
            api,
            profile,
            profiles,
            reasoning_effort: p_str(p.reasoning_effort.as_deref()).map(str::to_string),
            thinking_budget: p.thinking_budget.unwrap_or(0),
            system_as_text: p.system_as_text.unwrap_or(false),
            first_call_requires_tool,
            max_output_tokens: p.max_output_tokens.unwrap_or(16_000).max(1),
            key_command: key.command,
            api_key: key.value,
            explicit_source: key.source,
            vendor_keys,
            context_window: p.context_window.unwrap_or(128_000).max(1),
            context_window_known: p.context_window.is_some(),
            compact_at,
            max_tokens: p.max_tokens.filter(|n| *n > 0),
            connect_timeout: Duration::from_secs(p.connect_timeout_secs.unwrap_or(10)),
            idle_timeout: Duration::from_secs_f64(p.idle_timeout_secs.unwrap_or(300.0).max(0.05)),
            max_retries: p.max_retries.unwrap_or(3),
            retry_backoff: Duration::from_millis(p.retry_backoff_ms.unwrap_or(500)),
            prompt_caps: prompt_caps(&file.limits),
            limits: file.limits.session,
            prices: crate::runtime::cost::PriceTable::new(file.prices),
            approval,
            sandbox: sandbox_settings(file.sandbox, mode, home),
            command_timeout: Duration::from_secs(file.tools.command_timeout_secs.unwrap_or(120)),
            output_cap: file.tools.output_cap_bytes.unwrap_or(30_000),
            agents: file.agents.settings(),
            web_fetch: web_fetch(file.web_fetch),
            mcp_servers,
            lsp,
        })
    }
}

/// What a profile chosen explicitly (`--provider`, `/provider`, a session's stored one) says
/// itself: what the user asked for, so its own api, base URL and model win over the
/// environment's (the flags still win over it).
#[derive(Default)]
struct Own {
    api: Option<String>,
    base_url: Option<String>,
    model: Option<String>,
    /// It names a key of its own (a variable or a command).
    key: bool,
}

impl Own {
    fn of(file: &FileConfig, flags: &Overrides) -> Own {
        flags
            .provider
            .as_ref()
            .and_then(|n| file.providers.get(n.trim()))
            .map(|p| Own {
                api: p.api.clone(),
                base_url: p.base_url.clone(),
                model: p.model.clone(),
                key: p.api_key_env.is_some() || p.api_key_command.is_some(),
            })
            .unwrap_or_default()
    }
}

/// The wire API and the model: the flags, then the explicit profile, the environment and
/// the chosen provider; `api:model` names both (an explicit --api still wins).
fn api_and_model(
    flags: &Overrides,
    own: &Own,
    p: &FileProvider,
    env: &dyn Fn(&str) -> Option<String>,
    bad: &dyn Fn(String) -> ConfigError,
) -> Result<(Api, Option<String>), ConfigError> {
    let api = match flags.api {
        Some(a) => a,
        None => match own
            .api
            .clone()
            .or_else(|| env("NEOCODE_API"))
            .or_else(|| p.api.clone())
        {
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
        .or_else(|| own.model.clone())
        .or_else(|| env("NEOCODE_MODEL"))
        .or_else(|| p.model.clone())
        .filter(|s| !s.trim().is_empty());
    Ok(match model.as_deref().map(Api::split_model) {
        Some((Some(a), m)) => (flags.api.unwrap_or(a), Some(m.to_string())),
        _ => (api, model),
    })
}

/// Where the API key comes from.
struct Key {
    value: Option<String>,
    /// The variable it was read from (or was to be read from).
    source: Option<String>,
    /// The command to run for it; only when no variable is named, and only run when needed.
    command: Option<String>,
}

impl Key {
    /// `NEOCODE_API_KEY`, else the provider's `api_key_env`, else its `api_key_command`. An
    /// explicit profile with a key of its own never gets `NEOCODE_API_KEY` (another server's
    /// key).
    fn of(p: &FileProvider, own_key: bool, env: &dyn Fn(&str) -> Option<String>) -> Key {
        let key_env = p_str(p.api_key_env.as_deref()).map(str::to_string);
        let general = if own_key {
            None
        } else {
            env("NEOCODE_API_KEY")
        };
        let (value, source) = match general {
            Some(k) => (Some(k), Some("NEOCODE_API_KEY".to_string())),
            None => match &key_env {
                Some(name) => (env(name), Some(name.clone())),
                None => (None, None),
            },
        };
        let command = p_str(p.api_key_command.as_deref())
            .map(str::to_string)
            .filter(|_| source.is_none());
        Key {
            value,
            source,
            command,
        }
    }
}

/// `[sandbox]` in the mode it names, confining under `home`.
fn sandbox_settings(
    f: super::file::FileSandbox,
    mode: SandboxMode,
    home: &Path,
) -> SandboxSettings {
    SandboxSettings {
        mode,
        network: f.network.unwrap_or(false),
        simulate_unavailable: f.simulate_unavailable.unwrap_or(false),
        simulate_no_userns: f.simulate_no_userns.unwrap_or(false),
        home: Some(home.to_path_buf()),
        env_allow: f.env_allow.unwrap_or_default(),
    }
}

/// `[web_fetch]` over the defaults.
fn web_fetch(f: super::file::FileWebFetch) -> WebFetchSettings {
    let d = WebFetchSettings::default();
    WebFetchSettings {
        allow_hosts: f.allow_hosts.unwrap_or_default(),
        max_bytes: f.max_bytes.map_or(d.max_bytes, |n| n.max(1)),
        timeout: f
            .timeout_secs
            .map_or(d.timeout, |s| Duration::from_secs(s.max(1))),
    }
}

/// `tool_choice`: `"required"` makes the first model call of each prompt call a tool;
/// `"auto"` (the default) leaves it to the model.
fn tool_choice_required(
    v: Option<&str>,
    bad: &dyn Fn(String) -> ConfigError,
) -> Result<bool, ConfigError> {
    match p_str(v) {
        None | Some("auto") => Ok(false),
        Some("required") => Ok(true),
        Some(other) => Err(bad(format!(
            "tool_choice must be \"auto\" or \"required\", not {other:?}"
        ))),
    }
}

/// What one prompt may spend, from `[limits]`.
fn prompt_caps(limits: &super::file::FileLimits) -> super::caps::PromptCaps {
    super::caps::PromptCaps {
        tool_calls: cap(
            limits.max_tool_calls_per_prompt,
            super::caps::DEFAULT_TOOL_CALLS_PER_PROMPT,
        ),
        turns: cap(
            limits.max_turns_per_prompt,
            super::caps::DEFAULT_TURNS_PER_PROMPT,
        ),
    }
}

/// `compact_at` (default 0.8), which must lie between 0.1 and 1.0.
fn compact_at(v: Option<f64>, bad: &dyn Fn(String) -> ConfigError) -> Result<f64, ConfigError> {
    let compact_at = v.unwrap_or(0.8);
    if !(0.1..=1.0).contains(&compact_at) {
        return Err(bad("compact_at must be between 0.1 and 1.0".into()));
    }
    Ok(compact_at)
}

/// `config.toml`'s text; a missing file is written with the commented default (best effort:
/// a read-only home must not stop browsing or sending).
fn read_or_create(home: &Path, path: &Path) -> Result<String, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let _ = crate::session::private_dir(home);
            let _ = write_new(path, DEFAULT_CONFIG);
            Ok(DEFAULT_CONFIG.to_string())
        }
        Err(e) => Err(ConfigError::Read {
            path: path.to_path_buf(),
            message: e.to_string(),
        }),
    }
}

/// `[approval] policy`: ask when unset.
fn approval_policy(
    policy: Option<&str>,
    bad: &dyn Fn(String) -> ConfigError,
) -> Result<ApprovalPolicy, ConfigError> {
    match p_str(policy) {
        None => Ok(ApprovalPolicy::Ask),
        Some(s) => ApprovalPolicy::parse(s).ok_or_else(|| {
            bad(format!(
                "approval policy `{s}` is not one of ask, auto-edit, never-ask"
            ))
        }),
    }
}

/// `[sandbox] mode`: workspace-write when unset.
fn sandbox_mode(
    mode: Option<&str>,
    bad: &dyn Fn(String) -> ConfigError,
) -> Result<SandboxMode, ConfigError> {
    match p_str(mode) {
        None | Some("workspace-write") => Ok(SandboxMode::WorkspaceWrite),
        Some("read-only") => Ok(SandboxMode::ReadOnly),
        Some("off") => Ok(SandboxMode::Off),
        Some(other) => Err(bad(format!(
            "sandbox mode `{other}` is not one of workspace-write, read-only, off"
        ))),
    }
}

/// A per-prompt cap as configured: 0 is none, unset is the default.
fn cap(set: Option<u64>, default: u64) -> Option<u64> {
    match set {
        Some(0) => None,
        Some(n) => Some(n),
        None => Some(default),
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
