//! What a workspace declares, entry by entry (each hook's event, matcher and command, each
//! rule, each skill, every other file), and where it stands against the trust record.

use std::collections::BTreeSet;
use std::path::Path;

use super::error::TrustError;
use super::record::{self, TrustedWorkspace};
use super::scan::{HOOKS_FILE, RULES_FILE, Scan};
use crate::runtime::extensions::project_context::skills::{SkillError, parse_skill_md};
use crate::runtime::policy::hooks::{HookEvent, parse_hooks};
use crate::runtime::policy::permissions::{List, rule_entries};

/// A hook of `.neocode/hooks.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct DeclaredHook {
    pub event: HookEvent,
    /// As written; `*` when empty (every value).
    pub matcher: String,
    /// The shell command, run as the user outside the sandbox.
    pub command: String,
}

/// A rule of `.neocode/permissions.toml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredRule {
    pub list: List,
    /// As written (`run_command(cargo test *)`).
    pub text: String,
    /// 1-based.
    pub line: usize,
}

/// A skill of `.neocode/skills/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredSkill {
    /// From its front matter (the folder's name when the file does not parse).
    pub name: String,
    /// Its `SKILL.md`, relative to the root.
    pub file: String,
}

/// Everything a workspace declares, entry by entry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Declared {
    pub hooks: Vec<DeclaredHook>,
    pub rules: Vec<DeclaredRule>,
    pub skills: Vec<DeclaredSkill>,
    /// Every other declared file (relative paths): Claude Code's commands, agents and
    /// skills, `.mcp.json`, files beside a skill, anything else under `.neocode/`.
    pub other: Vec<String>,
    /// Declared files that do not parse: (path, why). Trusting them makes turns fail until
    /// they are fixed, as before trust existed.
    pub problems: Vec<(String, String)>,
}

impl Declared {
    /// The entries of `scan`'s files; `root` is where the skills are read from.
    pub(crate) fn of(scan: &Scan, root: &Path) -> Declared {
        let mut d = Declared::default();
        if !scan.home_is_dot_neocode {
            d.read_hooks(scan, root);
            d.read_rules(scan, root);
        }
        for f in &scan.files {
            if f.path == HOOKS_FILE || f.path == RULES_FILE {
                continue;
            }
            match skill_folder(&f.path) {
                Some(folder) => match read_skill_name(&root.join(&f.path)) {
                    Ok(name) => d.skills.push(DeclaredSkill {
                        name,
                        file: f.path.clone(),
                    }),
                    Err(why) => {
                        d.skills.push(DeclaredSkill {
                            name: folder.to_string(),
                            file: f.path.clone(),
                        });
                        d.problems.push((f.path.clone(), why.to_string()));
                    }
                },
                None => d.other.push(f.path.clone()),
            }
        }
        d
    }

    fn read_hooks(&mut self, scan: &Scan, root: &Path) {
        let Some(bytes) = &scan.hooks else {
            return;
        };
        let src = String::from_utf8_lossy(bytes);
        match parse_hooks(&src, &root.join(HOOKS_FILE)) {
            Ok(cmds) => {
                self.hooks = cmds
                    .into_iter()
                    .map(|c| DeclaredHook {
                        event: c.event,
                        matcher: if c.matcher.text.trim().is_empty() {
                            "*".to_string()
                        } else {
                            c.matcher.text.trim().to_string()
                        },
                        command: c.command,
                    })
                    .collect()
            }
            Err(e) => self
                .problems
                .push((HOOKS_FILE.to_string(), at_line(e.line, &e.message))),
        }
    }

    fn read_rules(&mut self, scan: &Scan, root: &Path) {
        let Some(bytes) = &scan.rules else {
            return;
        };
        let src = String::from_utf8_lossy(bytes);
        match rule_entries(&root.join(RULES_FILE), &src) {
            Ok(rules) => {
                self.rules = rules
                    .into_iter()
                    .map(|(list, text, line)| DeclaredRule { list, text, line })
                    .collect();
            }
            Err(e) => self
                .problems
                .push((RULES_FILE.to_string(), at_line(e.line, &e.message))),
        }
    }

    /// `2 hooks, 1 rule, 1 skill, 3 other files`: what there is, for one line.
    pub(crate) fn summary(&self) -> String {
        let mut parts = Vec::new();
        for (n, one, many) in [
            (self.hooks.len(), "hook", "hooks"),
            (self.rules.len(), "rule", "rules"),
            (self.skills.len(), "skill", "skills"),
            (self.other.len(), "other file", "other files"),
        ] {
            match n {
                0 => {}
                1 => parts.push(format!("1 {one}")),
                n => parts.push(format!("{n} {many}")),
            }
        }
        if parts.is_empty() {
            "files that do not parse".to_string()
        } else {
            parts.join(", ")
        }
    }

    /// The entries of the settings files, by file, as the record keeps them.
    pub(crate) fn entries(&self) -> std::collections::BTreeMap<String, Vec<String>> {
        let mut m = std::collections::BTreeMap::new();
        if !self.hooks.is_empty() {
            m.insert(
                HOOKS_FILE.to_string(),
                self.hooks.iter().map(hook_entry).collect(),
            );
        }
        if !self.rules.is_empty() {
            m.insert(
                RULES_FILE.to_string(),
                self.rules.iter().map(rule_entry).collect(),
            );
        }
        m
    }
}

/// A hook as one entry: `PreToolUse run_command echo hi`.
pub(crate) fn hook_entry(h: &DeclaredHook) -> String {
    format!("{} {} {}", h.event, h.matcher, h.command)
}

/// A rule as one entry: `allow run_command(cargo test *)`.
pub(crate) fn rule_entry(r: &DeclaredRule) -> String {
    format!("{} {}", r.list.key(), r.text)
}

/// `line 3: message` (a line of 0 is no line).
fn at_line(line: usize, message: &str) -> String {
    if line == 0 {
        message.to_string()
    } else {
        format!("line {line}: {message}")
    }
}

/// `.neocode/skills/<folder>/SKILL.md` → the folder's name.
fn skill_folder(path: &str) -> Option<&str> {
    let rest = path.strip_prefix(".neocode/skills/")?;
    let (folder, file) = rest.split_once('/')?;
    (file == "SKILL.md").then_some(folder)
}

fn read_skill_name(path: &Path) -> Result<String, SkillError> {
    let bytes = std::fs::read(path).map_err(|e| SkillError::Read(crate::session::io_error(&e)))?;
    let text = String::from_utf8(bytes).map_err(|_| SkillError::NotUtf8)?;
    parse_skill_md(&text).map(|(fm, _)| fm.name)
}

/// What changed since the workspace was trusted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// When it was trusted, ms since the epoch.
    pub trusted_at_ms: i64,
    /// Declared files that are new (relative paths).
    pub added: Vec<String>,
    /// Files declared then and gone now.
    pub removed: Vec<String>,
    /// Files whose bytes differ.
    pub modified: Vec<String>,
    /// Entries of `hooks.json` and `permissions.toml` that are new, as `file: entry`.
    pub new_entries: Vec<String>,
}

impl Changes {
    /// `modified .neocode/hooks.json; added .mcp.json`, for one line.
    pub(crate) fn summary(&self) -> String {
        let mut parts = Vec::new();
        for (word, list) in [
            ("modified", &self.modified),
            ("added", &self.added),
            ("removed", &self.removed),
        ] {
            if !list.is_empty() {
                parts.push(format!("{word} {}", list.join(", ")));
            }
        }
        parts.join("; ")
    }
}

/// Where a workspace stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustState {
    /// It declares nothing: there is nothing to trust, and nothing is left out.
    NothingDeclared,
    /// The user trusted it and every declared file is as it was then.
    Trusted {
        /// When, ms since the epoch.
        trusted_at_ms: i64,
    },
    /// Never trusted (or the record cannot be relied on: `record_problem` says why).
    Untrusted { record_problem: Option<String> },
    /// Trusted once; its files changed since.
    Changed(Changes),
    /// Its files cannot be reviewed (too many, unreadable): it cannot be trusted.
    Unreviewable(String),
}

impl TrustState {
    /// Whether the workspace's settings are used: it is trusted as it is, or declares
    /// nothing.
    pub(crate) fn uses_workspace(&self) -> bool {
        matches!(
            self,
            TrustState::NothingDeclared | TrustState::Trusted { .. }
        )
    }

    /// `trusted`, `untrusted`, `changed`, `nothing_declared`, `unreviewable` (JSON, tests).
    pub(crate) fn code(&self) -> &'static str {
        match self {
            TrustState::NothingDeclared => "nothing_declared",
            TrustState::Trusted { .. } => "trusted",
            TrustState::Untrusted { .. } => "untrusted",
            TrustState::Changed(_) => "changed",
            TrustState::Unreviewable(_) => "unreviewable",
        }
    }
}

/// `scan` (of `root`) against what the record holds for it.
pub(crate) fn state_of(
    scan: &Scan,
    root: &Path,
    record: Result<Option<&TrustedWorkspace>, &TrustError>,
) -> TrustState {
    if scan.is_empty() {
        return TrustState::NothingDeclared;
    }
    let trusted = match record {
        Ok(Some(t)) => t,
        Ok(None) => {
            return TrustState::Untrusted {
                record_problem: None,
            };
        }
        Err(e) => {
            return TrustState::Untrusted {
                record_problem: Some(e.to_string()),
            };
        }
    };
    let now: BTreeSet<&str> = scan.files.iter().map(|f| f.path.as_str()).collect();
    let mut c = Changes {
        trusted_at_ms: trusted.trusted_at_ms,
        ..Changes::default()
    };
    for f in &scan.files {
        match trusted.files.get(&f.path) {
            None => c.added.push(f.path.clone()),
            Some(h) if *h != f.sha256 => c.modified.push(f.path.clone()),
            Some(_) => {}
        }
    }
    c.removed = trusted
        .files
        .keys()
        .filter(|p| !now.contains(p.as_str()))
        .cloned()
        .collect();
    if c.added.is_empty() && c.modified.is_empty() && c.removed.is_empty() {
        return TrustState::Trusted {
            trusted_at_ms: trusted.trusted_at_ms,
        };
    }
    let declared = Declared::of(scan, root);
    for (file, entries) in declared.entries() {
        let before = trusted.entries.get(&file);
        for e in entries {
            if before.is_none_or(|b| !b.contains(&e)) {
                c.new_entries.push(format!("{file}: {e}"));
            }
        }
    }
    TrustState::Changed(c)
}

/// The record's entry for `scan` of `root` as it is now.
pub(crate) fn trusted_now(scan: &Scan, root: &Path) -> TrustedWorkspace {
    TrustedWorkspace {
        trusted_at_ms: crate::session::now_ms(),
        files: scan
            .files
            .iter()
            .map(|f| (f.path.clone(), f.sha256.clone()))
            .collect(),
        entries: Declared::of(scan, root).entries(),
    }
}

/// The record's entry for `root` (`Ok(None)`: not in the record).
pub(crate) fn recorded(home: &Path, root: &Path) -> Result<Option<TrustedWorkspace>, TrustError> {
    let key = record::key(root)?;
    Ok(record::read(home)?.workspaces.remove(&key))
}
