//! The MCP servers an editor passes with `session/new`, `load`, `resume` and `fork`, as
//! neocode server configs: stdio and http ones start (connect) for that session through the
//! same MCP client as the `[mcp_servers]` of `config.toml`, an http one checked as a `url`
//! table is; the editor is the user's, so its servers are the user's choice, as their config
//! is.

use agent_client_protocol::v1::schema::McpServer;

use crate::runtime::config::mcp::{self as config, ServerConfig};

/// Why an sse server is kept, unstarted, with its reason.
const NO_SSE: &str = "neocode speaks stdio and streamable HTTP to MCP servers, not the older SSE transport (the agent advertises no sse support)";

/// The client's servers as configs (stdio and http ones runnable; others invalid, so the
/// session reports them like a bad `[mcp_servers]` table).
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
            McpServer::Http(h) => {
                let headers: toml::Table = h
                    .headers
                    .iter()
                    .map(|x| (x.name.clone(), toml::Value::from(x.value.clone())))
                    .collect();
                let mut table = toml::Table::new();
                table.insert("url".into(), toml::Value::from(h.url.clone()));
                if !headers.is_empty() {
                    table.insert("headers".into(), toml::Value::Table(headers));
                }
                config::one(&h.name, &toml::Value::Table(table))
            }
            McpServer::Sse(h) => unsupported(&h.name),
            _ => unsupported("unnamed"),
        })
        .collect()
}

fn unsupported(name: &str) -> ServerConfig {
    let mut cfg = ServerConfig::stdio(name, "", &[]);
    cfg.invalid = Some(NO_SSE.to_string());
    cfg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdio_and_http_servers_are_kept_and_sse_ones_are_invalid() {
        let servers: Vec<McpServer> = serde_json::from_value(serde_json::json!([
            {"name": "docs", "command": "/bin/docs", "args": ["--x"],
             "env": [{"name": "TOKEN", "value": "t"}]},
            {"type": "http", "name": "web", "url": "http://127.0.0.1:1/mcp",
             "headers": [{"name": "X-Team", "value": "core"}]},
            {"type": "http", "name": "bad", "url": "file:///etc/passwd", "headers": []},
            {"type": "sse", "name": "old", "url": "http://127.0.0.1:1/sse", "headers": []}
        ]))
        .unwrap();
        let c = configs(&servers);
        assert_eq!(c[0].command, "/bin/docs");
        assert_eq!(c[0].args, vec!["--x".to_string()]);
        assert_eq!(c[0].env.get("TOKEN").map(String::as_str), Some("t"));
        assert!(c[0].invalid.is_none());
        assert_eq!(c[1].name, "web");
        assert_eq!(c[1].invalid, None);
        let web = c[1].remote.as_ref().unwrap();
        assert_eq!(web.url, "http://127.0.0.1:1/mcp");
        assert_eq!(web.headers.get("X-Team").map(String::as_str), Some("core"));
        assert!(
            c[2].invalid
                .as_deref()
                .is_some_and(|w| w.contains("http://"))
        );
        assert!(c[3].invalid.as_deref().is_some_and(|w| w.contains("SSE")));
    }
}
