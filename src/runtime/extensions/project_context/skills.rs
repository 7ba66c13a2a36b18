//! Skills in the open Agent Skills layout: a folder holding `SKILL.md` (YAML front matter with
//! `name` and `description`, then the body) and any files beside it. Found in
//! `<workspace>/.neocode/skills/` and `<home>/skills/`; a workspace skill shadows a personal
//! one of the same name. The model sees each skill's name and description; activating one
//! (the `skill` tool, or `/skill NAME`) loads its body into the context and records the
//! activation in the session header, so resume and fork keep it.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{Value, json};

use crate::runtime::Sessions;
use crate::runtime::extensions::front_matter::{self, Skipped};
use crate::runtime::tools::{ToolContext, ToolKind, ToolOutput, ToolSpec};
use crate::session::{StateUpdate, now_ms};

/// Bytes of a skill body kept in the context.
pub(crate) const BODY_CAP: usize = 32 * 1024;
/// Files beside `SKILL.md` listed to the model.
const FILES_LISTED: usize = 50;
const NAME_MAX: usize = 64;
const DESCRIPTION_MAX: usize = 1024;

/// Where a skill was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillSource {
    /// `<workspace>/.neocode/skills/`.
    Workspace,
    /// `<home>/skills/`.
    Personal,
    /// An enabled plugin's `skills/`.
    Plugin,
}

impl SkillSource {
    /// Lower-case name for views and the header record.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SkillSource::Workspace => "workspace",
            SkillSource::Personal => "personal",
            SkillSource::Plugin => "plugin",
        }
    }
}

/// One usable skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// From the front matter.
    pub name: String,
    /// From the front matter: what the model reads to decide when to use it.
    pub description: String,
    /// The skill's folder.
    pub dir: PathBuf,
    /// Workspace or personal.
    pub source: SkillSource,
    /// The Markdown after the front matter.
    pub body: String,
    /// Files beside `SKILL.md`, relative to the folder (at most `FILES_LISTED`).
    pub files: Vec<String>,
}

/// The skills a workspace can use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Skills {
    /// Usable skills, workspace ones first, each group sorted by name.
    pub skills: Vec<Skill>,
    /// Files skipped as malformed.
    pub problems: Vec<Skipped>,
    /// Why the workspace's skills were left out (it is not trusted), when they were.
    pub workspace_left_out: Option<String>,
}

impl Skills {
    /// Reads `<root>/.neocode/skills/*/SKILL.md` and `<home>/skills/*/SKILL.md`. Whether
    /// the workspace is trusted is not asked here: turns and the commands that list skills
    /// go through `crate::runtime::trust::Admission::skills`. A workspace `SKILL.md` is
    /// read beneath the root: one that links outside it, or that a `read_file(...)` deny
    /// rule covers, is a problem, not a skill.
    #[cfg(test)]
    pub(crate) fn discover(home: &Path, root: &Path) -> Skills {
        Skills::discover_with(home, root, true)
    }

    /// The skills on disk: the home's and the enabled plugins' always, the workspace's skills
    /// only when `workspace` is true.
    pub(crate) fn discover_with(home: &Path, root: &Path, workspace: bool) -> Skills {
        let rules = super::beneath::read_rules(home, root);
        let mut out = Skills::default();
        let mut seen = HashSet::new();
        let ws_dir = root.join(".neocode").join("skills");
        let dirs = [
            (Some(ws_dir).filter(|_| workspace), SkillSource::Workspace),
            (Some(home.join("skills")), SkillSource::Personal),
        ];
        for (dir, source) in dirs {
            let Some(dir) = dir else {
                continue;
            };
            let Ok(rd) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut folders: Vec<PathBuf> = rd
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.join("SKILL.md").is_file())
                .collect();
            folders.sort();
            out.add_folders(root, folders, source, rules.as_ref(), &mut seen);
        }
        let plugin_folders = crate::runtime::extensions::plugins::enabled(home)
            .iter()
            .flat_map(|p| p.brings().skills)
            .collect();
        out.add_folders(
            root,
            plugin_folders,
            SkillSource::Plugin,
            rules.as_ref(),
            &mut seen,
        );
        out
    }

    fn add_folders(
        &mut self,
        root: &Path,
        folders: Vec<PathBuf>,
        source: SkillSource,
        rules: Option<&crate::runtime::policy::permissions::Rules>,
        seen: &mut HashSet<String>,
    ) {
        for folder in folders {
            let path = folder.join("SKILL.md");
            match load_skill(root, &folder, source, rules) {
                Ok(skill) => {
                    if seen.insert(skill.name.clone()) {
                        self.skills.push(skill);
                    }
                }
                Err(e) => self.problems.push(Skipped {
                    path,
                    reason: e.to_string(),
                }),
            }
        }
    }

    /// The skill called `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// Problems not yet reported by this process: a malformed file is reported once, not on
    /// every turn that rediscovers it.
    pub(crate) fn unreported_problems(&self) -> Vec<Skipped> {
        static REPORTED: Mutex<Option<HashSet<Skipped>>> = Mutex::new(None);
        front_matter::unreported(&REPORTED, &self.problems)
    }

    /// The system prompt's catalogue: each skill's name and description, active ones marked.
    /// Empty when there are no skills.
    pub(crate) fn catalogue_section(&self, active: &[Activation]) -> String {
        if self.skills.is_empty() {
            return String::new();
        }
        let mut s = String::from(
            "# Skills\n\nSkills are instructions for particular tasks. When a task matches a \
             skill's description, call the `skill` tool with its name before you start; its \
             instructions then join your context.\n\n",
        );
        for sk in &self.skills {
            let mark = if active.iter().any(|a| a.name == sk.name) {
                " (active)"
            } else {
                ""
            };
            s.push_str(&format!(
                "- {}{mark}: {}\n",
                sk.name,
                one_line(&sk.description)
            ));
        }
        s
    }
}

/// The text that loads a skill into the context: its body (capped) and where its files are.
pub(crate) fn activation_text(skill: &Skill) -> String {
    let mut s = format!("# Skill: {}\n\n", skill.name);
    let cut = skill.body.floor_char_boundary(BODY_CAP);
    s.push_str(skill.body[..cut].trim());
    s.push('\n');
    if cut < skill.body.len() {
        s.push_str(&format!(
            "\n[The skill body was cut at {cut} of {} bytes (size cap); read {} for the rest.]\n",
            skill.body.len(),
            skill.dir.join("SKILL.md").display()
        ));
    }
    if !skill.files.is_empty() {
        s.push_str(&format!(
            "\nFiles of this skill, in {}:\n",
            skill.dir.display()
        ));
        for f in &skill.files {
            s.push_str(&format!("- {f}\n"));
        }
    }
    s
}

/// One activation as stored in the session header (`skills` field, a JSON array).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Activation {
    /// The skill's name.
    pub name: String,
    /// `workspace` or `personal` at the time of activation.
    pub source: String,
    /// Its folder at the time of activation.
    pub dir: String,
    /// When, ms since the epoch.
    pub activated_at_ms: i64,
}

impl Activation {
    fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "source": self.source,
            "dir": self.dir,
            "activated_at_ms": self.activated_at_ms,
        })
    }
}

/// The activations recorded in a header's `skills` value, oldest first. Entries that are not
/// objects with a `name` are ignored (a session file may carry another agent's shape).
pub(crate) fn active_skills(skills: Option<&Value>) -> Vec<Activation> {
    let Some(Value::Array(items)) = skills else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|v| {
            Some(Activation {
                name: v.get("name")?.as_str()?.to_string(),
                source: v
                    .get("source")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                dir: v
                    .get("dir")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                activated_at_ms: v
                    .get("activated_at_ms")
                    .and_then(Value::as_i64)
                    .unwrap_or(0),
            })
        })
        .collect()
}

/// Records `skill` as active in the session header. Returns `false` when it already was
/// (nothing is written then).
pub(crate) fn activate(
    sessions: &Sessions,
    session_id: &str,
    skill: &Skill,
) -> crate::session::Result<bool> {
    let header = sessions.header(session_id)?;
    let mut items = match header.skills {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    };
    if active_skills(Some(&Value::Array(items.clone())))
        .iter()
        .any(|a| a.name == skill.name)
    {
        return Ok(false);
    }
    items.push(
        Activation {
            name: skill.name.clone(),
            source: skill.source.as_str().to_string(),
            dir: skill.dir.display().to_string(),
            activated_at_ms: now_ms(),
        }
        .to_json(),
    );
    sessions.update_state(
        session_id,
        &StateUpdate {
            skills: crate::session::Change::Set(Value::Array(items)),
            ..StateUpdate::default()
        },
    )?;
    Ok(true)
}

fn skill_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The skill's name, as listed under Skills in the system prompt."}
        },
        "required": ["name"]
    })
}

fn skill_not_here(_arguments: &str, _ctx: &ToolContext) -> ToolOutput {
    ToolOutput::error("skill is carried out by the agent turn, not here")
}

/// The `skill` tool: loads a skill's instructions into the context. It changes only the
/// session's own state, so it never asks. Carried out by the agent turn (it writes the
/// session header), like `update_plan`.
pub(crate) const SKILL_TOOL: ToolSpec = ToolSpec {
    name: "skill",
    description: "Activate a skill by name: its instructions are loaded into your context and stay active for the rest of the session.",
    parameters: skill_schema,
    kind: ToolKind::Read,
    run: skill_not_here,
    summary: None,
    preview: None,
};

/// Front matter fields neocode reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FrontMatter {
    /// `name`.
    pub name: String,
    /// `description`.
    pub description: String,
}

/// Why a `SKILL.md` cannot be used (listed as a problem of the skills; one line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SkillError {
    /// The file cannot be read.
    #[error("cannot read: {0}")]
    Read(String),
    /// The file is not UTF-8.
    #[error("not UTF-8 text")]
    NotUtf8,
    /// A workspace file left out: it links outside the workspace, a read denial covers it,
    /// or it is too large.
    #[error("skipped: {0}")]
    Skipped(String),
    /// The front matter is missing or wrong.
    #[error("{0}")]
    FrontMatter(String),
}

impl From<&str> for SkillError {
    fn from(m: &str) -> SkillError {
        SkillError::FrontMatter(m.to_string())
    }
}

impl From<String> for SkillError {
    fn from(m: String) -> SkillError {
        SkillError::FrontMatter(m)
    }
}

/// Splits a `SKILL.md` into its front matter and body, and checks `name` and `description`.
pub(crate) fn parse_skill_md(text: &str) -> Result<(FrontMatter, String), SkillError> {
    let doc = front_matter::read(text).map_err(|e| SkillError::FrontMatter(e.to_string()))?;
    let get = |k: &str| doc.get(k);
    let name = get("name")
        .filter(|n| !n.is_empty())
        .ok_or("front matter has no `name`")?;
    let description = get("description")
        .filter(|d| !d.is_empty())
        .ok_or("front matter has no `description`")?;
    if name.len() > NAME_MAX
        || !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        || name.starts_with('-')
        || name.ends_with('-')
    {
        return Err(SkillError::FrontMatter(format!(
            "`name` must be 1-{NAME_MAX} lower-case letters, digits and inner hyphens, not {name:?}"
        )));
    }
    if description.len() > DESCRIPTION_MAX {
        return Err(SkillError::FrontMatter(format!(
            "`description` is {} bytes; at most {DESCRIPTION_MAX}",
            description.len()
        )));
    }
    Ok((FrontMatter { name, description }, doc.body.to_string()))
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Bytes of a `SKILL.md` read at most.
const FILE_MAX: u64 = 1024 * 1024;

fn load_skill(
    root: &Path,
    folder: &Path,
    source: SkillSource,
    rules: Option<&crate::runtime::policy::permissions::Rules>,
) -> Result<Skill, SkillError> {
    let path = folder.join("SKILL.md");
    let bytes = match source {
        SkillSource::Personal | SkillSource::Plugin => {
            std::fs::read(&path).map_err(|e| SkillError::Read(e.to_string()))?
        }
        SkillSource::Workspace => match super::beneath::read(root, &path, FILE_MAX + 1, rules) {
            Ok(Some(c)) if c.size > FILE_MAX => {
                return Err(SkillError::Skipped(format!(
                    "it is larger than {} KiB",
                    FILE_MAX / 1024
                )));
            }
            Ok(Some(c)) => c.bytes,
            Ok(None) => return Err(SkillError::Read("not a regular file".into())),
            Err(super::beneath::Skip::Unreadable(e)) => return Err(SkillError::Read(e)),
            Err(skip) => return Err(SkillError::Skipped(skip.to_string())),
        },
    };
    let text = String::from_utf8(bytes).map_err(|_| SkillError::NotUtf8)?;
    let (fm, body) = parse_skill_md(&text)?;
    Ok(Skill {
        name: fm.name,
        description: fm.description,
        dir: folder.to_path_buf(),
        source,
        body,
        files: files_beside(folder),
    })
}

fn files_beside(folder: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let walker = ignore::WalkBuilder::new(folder)
        .max_depth(Some(4))
        .hidden(true)
        .sort_by_file_name(Ord::cmp)
        .build();
    for entry in walker.flatten() {
        if out.len() >= FILES_LISTED {
            break;
        }
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(folder) else {
            continue;
        };
        if rel == Path::new("SKILL.md") {
            continue;
        }
        out.push(rel.display().to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_quoted_folded_and_literal_values() {
        let (fm, body) = parse_skill_md(
            "---\nname: pdf-tools\ndescription: Fill PDF forms # a comment\n  and merge files.\nlicense: MIT\nmetadata:\n  author: x\n---\n# Body\n",
        )
        .unwrap();
        assert_eq!(fm.name, "pdf-tools");
        assert_eq!(fm.description, "Fill PDF forms and merge files.");
        assert_eq!(body, "# Body\n");

        let (fm, _) =
            parse_skill_md("---\nname: 'a-b'\ndescription: \"say \\\"hi\\\"\"\n---\n").unwrap();
        assert_eq!(
            (fm.name.as_str(), fm.description.as_str()),
            ("a-b", "say \"hi\"")
        );

        let (fm, _) =
            parse_skill_md("---\nname: x\ndescription: >-\n  one\n  two\n\n  three\n---\nbody")
                .unwrap();
        assert_eq!(fm.description, "one two\nthree");

        let (fm, _) =
            parse_skill_md("---\r\nname: x\r\ndescription: |\r\n  one\r\n  two\r\n---\r\n")
                .unwrap();
        assert_eq!(fm.description, "one\ntwo");
    }

    #[test]
    fn malformed_files_say_why() {
        let cases = [
            ("# no front matter", "no YAML front matter"),
            ("---\nname: x\ndescription: y\n", "no closing"),
            ("---\ndescription: y\n---\n", "no `name`"),
            ("---\nname: x\n---\n", "no `description`"),
            ("---\nname: Bad Name\ndescription: y\n---\n", "lower-case"),
            ("---\nname: x\ndescription: 'open\n---\n", "unterminated"),
            ("---\nname: x\njust words\n---\n", "not `key: value`"),
        ];
        for (text, want) in cases {
            let err = parse_skill_md(text).unwrap_err().to_string();
            assert!(err.contains(want), "{text:?}: {err}");
        }
    }

    fn write_skill(dir: &Path, folder: &str, text: &str) {
        std::fs::create_dir_all(dir.join(folder)).unwrap();
        std::fs::write(dir.join(folder).join("SKILL.md"), text).unwrap();
    }

    #[test]
    fn discovery_prefers_workspace_and_reports_malformed_once() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let root = t.path().join("ws");
        let ws = root.join(".neocode/skills");
        write_skill(
            &ws,
            "deploy",
            "---\nname: deploy\ndescription: project deploy\n---\nsteps",
        );
        std::fs::write(ws.join("deploy/run.sh"), "echo").unwrap();
        write_skill(&ws, "broken", "no front matter here");
        write_skill(
            &home.join("skills"),
            "deploy",
            "---\nname: deploy\ndescription: personal deploy\n---\n",
        );
        write_skill(
            &home.join("skills"),
            "review",
            "---\nname: review\ndescription: Review code\n---\nLook closely.",
        );
        let s = Skills::discover(&home, &root);
        let names: Vec<_> = s
            .skills
            .iter()
            .map(|k| (k.name.as_str(), k.source))
            .collect();
        assert_eq!(
            names,
            vec![
                ("deploy", SkillSource::Workspace),
                ("review", SkillSource::Personal)
            ]
        );
        assert_eq!(s.get("deploy").unwrap().description, "project deploy");
        assert_eq!(s.get("deploy").unwrap().files, vec!["run.sh".to_string()]);
        assert_eq!(s.problems.len(), 1);
        assert!(s.problems[0].path.ends_with("broken/SKILL.md"));
        assert_eq!(s.unreported_problems().len(), 1);
        assert!(
            Skills::discover(&home, &root)
                .unreported_problems()
                .is_empty()
        );

        let active = vec![Activation {
            name: "review".into(),
            source: "personal".into(),
            dir: String::new(),
            activated_at_ms: 0,
        }];
        let cat = s.catalogue_section(&active);
        assert!(cat.contains("- deploy: project deploy\n"), "{cat}");
        assert!(cat.contains("- review (active): Review code\n"), "{cat}");
        let text = activation_text(s.get("deploy").unwrap());
        assert!(
            text.contains("steps") && text.contains("- run.sh"),
            "{text}"
        );
    }

    proptest::proptest! {
        #[test]
        fn any_text_parses_or_says_why(text in "(---\n)?([a-z \u{3000}\t'\"|>:#-]{0,12}\n){0,8}(---\n)?.{0,20}") {
            match parse_skill_md(&text) {
                Ok((fm, _)) => proptest::prop_assert!(!fm.name.is_empty() && !fm.description.is_empty()),
                Err(e) => proptest::prop_assert!(!e.to_string().is_empty()),
            }
        }
    }

    #[test]
    fn unequal_unicode_indents_do_not_split_characters() {
        let (fm, _) =
            parse_skill_md("---\nname: x\ndescription: |\n    a\n  \u{3000}b\n---\n").unwrap();
        assert_eq!(fm.description, "a\nb");
    }

    #[test]
    fn header_records_round_trip_and_tolerate_other_shapes() {
        let v = json!([{"name": "a", "source": "workspace", "dir": "/x", "activated_at_ms": 5}, "junk", {"no": 1}]);
        let a = active_skills(Some(&v));
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].name, "a");
        assert_eq!(a[0].to_json(), v[0]);
        assert!(active_skills(Some(&json!({"a": 1}))).is_empty());
        assert!(active_skills(None).is_empty());
    }
}
