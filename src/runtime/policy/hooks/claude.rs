//! Claude Code's names for neocode's tools, and what a hook that came from Claude Code is
//! sent: `tool_name: "Bash"`, `"Edit"`, … and `tool_input` with Claude Code's fields
//! (`file_path`, absolute; `command`; `old_string`; …), so a Claude Code hook (prettier on
//! `.tool_input.file_path`, ruff, a Bash guard) works as it did there.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::spec::HookPayload;

/// Claude Code's tool names and neocode's; the first name of a neocode tool is the one its
/// hooks are sent (`list_dir` is `LS`; `Glob` maps to it too).
pub(super) const TOOL_MAP: &[(&str, &str)] = &[
    ("Bash", "run_command"),
    ("Edit", "edit_file"),
    ("MultiEdit", "edit_file"),
    ("Write", "write_file"),
    ("Read", "read_file"),
    ("Grep", "grep"),
    ("LS", "list_dir"),
    ("Glob", "list_dir"),
];

/// Claude Code's name for neocode's `tool` (`run_command` → `Bash`), if it has one.
pub(crate) fn claude_name(tool: &str) -> Option<&'static str> {
    TOOL_MAP
        .iter()
        .find(|(_, ours)| *ours == tool)
        .map(|(cc, _)| *cc)
}

/// Every Claude Code name of neocode's `tool` (`edit_file`: `Edit`, `MultiEdit`).
pub(super) fn claude_names(tool: &str) -> impl Iterator<Item = &'static str> + '_ {
    TOOL_MAP
        .iter()
        .filter(move |(_, ours)| *ours == tool)
        .map(|(cc, _)| *cc)
}

/// `payload` as Claude Code sends it: the tool's Claude Code name and its input with Claude
/// Code's fields (`path` → `file_path`, made absolute against `root`; `timeout_secs` →
/// `timeout` in milliseconds; `case_insensitive` → `-i`). Tools Claude Code has no name for
/// (`update_plan`, MCP tools, whose names are the same) are sent as they are.
pub(crate) fn claude_code_payload(payload: &HookPayload, root: &Path) -> HookPayload {
    let mut p = payload.clone();
    let Some(tool) = payload.tool_name.as_deref() else {
        return p;
    };
    let Some(name) = claude_name(tool) else {
        return p;
    };
    p.tool_name = Some(name.to_string());
    if let Some(Value::Object(input)) = &payload.tool_input {
        p.tool_input = Some(Value::Object(claude_input(tool, input, root)));
    }
    p
}

fn claude_input(tool: &str, input: &Map<String, Value>, root: &Path) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in input {
        match (tool, k.as_str()) {
            ("edit_file" | "write_file" | "read_file", "path") => {
                let abs = v.as_str().map(|s| absolute(root, s).display().to_string());
                out.insert(
                    "file_path".into(),
                    abs.map_or_else(|| v.clone(), Value::String),
                );
            }
            ("list_dir" | "grep", "path") => {
                let abs = v.as_str().map(|s| absolute(root, s).display().to_string());
                out.insert("path".into(), abs.map_or_else(|| v.clone(), Value::String));
            }
            ("run_command", "timeout_secs") => {
                let ms = v.as_u64().map(|s| Value::from(s.saturating_mul(1000)));
                out.insert("timeout".into(), ms.unwrap_or_else(|| v.clone()));
            }
            ("grep", "case_insensitive") => {
                out.insert("-i".into(), v.clone());
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    if tool == "list_dir" && !out.contains_key("path") {
        out.insert("path".into(), Value::String(root.display().to_string()));
    }
    out
}

/// `path` absolute against `root`, `.` and `..` removed lexically.
fn absolute(root: &Path, path: &str) -> PathBuf {
    crate::runtime::tools::path::fold(&root.join(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_claude_code_hook_gets_claude_codes_names_and_fields() {
        let root = Path::new("/ws");
        let mut p = HookPayload::new("s", root);
        p.tool_name = Some("edit_file".into());
        p.tool_input = Some(json!({"path": "src/../a.py", "old_string": "x", "new_string": "y"}));
        let c = claude_code_payload(&p, root);
        assert_eq!(c.tool_name.as_deref(), Some("Edit"));
        assert_eq!(
            c.tool_input,
            Some(json!({"file_path": "/ws/a.py", "old_string": "x", "new_string": "y"}))
        );
        p.tool_name = Some("run_command".into());
        p.tool_input = Some(json!({"command": "ruff check .", "timeout_secs": 5}));
        let c = claude_code_payload(&p, root);
        assert_eq!(c.tool_name.as_deref(), Some("Bash"));
        assert_eq!(
            c.tool_input,
            Some(json!({"command": "ruff check .", "timeout": 5000}))
        );
        p.tool_name = Some("mcp__gh__search".into());
        assert_eq!(claude_code_payload(&p, root).tool_name, p.tool_name);
        assert_eq!(claude_names("list_dir").collect::<Vec<_>>(), ["LS", "Glob"]);
    }
}
