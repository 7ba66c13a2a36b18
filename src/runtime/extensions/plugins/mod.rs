//! Claude Code plugins: a folder with `.claude-plugin/plugin.json` bringing commands
//! (`/PLUGIN:cmd`), agent profiles (`PLUGIN:agent`), skills, hooks and MCP servers.
//!
//! Installed under `<home>/plugins/<name>/` (`neocode plugin add`), recorded with whether the
//! user enabled it in `<home>/plugins.toml`. Only an enabled plugin's parts are used: a
//! plugin just added, or disabled, runs nothing (its hooks and servers run as the user,
//! outside the sandbox, so the user says so first).

mod install;
mod installed;
mod manifest;
mod state;

pub(crate) use install::{add, remove};
pub(crate) use installed::{enabled, mcp_servers, plugins_dir};
pub(crate) use manifest::{Brings, Plugin, PluginError, PluginServer};
pub(crate) use state::State;
