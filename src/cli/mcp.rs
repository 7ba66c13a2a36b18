//! `neocode mcp list`: every configured MCP server started or connected (in parallel), then its
//! transport, state and tools, so a user can check a `[mcp_servers]` table without starting a
//! session. Header values and bearer tokens are never printed.

use serde::Serialize;

use super::common::{CmdResult, Failure};
use super::out::Out;
use crate::runtime::Location;
use crate::runtime::config::mcp as config;
use crate::runtime::extensions::mcp::{McpManager, ServerState};
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
    tools: Vec<JsonTool<'a>>,
}

/// Prints the servers of `<home>/config.toml` with their state and tools.
pub(super) fn list(loc: &Location, json: bool) -> CmdResult {
    let mut servers =
        config::load(&loc.home).map_err(|e| Failure::runtime(sanitize::line(&e.to_string())))?;
    servers.extend(crate::runtime::extensions::plugins::mcp_servers(&loc.home));
    let m = McpManager::new(servers, loc.root()).map_err(Failure::runtime)?;
    m.start_all();
    let statuses = m.statuses();
    let mut out = Out::stdout();
    if json {
        let rows = statuses.iter().map(|s| JsonServer {
            name: &s.name,
            command: &s.command,
            transport: s.transport,
            state: s.state.label(),
            reason: s.state.reason(),
            server_info: s.server_info.as_deref(),
            restarts: s.restarts,
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
    for s in &statuses {
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
