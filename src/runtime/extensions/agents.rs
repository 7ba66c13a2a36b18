//! Agent profiles and the tools that start sub-agents.
//!
//! A profile is a Markdown file with a front-matter header (`name`, `description`, `tools`,
//! `model`, `approval`) whose body is the sub-agent's instructions. They are read from
//! `<home>/agents/*.md` (personal), `<workspace>/.neocode/agents/*.md` and Claude Code's
//! `<workspace>/.claude/agents/*.md`, read as they are (its tool names map to neocode's).
//! Workspace profiles are declared by the workspace: they are used only when the user
//! trusts it (`neocode trust`), like its skills. A name found twice: the first place in the
//! order workspace (`.neocode`, then `.claude`), then home wins. An enabled plugin's agents
//! come last, named `PLUGIN:agent`.
//!
//! The `task` tool (run by the agent turn, `runtime::agent::subagent`) names the profiles in
//! use in its description; `task_wait` waits for a background one.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::runtime::config::ApprovalPolicy;
use crate::runtime::provider::ToolDef;

pub(crate) use super::front_matter::Skipped;
use super::front_matter::{FileError, read_capped};

/// The tool that starts a sub-agent.
pub(crate) const TASK: &str = "task";
/// The tool that waits for a background sub-agent.
pub(crate) const TASK_WAIT: &str = "task_wait";

/// Where a profile was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// `<home>/agents/`.
    Home,
    /// `<workspace>/.neocode/agents/`.
    Workspace,
    /// `<workspace>/.claude/agents/` (Claude Code's format).
    Claude,
    /// An enabled plugin's (named `PLUGIN:agent`).
    Plugin,
}

impl Origin {
    /// The word `neocode agents list` prints.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Origin::Home => "home",
            Origin::Workspace => "workspace",
            Origin::Claude => "claude",
            Origin::Plugin => "plugin",
        }
    }
}

/// One profile.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Profile {
    pub name: String,
    pub description: String,
    /// neocode tool names the sub-agent may call (`None`: every tool its parent has).
    pub tools: Option<Vec<String>>,
    /// The model the sub-agent runs on (`None`: its parent's).
    pub model: Option<String>,
    /// The approval policy (never wider than the parent's; `None`: the parent's).
    pub approval: Option<ApprovalPolicy>,
    /// The instructions (the file's body).
    pub body: String,
    pub path: PathBuf,
    pub origin: Origin,
    /// Used: a personal profile, or a workspace one while the workspace is trusted.
    pub in_use: bool,
    /// Why it is not used (an untrusted workspace, a name taken by an earlier profile).
    pub note: Option<String>,
}

/// Every profile found, in use or not.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Profiles {
    /// Sorted by name, then by the order of the places.
    pub all: Vec<Profile>,
    pub skipped: Vec<Skipped>,
}

/// A profile that cannot be read as one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ProfileError {
    #[error(transparent)]
    File(#[from] FileError),
    #[error("no front matter (the file must start with a `---` line and close it with another)")]
    NoFrontMatter,
    #[error("{0}")]
    FrontMatter(String),
    #[error("front matter has no `{0}`")]
    Missing(&'static str),
    #[error("`approval` must be ask, auto-edit or never-ask, not {0:?}")]
    Approval(String),
}

impl Profiles {
    /// The profiles of the home and of the workspace `root`, the workspace's used only when
    /// `trusted` (the caller asks `trust::Admission`).
    pub(crate) fn load(home: &Path, root: &Path, trusted: bool) -> Profiles {
        let mut out = Profiles::default();
        let home_agents = home.join("agents");
        let places = [
            (root.join(".neocode").join("agents"), Origin::Workspace),
            (root.join(".claude").join("agents"), Origin::Claude),
            (home_agents.clone(), Origin::Home),
        ];
        for (dir, origin) in places {
            // `<root>/.neocode` that is the home: its profiles are the personal ones.
            if origin == Origin::Workspace && same_dir(&dir, &home_agents) {
                continue;
            }
            for path in md_files(&dir) {
                let read = read_profile(&path, origin).map(|mut p| {
                    if origin != Origin::Home && !trusted {
                        p.in_use = false;
                        p.note =
                            Some("not used: the workspace is not trusted (`neocode trust`)".into());
                    }
                    p
                });
                out.add(path, read);
            }
        }
        out.add_plugins(home);
        out.all.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// The profiles of the enabled plugins, named `PLUGIN:agent` (the agent's `name`, or
    /// its file's name when the front matter has none, as Claude Code's plugin agents may).
    fn add_plugins(&mut self, home: &Path) {
        for plugin in super::plugins::enabled(home) {
            for path in plugin.brings().agents {
                let stem = path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let read = std::fs::read_to_string(&path)
                    .map_err(|e| FileError::Read(crate::session::io_error(&e)).into())
                    .and_then(|text| parse_profile_named(&text, Some(&stem)))
                    .map(|mut p| {
                        p.name = format!("{}:{}", plugin.name, p.name);
                        p.path.clone_from(&path);
                        p.origin = Origin::Plugin;
                        p
                    });
                self.add(path, read);
            }
        }
    }

    /// Adds what the file `path` reads as: a profile (not used when one in use before it has
    /// its name), or why it is none.
    fn add(&mut self, path: PathBuf, read: Result<Profile, ProfileError>) {
        match read {
            Ok(mut p) => {
                if p.in_use && self.all.iter().any(|q| q.in_use && q.name == p.name) {
                    p.in_use = false;
                    p.note = Some("not used: an earlier profile has this name".into());
                }
                self.all.push(p);
            }
            Err(e) => self.skipped.push(Skipped {
                path,
                reason: e.to_string(),
            }),
        }
    }

    /// The profile `name` that is in use.
    pub(crate) fn get(&self, name: &str) -> Option<&Profile> {
        self.all.iter().find(|p| p.in_use && p.name == name)
    }

    /// The names of the profiles in use.
    pub(crate) fn names(&self) -> Vec<&str> {
        self.all
            .iter()
            .filter(|p| p.in_use)
            .map(|p| p.name.as_str())
            .collect()
    }
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The `*.md` files of `dir`, sorted (none when it does not exist).
fn md_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md") && p.is_file())
        .collect();
    files.sort();
    files
}

fn read_profile(path: &Path, origin: Origin) -> Result<Profile, ProfileError> {
    let text = read_capped(path, |p| std::fs::read_to_string(p))?;
    let mut p = parse_profile(&text)?;
    p.path = path.to_path_buf();
    p.origin = origin;
    Ok(p)
}

/// A profile from a file's text (`path` and `origin` left for the caller).
pub(crate) fn parse_profile(text: &str) -> Result<Profile, ProfileError> {
    parse_profile_named(text, None)
}

/// A profile from a file's text, named `name` when its front matter has no `name`.
fn parse_profile_named(text: &str, name: Option<&str>) -> Result<Profile, ProfileError> {
    use super::front_matter::{self, FrontMatterError};
    let doc = front_matter::read(text).map_err(|e| match e {
        FrontMatterError::Missing | FrontMatterError::Unclosed => ProfileError::NoFrontMatter,
        e => ProfileError::FrontMatter(e.to_string()),
    })?;
    let get = |k: &str| doc.value(k);
    let name = get("name")
        .or_else(|| name.map(str::to_string))
        .ok_or(ProfileError::Missing("name"))?;
    let description = get("description").ok_or(ProfileError::Missing("description"))?;
    let approval = match get("approval") {
        None => None,
        Some(a) => Some(ApprovalPolicy::parse(&a).ok_or(ProfileError::Approval(a))?),
    };
    // Claude Code's aliases name its own models: the parent's model is used instead.
    let model =
        get("model").filter(|m| !matches!(m.as_str(), "inherit" | "sonnet" | "opus" | "haiku"));
    Ok(Profile {
        name,
        description,
        tools: get("tools").map(|t| tool_names(&t)),
        model,
        approval,
        body: doc.body.trim().to_string(),
        path: PathBuf::new(),
        origin: Origin::Home,
        in_use: true,
        note: None,
    })
}

/// A `tools` value (`read_file, grep` or Claude Code's `Read, Grep, Bash`) as neocode's names.
fn tool_names(value: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in value
        .trim_matches(['[', ']'])
        .split(',')
        .map(|t| t.trim().trim_matches(['"', '\'']))
    {
        let ours: &[&str] = match t {
            "" => &[],
            "Read" | "NotebookRead" => &["read_file"],
            "Grep" => &["grep"],
            "Glob" | "LS" => &["list_dir"],
            "Bash" => &["run_command"],
            "Edit" | "MultiEdit" | "NotebookEdit" => &["edit_file"],
            "Write" => &["write_file"],
            "TodoWrite" => &["update_plan"],
            other => {
                if !out.iter().any(|o| o == other) {
                    out.push(other.to_string());
                }
                &[]
            }
        };
        for o in ours {
            if !out.iter().any(|x| x == o) {
                out.push((*o).to_string());
            }
        }
    }
    out
}

fn task_schema(names: &[&str]) -> Value {
    let mut agent = json!({"type": "string", "description": "Profile to run (optional)."});
    if !names.is_empty() {
        agent["enum"] = json!(names);
    }
    json!({
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "description": "The whole task (the sub-agent sees nothing else)."},
            "agent": agent,
            "background": {"type": "boolean", "description": "Return a handle at once; wait with task_wait."},
            "worktree": {"type": "boolean", "description": "Run in a git worktree of HEAD; returns a diff."}
        },
        "required": ["prompt"]
    })
}

/// The definitions of `task` (naming the profiles in use) and `task_wait`.
pub(crate) fn tool_defs(profiles: &Profiles) -> Vec<ToolDef> {
    let mut description = String::from(
        "Hand a self-contained task to a sub-agent (a new session, its own context); returns its final answer. Several task calls in one reply run in parallel.",
    );
    let used: Vec<&Profile> = profiles.all.iter().filter(|p| p.in_use).collect();
    if !used.is_empty() {
        description.push_str(" Agents:");
        for p in &used {
            let d: String = p.description.chars().take(200).collect();
            description.push_str(&format!("\n- {}: {d}", p.name));
        }
    }
    vec![
        ToolDef::new(TASK, description, task_schema(&profiles.names())),
        ToolDef::new(
            TASK_WAIT,
            "Wait for a background sub-agent (its id from task) and return its answer.",
            json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "timeout_secs": {"type": "number", "description": "Default 600."}
                },
                "required": ["id"]
            }),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claude_code_profile_is_read_as_it_is() {
        let p = parse_profile(
            "---\nname: reviewer\ndescription: Reviews code.\ntools: Read, Grep, Glob, Bash\nmodel: sonnet\n---\nYou review.\n",
        )
        .unwrap();
        assert_eq!(p.name, "reviewer");
        assert_eq!(
            p.tools.as_deref(),
            Some(
                &[
                    "read_file".to_string(),
                    "grep".into(),
                    "list_dir".into(),
                    "run_command".into()
                ][..]
            )
        );
        assert_eq!(p.model, None);
        assert_eq!(p.body, "You review.");
    }

    #[test]
    fn bad_profiles_say_why() {
        assert_eq!(parse_profile("no header"), Err(ProfileError::NoFrontMatter));
        assert_eq!(
            parse_profile("---\nname: x\n---\n"),
            Err(ProfileError::Missing("description"))
        );
        assert!(matches!(
            parse_profile("---\nname: x\ndescription: d\napproval: yolo\n---\n"),
            Err(ProfileError::Approval(_))
        ));
    }

    /// `task` and `task_wait` go with every request of a top-level session: they stay lean
    /// (the built-ins' budget is in `tools::registry`'s test).
    #[test]
    fn the_task_tools_stay_lean() {
        let tokens: u64 = tool_defs(&Profiles::default())
            .iter()
            .map(crate::runtime::provider::quirks::tool_tokens)
            .sum();
        println!("task tool definitions: ~{tokens} tokens");
        // 187 before `worktree` was added, 211 with it.
        assert!(tokens <= 220, "~{tokens} tokens");
    }
}
