//! The MCP servers an editor passes with `session/new`, `load`, `resume` and `fork`, as
//! neocode server configs: stdio ones start for that session through the same MCP client as
//! the `[mcp_servers]` of `config.toml`; the editor is the user's, so its servers are the
//! user's choice, as their config is.

use agent_client_protocol::v1::schema::McpServer;

use crate::runtime::config::mcp::ServerConfig;

/// Why a server of a transport neocode does not start is kept, unstarted, with its reason.
const STDIO_ONLY: &str =
    "neocode starts only stdio MCP servers (the agent advertises no http or sse support)";

/// The client's servers as configs (stdio ones runnable; others invalid, so the session
/// reports them like a bad `[mcp_servers]` table).
pub(crate) fn configs(servers: &[McpServer]) -> Vec<ServerConfig> {
    servers
        .iter()
        .map(|s| match s {
            McpServer::Stdio(s) => {
                let args: Vec<&str> = s.args.iter().map(String::as_str).collect();
                let mut cfg = ServerConfig::stdio(&s.name, &s.command.to_string_lossy(), &args);
                cfg.env = s
                    .env
                    .iter()
                    .map(|v| (v.name.clone(), v.value.clone()))
                    .collect();
                cfg
            }
            McpServer::Http(h) => unsupported(&h.name),
            McpServer::Sse(h) => unsupported(&h.name),
            _ => unsupported("unnamed"),
        })
        .collect()
}

fn unsupported(name: &str) -> ServerConfig {
    let mut cfg = ServerConfig::stdio(name, "", &[]);
    cfg.invalid = Some(STDIO_ONLY.to_string());
    cfg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdio_servers_keep_command_args_and_env_and_http_ones_are_invalid() {
        let servers: Vec<McpServer> = serde_json::from_value(serde_json::json!([
            {"name": "docs", "command": "/bin/docs", "args": ["--x"],
             "env": [{"name": "TOKEN", "value": "t"}]},
            {"type": "http", "name": "web", "url": "http://127.0.0.1:1/mcp", "headers": []}
        ]))
        .unwrap();
        let c = configs(&servers);
        assert_eq!(c[0].command, "/bin/docs");
        assert_eq!(c[0].args, vec!["--x".to_string()]);
        assert_eq!(c[0].env.get("TOKEN").map(String::as_str), Some("t"));
        assert!(c[0].invalid.is_none());
        assert_eq!(c[1].name, "web");
        assert!(c[1].invalid.as_deref().is_some_and(|w| w.contains("stdio")));
    }
}
