use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use super::import::map_matcher;
use super::run::OUTPUT_KEEP;
use super::spec::*;
use super::*;

fn hooks_with(json: &str) -> (tempfile::TempDir, Hooks) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join(".neocode")).unwrap();
    std::fs::write(ws.join(".neocode/hooks.json"), json).unwrap();
    let hooks = Hooks::load(&dir.path().join("home"), &ws).unwrap();
    (dir, hooks)
}

fn pre_tool(ws: &Path, tool: &str) -> HookPayload {
    HookPayload {
        tool_name: Some(tool.to_string()),
        tool_input: Some(json!({"path": "src/a.rs"})),
        ..HookPayload::new("s1", ws)
    }
}

fn one(event: &str, matcher: &str, command: &str, timeout: f64) -> String {
    json!({"hooks": {event: [{"matcher": matcher, "hooks": [{"type": "command", "command": command, "timeout": timeout}]}]}}).to_string()
}

#[test]
fn matchers_are_anchored_regexes_and_star_or_empty_match_all() {
    let m = Matcher::new("edit_file|write_file").unwrap();
    assert!(m.matches("edit_file") && m.matches("write_file"));
    assert!(!m.matches("read_file") && !m.matches("edit_file2"));
    assert!(Matcher::new("*").unwrap().matches("anything"));
    assert!(Matcher::new("").unwrap().matches("anything"));
    assert!(Matcher::new("mcp__.*").unwrap().matches("mcp__gh__x"));
    assert!(Matcher::new("(").is_err());
}

#[test]
fn a_hook_gets_the_payload_on_stdin_in_the_workspace() {
    let (dir, hooks) = hooks_with(&one(
        "PreToolUse",
        "edit_file",
        "cat > seen.json; pwd > cwd.txt; echo \"$CLAUDE_PROJECT_DIR\" > env.txt",
        10.0,
    ));
    let ws = dir.path().join("ws");
    // Not matched: nothing runs.
    let o = hooks.run_hooks(HookEvent::PreToolUse, &pre_tool(&ws, "read_file"));
    assert!(o.runs.is_empty());
    let o = hooks.run_hooks(HookEvent::PreToolUse, &pre_tool(&ws, "edit_file"));
    assert_eq!(o.runs.len(), 1);
    assert_eq!(o.runs[0].exit_code, Some(0));
    assert!(o.block.is_none() && o.errors.is_empty(), "{o:?}");
    let seen: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(ws.join("seen.json")).unwrap()).unwrap();
    assert_eq!(seen["hook_event_name"], "PreToolUse");
    assert_eq!(seen["session_id"], "s1");
    assert_eq!(seen["tool_name"], "edit_file");
    assert_eq!(seen["tool_input"]["path"], "src/a.rs");
    let cwd = std::fs::read_to_string(ws.join("cwd.txt")).unwrap();
    assert_eq!(
        Path::new(cwd.trim()).canonicalize().unwrap(),
        ws.canonicalize().unwrap()
    );
    let env = std::fs::read_to_string(ws.join("env.txt")).unwrap();
    assert_eq!(env.trim(), ws.display().to_string());
}

#[test]
fn exit_2_blocks_with_stderr_and_other_codes_are_errors() {
    let (dir, hooks) = hooks_with(&one(
        "PreToolUse",
        "*",
        "echo 'no edits to generated files' >&2; exit 2",
        10.0,
    ));
    let ws = dir.path().join("ws");
    let o = hooks.run_hooks(HookEvent::PreToolUse, &pre_tool(&ws, "edit_file"));
    assert_eq!(o.block.as_deref(), Some("no edits to generated files"));
    assert_eq!(
        o.permission.as_ref().map(|p| p.0),
        Some(PermissionDecision::Deny)
    );
    let (dir, hooks) = hooks_with(&one("PreToolUse", "", "echo oops >&2; exit 3", 10.0));
    let o = hooks.run_hooks(
        HookEvent::PreToolUse,
        &pre_tool(&dir.path().join("ws"), "x"),
    );
    assert!(o.block.is_none());
    assert_eq!(o.errors.len(), 1);
    assert!(
        o.errors[0].contains("exited with 3: oops"),
        "{:?}",
        o.errors
    );
    // Exit 2 cannot block a session start: it is an error for the user.
    let (dir, hooks) = hooks_with(&one("SessionStart", "", "exit 2", 10.0));
    let o = hooks.run_hooks(
        HookEvent::SessionStart,
        &HookPayload::new("s", &dir.path().join("ws")),
    );
    assert!(o.block.is_none() && o.errors.len() == 1);
}

#[test]
fn json_on_stdout_decides() {
    let allow = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"tests are safe"}}'"#;
    let (dir, hooks) = hooks_with(&one("PreToolUse", "run_command", allow, 10.0));
    let o = hooks.run_hooks(
        HookEvent::PreToolUse,
        &pre_tool(&dir.path().join("ws"), "run_command"),
    );
    assert_eq!(
        o.permission,
        Some((
            PermissionDecision::Allow,
            Some("tests are safe".to_string())
        ))
    );
    assert!(o.block.is_none());
    let deny = r#"echo '{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"not on main"}}'"#;
    let (dir, hooks) = hooks_with(&one("PreToolUse", "", deny, 10.0));
    let o = hooks.run_hooks(
        HookEvent::PreToolUse,
        &pre_tool(&dir.path().join("ws"), "x"),
    );
    assert_eq!(
        o.permission.as_ref().map(|p| p.0),
        Some(PermissionDecision::Deny)
    );
    assert_eq!(o.block.as_deref(), Some("not on main"));
    let ctx = r#"echo '{"decision":"block","reason":"no secrets in prompts","hookSpecificOutput":{"additionalContext":"branch: main"}}'"#;
    let (dir, hooks) = hooks_with(&one("UserPromptSubmit", "", ctx, 10.0));
    let o = hooks.run_hooks(
        HookEvent::UserPromptSubmit,
        &HookPayload::new("s", &dir.path().join("ws")),
    );
    assert_eq!(o.block.as_deref(), Some("no secrets in prompts"));
    assert_eq!(o.additional_context, vec!["branch: main".to_string()]);
    // Plain stdout of a prompt hook is context.
    let (dir, hooks) = hooks_with(&one(
        "SessionStart",
        "startup",
        "echo today is Tuesday",
        10.0,
    ));
    let mut p = HookPayload::new("s", &dir.path().join("ws"));
    p.source = Some("startup".into());
    let o = hooks.run_hooks(HookEvent::SessionStart, &p);
    assert_eq!(o.additional_context, vec!["today is Tuesday".to_string()]);
    p.source = Some("resume".into());
    assert!(hooks.run_hooks(HookEvent::SessionStart, &p).runs.is_empty());
}

#[test]
fn a_hung_hook_is_killed_at_its_timeout_with_its_children() {
    let (dir, hooks) = hooks_with(&one("Stop", "", "sleep 30 & sleep 30; echo never", 0.3));
    let t = Instant::now();
    let o = hooks.run_hooks(
        HookEvent::Stop,
        &HookPayload::new("s", &dir.path().join("ws")),
    );
    let took = t.elapsed();
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(took >= Duration::from_millis(300), "took {took:?}");
    assert!(o.runs[0].timed_out);
    assert!(o.errors[0].contains("killed after"), "{:?}", o.errors);
}

#[test]
fn flooding_output_is_capped_and_drained() {
    let (dir, hooks) = hooks_with(&one(
        "PostToolUse",
        "",
        "head -c 3000000 /dev/zero | tr '\\0' x; echo done >&2",
        20.0,
    ));
    let o = hooks.run_hooks(
        HookEvent::PostToolUse,
        &pre_tool(&dir.path().join("ws"), "grep"),
    );
    let r = &o.runs[0];
    assert_eq!(r.exit_code, Some(0));
    assert_eq!(r.stdout.len(), OUTPUT_KEEP);
    assert!(r.output_cut);
    assert_eq!(r.stderr.trim(), "done");
}

#[test]
fn malformed_hooks_files_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join(".neocode")).unwrap();
    let f = ws.join(".neocode/hooks.json");
    for (src, line, needle) in [
        ("{\"hooks\": {\n  \"PreToolUze\": []\n}}", 2, "PreToolUze"),
        (
            "{\"hooks\": {\"Stop\": [\n{\"hooks\": [{\"type\": \"prompt\", \"command\": \"x\"}]}\n]}}",
            2,
            "prompt",
        ),
        (
            "{\"hooks\": {\"PreToolUse\": [\n{\"matcher\": \"(\", \"hooks\": []}]}}",
            2,
            "regular expression",
        ),
        (
            "{\"hooks\": {\n\"Stop\": [\n{\"hooks\": [{\"type\": \"command\"}]}]}}",
            3,
            "command",
        ),
        ("{\n\"hooks\": {\n", 3, "EOF"),
    ] {
        std::fs::write(&f, src).unwrap();
        let e = Hooks::load(&dir.path().join("home"), &ws).unwrap_err();
        assert_eq!(e.file, f);
        assert_eq!(e.line, line, "{src}: {e}");
        assert!(e.message.contains(needle), "{src}: {e}");
    }
}

#[test]
fn claude_code_matchers_map_to_neocode_tools() {
    assert_eq!(
        map_matcher("Edit|MultiEdit|Write").0,
        "edit_file|write_file"
    );
    assert_eq!(map_matcher("Bash").0, "run_command");
    assert_eq!(
        map_matcher("Glob|LS|Grep|Read").0,
        "list_dir|grep|read_file"
    );
    assert_eq!(map_matcher("*").0, "*");
    let (m, unknown) = map_matcher("Notebook.*|Edit");
    assert_eq!(m, "Notebook.*|edit_file");
    assert_eq!(unknown, vec!["Notebook".to_string()]);
    assert_eq!(map_matcher("mcp__github__.*").0, "mcp__github__.*");
}

/// A hook marked `"payload": "claude-code"` is sent Claude Code's names and matched by them
/// too (a hand-written `Bash` matcher); the others keep neocode's.
#[test]
fn a_claude_code_hook_is_sent_and_matched_by_claude_codes_names() {
    let file = json!({"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "cat > cc.json", "payload": "claude-code"}]},
        {"matcher": "run_command", "hooks": [{"type": "command", "command": "cat > nc.json"}]}
    ]}});
    let (dir, hooks) = hooks_with(&file.to_string());
    let ws = dir.path().join("ws");
    let p = HookPayload {
        tool_name: Some("run_command".into()),
        tool_input: Some(json!({"command": "ruff check ."})),
        ..HookPayload::new("s1", &ws)
    };
    let o = hooks.run_hooks(HookEvent::PreToolUse, &p);
    assert_eq!(o.runs.len(), 2, "{:?}", o.errors);
    let read = |f: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(ws.join(f)).unwrap()).unwrap()
    };
    assert_eq!(read("cc.json")["tool_name"], "Bash");
    assert_eq!(read("cc.json")["tool_input"]["command"], "ruff check .");
    assert_eq!(read("nc.json")["tool_name"], "run_command");
    assert!(
        hooks.commands()[0].claude_code && !hooks.commands()[1].claude_code,
        "the payload field is read"
    );
    let bad = json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "payload": "codex"}]}]}});
    std::fs::write(ws.join(".neocode/hooks.json"), bad.to_string()).unwrap();
    assert!(Hooks::load(&dir.path().join("home"), &ws).is_err());
}
