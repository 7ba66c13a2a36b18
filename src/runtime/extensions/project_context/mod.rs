//! What the agent knows about the project beyond the conversation: instruction files
//! ([`instructions`]) and skills ([`skills`]). Everything gathered here enters the system
//! prompt, and [`ProjectContext::report`] says what did, so the views (Info tab, `show`) can
//! show it: nothing enters the context unseen.

pub(crate) mod beneath;
pub(crate) mod instructions;
pub(crate) mod skills;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::session::{Message, Role};

pub(crate) use instructions::Instructions;
pub(crate) use skills::{Activation, Skills};

/// The project context of one turn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ProjectContext {
    /// Instruction files used.
    pub instructions: Instructions,
    /// Skills found.
    pub skills: Skills,
    /// Skills the session has activated (from its header), oldest first.
    pub active: Vec<Activation>,
}

impl ProjectContext {
    /// Gathers the context of a session: instruction files for the root, `<home>` and the
    /// folders of `touched` paths, the skills on disk (the workspace's only when the user
    /// trusts it: [`crate::runtime::trust`]), and the session's activated skills (`skills`
    /// field of its header; an active workspace skill of a workspace not trusted now is not
    /// loaded).
    pub(crate) fn gather(
        home: &Path,
        root: &Path,
        touched: &[PathBuf],
        header_skills: Option<&Value>,
        skills: Skills,
    ) -> ProjectContext {
        ProjectContext {
            instructions: Instructions::load(home, root, touched, instructions::DEFAULT_CAP),
            skills,
            active: skills::active_skills(header_skills),
        }
    }

    /// The part of the system prompt this context adds: instructions, the skill catalogue,
    /// and the bodies of active skills whose activation is not in `transcript` (after a
    /// resume from a compacted transcript, a fork before the activation, or `/skill NAME`,
    /// the body would otherwise be missing).
    pub(crate) fn prompt_section(&self, root: &Path, transcript: &[Message]) -> String {
        let loaded = skills_loaded_in(transcript);
        let mut parts: Vec<String> = Vec::new();
        let ins = self.instructions.prompt_section(root);
        if !ins.is_empty() {
            parts.push(ins);
        }
        let cat = self.skills.catalogue_section(&self.active);
        if !cat.is_empty() {
            parts.push(cat);
        }
        for a in &self.active {
            if loaded.contains(&a.name) {
                continue;
            }
            if let Some(sk) = self.skills.get(&a.name) {
                parts.push(format!(
                    "This skill is active in this session:\n\n{}",
                    skills::activation_text(sk)
                ));
            }
        }
        parts.join("\n")
    }

    /// What entered the context, one line each, for the views.
    pub(crate) fn report(&self, root: &Path) -> ContextReport {
        let instructions = self
            .instructions
            .files
            .iter()
            .map(|f| {
                let cut = if f.truncated {
                    format!(", cut to {}", bytes(f.text.len()))
                } else {
                    String::new()
                };
                format!(
                    "{} ({}, {}{cut})",
                    instructions::display_path(&f.path, root),
                    f.scope.as_str(),
                    bytes(f.size)
                )
            })
            .collect();
        let skills = self
            .skills
            .skills
            .iter()
            .map(|s| {
                let active = if self.active.iter().any(|a| a.name == s.name) {
                    ", active"
                } else {
                    ""
                };
                format!("{} ({}{active})", s.name, s.source.as_str())
            })
            .collect();
        let missing = self
            .active
            .iter()
            .filter(|a| self.skills.get(&a.name).is_none())
            .map(|a| a.name.clone())
            .collect();
        let problems = self
            .skills
            .problems
            .iter()
            .map(|p| format!("{}: {}", p.path.display(), p.reason))
            .chain(
                self.instructions
                    .unreadable
                    .iter()
                    .map(|(p, e)| format!("{}: {e}", p.display())),
            )
            .chain(self.instructions.skipped.iter().map(|s| {
                format!(
                    "{}: skipped: {}",
                    instructions::display_path(&s.path, root),
                    s.reason
                )
            }))
            .chain(self.skills.workspace_left_out.as_ref().map(|_| {
                ".neocode/skills/: left out, the workspace is not trusted (see `neocode trust`)"
                    .to_string()
            }))
            .collect();
        ContextReport {
            instructions,
            skills,
            active_skills: self.active.iter().map(|a| a.name.clone()).collect(),
            active_missing: missing,
            problems,
            mcp_servers: Vec::new(),
        }
    }
}

/// What a stored session's next turn would take in beyond its transcript: its instruction
/// files (including those of folders its tools worked in), skills, active skills, and the
/// configured MCP servers (not started here). For `show`.
pub(crate) fn session_report(
    home: &Path,
    sessions: &crate::runtime::Sessions,
    id: &str,
    skills: Skills,
) -> crate::session::Result<ContextReport> {
    let header = sessions.header(id)?;
    let msgs = sessions.messages(id, 1, header.last_seq)?;
    Ok(report_for(
        home,
        sessions.root(),
        &touched_paths(&msgs),
        header.skills.as_ref(),
        skills,
    ))
}

/// [`session_report`] without reading the transcript (instructions of nested folders are
/// left out): cheap enough for a view that refreshes on every change.
pub(crate) fn header_report(
    home: &Path,
    root: &Path,
    header_skills: Option<&Value>,
    skills: Skills,
) -> ContextReport {
    report_for(home, root, &[], header_skills, skills)
}

fn report_for(
    home: &Path,
    root: &Path,
    touched: &[PathBuf],
    header_skills: Option<&Value>,
    skills: Skills,
) -> ContextReport {
    let ctx = ProjectContext::gather(home, root, touched, header_skills, skills);
    let mut report = ctx.report(root);
    report.mcp_servers = match crate::runtime::config::mcp::load(home) {
        Ok(servers) => servers
            .iter()
            .map(|s| match (&s.invalid, s.enabled) {
                (Some(why), _) => format!("{} (invalid: {why})", s.name),
                (None, false) => format!("{} (disabled)", s.name),
                (None, true) => format!("{} ({})", s.name, s.command),
            })
            .collect(),
        Err(e) => vec![format!("config unreadable: {e}")],
    };
    report
}

/// What entered the context, as lines for the views.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ContextReport {
    /// `path (scope, size[, cut to size])`, in prompt order.
    pub instructions: Vec<String>,
    /// `name (source[, active])`.
    pub skills: Vec<String>,
    /// Names of the skills the session activated, oldest first.
    pub active_skills: Vec<String>,
    /// `name (command)` of each configured MCP server, `(disabled)` or `(invalid: ...)`.
    pub mcp_servers: Vec<String>,
    /// Skills the session activated that are no longer on disk.
    pub active_missing: Vec<String>,
    /// Files skipped: malformed `SKILL.md`, unreadable instructions.
    pub problems: Vec<String>,
}

fn bytes(n: usize) -> String {
    if n < 1024 {
        format!("{n} B")
    } else {
        format!("{:.1} KiB", n as f64 / 1024.0)
    }
}

/// Names of skills whose `skill` tool call succeeded within `transcript` (their body is in the
/// transcript already).
pub(crate) fn skills_loaded_in(transcript: &[Message]) -> HashSet<String> {
    let ok_results: HashSet<&str> = transcript
        .iter()
        .filter(|m| m.role == Role::Tool && !m.is_error)
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    transcript
        .iter()
        .flat_map(|m| m.tool_calls.iter())
        .filter(|c| c.name == skills::SKILL_TOOL.name && ok_results.contains(c.id.as_str()))
        .filter_map(|c| {
            serde_json::from_str::<Value>(&c.arguments)
                .ok()?
                .get("name")?
                .as_str()
                .map(str::to_string)
        })
        .collect()
}

/// Paths the agent worked on in `transcript` (the `path` argument of its tool calls), for the
/// nested instruction files of their folders.
pub(crate) fn touched_paths(transcript: &[Message]) -> Vec<PathBuf> {
    let mut seen = HashSet::new();
    transcript
        .iter()
        .flat_map(|m| m.tool_calls.iter())
        .filter_map(|c| {
            let v: Value = serde_json::from_str(&c.arguments).ok()?;
            v.get("path")?.as_str().map(PathBuf::from)
        })
        .filter(|p| seen.insert(p.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::ToolCall;

    fn msg(role: Role, calls: Vec<ToolCall>, answers: Option<&str>, is_error: bool) -> Message {
        Message {
            seq: 0,
            role,
            parts: Vec::new(),
            tool_calls: calls,
            tool_call_id: answers.map(str::to_string),
            is_error,
            tool_metadata: None,
            created_at_ms: 0,
            usage: Default::default(),
            extra: Default::default(),
        }
    }

    fn call(id: &str, name: &str, args: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.into(),
        }
    }

    #[test]
    fn loaded_skills_and_touched_paths_come_from_the_transcript() {
        let t = vec![
            msg(
                Role::Assistant,
                vec![
                    call("1", "skill", r#"{"name":"deploy"}"#),
                    call("2", "skill", r#"{"name":"nope"}"#),
                    call("3", "read_file", r#"{"path":"src/a.rs"}"#),
                ],
                None,
                false,
            ),
            msg(Role::Tool, vec![], Some("1"), false),
            msg(Role::Tool, vec![], Some("2"), true),
            msg(Role::Tool, vec![], Some("3"), false),
        ];
        assert_eq!(skills_loaded_in(&t), HashSet::from(["deploy".to_string()]));
        assert_eq!(touched_paths(&t), vec![PathBuf::from("src/a.rs")]);
    }

    #[test]
    fn active_skill_body_enters_the_prompt_unless_the_transcript_has_it() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let root = t.path().join("ws");
        let dir = root.join(".neocode/skills/deploy");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            "---\nname: deploy\ndescription: Ship it\n---\nRun make deploy.",
        )
        .unwrap();
        std::fs::write(root.join("AGENTS.md"), "Use tabs.").unwrap();
        let header = serde_json::json!([{"name": "deploy"}, {"name": "gone"}]);
        // Not trusted: the workspace's skill is neither offered nor loaded, and that is said.
        // Gathered as a turn does, with the workspace's admission as it is now.
        let gather = || {
            ProjectContext::gather(
                &home,
                &root,
                &[],
                Some(&header),
                crate::runtime::trust::Admission::check(&home, &root).skills(&home),
            )
        };
        let ctx = gather();
        let p = ctx.prompt_section(&root, &[]);
        assert!(p.contains("Use tabs."), "{p}");
        assert!(
            !p.contains("deploy") && !p.contains("Run make deploy."),
            "{p}"
        );
        let r = ctx.report(&root);
        assert!(r.skills.is_empty());
        assert!(
            r.problems.iter().any(|p| p.contains("not trusted")),
            "{:?}",
            r.problems
        );
        crate::runtime::trust::trust(&home, &root).unwrap();
        let ctx = gather();
        let p = ctx.prompt_section(&root, &[]);
        assert!(p.contains("Use tabs."), "{p}");
        assert!(p.contains("- deploy (active): Ship it"), "{p}");
        assert!(p.contains("Run make deploy."), "{p}");
        let transcript = vec![
            msg(
                Role::Assistant,
                vec![call("1", "skill", r#"{"name":"deploy"}"#)],
                None,
                false,
            ),
            msg(Role::Tool, vec![], Some("1"), false),
        ];
        assert!(
            !ctx.prompt_section(&root, &transcript)
                .contains("Run make deploy.")
        );
        let r = ctx.report(&root);
        assert_eq!(r.instructions, vec!["AGENTS.md (project, 9 B)".to_string()]);
        assert_eq!(r.skills, vec!["deploy (workspace, active)".to_string()]);
        assert_eq!(r.active_missing, vec!["gone".to_string()]);
    }
}
