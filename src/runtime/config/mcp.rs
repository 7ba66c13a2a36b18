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
//!
//! [mcp_servers.remote]             # an HTTP server (streamable HTTP) instead of `command`
//! url = "https://example.com/mcp"
//! headers = { X-Team = "core" }    # sent with every request
//! bearer_token_env = "REMOTE_TOKEN" # or bearer_token_command = "pass show remote-mcp"
//!
//! [mcp_servers.linear]             # OAuth 2.1: `neocode mcp login linear` once
//! url = "https://mcp.example.com/mcp"
//! oauth = true
//! client_id = "..."                # optional: a pre-registered client (no registration)
//! scopes = ["read"]                # optional: the scopes asked for
//! ```
//!
//! A table has either `command` (a stdio server) or `url` (an HTTP server), never both.
//! A bearer token is read when the server is connected, never kept in the config.
//!
//! Only this part of the file is read here; the rest of the settings belong to the agent's
//! configuration. One bad table makes that server unusable, not the others.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::mcp_error::{BadTimeout, ConfigFileError, RemoteError, ServersError};

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
    /// An HTTP server (`url = ...`): then `command`, `args`, `env` and `cwd` are unused.
    pub remote: Option<Remote>,
}

/// Where an HTTP server is and how neocode authenticates to it.
#[derive(Clone, PartialEq)]
pub struct Remote {
    /// `http://` or `https://` endpoint (streamable HTTP, usually ending in `/mcp`).
    pub url: String,
    /// Static headers sent with every request (`headers = { NAME = "value" }`).
    pub headers: BTreeMap<String, String>,
    /// Where the `Authorization: Bearer` token comes from, if anywhere.
    pub bearer: Option<BearerSource>,
    /// `oauth = true`: the token comes from `neocode mcp login NAME`.
    pub oauth: Option<OAuthSettings>,
}

/// How an OAuth-protected server is logged in to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OAuthSettings {
    /// A pre-registered client; without it the authorization server must offer registration.
    pub client_id: Option<String>,
    /// Scopes asked for (empty: what the server's metadata lists, or none).
    pub scopes: Vec<String>,
    /// Where the tokens are kept: `<home>/mcp-tokens/NAME.json`, set when the config file is
    /// read (`None` for servers built elsewhere, which then cannot log in).
    pub token_file: Option<PathBuf>,
}

/// Header values may be secrets: they are never printed, only their names.
impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("url", &self.url)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("bearer", &self.bearer)
            .field("oauth", &self.oauth)
            .finish()
    }
}

/// Where a bearer token is read from when the server is connected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BearerSource {
    /// `bearer_token_env`: this variable of neocode's environment.
    Env(String),
    /// `bearer_token_command`: the standard output of this command, split into words and run
    /// without a shell.
    Command(String),
}

impl Remote {
    /// The URL with any query string hidden (it may carry a key), for people.
    pub fn shown_url(&self) -> String {
        match self.url.split_once('?') {
            Some((base, _)) => format!("{base}?…"),
            None => self.url.clone(),
        }
    }
}

impl ServerConfig {
    /// A valid stdio server with default settings (tests and callers building configs).
    pub fn stdio(name: &str, command: &str, args: &[&str]) -> ServerConfig {
        ServerConfig {
            name: name.to_string(),
            invalid: None,
            command: command.to_string(),
            args: args.iter().map(ToString::to_string).collect(),
            env: BTreeMap::new(),
            cwd: None,
            enabled: true,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            remote: None,
        }
    }

    /// A valid HTTP server at `url` with default settings, no headers and no token.
    pub fn http(name: &str, url: &str) -> ServerConfig {
        let mut cfg = ServerConfig::stdio(name, "", &[]);
        cfg.remote = Some(Remote {
            url: url.to_string(),
            headers: BTreeMap::new(),
            bearer: None,
            oauth: None,
        });
        cfg
    }

    /// The transport, for people: `stdio` or `streamable HTTP`.
    pub fn transport(&self) -> &'static str {
        if self.remote.is_some() {
            "streamable HTTP"
        } else {
            "stdio"
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
    headers: Option<BTreeMap<String, String>>,
    bearer_token_env: Option<String>,
    bearer_token_command: Option<String>,
    oauth: Option<bool>,
    client_id: Option<String>,
    scopes: Option<Vec<String>>,
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
    let mut servers = parse(&text).map_err(|source| ConfigFileError::Servers { path, source })?;
    set_token_files(home, &mut servers);
    Ok(servers)
}

/// Gives every OAuth server of `<home>/config.toml` its token file.
pub(crate) fn set_token_files(home: &Path, servers: &mut [ServerConfig]) {
    for s in servers {
        if let Some(o) = s.remote.as_mut().and_then(|r| r.oauth.as_mut()) {
            o.token_file = Some(token_file(home, &s.name));
        }
    }
}

/// Where the OAuth tokens of server `name` are kept (the name is checked to be a plain word).
pub(crate) fn token_file(home: &Path, name: &str) -> PathBuf {
    home.join("mcp-tokens").join(format!("{name}.json"))
}

/// Reads the `[mcp_servers.*]` tables of a config file's text, sorted by name.
pub(crate) fn parse(text: &str) -> Result<Vec<ServerConfig>, ServersError> {
    let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        ServersError::Toml(e.to_string().lines().next().unwrap_or("").to_string())
    })?;
    from_table(&doc)
}

/// The `[mcp_servers.*]` tables of a parsed config file, sorted by name.
pub(super) fn from_table(doc: &toml::Table) -> Result<Vec<ServerConfig>, ServersError> {
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

/// One server from its table's value, checked as a `[mcp_servers.NAME]` table is (an editor's
/// servers are built through it too).
pub(crate) fn one(name: &str, value: &toml::Value) -> ServerConfig {
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
    let timeouts = timeouts(&raw);
    let (startup, tool) = match timeouts {
        Ok(t) => t,
        Err(e) => return invalid(cfg, e.to_string()),
    };
    cfg.enabled = raw.enabled;
    cfg.enabled_tools = raw.enabled_tools.clone();
    cfg.disabled_tools = raw.disabled_tools.clone();
    cfg.startup_timeout = startup.unwrap_or(DEFAULT_STARTUP_TIMEOUT);
    cfg.tool_timeout = tool.unwrap_or(DEFAULT_TOOL_TIMEOUT);
    let command = raw.command.clone().filter(|c| !c.trim().is_empty());
    match (command, raw.url.clone()) {
        (Some(_), Some(_)) => invalid(
            cfg,
            "give either `command` (a stdio server) or `url` (an HTTP server), not both".into(),
        ),
        (None, None) => invalid(
            cfg,
            "missing `command` (a stdio server) or `url` (an HTTP server)".into(),
        ),
        (Some(command), None) => match stdio_only(&raw) {
            Some(key) => invalid(cfg, format!("`{key}` applies only to `url` servers")),
            None => {
                cfg.command = command;
                cfg.args = raw.args;
                cfg.env = raw.env;
                cfg.cwd = raw.cwd;
                cfg
            }
        },
        (None, Some(url)) => match remote(url, raw) {
            Ok(r) => {
                cfg.remote = Some(r);
                cfg
            }
            Err(why) => invalid(cfg, why.to_string()),
        },
    }
}

/// The startup and tool timeouts of a table (`None`: the default).
fn timeouts(raw: &RawServer) -> Result<(Option<Duration>, Option<Duration>), BadTimeout> {
    let secs = |v: Option<f64>, key: &'static str| -> Result<Option<Duration>, BadTimeout> {
        match v {
            None => Ok(None),
            Some(s) if s.is_finite() && s > 0.0 && s <= 86_400.0 => {
                Ok(Some(Duration::from_secs_f64(s)))
            }
            Some(value) => Err(BadTimeout { key, value }),
        }
    };
    let startup = secs(raw.startup_timeout_sec, "startup_timeout_sec")?
        .or(raw.startup_timeout_ms.map(Duration::from_millis));
    let tool = secs(raw.tool_timeout_sec, "tool_timeout_sec")?;
    Ok((startup, tool))
}

/// The first key of an HTTP server's table that a stdio server was given.
fn stdio_only(raw: &RawServer) -> Option<&'static str> {
    if raw.headers.is_some() {
        Some("headers")
    } else if raw.bearer_token_env.is_some() {
        Some("bearer_token_env")
    } else if raw.bearer_token_command.is_some() {
        Some("bearer_token_command")
    } else if raw.oauth.is_some() {
        Some("oauth")
    } else if raw.client_id.is_some() {
        Some("client_id")
    } else if raw.scopes.is_some() {
        Some("scopes")
    } else {
        None
    }
}

/// The HTTP part of a `url` table: a valid URL and headers, and at most one token source.
fn remote(url: String, raw: RawServer) -> Result<Remote, RemoteError> {
    if !raw.args.is_empty() {
        return Err(RemoteError::StdioKey("args"));
    }
    if !raw.env.is_empty() {
        return Err(RemoteError::StdioKey("env"));
    }
    if raw.cwd.is_some() {
        return Err(RemoteError::StdioKey("cwd"));
    }
    let parsed = reqwest::Url::parse(url.trim()).map_err(|e| RemoteError::Url(e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(RemoteError::Url(
            "it must start with http:// or https://".into(),
        ));
    }
    let headers = raw.headers.unwrap_or_default();
    for (name, value) in &headers {
        if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
            return Err(RemoteError::HeaderName(name.clone()));
        }
        if reqwest::header::HeaderValue::from_str(value).is_err() {
            return Err(RemoteError::HeaderValue(name.clone()));
        }
    }
    let bearer = match (raw.bearer_token_env, raw.bearer_token_command) {
        (Some(_), Some(_)) => return Err(RemoteError::TwoTokens),
        (Some(v), None) if v.trim().is_empty() => return Err(RemoteError::EmptyTokenSource),
        (None, Some(c)) if c.trim().is_empty() => return Err(RemoteError::EmptyTokenSource),
        (Some(v), None) => Some(BearerSource::Env(v.trim().to_string())),
        (None, Some(c)) => Some(BearerSource::Command(c)),
        (None, None) => None,
    };
    if bearer.is_some()
        && headers
            .keys()
            .any(|k| k.eq_ignore_ascii_case("authorization"))
    {
        return Err(RemoteError::TwoAuthorizations);
    }
    let oauth = if raw.oauth == Some(true) {
        if bearer.is_some()
            || headers
                .keys()
                .any(|k| k.eq_ignore_ascii_case("authorization"))
        {
            return Err(RemoteError::OAuthAndToken);
        }
        Some(OAuthSettings {
            client_id: raw.client_id.filter(|c| !c.trim().is_empty()),
            scopes: raw.scopes.unwrap_or_default(),
            token_file: None,
        })
    } else if raw.client_id.is_some() {
        return Err(RemoteError::OAuthKey("client_id"));
    } else if raw.scopes.is_some() {
        return Err(RemoteError::OAuthKey("scopes"));
    } else {
        None
    };
    Ok(Remote {
        url: url.trim().to_string(),
        headers,
        bearer,
        oauth,
    })
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
[mcp_servers.both]
command = "a"
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
        assert_eq!(why[0].0, "both");
        assert_eq!(
            why[0].1,
            Some("give either `command` (a stdio server) or `url` (an HTTP server), not both")
        );
        assert_eq!(why[1].0, "good");
        assert_eq!(why[1].1, None);
        assert_eq!(
            why[2].1,
            Some("missing `command` (a stdio server) or `url` (an HTTP server)")
        );
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

    #[test]
    fn url_servers_take_headers_and_one_token_source() {
        let cfg = parse(
            r#"
[mcp_servers.a]
url = "http://127.0.0.1:9/mcp?key=s3cret"
headers = { X-Team = "core" }
bearer_token_env = "A_TOKEN"
tool_timeout_sec = 5
[mcp_servers.b]
url = "https://example.invalid/mcp"
bearer_token_command = "pass show b"
[mcp_servers.c]
url = "ftp://example.invalid/"
[mcp_servers.d]
url = "http://127.0.0.1/mcp"
bearer_token_env = "X"
bearer_token_command = "y"
[mcp_servers.e]
command = "x"
headers = { A = "b" }
[mcp_servers.f]
url = "http://127.0.0.1/mcp"
args = ["x"]
[mcp_servers.g]
url = "http://127.0.0.1/mcp"
headers = { "bad name" = "v" }
[mcp_servers.h]
url = "http://127.0.0.1/mcp"
headers = { Authorization = "Basic x" }
bearer_token_env = "X"
"#,
        )
        .unwrap();
        let a = cfg[0].remote.as_ref().unwrap();
        assert_eq!(cfg[0].invalid, None);
        assert_eq!(cfg[0].transport(), "streamable HTTP");
        assert_eq!(a.headers.get("X-Team").map(String::as_str), Some("core"));
        assert_eq!(a.bearer, Some(BearerSource::Env("A_TOKEN".into())));
        assert_eq!(a.shown_url(), "http://127.0.0.1:9/mcp?…");
        assert!(!format!("{a:?}").contains("core"), "{a:?}");
        assert_eq!(cfg[0].tool_timeout, Duration::from_secs(5));
        let b = cfg[1].remote.as_ref().unwrap();
        assert_eq!(b.bearer, Some(BearerSource::Command("pass show b".into())));
        let why = |i: usize| cfg[i].invalid.clone().unwrap_or_default();
        assert!(why(2).contains("http:// or https://"), "{}", why(2));
        assert!(why(3).contains("not both"), "{}", why(3));
        assert_eq!(why(4), "`headers` applies only to `url` servers");
        assert!(why(5).contains("`args` applies only to `command` servers"));
        assert!(why(6).contains("`bad name` is not a valid header name"));
        assert!(why(7).contains("keep one"), "{}", why(7));
        assert!(cfg[2..].iter().all(|c| c.remote.is_none()));
    }

    #[test]
    fn oauth_tables() {
        let cfg = parse(
            r#"
[mcp_servers.a]
url = "https://example.invalid/mcp"
oauth = true
client_id = "abc"
scopes = ["read", "write"]
[mcp_servers.b]
url = "https://example.invalid/mcp"
oauth = true
bearer_token_env = "X"
[mcp_servers.c]
url = "https://example.invalid/mcp"
client_id = "abc"
[mcp_servers.d]
command = "x"
oauth = true
"#,
        )
        .unwrap();
        let a = cfg[0].remote.as_ref().unwrap().oauth.as_ref().unwrap();
        assert_eq!(a.client_id.as_deref(), Some("abc"));
        assert_eq!(a.scopes, ["read", "write"]);
        let why = |i: usize| cfg[i].invalid.clone().unwrap_or_default();
        assert!(why(1).contains("drop the bearer token"), "{}", why(1));
        assert_eq!(why(2), "`client_id` applies only with `oauth = true`");
        assert_eq!(why(3), "`oauth` applies only to `url` servers");
    }
}
