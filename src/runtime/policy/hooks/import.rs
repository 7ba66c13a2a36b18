//! `neocode hooks import`: a Claude Code settings file's hooks in neocode's file.

use std::path::{Path, PathBuf};

use regex::Regex;
use serde_json::{Map, Value, json};

use super::claude::TOOL_MAP;
use super::spec::{HookEvent, HooksError, Matcher, MatcherError, parse_hooks};
use crate::runtime::policy::permissions::{List, parse_rule};

/// Claude Code tool names inside a matcher (a regular expression) replaced by neocode's:
/// `Edit|MultiEdit|Write` → `edit_file|write_file`. Returns the matcher and the names left
/// that neocode has no tool for (`WebFetch`, `NotebookEdit`, …).
pub(crate) fn map_matcher(m: &str) -> (String, Vec<String>) {
    let t = m.trim();
    if t.is_empty() || t == "*" {
        return (t.to_string(), Vec::new());
    }
    let word = Regex::new(r"[A-Za-z_][A-Za-z0-9_]*").ok();
    let Some(word) = word else {
        return (t.to_string(), Vec::new());
    };
    let mut unknown = Vec::new();
    let mapped = word.replace_all(t, |c: &regex::Captures<'_>| {
        let w = &c[0];
        match TOOL_MAP.iter().find(|(cc, _)| *cc == w) {
            Some((_, ours)) => (*ours).to_string(),
            None => {
                let ours = w.contains('_') && w.chars().all(|ch| !ch.is_ascii_uppercase());
                if !ours && !w.starts_with("mcp__") && !unknown.iter().any(|u| u == w) {
                    unknown.push(w.to_string());
                }
                w.to_string()
            }
        }
    });
    // A plain alternation keeps each name once (`Edit|MultiEdit` → `edit_file`).
    let plain = mapped
        .split('|')
        .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    let mapped = if plain {
        let mut seen: Vec<&str> = Vec::new();
        for p in mapped.split('|') {
            if !seen.contains(&p) {
                seen.push(p);
            }
        }
        seen.join("|")
    } else {
        mapped.into_owned()
    };
    (mapped, unknown)
}

/// Why a Claude Code settings file could not be imported (one line, naming the file).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ImportError {
    /// The file exists but cannot be read.
    #[error("{}: cannot read it: {message}", file.display())]
    Read { file: PathBuf, message: String },
    /// It is not JSON (the line).
    #[error("{}:{line}: {message}", file.display())]
    Json {
        file: PathBuf,
        line: usize,
        message: String,
    },
    /// A part of it does not have the shape Claude Code gives it.
    #[error("{}: {message}", file.display())]
    Shape { file: PathBuf, message: String },
}

/// What one settings file gives neocode.
#[derive(Debug, Clone, Default)]
pub(crate) struct SourceImport {
    /// The settings file.
    pub file: PathBuf,
    /// Its hooks as a neocode hooks file (`{"hooks": …}`), each marked
    /// `"payload": "claude-code"` so it is sent Claude Code's names.
    pub hooks: Value,
    /// Hook commands converted.
    pub imported: usize,
    /// One line per hook converted: `PreToolUse  edit_file|write_file  cmd`.
    pub hook_lines: Vec<String>,
    /// Its `permissions.allow` / `ask` / `deny` as neocode rules: the list, the rule, and
    /// Claude Code's rule it came from.
    pub rules: Vec<(List, String, String)>,
    /// What was mapped, or left out and why.
    pub notes: Vec<String>,
}

impl SourceImport {}

/// What an import found.
#[derive(Debug, Clone, Default)]
pub(crate) struct ImportReport {
    /// The files read, in order (those that exist).
    pub sources: Vec<SourceImport>,
    /// Files that do not exist (skipped).
    pub notes: Vec<String>,
}

/// Reads Claude Code settings files and converts their hooks and permission rules, per file
/// (where each goes is the caller's choice). `root` is the workspace (for the rules' paths);
/// `personal` tells, per file, whether it is the user's own (`~/.claude/settings.json`):
/// a path rule relative to such a file has no place in neocode and is named, not imported.
/// A file that does not exist is noted and skipped; one that is not JSON is an error naming
/// it and the line.
pub(crate) fn import_claude_settings(
    files: &[(PathBuf, bool)],
    root: &Path,
) -> Result<ImportReport, ImportError> {
    let mut report = ImportReport::default();
    for (file, personal) in files {
        let src = match std::fs::read_to_string(file) {
            Ok(s) => s,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                report
                    .notes
                    .push(format!("{}: not found, skipped", file.display()));
                continue;
            }
            Err(e) => {
                return Err(ImportError::Read {
                    file: file.clone(),
                    message: e.to_string(),
                });
            }
        };
        let v: Value = serde_json::from_str(&src).map_err(|e| ImportError::Json {
            file: file.clone(),
            line: e.line(),
            message: e.to_string(),
        })?;
        let mut one = SourceImport {
            file: file.clone(),
            ..SourceImport::default()
        };
        import_hooks(file, &v, &mut one)?;
        import_permissions(&v, *personal, root, &mut one);
        report.sources.push(one);
    }
    Ok(report)
}

fn import_hooks(file: &Path, v: &Value, one: &mut SourceImport) -> Result<(), ImportError> {
    let shape = |message: String| ImportError::Shape {
        file: file.to_path_buf(),
        message,
    };
    let mut table: Map<String, Value> = Map::new();
    match v.get("hooks").and_then(Value::as_object) {
        None => one.notes.push("no hooks".into()),
        Some(hooks) => {
            for (event_name, groups) in hooks {
                if HookEvent::parse(event_name).is_none() {
                    one.notes
                        .push(format!("{event_name} skipped (neocode has no such event)"));
                    continue;
                }
                let Some(groups) = groups.as_array() else {
                    return Err(shape(format!("hooks.{event_name} is not a list")));
                };
                for g in groups {
                    convert_group(event_name, g, &mut table, one)
                        .map_err(|e| shape(e.to_string()))?;
                }
            }
        }
    }
    one.hooks = json!({ "hooks": Value::Object(table) });
    Ok(())
}

/// A hook group whose matcher (once mapped to neocode's names) does not compile.
#[derive(Debug, thiserror::Error)]
#[error("{event}: {source}")]
struct BadMatcher {
    event: String,
    source: MatcherError,
}

fn convert_group(
    event: &str,
    g: &Value,
    table: &mut Map<String, Value>,
    one: &mut SourceImport,
) -> Result<(), BadMatcher> {
    let matcher = g.get("matcher").and_then(Value::as_str).unwrap_or("");
    let (mapped, unknown) = map_matcher(matcher);
    if mapped != matcher {
        one.notes
            .push(format!("{event}: matcher `{matcher}` → `{mapped}`"));
    }
    if !unknown.is_empty() {
        one.notes.push(format!(
            "{event}: matcher `{matcher}` names tools neocode does not have: {}",
            unknown.join(", ")
        ));
    }
    Matcher::new(&mapped).map_err(|source| BadMatcher {
        event: event.to_string(),
        source,
    })?;
    let mut kept = Vec::new();
    for h in g
        .get("hooks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let kind = h.get("type").and_then(Value::as_str).unwrap_or("");
        let command = h.get("command").and_then(Value::as_str);
        let Some(command) = command.filter(|_| kind == "command") else {
            one.notes.push(format!(
                "{event}: a `{kind}` hook skipped (only command hooks run)"
            ));
            continue;
        };
        let mut out = Map::new();
        out.insert("type".into(), json!("command"));
        out.insert("command".into(), json!(command));
        if let Some(t) = h.get("timeout").and_then(Value::as_f64) {
            out.insert("timeout".into(), json!(t));
        }
        out.insert("payload".into(), json!("claude-code"));
        kept.push(Value::Object(out));
        let shown = if mapped.is_empty() { "*" } else { &mapped };
        one.hook_lines.push(format!("{event}  {shown}  {command}"));
        one.imported += 1;
    }
    if kept.is_empty() {
        return Ok(());
    }
    let list = table
        .entry(event.to_string())
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(a) = list {
        let mut group = Map::new();
        if !mapped.is_empty() {
            group.insert("matcher".into(), json!(mapped));
        }
        group.insert("hooks".into(), Value::Array(kept));
        a.push(Value::Object(group));
    }
    Ok(())
}

/// Writes a hooks file (`.neocode/hooks.json` or `<home>/hooks.json`): the one place neocode
/// writes one. What is written must load (checked with the parser sessions use); the folder
/// is created when missing, and the file is replaced whole (written beside it, then moved).
pub(crate) fn write_hooks_file(file: &Path, hooks: &Value) -> Result<(), HooksError> {
    let err = |message: String| HooksError {
        file: file.to_path_buf(),
        line: 0,
        message,
    };
    let text = serde_json::to_string_pretty(hooks).map_err(|e| err(e.to_string()))? + "\n";
    parse_hooks(&text, file)?;
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| err(format!("cannot create its folder: {e}")))?;
    }
    let tmp = file.with_extension("json.tmp");
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, file))
        .map_err(|e| err(format!("cannot write it: {e}")))
}

/// `b`'s hooks added to `a`'s (both `{"hooks": {EVENT: [groups]}}`), event by event.
pub(crate) fn merge_hooks(a: &mut Value, b: &Value) {
    let Some(from) = b.get("hooks").and_then(Value::as_object) else {
        return;
    };
    if a.get("hooks").and_then(Value::as_object).is_none() {
        *a = json!({ "hooks": {} });
    }
    let Some(into) = a.get_mut("hooks").and_then(Value::as_object_mut) else {
        return;
    };
    for (event, groups) in from {
        let list = into
            .entry(event.clone())
            .or_insert_with(|| Value::Array(Vec::new()));
        if let (Value::Array(l), Some(g)) = (list, groups.as_array()) {
            l.extend(g.iter().cloned());
        }
    }
}

/// A Claude Code permission rule in neocode's terms, or why it has none.
enum Converted {
    Rules(Vec<String>),
    Skipped(String),
}

/// `permissions.allow` / `ask` / `deny` of a settings file as neocode rules; what has no
/// neocode equivalent is named in the notes.
fn import_permissions(v: &Value, personal: bool, root: &Path, one: &mut SourceImport) {
    let Some(perms) = v.get("permissions").and_then(Value::as_object) else {
        return;
    };
    for (key, value) in perms {
        let Some(list) = List::parse(key) else {
            one.notes.push(format!(
                "permissions.{key} not imported (neocode has no such setting)"
            ));
            continue;
        };
        for rule in value.as_array().into_iter().flatten() {
            let Some(rule) = rule.as_str() else {
                continue;
            };
            match convert_rule(rule, personal) {
                Converted::Rules(rules) => {
                    for r in rules {
                        // Checked for its syntax only (`~/` needs some home to parse).
                        match parse_rule(&r, root, Some(Path::new("/"))) {
                            Ok(_) => one.rules.push((list, r, rule.to_string())),
                            Err(e) => one
                                .notes
                                .push(format!("permissions.{key} `{rule}` not imported: {e}")),
                        }
                    }
                }
                Converted::Skipped(why) => one
                    .notes
                    .push(format!("permissions.{key} `{rule}` not imported: {why}")),
            }
        }
    }
}

/// One Claude Code rule (`Bash(npm test:*)`, `Read(./.env)`, `Edit(src/**)`, `mcp__gh`) as
/// neocode rules (`run_command(npm test *)`, `read_file(./.env)`, `edit_file(src/**)` and
/// `write_file(src/**)`, `mcp__gh`). `personal`: from the user's own settings file, where a
/// path relative to that file (`/x`) has no neocode equivalent.
fn convert_rule(rule: &str, personal: bool) -> Converted {
    let rule = rule.trim();
    let (tool, pattern) = match rule.find('(') {
        Some(i) => match rule[i + 1..].strip_suffix(')') {
            Some(p) => (&rule[..i], Some(p.trim())),
            None => return Converted::Skipped("it does not end with `)`".into()),
        },
        None => (rule, None),
    };
    if tool.starts_with("mcp__") {
        return Converted::Rules(vec![rule.to_string()]);
    }
    let tools: &[&str] = match tool {
        "Bash" => &["run_command"],
        "Edit" => &["edit_file", "write_file"],
        "MultiEdit" => &["edit_file"],
        "Write" => &["write_file"],
        "Read" => &["read_file"],
        "Grep" => &["grep"],
        "Glob" | "LS" => &["list_dir"],
        other => return Converted::Skipped(format!("neocode has no `{other}` tool")),
    };
    let pattern = match pattern {
        None | Some("") | Some("*") => None,
        Some(p) if tool == "Bash" => Some(match p.strip_suffix(":*") {
            // Claude Code's prefix form: `npm test:*` is `npm test` and anything after it.
            Some(prefix) => format!("{} *", prefix.trim_end()),
            None => p.to_string(),
        }),
        Some(p) => match claude_path(p, personal) {
            Some(p) => Some(p),
            None => {
                return Converted::Skipped(
                    "a path relative to the settings file (write it for the workspace)".into(),
                );
            }
        },
    };
    Converted::Rules(
        tools
            .iter()
            .map(|t| match &pattern {
                Some(p) => format!("{t}({p})"),
                None => (*t).to_string(),
            })
            .collect(),
    )
}

/// A Claude Code path pattern in neocode's terms: `//abs` is absolute (`/abs`), `~/` stays,
/// `/x` is relative to the settings file (the workspace root for the workspace's file:
/// `./x`; none for a personal file), anything else is as neocode reads it.
fn claude_path(p: &str, personal: bool) -> Option<String> {
    if let Some(abs) = p.strip_prefix("//") {
        return Some(format!("/{abs}"));
    }
    if let Some(rel) = p.strip_prefix('/') {
        return (!personal).then(|| format!("./{rel}"));
    }
    Some(p.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_code_rules_become_neocode_rules_or_are_named() {
        let rules = |r: &str, personal: bool| match convert_rule(r, personal) {
            Converted::Rules(v) => v,
            Converted::Skipped(why) => vec![format!("skipped: {why}")],
        };
        assert_eq!(
            rules("Bash(npm test:*)", false),
            ["run_command(npm test *)"]
        );
        assert_eq!(
            rules("Bash(git status)", false),
            ["run_command(git status)"]
        );
        assert_eq!(rules("Bash", false), ["run_command"]);
        assert_eq!(
            rules("Edit(src/**)", false),
            ["edit_file(src/**)", "write_file(src/**)"]
        );
        assert_eq!(rules("Read(./.env)", false), ["read_file(./.env)"]);
        assert_eq!(
            rules("Read(//etc/passwd)", true),
            ["read_file(/etc/passwd)"]
        );
        assert_eq!(
            rules("Read(/secrets/**)", false),
            ["read_file(./secrets/**)"]
        );
        assert!(rules("Read(/secrets/**)", true)[0].starts_with("skipped"));
        assert_eq!(
            rules("mcp__github__delete_repo", false),
            ["mcp__github__delete_repo"]
        );
        assert_eq!(
            rules("WebFetch(domain:example.com)", false),
            ["skipped: neocode has no `WebFetch` tool"]
        );
    }
}
