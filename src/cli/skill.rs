//! `neocode skill list` and `neocode skill activate`: the skills a workspace can use, and the
//! `/skill NAME` of the TUI for scripts.

use serde::Serialize;

use super::catalog;
use super::common::{CmdResult, Failure, open_for_id};
use super::out::Out;
use crate::runtime::Location;
use crate::runtime::extensions::project_context::{Skills, skills};
use crate::runtime::trust::Admission;
use crate::sanitize;

#[derive(Serialize)]
struct JsonSkill<'a> {
    name: &'a str,
    description: &'a str,
    source: &'static str,
    dir: String,
    active: bool,
}

#[derive(Serialize)]
struct JsonList<'a> {
    skills: Vec<JsonSkill<'a>>,
    /// Active in the session but no longer on disk.
    missing: Vec<String>,
    skipped: Vec<String>,
    /// Why the workspace's skills are not listed (it is not trusted), when they are not.
    #[serde(skip_serializing_if = "Option::is_none")]
    workspace_left_out: Option<String>,
}

/// The skills a session of this workspace may use (the workspace's only when trusted).
fn discover(loc: &Location) -> Skills {
    Admission::check(&loc.home, loc.root()).skills(&loc.home)
}

/// Prints the skills, with `session`'s active ones marked.
pub(super) fn list(loc: &Location, session: Option<&str>, json: bool) -> CmdResult {
    let found = discover(loc);
    let active = match session {
        Some(key) => {
            let (sessions, id) = open_for_id(loc, key)?;
            skills::active_skills(sessions.header(&id)?.skills.as_ref())
        }
        None => Vec::new(),
    };
    let is_active = |name: &str| active.iter().any(|a| a.name == name);
    let missing: Vec<String> = active
        .iter()
        .filter(|a| found.get(&a.name).is_none())
        .map(|a| a.name.clone())
        .collect();
    let skipped: Vec<String> = found
        .problems
        .iter()
        .map(|p| catalog::skipped(&p.path, &p.reason))
        .collect();
    let mut out = Out::stdout();
    if json {
        let doc = JsonList {
            skills: found
                .skills
                .iter()
                .map(|s| JsonSkill {
                    name: &s.name,
                    description: &s.description,
                    source: s.source.as_str(),
                    dir: s.dir.display().to_string(),
                    active: is_active(&s.name),
                })
                .collect(),
            missing,
            skipped,
            workspace_left_out: found.workspace_left_out.clone(),
        };
        out.line(&super::fmt::to_json(&doc))?;
        return out.finish();
    }
    if found.skills.is_empty() {
        out.line(&catalog::none(
            "skills",
            "folders with a SKILL.md",
            &[loc.root().join(".neocode/skills"), loc.home.join("skills")],
        ))?;
    }
    for s in &found.skills {
        let mark = if is_active(&s.name) { "active" } else { "" };
        out.line(&catalog::entry(
            &s.name,
            s.source.as_str(),
            mark,
            &s.description,
        ))?;
    }
    for m in &missing {
        out.line(&format!(
            "{}  missing: active in the session, no longer on disk",
            sanitize::line(m)
        ))?;
    }
    catalog::print_skipped(&mut out, &skipped)?;
    if let Some(why) = &found.workspace_left_out {
        out.line(&format!("not listed: {}", sanitize::line(why)))?;
    }
    out.finish()
}

/// Activates `name` in session `key`.
pub(super) fn activate(loc: &Location, key: &str, name: &str) -> CmdResult {
    let (sessions, id) = open_for_id(loc, key)?;
    let found = discover(loc);
    let Some(skill) = found.get(name) else {
        let known: Vec<&str> = found.skills.iter().map(|s| s.name.as_str()).collect();
        let why = found
            .workspace_left_out
            .as_ref()
            .map(|w| format!(" ({w})"))
            .unwrap_or_default();
        return Err(Failure::usage(
            sanitize::line(&format!(
                "no skill named `{name}`; available: {}{why}",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ))
            .into_owned(),
        ));
    };
    let newly = skills::activate(&sessions, &id, skill)?;
    let mut out = Out::stdout();
    out.line(&if newly {
        format!("skill {} is active in session {id}", skill.name)
    } else {
        format!("skill {} was already active in session {id}", skill.name)
    })?;
    out.finish()
}
