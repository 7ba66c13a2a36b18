//! The installed plugins as the rest of neocode uses them: where they live, which are
//! enabled, and their MCP servers.

use super::manifest::Plugin;
use super::state::State;
use std::path::{Path, PathBuf};

/// `<home>/plugins/`: one folder per installed plugin.
pub(crate) fn plugins_dir(home: &Path) -> PathBuf {
    home.join("plugins")
}

/// The enabled plugins, read from their folders (a plugin whose manifest no longer reads is
/// left out).
pub(crate) fn enabled(home: &Path) -> Vec<Plugin> {
    let Ok(state) = State::load(home) else {
        return Vec::new();
    };
    state
        .plugins
        .iter()
        .filter(|(_, e)| e.enabled)
        .filter_map(|(name, _)| Plugin::read(&plugins_dir(home).join(name)).ok())
        .collect()
}

/// The MCP servers of the enabled plugins, as configured servers (a remote one, `url`,
/// over streamable HTTP).
pub(crate) fn mcp_servers(home: &Path) -> Vec<crate::runtime::config::mcp::ServerConfig> {
    enabled(home)
        .iter()
        .flat_map(|p| p.brings().servers)
        .map(|s| {
            use crate::runtime::config::mcp::ServerConfig;
            if let Some(url) = s.url.filter(|_| s.command.is_empty()) {
                // A remote server: streamable HTTP, with no token (a plugin's headers are
                // not read).
                return ServerConfig::http(&s.name, &url);
            }
            let args: Vec<&str> = s.args.iter().map(String::as_str).collect();
            let mut c = ServerConfig::stdio(&s.name, &s.command, &args);
            c.env = s.env;
            c
        })
        .collect()
}
