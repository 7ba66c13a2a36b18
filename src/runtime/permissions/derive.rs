//! The rules proposed for an "always" answer and writing a rule into a rule file.

use std::path::Path;

use serde_json::Value;

use super::files::{line_of, read_optional, user_home};
use super::pattern;
use super::rule::parse_rule;
use super::shell::{self, Part};
use super::types::{List, PATH_TOOLS, RulesError};

/// The rule proposed when the user answers "always" to a call: the first of
/// [`derive_rules`].
pub fn derive_rule(tool: &str, args: &Value, workspace: &Path) -> String {
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
///   kept (`python3 test_stats.py`, `rm -rf build`) the rule is the exact command, never
///   `python3 *`. A command with nothing after the kept words is exact (`git status`).
/// - File tools: the folder of the path, relative to the workspace, with `/**`
///   (`src/a/b.rs` → `edit_file(src/a/**)`); a file at the root is named exactly
///   (`edit_file(Cargo.toml)`); a path outside the workspace keeps its absolute folder.
/// - Other tools (`update_plan`, MCP tools): the tool name.
pub fn derive_rules(tool: &str, args: &Value, workspace: &Path) -> Vec<String> {
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
    if PATH_TOOLS.contains(&tool) {
        let path = get("path").unwrap_or(".");
        let abs = pattern::absolute(workspace, path, None);
        let shown = match abs.strip_prefix(workspace) {
            Ok(rel) => rel.to_path_buf(),
            Err(_) => abs.clone(),
        };
        let is_dir = matches!(tool, "list_dir" | "grep") && !abs.is_file();
        let glob = if is_dir {
            if shown.as_os_str().is_empty() {
                "**".to_string()
            } else {
                format!("{}/**", shown.display())
            }
        } else {
            match shown.parent().filter(|p| !p.as_os_str().is_empty()) {
                Some(dir) => format!("{}/**", dir.display()),
                // A root file: exactly that file (with a `/` so it stays anchored).
                None if abs.starts_with(workspace) => format!("./{}", shown.display()),
                None => shown.display().to_string(),
            }
        };
        return vec![format!("{tool}({glob})")];
    }
    vec![tool.to_string()]
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
    let spaced = |ws: &[String]| ws.iter().any(|w| w.chars().any(char::is_whitespace));
    if keep >= words.len() || (keep == 1 && !spaced(words)) {
        return words.join(" ");
    }
    format!("{} *", words[..keep].join(" "))
}

/// Writes `rule` into the `list` of a rule file, keeping everything else in it (comments,
/// other tables). `file` named `config.toml` gets it under `[permissions]`; any other file
/// (`.neocode/permissions.toml`) at its top level. The folder is created when missing; a
/// rule already in the list is not added twice. Returns whether the file changed.
pub fn append_rule(file: &Path, list: List, rule: &str) -> Result<bool, RulesError> {
    let err = |line: usize, message: String| RulesError {
        file: file.to_path_buf(),
        line,
        message,
    };
    let root = file.parent().unwrap_or(Path::new("."));
    parse_rule(rule, root, user_home().as_deref()).map_err(|m| err(0, m))?;
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
    let rule = rule.trim();
    if arr.iter().any(|v| v.as_str() == Some(rule)) {
        return Ok(false);
    }
    arr.push(rule);
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| err(0, format!("cannot create {}: {e}", dir.display())))?;
    }
    let tmp = file.with_extension("toml.tmp");
    std::fs::write(&tmp, doc.to_string())
        .and_then(|()| std::fs::rename(&tmp, file))
        .map_err(|e| err(0, format!("cannot write it: {e}")))?;
    Ok(true)
}
