//! `neocode plugin add|list|enable|disable|remove`: Claude Code plugins installed in
//! `<home>/plugins/`. What a plugin brings is printed before the user enables it: its hooks
//! and MCP servers run as the user, outside the sandbox.

use std::io::{BufRead, IsTerminal, Write};

use clap::Subcommand;
use serde::Serialize;

use super::common::{CmdResult, Failure};
use super::out::Out;
use crate::runtime::Location;
use crate::runtime::extensions::plugins::{self, Brings, Plugin, PluginError, State};
use crate::sanitize;

/// `neocode plugin ...`.
#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Install a plugin from a folder or a git URL, print what it brings, and ask whether to
    /// enable it (without a terminal, `--yes` enables it; else it stays disabled).
    #[command(
        after_help = "Examples:\n  neocode plugin add ./my-plugin\n  neocode plugin add https://example.com/me/my-plugin.git --yes"
    )]
    Add {
        /// A plugin folder (holding `.claude-plugin/plugin.json`) or a git URL.
        source: String,
        /// Enable it without asking.
        #[arg(long)]
        yes: bool,
    },
    /// The installed plugins: version, enabled or not, what each brings, where it came from.
    #[command(after_help = "Examples:\n  neocode plugin list\n  neocode plugin list --json")]
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Enable an installed plugin: its commands, agents, skills, hooks and MCP servers are used.
    Enable {
        /// The plugin's name.
        name: String,
    },
    /// Disable a plugin: nothing of it is used (its hooks and servers no longer run).
    Disable {
        /// The plugin's name.
        name: String,
    },
    /// Remove a plugin (its folder and its record).
    Remove {
        /// The plugin's name.
        name: String,
    },
}

fn failure(e: &PluginError) -> Failure {
    Failure::runtime(sanitize::line(&e.to_string()).into_owned())
}

/// Runs `neocode plugin ...`.
pub(super) fn run(loc: &Location, cmd: &PluginCommand) -> CmdResult {
    let home = &loc.home;
    match cmd {
        PluginCommand::Add { source, yes } => add(loc, source, *yes),
        PluginCommand::List { json } => list(loc, *json),
        PluginCommand::Enable { name } => set_enabled(loc, name, true),
        PluginCommand::Disable { name } => set_enabled(loc, name, false),
        PluginCommand::Remove { name } => {
            plugins::remove(home, name).map_err(|e| failure(&e))?;
            let mut out = Out::stdout();
            out.line(&format!("removed plugin {}", sanitize::line(name)))?;
            out.finish()
        }
    }
}

fn add(loc: &Location, source: &str, yes: bool) -> CmdResult {
    let plugin = plugins::add(&loc.home, source).map_err(|e| failure(&e))?;
    let name = sanitize::line(&plugin.name).into_owned();
    let mut out = Out::stdout();
    out.line(&format!(
        "installed plugin {name} in {}",
        sanitize::line(&plugin.root.display().to_string())
    ))?;
    for l in describe(&plugin, &plugin.brings()) {
        out.line(&l)?;
    }
    out.finish()?;
    let enable = if yes {
        true
    } else if std::io::stdin().is_terminal() {
        ask_enable()
    } else {
        let mut out = Out::stdout();
        out.line(&format!(
            "not enabled (no terminal to ask): `neocode plugin enable {name}` enables it"
        ))?;
        return out.finish();
    };
    if enable {
        set_enabled(loc, &plugin.name, true)
    } else {
        let mut out = Out::stdout();
        out.line(&format!(
            "left disabled: `neocode plugin enable {name}` enables it"
        ))?;
        out.finish()
    }
}

fn ask_enable() -> bool {
    let mut err = std::io::stderr();
    let _ = write!(err, "enable? [y/N] ");
    let _ = err.flush();
    let mut answer = String::new();
    if std::io::stdin().lock().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim(), "y" | "Y" | "yes" | "Yes")
}

fn set_enabled(loc: &Location, name: &str, enabled: bool) -> CmdResult {
    let mut state = State::load(&loc.home).map_err(|e| failure(&e))?;
    if !state.set_enabled(name, enabled) {
        return Err(Failure::usage(format!(
            "no plugin named {} is installed (`neocode plugin list`)",
            sanitize::line(name)
        )));
    }
    state.save(&loc.home).map_err(|e| failure(&e))?;
    let mut out = Out::stdout();
    let word = if enabled { "enabled" } else { "disabled" };
    out.line(&format!("{word} plugin {}", sanitize::line(name)))?;
    out.finish()
}

/// What `plugin` brings, one line each, ready for a terminal.
fn describe(plugin: &Plugin, b: &Brings) -> Vec<String> {
    let s = |t: &str| sanitize::line(t).into_owned();
    let mut lines = Vec::new();
    let mut head = format!(
        "{} {}",
        s(&plugin.name),
        s(plugin.version.as_deref().unwrap_or("(no version)"))
    );
    if let Some(d) = &plugin.description {
        head.push_str(&format!(": {}", s(d)));
    }
    if let Some(a) = &plugin.author {
        head.push_str(&format!(" (by {})", s(a)));
    }
    lines.push(head);
    let list = |items: Vec<String>| {
        if items.is_empty() {
            "none".to_string()
        } else {
            items.join(", ")
        }
    };
    lines.push(format!(
        "  commands: {}",
        list(
            b.commands
                .iter()
                .map(|(n, _)| format!("/{}", s(n)))
                .collect()
        )
    ));
    lines.push(format!("  agents: {}", list(agent_names(plugin, b))));
    lines.push(format!("  skills: {}", list(skill_names(b))));
    if b.hooks.is_empty() {
        lines.push("  hooks: none".into());
    }
    for h in &b.hooks {
        let on = if h.matcher.is_empty() {
            String::new()
        } else {
            format!(" [{}]", s(&h.matcher))
        };
        lines.push(format!(
            "  hook {}{on}: {} (runs as you, outside the sandbox)",
            s(&h.event),
            s(&h.command)
        ));
    }
    if b.servers.is_empty() {
        lines.push("  MCP servers: none".into());
    }
    for srv in &b.servers {
        lines.push(format!(
            "  MCP server {}: {} (runs as you, outside the sandbox)",
            s(&srv.name),
            s(&server_target(srv))
        ));
    }
    for p in &b.problems {
        lines.push(format!("  left out: {}", s(p)));
    }
    lines
}

fn server_target(srv: &plugins::PluginServer) -> String {
    match &srv.url {
        Some(url) if srv.command.is_empty() => url.clone(),
        _ => std::iter::once(srv.command.as_str())
            .chain(srv.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" "),
    }
}

fn agent_names(plugin: &Plugin, b: &Brings) -> Vec<String> {
    b.agents
        .iter()
        .filter_map(|p| p.file_stem())
        .map(|n| format!("{}:{}", plugin.name, n.to_string_lossy()))
        .map(|n| sanitize::line(&n).into_owned())
        .collect()
}

fn skill_names(b: &Brings) -> Vec<String> {
    b.skills
        .iter()
        .filter_map(|p| p.file_name())
        .map(|n| sanitize::line(&n.to_string_lossy()).into_owned())
        .collect()
}

#[derive(Serialize)]
struct JsonHook<'a> {
    event: &'a str,
    matcher: &'a str,
    command: &'a str,
}

#[derive(Serialize)]
struct JsonServer<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    command: &'a str,
    args: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<&'a str>,
}

#[derive(Serialize)]
struct JsonPlugin<'a> {
    name: &'a str,
    version: Option<&'a str>,
    description: Option<&'a str>,
    enabled: bool,
    source: &'a str,
    path: String,
    commands: Vec<String>,
    agents: Vec<String>,
    skills: Vec<String>,
    hooks: Vec<JsonHook<'a>>,
    mcp_servers: Vec<JsonServer<'a>>,
    problems: &'a [String],
}

fn list(loc: &Location, json: bool) -> CmdResult {
    let state = State::load(&loc.home).map_err(|e| failure(&e))?;
    let mut found = Vec::new();
    let mut broken = Vec::new();
    for (name, entry) in &state.plugins {
        match Plugin::read(&plugins::plugins_dir(&loc.home).join(name)) {
            Ok(p) => {
                let b = p.brings();
                found.push((p, b, entry));
            }
            Err(e) => broken.push(e.to_string()),
        }
    }
    let mut out = Out::stdout();
    if json {
        let rows = found.iter().map(|(p, b, e)| JsonPlugin {
            name: &p.name,
            version: p.version.as_deref(),
            description: p.description.as_deref(),
            enabled: e.enabled,
            source: &e.source,
            path: p.root.display().to_string(),
            commands: b.commands.iter().map(|(n, _)| format!("/{n}")).collect(),
            agents: agent_names(p, b),
            skills: skill_names(b),
            hooks: b
                .hooks
                .iter()
                .map(|h| JsonHook {
                    event: &h.event,
                    matcher: &h.matcher,
                    command: &h.command,
                })
                .collect(),
            mcp_servers: b
                .servers
                .iter()
                .map(|s| JsonServer {
                    name: &s.name,
                    command: &s.command,
                    args: &s.args,
                    url: s.url.as_deref(),
                })
                .collect(),
            problems: &b.problems,
        });
        out.json_array(rows)?;
        return out.finish();
    }
    if found.is_empty() && broken.is_empty() {
        out.line("no plugins installed (`neocode plugin add PATH|GIT-URL`)")?;
    }
    for (p, b, e) in &found {
        let word = if e.enabled { "enabled" } else { "disabled" };
        out.line(&format!("[{word}] from {}", sanitize::line(&e.source)))?;
        for l in describe(p, b) {
            out.line(&l)?;
        }
    }
    for b in &broken {
        out.line(&format!("cannot read: {}", sanitize::line(b)))?;
    }
    out.finish()
}
