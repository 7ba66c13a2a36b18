//! `neocode mcp list`: every configured MCP server started or connected (in parallel), then its
//! transport, state and tools, so a user can check a `[mcp_servers]` table without starting a
//! session. Header values and bearer tokens are never printed. `login` / `logout` keep and
//! delete an OAuth server's tokens.

use serde::Serialize;

use super::common::{CmdResult, Failure};
use super::out::Out;
use crate::runtime::Location;
use crate::runtime::config::mcp as config;
use crate::runtime::extensions::mcp::oauth::{self, LoginMode};
use crate::runtime::extensions::mcp::{McpManager, ServerConfig, ServerState};
use crate::runtime::tools::ToolKind;
use crate::sanitize;

#[derive(Serialize)]
struct JsonTool<'a> {
    name: &'a str,
    tool: &'a str,
    read_only: bool,
    description: &'a str,
}

#[derive(Serialize)]
struct JsonServer<'a> {
    name: &'a str,
    /// The command line, or an HTTP server's URL.
    command: &'a str,
    transport: &'static str,
    state: &'static str,
    reason: Option<&'a str>,
    server_info: Option<&'a str>,
    restarts: u32,
    /// `logged in (expires …)` / `not logged in` for an OAuth server.
    oauth: Option<String>,
    tools: Vec<JsonTool<'a>>,
}

/// Prints the servers of `<home>/config.toml` with their state and tools.
pub(super) fn list(loc: &Location, json: bool) -> CmdResult {
    let mut servers =
        config::load(&loc.home).map_err(|e| Failure::runtime(sanitize::line(&e.to_string())))?;
    servers.extend(crate::runtime::extensions::plugins::mcp_servers(&loc.home));
    let logins: Vec<Option<String>> = servers
        .iter()
        .map(|s| s.remote.as_ref().and_then(oauth::login_state))
        .collect();
    let m = McpManager::new(servers, loc.root()).map_err(Failure::runtime)?;
    m.start_all();
    let statuses = m.statuses();
    let mut out = Out::stdout();
    if json {
        let rows = statuses.iter().zip(&logins).map(|(s, login)| JsonServer {
            name: &s.name,
            command: &s.command,
            transport: s.transport,
            state: s.state.label(),
            reason: s.state.reason(),
            server_info: s.server_info.as_deref(),
            restarts: s.restarts,
            oauth: login.clone(),
            tools: s
                .tools
                .iter()
                .map(|t| JsonTool {
                    name: &t.name,
                    tool: &t.tool,
                    read_only: t.kind == ToolKind::Read,
                    description: &t.description,
                })
                .collect(),
        });
        out.json_array(rows)?;
        return out.finish();
    }
    if statuses.is_empty() {
        out.line(&format!(
            "no MCP servers configured (add [mcp_servers.NAME] tables to {})",
            sanitize::line(&loc.home.join("config.toml").display().to_string())
        ))?;
        return out.finish();
    }
    for (s, login) in statuses.iter().zip(&logins) {
        let state = match &s.state {
            ServerState::Ready => out.paint("32", "ready"),
            st if st.is_problem() => out.paint("31", st.label()),
            st => out.paint("2", st.label()),
        };
        let mut line = format!("{}  {state}", sanitize::line(&s.name));
        if let Some(r) = s.state.reason() {
            line.push_str(&format!(" — {}", sanitize::line(r)));
        }
        if let Some(i) = &s.server_info {
            line.push_str(&format!("  ({})", sanitize::line(i)));
        }
        out.line(&line)?;
        let what = if s.transport == "stdio" {
            "command"
        } else {
            "url"
        };
        out.line(&format!(
            "  {what}: {}  ({})",
            sanitize::line(&s.command),
            s.transport
        ))?;
        if let Some(l) = login {
            out.line(&format!("  oauth: {l}"))?;
        }
        for t in &s.tools {
            let kind = if t.kind == ToolKind::Read {
                "read-only"
            } else {
                "asks"
            };
            let desc = t.description.lines().next().unwrap_or("");
            out.line(&format!(
                "  {}  {kind}  {}",
                sanitize::line(&t.name),
                sanitize::line(desc)
            ))?;
        }
    }
    out.finish()
}

/// The configured server `name`, or a usage error naming the configured ones.
fn server(loc: &Location, name: &str) -> Result<ServerConfig, Failure> {
    let servers =
        config::load(&loc.home).map_err(|e| Failure::runtime(sanitize::line(&e.to_string())))?;
    let names: Vec<String> = servers.iter().map(|s| s.name.clone()).collect();
    servers.into_iter().find(|s| s.name == name).ok_or_else(|| {
        Failure::usage(format!(
            "no MCP server `{}` in {} (configured: {})",
            sanitize::line(name),
            sanitize::line(&loc.home.join("config.toml").display().to_string()),
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        ))
    })
}

/// Whether a browser can be opened here: not over SSH, and with a display or on macOS.
fn browser_command() -> Option<&'static str> {
    if std::env::var_os("SSH_CONNECTION").is_some() || std::env::var_os("SSH_TTY").is_some() {
        return None;
    }
    if cfg!(target_os = "macos") {
        return Some("open");
    }
    let display =
        std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some();
    display.then_some("xdg-open")
}

/// `neocode mcp login NAME [--paste]`.
pub(super) fn login(loc: &Location, name: &str, paste: bool) -> CmdResult {
    let cfg = server(loc, name)?;
    let mode = if paste {
        LoginMode::Paste
    } else {
        LoginMode::Loopback
    };
    let mut show = |url: &str| {
        let opened = !paste
            && browser_command().is_some_and(|cmd| {
                std::process::Command::new(cmd)
                    .arg(url)
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .is_ok()
            });
        let how = if paste {
            "Open this address in a browser, log in, then paste the address the browser ends on (or its code) here:"
        } else if opened {
            "Opened the browser to log in; if it did not open, visit:"
        } else {
            "Open this address in a browser on this machine to log in:"
        };
        eprintln!("{how}");
        // The address carries no secret (PKCE keeps the verifier here); stdout, so it can be
        // read by a script.
        println!("{}", sanitize::line(url));
    };
    let mut read = || {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        Ok(line)
    };
    let done = oauth::login(&cfg, mode, &mut show, &mut read)
        .map_err(|e| Failure::runtime(sanitize::line(&e.to_string())))?;
    let expires = done
        .expires_at
        .and_then(|t| chrono::DateTime::from_timestamp(t, 0))
        .map(|t| format!(", expires {}", t.format("%Y-%m-%d %H:%M UTC")))
        .unwrap_or_default();
    let renew = if done.refreshable {
        ", renewed automatically"
    } else {
        ""
    };
    let mut out = Out::stdout();
    out.line(&format!(
        "logged in to `{}`{expires}{renew}{}",
        sanitize::line(name),
        if done.registered {
            " (client registered)"
        } else {
            ""
        }
    ))?;
    out.finish()
}

/// `neocode mcp logout NAME`.
pub(super) fn logout(loc: &Location, name: &str) -> CmdResult {
    let cfg = server(loc, name)?;
    let had = oauth::logout(&cfg).map_err(|e| Failure::runtime(sanitize::line(&e.to_string())))?;
    let mut out = Out::stdout();
    out.line(&if had {
        format!(
            "logged out of `{}` (its tokens are deleted)",
            sanitize::line(name)
        )
    } else {
        format!("`{}` was not logged in", sanitize::line(name))
    })?;
    out.finish()
}
