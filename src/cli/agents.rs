//! `neocode agents list`: the agent profiles the `task` tool can run, where each comes from
//! and whether it is used (a workspace's only while the user trusts the workspace).

use serde::Serialize;

use super::catalog;
use super::common::CmdResult;
use super::out::Out;
use crate::runtime::Location;
use crate::runtime::config::ApprovalPolicy;
use crate::runtime::extensions::agents::Profiles;
use crate::sanitize;

#[derive(Serialize)]
struct JsonProfile<'a> {
    name: &'a str,
    description: &'a str,
    source: &'static str,
    path: String,
    tools: Option<&'a [String]>,
    model: Option<&'a str>,
    approval: Option<&'static str>,
    in_use: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<&'a str>,
}

#[derive(Serialize)]
struct JsonList<'a> {
    agents: Vec<JsonProfile<'a>>,
    skipped: Vec<String>,
}

/// Prints the profiles found.
pub(super) fn list(loc: &Location, json: bool) -> CmdResult {
    let trusted = crate::runtime::trust::Admission::check(&loc.home, loc.root()).uses_workspace();
    let found = Profiles::load(&loc.home, loc.root(), trusted);
    let skipped: Vec<String> = found
        .skipped
        .iter()
        .map(|s| catalog::skipped(&s.path, &s.reason))
        .collect();
    let mut out = Out::stdout();
    if json {
        let doc = JsonList {
            agents: found
                .all
                .iter()
                .map(|p| JsonProfile {
                    name: &p.name,
                    description: &p.description,
                    source: p.origin.as_str(),
                    path: p.path.display().to_string(),
                    tools: p.tools.as_deref(),
                    model: p.model.as_deref(),
                    approval: p.approval.map(ApprovalPolicy::as_str),
                    in_use: p.in_use,
                    note: p.note.as_deref(),
                })
                .collect(),
            skipped,
        };
        out.line(&super::fmt::to_json(&doc))?;
        return out.finish();
    }
    if found.all.is_empty() {
        out.line(&catalog::none(
            "agent profiles",
            "Markdown files",
            &[
                loc.root().join(".neocode/agents"),
                loc.root().join(".claude/agents"),
                loc.home.join("agents"),
            ],
        ))?;
    }
    for p in &found.all {
        let used = if p.in_use { "in use" } else { "unused" };
        out.line(&catalog::entry(
            &p.name,
            p.origin.as_str(),
            used,
            &p.description,
        ))?;
        let mut detail = vec![format!("file {}", p.path.display())];
        if let Some(t) = &p.tools {
            detail.push(format!("tools {}", t.join(", ")));
        }
        if let Some(m) = &p.model {
            detail.push(format!("model {m}"));
        }
        if let Some(a) = p.approval {
            detail.push(format!("approval {}", a.as_str()));
        }
        if let Some(n) = &p.note {
            detail.push(n.clone());
        }
        out.line(&format!("    {}", sanitize::line(&detail.join("; "))))?;
    }
    catalog::print_skipped(&mut out, &skipped)?;
    out.finish()
}
