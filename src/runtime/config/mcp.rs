//! The `[mcp_servers.NAME]` tables of `<home>/config.toml`, in the shape Codex uses:
//!
//! ```toml
//! [mcp_servers.docs]
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-everything"]
//! env = { DOCS_TOKEN = "..." }
//! enabled_tools = ["echo"]      # optional: only these
//! disabled_tools = ["dangerous"] # optional: never these
//! startup_timeout_sec = 10
//! tool_timeout_sec = 60
//! ```
//!
//! Only this part of the file is read here; the rest of the settings belong to the agent's
//! configuration. One bad table makes that server unusable, not the others.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::mcp_error::{BadTimeout, ConfigFileError, ServersError};

/// Seconds a server may take to start and list its tools.
pub(crate) const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// Seconds one tool call may take.
pub(crate) const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// One configured server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// The table's name: `mcp__<name>__<tool>`.
    pub name: String,
    /// What is wrong with the table, if anything (the server is then never started).
    pub invalid: Option<String>,
    /// Program to start.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables the child gets on top of a minimal base (nothing else is inherited).
    pub env: BTreeMap<String, String>,
    /// Working folder of the child (default: the workspace root).
    pub cwd: Option<PathBuf>,
    /// `enabled = false` keeps the table without starting the server.
    pub enabled: bool,
    /// Only these tools are offered, when given.
    pub enabled_tools: Option<Vec<String>>,
    /// These tools are never offered.
    pub disabled_tools: Vec<String>,
    /// Time to start and list tools.
    pub startup_timeout: Duration,
    /// Time one call may take.
    pub tool_timeout: Duration,
}

impl ServerConfig {
    /// A valid stdio server with default settings (tests and callers building configs).
    pub fn stdio(name: &str, command: &str, args: &[&str]) -> ServerConfig {
        ServerConfig {
            name: name.to_string(),
            invalid: None,
            command: command.to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: BTreeMap::new(),
            cwd: None,
            enabled: true,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
        }
    }

    /// Whether the server offers `tool` (after `enabled_tools` / `disabled_tools`).
    pub(crate) fn offers(&self, tool: &str) -> bool {
        self.enabled_tools
            .as_ref()
            .is_none_or(|e| e.iter().any(|t| t == tool))
            && !self.disabled_tools.iter().any(|t| t == tool)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    #[serde(default = "yes")]
    enabled: bool,
    enabled_tools: Option<Vec<String>>,
    #[serde(default)]
    disabled_tools: Vec<String>,
    startup_timeout_sec: Option<f64>,
    startup_timeout_ms: Option<u64>,
    tool_timeout_sec: Option<f64>,
    url: Option<String>,
}

fn yes() -> bool {
    true
}

/// Reads the servers from `<home>/config.toml`. A missing file means no servers; a file that
/// is not TOML is an error (one line, with the position).
pub(crate) fn load(home: &Path) -> Result<Vec<ServerConfig>, ConfigFileError> {
    let path = home.join("config.toml");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(ConfigFileError::Read {
                path,
                message: e.to_string(),
            });
        }
    };
    parse(&text).map_err(|source| ConfigFileError::Servers { path, source })
}

/// Reads the `[mcp_servers.*]` tables of a config file's text, sorted by name.
pub(crate) fn parse(text: &str) -> Result<Vec<ServerConfig>, ServersError> {
    let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        ServersError::Toml(e.to_string().lines().next().unwrap_or("").to_string())
    })?;
    let Some(servers) = doc.get("mcp_servers") else {
        return Ok(Vec::new());
    };
    let toml::Value::Table(servers) = servers else {
        return Err(ServersError::NotATable);
    };
    let mut out: Vec<ServerConfig> = servers.iter().map(|(n, v)| one(n, v)).collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

fn one(name: &str, value: &toml::Value) -> ServerConfig {
    let mut cfg = ServerConfig::stdio(name, "", &[]);
    let invalid = |mut c: ServerConfig, why: String| {
        c.invalid = Some(why);
        c
    };
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return invalid(
            cfg,
            "server names may use only letters, digits, `_` and `-`".into(),
        );
    }
    let raw: RawServer = match value.clone().try_into() {
        Ok(r) => r,
        Err(e) => {
            let e: toml::de::Error = e;
            return invalid(cfg, e.message().trim().to_string());
        }
    };
    if raw.url.is_some() {
        return invalid(
            cfg,
            "`url` (HTTP servers) is not supported; neocode starts stdio servers (`command`)"
                .into(),
        );
    }
    let Some(command) = raw.command.filter(|c| !c.trim().is_empty()) else {
        return invalid(cfg, "missing `command`".into());
    };
    let secs = |v: Option<f64>, key: &'static str| -> Result<Option<Duration>, BadTimeout> {
        match v {
            None => Ok(None),
            Some(s) if s.is_finite() && s > 0.0 && s <= 86_400.0 => {
                Ok(Some(Duration::from_secs_f64(s)))
            }
            Some(value) => Err(BadTimeout { key, value }),
        }
    };
    let startup = match secs(raw.startup_timeout_sec, "startup_timeout_sec") {
        Ok(s) => s.or(raw.startup_timeout_ms.map(Duration::from_millis)),
        Err(e) => return invalid(cfg, e.to_string()),
    };
    let tool = match secs(raw.tool_timeout_sec, "tool_timeout_sec") {
        Ok(t) => t,
        Err(e) => return invalid(cfg, e.to_string()),
    };
    cfg.command = command;
    cfg.args = raw.args;
    cfg.env = raw.env;
    cfg.cwd = raw.cwd;
    cfg.enabled = raw.enabled;
    cfg.enabled_tools = raw.enabled_tools;
    cfg.disabled_tools = raw.disabled_tools;
    cfg.startup_timeout = startup.unwrap_or(DEFAULT_STARTUP_TIMEOUT);
    cfg.tool_timeout = tool.unwrap_or(DEFAULT_TOOL_TIMEOUT);
    cfg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_shaped_tables() {
        let cfg = parse(
            r#"
model = "ignored here"
[mcp_servers.docs]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-everything"]
env = { TOKEN = "t" }
enabled_tools = ["echo", "add"]
startup_timeout_sec = 2.5
tool_timeout_sec = 30

[mcp_servers.off]
command = "x"
enabled = false
disabled_tools = ["rm"]
"#,
        )
        .unwrap();
        assert_eq!(cfg.len(), 2);
        let d = &cfg[0];
        assert_eq!(d.name, "docs");
        assert_eq!(d.invalid, None);
        assert_eq!(
            d.args,
            vec!["-y", "@modelcontextprotocol/server-everything"]
        );
        assert_eq!(d.env.get("TOKEN").map(String::as_str), Some("t"));
        assert_eq!(d.startup_timeout, Duration::from_millis(2500));
        assert_eq!(d.tool_timeout, Duration::from_secs(30));
        assert!(d.offers("echo") && !d.offers("other"));
        let o = &cfg[1];
        assert!(!o.enabled);
        assert!(o.offers("ls") && !o.offers("rm"));
        assert_eq!(o.tool_timeout, DEFAULT_TOOL_TIMEOUT);
    }

    #[test]
    fn a_bad_table_spoils_only_its_server() {
        let cfg = parse(
            r#"
[mcp_servers.good]
command = "a"
[mcp_servers.typo]
comand = "a"
[mcp_servers.nocmd]
args = []
[mcp_servers.http]
url = "https://example.invalid/mcp"
[mcp_servers.slow]
command = "a"
tool_timeout_sec = -1
"#,
        )
        .unwrap();
        let why: Vec<(&str, Option<&str>)> = cfg
            .iter()
            .map(|c| (c.name.as_str(), c.invalid.as_deref()))
            .collect();
        assert_eq!(why[0].0, "good");
        assert_eq!(why[0].1, None);
        assert!(why[1].1.unwrap().contains("not supported"), "{why:?}");
        assert_eq!(why[2].1, Some("missing `command`"));
        assert!(why[3].1.unwrap().contains("between 0 and 86400"), "{why:?}");
        assert!(why[4].1.unwrap().contains("comand"), "{why:?}");
    }

    #[test]
    fn not_toml_is_one_line_error_and_no_section_is_empty() {
        let e = parse("[mcp_servers.x\ncommand=").unwrap_err().to_string();
        assert!(!e.contains('\n'), "{e}");
        assert!(parse("model = \"m\"").unwrap().is_empty());
        assert!(parse("mcp_servers = 3").is_err());
    }
}
