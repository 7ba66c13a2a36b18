//! `neocode lsp list`: the language-server table of `<home>/config.toml` (built-ins and
//! `[lsp.servers.*]`), each server's command and files, and whether it is installed; with
//! `--start`, each installed one is started on the workspace and its state shown.

use serde::Serialize;

use super::common::{CmdResult, Failure};
use super::out::Out;
use crate::runtime::Location;
use crate::runtime::config::lsp as config;
use crate::runtime::extensions::lsp::{LspManager, LspState};
use crate::sanitize;

#[derive(Serialize)]
struct JsonServer<'a> {
    name: &'a str,
    command: String,
    extensions: &'a [String],
    root_markers: &'a [String],
    state: &'static str,
    /// The program's path (found), the server's name and version (ready), or why not.
    detail: Option<String>,
}

fn detail(state: &LspState) -> Option<String> {
    match state {
        LspState::Found(p) => Some(p.display().to_string()),
        LspState::Ready(info) => info.clone(),
        LspState::Failed(why) | LspState::Stopped(why) => Some(why.clone()),
        LspState::Disabled | LspState::Missing => None,
    }
}

/// Prints the configured language servers and their state.
pub(super) fn list(loc: &Location, start: bool, json: bool) -> CmdResult {
    let settings =
        config::load(&loc.home).map_err(|e| Failure::runtime(sanitize::line(&e.to_string())))?;
    let m = LspManager::new(settings, loc.root());
    if start {
        m.start_all();
    }
    let statuses = m.statuses();
    let mut out = Out::stdout();
    if json {
        let rows = statuses.iter().map(|s| JsonServer {
            name: &s.config.name,
            command: std::iter::once(s.config.command.as_str())
                .chain(s.config.args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            extensions: &s.config.extensions,
            root_markers: &s.config.root_markers,
            state: s.state.label(),
            detail: detail(&s.state),
        });
        out.json_array(rows)?;
        return out.finish();
    }
    if !m.settings().enabled {
        out.line("language servers are off ([lsp] enabled = false)")?;
    }
    for s in &statuses {
        let state = match &s.state {
            LspState::Ready(_) | LspState::Found(_) => out.paint("32", s.state.label()),
            st if st.is_problem() => out.paint("31", st.label()),
            st => out.paint("2", st.label()),
        };
        let mut line = format!("{}  {state}", sanitize::line(&s.config.name));
        if let Some(d) = detail(&s.state) {
            line.push_str(&format!(" — {}", sanitize::line(&d)));
        }
        out.line(&line)?;
        let exts: Vec<String> = s
            .config
            .extensions
            .iter()
            .map(|e| format!(".{e}"))
            .collect();
        out.line(&format!(
            "  {}  ({})",
            sanitize::line(&s.config.command),
            sanitize::line(&exts.join(" "))
        ))?;
    }
    drop(m);
    out.finish()
}
