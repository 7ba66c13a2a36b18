//! `neocode hooks import`: a Claude Code settings file's hooks in neocode's file.

use std::path::{Path, PathBuf};

use regex::Regex;
use serde_json::{Map, Value, json};

use super::HookEvent;

/// Claude Code's tool names and neocode's.
const TOOL_MAP: &[(&str, &str)] = &[
    ("Bash", "run_command"),
    ("MultiEdit", "edit_file"),
    ("Edit", "edit_file"),
    ("Write", "write_file"),
    ("Read", "read_file"),
    ("Grep", "grep"),
    ("Glob", "list_dir"),
    ("LS", "list_dir"),
];

/// What an import did.
#[derive(Debug, Clone, Default)]
pub struct ImportReport {
    /// The hooks file JSON (`{"hooks": …}`).
    pub hooks: Value,
    /// Hook commands imported.
    pub imported: usize,
    /// Lines saying what was mapped or skipped, for the user.
    pub notes: Vec<String>,
}

/// Claude Code tool names inside a matcher (a regular expression) replaced by neocode's:
/// `Edit|MultiEdit|Write` → `edit_file|write_file`. Returns the matcher and the names left
/// that neocode has no tool for (`WebFetch`, `NotebookEdit`, …).
pub fn map_matcher(m: &str) -> (String, Vec<String>) {
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

/// Reads Claude Code settings files and converts their hooks. A file that does not exist
/// is noted and skipped; one that is not JSON is an error naming it and the line.
pub fn import_claude_settings(files: &[PathBuf]) -> Result<ImportReport, String> {
    let mut report = ImportReport::default();
    let mut table: Map<String, Value> = Map::new();
    for file in files {
        let src = match std::fs::read_to_string(file) {
            Ok(s) => s,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                report
                    .notes
                    .push(format!("{}: not found, skipped", file.display()));
                continue;
            }
            Err(e) => return Err(format!("{}: cannot read it: {e}", file.display())),
        };
        let v: Value = serde_json::from_str(&src)
            .map_err(|e| format!("{}:{}: {}", file.display(), e.line(), e))?;
        let Some(hooks) = v.get("hooks").and_then(Value::as_object) else {
            report.notes.push(format!("{}: no hooks", file.display()));
            continue;
        };
        for (event_name, groups) in hooks {
            if HookEvent::parse(event_name).is_none() {
                report.notes.push(format!(
                    "{}: {event_name} skipped (neocode has no such event)",
                    file.display()
                ));
                continue;
            }
            let Some(groups) = groups.as_array() else {
                return Err(format!(
                    "{}: hooks.{event_name} is not a list",
                    file.display()
                ));
            };
            for g in groups {
                convert_group(file, event_name, g, &mut table, &mut report)?;
            }
        }
    }
    report.hooks = json!({ "hooks": Value::Object(table) });
    Ok(report)
}

fn convert_group(
    file: &Path,
    event: &str,
    g: &Value,
    table: &mut Map<String, Value>,
    report: &mut ImportReport,
) -> Result<(), String> {
    let matcher = g.get("matcher").and_then(Value::as_str).unwrap_or("");
    let (mapped, unknown) = map_matcher(matcher);
    if mapped != matcher {
        report
            .notes
            .push(format!("{event}: matcher `{matcher}` → `{mapped}`"));
    }
    if !unknown.is_empty() {
        report.notes.push(format!(
            "{event}: matcher `{matcher}` names tools neocode does not have: {}",
            unknown.join(", ")
        ));
    }
    super::Matcher::new(&mapped).map_err(|e| format!("{}: {event}: {e}", file.display()))?;
    let mut kept = Vec::new();
    for h in g
        .get("hooks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let kind = h.get("type").and_then(Value::as_str).unwrap_or("");
        let Some(command) = h.get("command").and_then(Value::as_str) else {
            report.notes.push(format!(
                "{event}: a `{kind}` hook skipped (only command hooks run)"
            ));
            continue;
        };
        if kind != "command" {
            report.notes.push(format!(
                "{event}: a `{kind}` hook skipped (only command hooks run)"
            ));
            continue;
        }
        let mut out = Map::new();
        out.insert("type".into(), json!("command"));
        out.insert("command".into(), json!(command));
        if let Some(t) = h.get("timeout").and_then(Value::as_f64) {
            out.insert("timeout".into(), json!(t));
        }
        kept.push(Value::Object(out));
        report.imported += 1;
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
