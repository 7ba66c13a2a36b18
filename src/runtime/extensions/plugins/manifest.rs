//! A plugin's manifest (`.claude-plugin/plugin.json`) and what its folder brings, in Claude
//! Code's layout: `commands/*.md`, `agents/*.md`, `skills/<name>/SKILL.md`,
//! `hooks/hooks.json` and `.mcp.json` by default; the manifest's `commands`, `agents` and
//! `skills` paths add to the default folders, its `hooks` and `mcpServers` (a path, an
//! inline object, or a list of them) add to the default files. `${CLAUDE_PLUGIN_ROOT}` in a
//! hook's or a server's command is the plugin's folder. Fields neocode does not use are
//! ignored.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value, json};

/// The manifest's place in a plugin's folder.
pub(crate) const MANIFEST: &str = ".claude-plugin/plugin.json";
/// Folders below a commands folder that are entered.
const MAX_DEPTH: usize = 4;
/// A manifest or a hooks/servers file larger than this is not read.
const MAX_BYTES: u64 = 1024 * 1024;
/// The hook events neocode runs (Claude Code has more; those are named, not run).
const EVENTS: [&str; 7] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "PreCompact",
    "Notification",
];

/// A plugin that cannot be read or installed; one line naming the file or the folder.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PluginError {
    #[error("{}: {why}", file.display())]
    File { file: PathBuf, why: String },
    #[error("{}: no .claude-plugin/plugin.json (not a Claude Code plugin)", dir.display())]
    NotAPlugin { dir: PathBuf },
    #[error("{0}")]
    Install(String),
}

impl PluginError {
    pub(crate) fn file(file: &Path, why: impl Into<String>) -> PluginError {
        PluginError::File {
            file: file.to_path_buf(),
            why: why.into(),
        }
    }
}

/// One plugin folder and its manifest.
#[derive(Debug, Clone)]
pub(crate) struct Plugin {
    /// kebab-case, as Claude Code requires: the commands' and agents' prefix.
    pub name: String,
    pub version: Option<String>,
    pub description: Option<String>,
    pub author: Option<String>,
    /// The plugin's folder (`${CLAUDE_PLUGIN_ROOT}`).
    pub root: PathBuf,
    manifest: Map<String, Value>,
}

/// One hook a plugin declares.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PluginHook {
    pub event: String,
    pub matcher: String,
    /// With `${CLAUDE_PLUGIN_ROOT}` replaced.
    pub command: String,
    pub timeout: Option<f64>,
    pub file: PathBuf,
    /// The plugin's folder.
    pub root: PathBuf,
}

/// One MCP server a plugin declares.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PluginServer {
    /// `<plugin>_<server>`.
    pub name: String,
    /// With `${CLAUDE_PLUGIN_ROOT}` replaced; empty for a remote server.
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// A remote server's address (`url`).
    pub url: Option<String>,
}

/// What a plugin brings.
#[derive(Debug, Clone, Default)]
pub(crate) struct Brings {
    /// `(PLUGIN:cmd, file)`, sorted by name.
    pub commands: Vec<(String, PathBuf)>,
    pub agents: Vec<PathBuf>,
    /// Folders holding a `SKILL.md`.
    pub skills: Vec<PathBuf>,
    pub hooks: Vec<PluginHook>,
    pub servers: Vec<PluginServer>,
    /// Parts left out, one line each (an unknown hook event, a path outside the folder).
    pub problems: Vec<String>,
}

impl Plugin {
    /// Reads the manifest of the plugin in `dir`.
    pub(crate) fn read(dir: &Path) -> Result<Plugin, PluginError> {
        let file = dir.join(MANIFEST);
        if !file.is_file() {
            return Err(PluginError::NotAPlugin {
                dir: dir.to_path_buf(),
            });
        }
        let Value::Object(manifest) = read_json(&file)? else {
            return Err(PluginError::file(&file, "not a JSON object"));
        };
        let text = |k: &str| -> Result<Option<String>, PluginError> {
            match manifest.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(PluginError::file(&file, format!("`{k}` must be a string"))),
            }
        };
        let name = text("name")?.ok_or_else(|| PluginError::file(&file, "no `name`"))?;
        if !valid_name(&name) {
            return Err(PluginError::file(
                &file,
                format!("`name` {name:?} is not kebab-case (a-z, 0-9 and single hyphens)"),
            ));
        }
        let author = match manifest.get("author") {
            Some(Value::Object(a)) => a.get("name").and_then(Value::as_str).map(str::to_string),
            Some(Value::String(s)) => Some(s.clone()),
            _ => None,
        };
        Ok(Plugin {
            name,
            version: text("version")?,
            description: text("description")?,
            author,
            root: dir.to_path_buf(),
            manifest,
        })
    }

    /// Everything the plugin brings, as its folder holds it now.
    pub(crate) fn brings(&self) -> Brings {
        let mut b = Brings::default();
        let mut command_places = vec![self.root.join("commands")];
        let mut agent_places = vec![self.root.join("agents")];
        let mut skill_places = vec![self.root.join("skills")];
        for (key, places) in [
            ("commands", &mut command_places),
            ("agents", &mut agent_places),
            ("skills", &mut skill_places),
        ] {
            for p in self.paths(key, &mut b.problems) {
                if !places.contains(&p) {
                    places.push(p);
                }
            }
        }
        for place in command_places {
            if place.is_file() {
                let stem = place.file_stem().map(|s| s.to_string_lossy().into_owned());
                b.commands
                    .push((format!("{}:{}", self.name, stem.unwrap_or_default()), place));
            } else {
                let mut found = Vec::new();
                crate::runtime::extensions::front_matter::md_files(&place, &place, 0, &mut found);
                for (path, name) in found {
                    b.commands.push((format!("{}:{name}", self.name), path));
                }
            }
        }
        b.commands.sort();
        b.commands.dedup_by(|a, b| a.0 == b.0);
        for place in agent_places {
            if place.is_file() {
                b.agents.push(place);
            } else {
                let mut found = Vec::new();
                crate::runtime::extensions::front_matter::md_files(
                    &place, &place, MAX_DEPTH, &mut found,
                );
                b.agents.extend(found.into_iter().map(|(p, _)| p));
            }
        }
        for place in skill_places {
            skill_folders(&place, &mut b.skills);
        }
        self.hooks(&mut b);
        self.servers(&mut b);
        b
    }

    /// The manifest's paths under `key` (a string or a list of them), inside the folder.
    fn paths(&self, key: &str, problems: &mut Vec<String>) -> Vec<PathBuf> {
        let values: Vec<&Value> = match self.manifest.get(key) {
            Some(Value::Array(a)) => a.iter().collect(),
            Some(v @ Value::String(_)) => vec![v],
            _ => Vec::new(),
        };
        values
            .into_iter()
            .filter_map(Value::as_str)
            .filter_map(|p| match inside(&self.root, p) {
                Some(path) => Some(path),
                None => {
                    problems.push(format!("`{key}` path {p:?} is not inside the plugin"));
                    None
                }
            })
            .collect()
    }

    /// The manifest's `key` entries that are inline objects, and the files named by its paths.
    fn sources(&self, key: &str, default: &str, b: &mut Brings) -> Vec<(PathBuf, Value)> {
        let manifest = self.root.join(MANIFEST);
        let mut out = Vec::new();
        let mut files = vec![self.root.join(default)];
        let entries: Vec<&Value> = match self.manifest.get(key) {
            Some(Value::Array(a)) => a.iter().collect(),
            Some(v) => vec![v],
            None => Vec::new(),
        };
        for e in entries {
            match e {
                Value::Object(_) => out.push((manifest.clone(), e.clone())),
                Value::String(p) => match inside(&self.root, p) {
                    Some(f) if !files.contains(&f) => files.push(f),
                    Some(_) => {}
                    None => b
                        .problems
                        .push(format!("`{key}` path {p:?} is not inside the plugin")),
                },
                _ => b
                    .problems
                    .push(format!("`{key}` has an entry of another kind")),
            }
        }
        for f in files.into_iter().filter(|f| f.is_file()) {
            match read_json(&f) {
                Ok(v) => out.push((f, v)),
                Err(e) => b.problems.push(e.to_string()),
            }
        }
        out
    }

    fn hooks(&self, b: &mut Brings) {
        for (file, v) in self.sources("hooks", "hooks/hooks.json", b) {
            let Some(Value::Object(events)) = v.get("hooks") else {
                b.problems
                    .push(format!("{}: no `hooks` object", file.display()));
                continue;
            };
            for (event, groups) in events {
                if !EVENTS.contains(&event.as_str()) {
                    b.problems.push(format!(
                        "{}: {event} hooks are not run by neocode",
                        file.display()
                    ));
                    continue;
                }
                for g in groups.as_array().into_iter().flatten() {
                    let matcher = g.get("matcher").and_then(Value::as_str).unwrap_or("");
                    for h in g
                        .get("hooks")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        let command = h.get("command").and_then(Value::as_str);
                        match (h.get("type").and_then(Value::as_str), command) {
                            (Some("command"), Some(c)) => {
                                let hook = PluginHook {
                                    event: event.clone(),
                                    matcher: matcher.to_string(),
                                    command: self.expand(c),
                                    timeout: h.get("timeout").and_then(Value::as_f64),
                                    file: file.clone(),
                                    root: self.root.clone(),
                                };
                                // A hook neocode cannot run (a bad matcher or timeout) is
                                // left out here, not an error of every later turn.
                                match hook.check() {
                                    Ok(()) => b.hooks.push(hook),
                                    Err(e) => b.problems.push(e.to_string()),
                                }
                            }
                            (kind, _) => b.problems.push(format!(
                                "{}: a {event} hook of type {} is not run by neocode",
                                file.display(),
                                kind.unwrap_or("(none)")
                            )),
                        }
                    }
                }
            }
        }
    }

    fn servers(&self, b: &mut Brings) {
        for (file, v) in self.sources("mcpServers", ".mcp.json", b) {
            let table = v.get("mcpServers").unwrap_or(&v);
            let Value::Object(table) = table else {
                b.problems.push(format!(
                    "{}: the servers are not a JSON object",
                    file.display()
                ));
                continue;
            };
            for (name, s) in table {
                let str_list = |k: &str| -> Vec<String> {
                    s.get(k)
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .map(|a| self.expand(a))
                        .collect()
                };
                let mut env: BTreeMap<String, String> = s
                    .get("env")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                    .filter_map(|(k, v)| Some((k.clone(), self.expand(v.as_str()?))))
                    .collect();
                env.entry("CLAUDE_PLUGIN_ROOT".into())
                    .or_insert_with(|| self.root.display().to_string());
                let command = s
                    .get("command")
                    .and_then(Value::as_str)
                    .map(|c| self.expand(c));
                let url = s.get("url").and_then(Value::as_str).map(str::to_string);
                if command.is_none() && url.is_none() {
                    b.problems.push(format!(
                        "{}: server {name:?} has neither `command` nor `url`",
                        file.display()
                    ));
                    continue;
                }
                b.servers.push(PluginServer {
                    name: format!("{}_{name}", self.name),
                    command: command.unwrap_or_default(),
                    args: str_list("args"),
                    env,
                    url,
                });
            }
        }
    }

    /// `text` with `${CLAUDE_PLUGIN_ROOT}` replaced by the plugin's folder.
    fn expand(&self, text: &str) -> String {
        text.replace("${CLAUDE_PLUGIN_ROOT}", &self.root.display().to_string())
    }
}

impl PluginHook {
    /// The hooks file of this hook alone; the command runs with `CLAUDE_PLUGIN_ROOT` set (a
    /// plugin's scripts read it, as under Claude Code).
    fn file_text(&self) -> String {
        let command = format!(
            "CLAUDE_PLUGIN_ROOT={}; export CLAUDE_PLUGIN_ROOT; {}",
            shell_quote(&self.root.display().to_string()),
            self.command
        );
        let mut hook = json!({"type": "command", "command": command, "payload": "claude-code"});
        if let (Some(t), Some(o)) = (self.timeout, hook.as_object_mut()) {
            o.insert("timeout".into(), json!(t));
        }
        json!({"hooks": {&self.event: [{"matcher": self.matcher, "hooks": [hook]}]}}).to_string()
    }

    /// Whether neocode's hooks reader takes it.
    fn check(&self) -> Result<(), crate::runtime::policy::hooks::HooksError> {
        crate::runtime::policy::hooks::parse_hooks(&self.file_text(), &self.file).map(|_| ())
    }
}

impl Brings {
    /// Each hook as the text of a neocode hooks file of its own (sent Claude Code's payload
    /// names), with the file declaring it, in the order declared.
    pub(crate) fn hooks_file(&self) -> Vec<(PathBuf, String)> {
        self.hooks
            .iter()
            .map(|h| (h.file.clone(), h.file_text()))
            .collect()
    }
}

/// `text` as one word of `sh`.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// Claude Code's rule: `^[a-z][a-z0-9]*(-[a-z0-9]+)*$`.
pub(super) fn valid_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-')
        && !name.contains("--")
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// `rel` below `root`, when it stays there (no absolute path, no `..`).
fn inside(root: &Path, rel: &str) -> Option<PathBuf> {
    let p = Path::new(rel);
    p.components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        .then(|| root.join(p))
}

fn read_json(file: &Path) -> Result<Value, PluginError> {
    let meta = std::fs::metadata(file)
        .map_err(|e| PluginError::file(file, crate::session::io_error(&e)))?;
    if meta.len() > MAX_BYTES {
        return Err(PluginError::file(file, "larger than 1 MiB"));
    }
    let text = std::fs::read_to_string(file)
        .map_err(|e| PluginError::file(file, crate::session::io_error(&e)))?;
    serde_json::from_str(&text).map_err(|e| PluginError::file(file, format!("not valid JSON: {e}")))
}

/// `place` when it is a skill's folder, else its sub-folders that are.
fn skill_folders(place: &Path, out: &mut Vec<PathBuf>) {
    if place.join("SKILL.md").is_file() {
        if !out.iter().any(|p| p == place) {
            out.push(place.to_path_buf());
        }
        return;
    }
    let Ok(entries) = std::fs::read_dir(place) else {
        return;
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("SKILL.md").is_file() && !out.contains(p))
        .collect();
    found.sort();
    out.extend(found);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_paths_and_bad_manifests() {
        assert!(valid_name("code-review2"));
        for bad in ["Code", "-a", "a-", "a--b", "a_b", "", "1a"] {
            assert!(!valid_name(bad), "{bad}");
        }
        let root = Path::new("/p");
        assert_eq!(inside(root, "./x/y"), Some(PathBuf::from("/p/./x/y")));
        assert_eq!(inside(root, "../x"), None);
        assert_eq!(inside(root, "/etc"), None);
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".claude-plugin")).unwrap();
        std::fs::write(dir.path().join(MANIFEST), "{\"name\": \"x\",").unwrap();
        let e = Plugin::read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("plugin.json: not valid JSON"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        std::fs::write(dir.path().join(MANIFEST), "{\"name\": \"Bad Name\"}").unwrap();
        let e = Plugin::read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("not kebab-case"), "{e}");
    }

    #[test]
    fn inline_and_file_hooks_and_servers_with_the_root_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let w = |rel: &str, text: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        w(
            MANIFEST,
            r#"{"name": "kit", "version": "1.0.0", "author": {"name": "A"}, "homepage": "x",
               "commands": ["./extra/special.md"],
               "mcpServers": {"db": {"command": "${CLAUDE_PLUGIN_ROOT}/db", "args": ["--x"]}},
               "hooks": {"hooks": {"SubagentStop": [{"hooks": [{"type": "command", "command": "a"}]}]}}}"#,
        );
        w("commands/review.md", "Review $1");
        w("commands/git/push.md", "Push");
        w("extra/special.md", "Special");
        w(
            "hooks/hooks.json",
            r#"{"description": "d", "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
               {"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/check.sh", "timeout": 5},
               {"type": "prompt", "prompt": "p"}]},
               {"matcher": "(", "hooks": [{"type": "command", "command": "x"}]}]}}"#,
        );
        w(
            ".mcp.json",
            r#"{"mcpServers": {"web": {"url": "http://127.0.0.1:1/mcp"}}}"#,
        );
        let p = Plugin::read(root).unwrap();
        assert_eq!(p.author.as_deref(), Some("A"));
        let b = p.brings();
        let names: Vec<&str> = b.commands.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(names, ["kit:git:push", "kit:review", "kit:special"]);
        assert_eq!(b.hooks.len(), 1);
        assert_eq!(b.hooks[0].command, format!("{}/check.sh", root.display()));
        assert_eq!(b.problems.len(), 3, "{:?}", b.problems);
        let servers: Vec<&str> = b.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(servers, ["kit_db", "kit_web"]);
        assert_eq!(b.servers[0].command, format!("{}/db", root.display()));
        let files = b.hooks_file();
        assert_eq!(files.len(), 1, "the hook with a bad matcher is left out");
        let v: Value = serde_json::from_str(&files[0].1).unwrap();
        assert_eq!(
            v["hooks"]["PreToolUse"][0]["hooks"][0]["payload"],
            "claude-code"
        );
        assert_eq!(v["hooks"]["PreToolUse"][0]["matcher"], "Bash");
        assert_eq!(
            v["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
            format!(
                "CLAUDE_PLUGIN_ROOT='{0}'; export CLAUDE_PLUGIN_ROOT; {0}/check.sh",
                root.display()
            )
        );
        assert_eq!(
            b.servers[0].env["CLAUDE_PLUGIN_ROOT"],
            root.display().to_string()
        );
        assert_eq!(shell_quote("a'b"), "'a'\\''b'");
    }
}
