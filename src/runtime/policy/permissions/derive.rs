//! The rules proposed for an "always" answer and writing a rule into a rule file.

use std::path::Path;

use serde_json::Value;

use super::files::{line_of, read_optional, user_home};
use super::pattern;
use super::rule::parse_rule;
use super::rules::Rules;
use super::types::{List, PATH_TOOLS, RulesError, Verdict};
use crate::runtime::shell::{self, Part};

/// The rule proposed when the user answers "always" to a call: the first of
/// [`derive_rules`].
#[cfg(test)]
pub(crate) fn derive_rule(tool: &str, args: &Value, workspace: &Path) -> String {
    derive_rules(tool, args, workspace)
        .into_iter()
        .next()
        .unwrap_or_else(|| tool.to_string())
}

/// Rules that would allow a call, one per distinct simple command of a command line.
///
/// - `run_command`: each simple command's words. The command word and its first argument
///   when that looks like a subcommand (letters, digits, `-`, `_`, `:`, not starting with
///   `-`) are kept, the rest becomes `*`: `cargo test -p core` → `run_command(cargo test *)`,
///   `git diff --stat` → `run_command(git diff *)`. When only the command word would be
///   kept (`python3 test_stats.py`, `rm -rf build`, `sed -i 's/a b/c/' f`) the rule is the
///   exact command, never `python3 *`; a word with spaces in it keeps a `*` for each run of
///   spaces (`s/a*b/c/`), since a pattern's words are split at spaces. A command with nothing
///   after the kept words is exact (`git status`).
/// - File tools: the folder of the path, relative to the workspace, with `/**`
///   (`src/a/b.rs` → `edit_file(src/a/**)`); a file at the root gives the root's files of
///   its extension (`write_file(./*.py)`), or itself when it has none
///   (`edit_file(./Makefile)`); a path outside the workspace keeps its absolute folder.
/// - Other tools (`update_plan`, MCP tools): the tool name.
pub(crate) fn derive_rules(tool: &str, args: &Value, workspace: &Path) -> Vec<String> {
    let get = |k: &str| args.get(k).and_then(Value::as_str);
    if tool == "run_command" {
        let Some(cmd) = get("command") else {
            return vec![tool.to_string()];
        };
        let mut out: Vec<String> = Vec::new();
        for p in shell::split(cmd) {
            let r = match &p {
                Part::Simple { words, .. } => format!("run_command({})", derive_words(words)),
                Part::Unknown { text, .. } => format!("run_command({})", text.replace('\n', " ")),
            };
            if !out.contains(&r) {
                out.push(r);
            }
        }
        if out.is_empty() {
            out.push(format!("run_command({})", cmd.trim()));
        }
        return out;
    }
    if tool == "web_fetch"
        && let Some(host) = get("url")
            .and_then(|u| reqwest::Url::parse(u).ok())
            .and_then(|u| u.host_str().map(str::to_string))
    {
        return vec![format!("web_fetch(domain:{host})")];
    }
    if PATH_TOOLS.contains(&tool) {
        return vec![format!(
            "{tool}({})",
            derive_glob(tool, get("path"), workspace)
        )];
    }
    vec![tool.to_string()]
}

/// The glob a file tool's "always" rule proposes for `path` (see [`derive_rules`]).
fn derive_glob(tool: &str, path: Option<&str>, workspace: &Path) -> String {
    let abs = pattern::absolute(workspace, path.unwrap_or("."), None);
    let inside = abs.starts_with(workspace);
    let shown = match abs.strip_prefix(workspace) {
        Ok(rel) => rel.to_path_buf(),
        Err(_) => abs.clone(),
    };
    let escaped = |p: &Path| pattern::glob_escape(&p.display().to_string());
    if matches!(tool, "list_dir" | "grep") && !abs.is_file() {
        return if shown.as_os_str().is_empty() {
            "**".to_string()
        } else {
            format!("{}/**", escaped(&shown))
        };
    }
    if let Some(dir) = shown.parent().filter(|p| !p.as_os_str().is_empty()) {
        return format!("{}/**", escaped(dir));
    }
    if !inside {
        return escaped(&shown);
    }
    // A root file: the root's files of its extension (with a `/` so it stays anchored).
    let ext = shown
        .extension()
        .map(|e| e.to_string_lossy().into_owned())
        .filter(|e| !e.is_empty() && !e.contains(char::is_whitespace));
    match ext {
        Some(e) => format!("./*.{}", pattern::glob_escape(&e)),
        None => format!("./{}", escaped(&shown)),
    }
}

impl Rules {
    /// The rules an "always" answer to `tool` with `args` would keep: one per part of a
    /// command line that no rule allows yet ([`derive_rules`] for each), or the file tool's
    /// folder or glob, or the tool. Empty when no rule can allow the call: a part the shell
    /// grammar cannot account for, an `ask` or `deny` rule that covers it, or rules that
    /// would still not allow it. These rules (with the session's grants) are what the
    /// proposal is checked against.
    pub(crate) fn propose(&self, tool: &str, args: &Value) -> Vec<String> {
        let workspace = self.root.clone();
        let mut out: Vec<String> = Vec::new();
        if tool == "run_command" {
            // A call without a command line gets no rule (never the whole tool).
            let Some(cmd) = args.get("command").and_then(Value::as_str) else {
                return Vec::new();
            };
            for p in shell::split(cmd) {
                let Part::Simple {
                    words, computed, ..
                } = &p
                else {
                    return Vec::new();
                };
                if self
                    .decide_words(words, computed)
                    .is_some_and(|r| r.list == List::Allow)
                {
                    continue;
                }
                let r = format!("run_command({})", derive_words(words));
                if !out.contains(&r) {
                    out.push(r);
                }
            }
        } else {
            out = derive_rules(tool, args, &workspace);
        }
        if out.is_empty() {
            return out;
        }
        let covered = self.with_session_grants(&out).decide(tool, args);
        // Each proposed rule must parse (`with_session_grants` skips one that does not).
        let all_parse = out
            .iter()
            .all(|r| parse_rule(r, &workspace, self.home_dir.as_deref()).is_ok());
        if covered.verdict == Verdict::Allow && all_parse {
            out
        } else {
            Vec::new()
        }
    }
}

fn derive_words(words: &[String]) -> String {
    let subcommand = |w: &str| {
        !w.is_empty()
            && !w.starts_with('-')
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':'))
    };
    let mut keep = 1;
    if words.len() > 1 && subcommand(&words[1]) {
        keep = 2;
    }
    let joined = |ws: &[String]| {
        ws.iter()
            .map(|w| pattern_word(w))
            .collect::<Vec<_>>()
            .join(" ")
    };
    if keep >= words.len() || keep == 1 {
        return joined(words);
    }
    format!("{} *", joined(&words[..keep]))
}

/// A command word as a pattern word: each run of whitespace (which would split the pattern)
/// becomes `*`, and an empty word `*`.
fn pattern_word(w: &str) -> String {
    if w.is_empty() {
        return "*".to_string();
    }
    let mut out = String::with_capacity(w.len());
    let mut in_space = false;
    for c in w.chars() {
        if c.is_whitespace() {
            if !in_space {
                out.push('*');
            }
            in_space = true;
        } else {
            out.push(c);
            in_space = false;
        }
    }
    out
}

/// Writes `rule` into the `list` of a rule file: [`append_rules`] with one rule. Returns
/// whether the file changed.
#[cfg(test)]
pub(crate) fn append_rule(file: &Path, list: List, rule: &str) -> Result<bool, RulesError> {
    append_rules(file, list, &[rule.to_string()]).map(|added| added > 0)
}

/// Writes `rules` into the `list` of a rule file in one write, keeping everything else in it
/// (comments, other tables): the one place neocode writes a rule file. `file` named
/// `config.toml` gets them under `[permissions]`; any other file
/// (`.neocode/permissions.toml`) at its top level. The folder is created when missing; a
/// rule already in the list is not added twice, and nothing is written when every rule is
/// there already. Every rule is checked first: one that does not parse writes none. Returns
/// how many rules were added.
pub(crate) fn append_rules(file: &Path, list: List, rules: &[String]) -> Result<usize, RulesError> {
    let err = |line: usize, message: String| RulesError {
        file: file.to_path_buf(),
        line,
        message,
    };
    let root = file.parent().unwrap_or(Path::new("."));
    for rule in rules {
        parse_rule(rule, root, user_home().as_deref()).map_err(|e| err(0, e.to_string()))?;
    }
    let src = read_optional(file)?.unwrap_or_default();
    let mut doc: toml_edit::DocumentMut = src.parse().map_err(|e: toml_edit::TomlError| {
        let line = e.span().map(|s| line_of(&src, s.start)).unwrap_or(0);
        err(line, e.message().trim().to_string())
    })?;
    let in_table = file.file_name().is_some_and(|n| n == "config.toml");
    let table: &mut toml_edit::Table = if in_table {
        let item = doc
            .as_table_mut()
            .entry("permissions")
            .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()));
        item.as_table_mut()
            .ok_or_else(|| err(0, "`permissions` is not a table".to_string()))?
    } else {
        doc.as_table_mut()
    };
    let arr = table
        .entry(list.key())
        .or_insert_with(|| toml_edit::value(toml_edit::Array::new()))
        .as_array_mut()
        .ok_or_else(|| err(0, format!("`{}` is not a list", list.key())))?;
    let mut added = 0;
    for rule in rules {
        let rule = rule.trim();
        if arr.iter().any(|v| v.as_str() == Some(rule)) {
            continue;
        }
        arr.push(rule);
        added += 1;
    }
    if added == 0 {
        return Ok(0);
    }
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| err(0, format!("cannot create {}: {e}", dir.display())))?;
    }
    let tmp = file.with_extension("toml.tmp");
    std::fs::write(&tmp, doc.to_string())
        .and_then(|()| std::fs::rename(&tmp, file))
        .map_err(|e| err(0, format!("cannot write it: {e}")))?;
    Ok(added)
}
