//! Permission rules and hooks in real turns (issue 27): `neocode run` without a terminal
//! against the scripted server; what the model was told is read from its next request.

use crate::support::text::has;
use std::process::Output;
use std::time::{Duration, Instant};

use crate::support::Succeeds;
use crate::support::agent::Env;
use crate::support::stderr;
use crate::support::tool_text;

use neocode::testkit::scripted::{Reply, ScriptedServer};
use serde_json::Value;

const KEY: &str = "sk-rules-test-KEY-5511";
const NO_SANDBOX: &str = "[sandbox]\nmode = \"off\"\n";

fn run(env: &Env, srv: &ScriptedServer, args: &[&str]) -> Output {
    env.cmd(Some(srv), args).output().unwrap()
}

fn json_lines(o: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The `tool_result` event of `call_id` in `run --json` output.
fn result_of<'a>(lines: &'a [Value], call_id: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["type"] == "tool_result" && l["call_id"] == call_id)
        .unwrap_or_else(|| panic!("no tool_result for {call_id}"))
}

/// Writes a file of the workspace; its settings are the user's own here, so the workspace
/// is trusted as it then is (`workspace_trust.rs` tests what an untrusted one does).
fn write(env: &Env, rel: &str, text: &str) -> std::path::PathBuf {
    let p = env.workdir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
    env.trust_workspace();
    p
}

/// A workspace (no sandbox) whose `.neocode/permissions.toml` holds `rules`; that file.
fn with_rules(rules: &str) -> (Env, std::path::PathBuf) {
    let env = Env::new(KEY, NO_SANDBOX);
    let file = write(&env, ".neocode/permissions.toml", rules);
    (env, file)
}

/// A workspace (no sandbox) whose `.neocode/hooks.json` holds `hooks`.
fn with_hooks(hooks: Value) -> Env {
    let env = Env::new(KEY, NO_SANDBOX);
    hooks_file(&env, hooks);
    env
}

/// A log the hooks appended their input to (one JSON line a run): its text and its runs.
fn hook_log(env: &Env, rel: &str) -> (String, Vec<Value>) {
    let text = std::fs::read_to_string(env.workdir.join(rel)).unwrap();
    let runs = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (text, runs)
}

fn hooks_file(env: &Env, hooks: Value) {
    write(
        env,
        ".neocode/hooks.json",
        &serde_json::json!({ "hooks": hooks }).to_string(),
    );
}

#[test]
fn rules_allow_deny_and_ask_in_a_run_without_a_terminal() {
    let (env, rules) = with_rules(
        "allow = [\"run_command(echo *)\", \"run_command(touch *)\", \"read_file(**)\"]\n\
         deny = [\"run_command(touch blocked*)\", \"read_file(.env)\"]\n",
    );
    write(&env, ".env", "SECRET=1\n");
    let cmd = |c: &str| format!(r#"{{"command":"{c}"}}"#);
    let (c1, c2, c3) = (
        cmd("echo hello"),
        cmd("echo a && touch mixed.txt && curl -s x"),
        cmd("touch blocked.txt"),
    );
    let srv = ScriptedServer::start(vec![
        Reply::tool_calls(&[
            ("c1", "run_command", c1.as_str()),
            ("c2", "run_command", c2.as_str()),
            ("c3", "run_command", c3.as_str()),
            ("c4", "read_file", r#"{"path":".env"}"#),
            ("c5", "grep", r#"{"pattern":"SECRET","path":"."}"#),
            ("c6", "list_dir", r#"{"path":"."}"#),
        ]),
        Reply::text("done"),
    ])
    .unwrap();
    let o = run(&env, &srv, &["run", "--json", "go"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let next = srv.requests()[1].json();
    // Allowed: ran without asking (no terminal to ask on), the rule recorded.
    assert!(tool_text(&next, "c1").contains("hello"), "{next:#}");
    let lines = json_lines(&o);
    let p = &result_of(&lines, "c1")["permission"];
    assert_eq!(p["decision"], "allow");
    assert_eq!(p["by"], "rule");
    assert_eq!(p["rule"], "run_command(echo *)");
    assert_eq!(p["file"], rules.display().to_string());
    assert_eq!(p["line"], 1);
    // A compound with one part no rule allows asks, and so is denied here: nothing ran.
    assert!(
        tool_text(&next, "c2").contains("needs approval"),
        "{next:#}"
    );
    assert!(!env.workdir.join("mixed.txt").exists());
    // Deny beats allow.
    assert!(
        tool_text(&next, "c3")
            .contains("Denied by the permission rule `run_command(touch blocked*)`"),
        "{next:#}"
    );
    assert!(!env.workdir.join("blocked.txt").exists());
    let p = &result_of(&lines, "c3")["permission"];
    assert_eq!(
        (p["decision"].as_str(), p["line"].as_u64()),
        (Some("deny"), Some(2))
    );
    // A read denial.
    let t = tool_text(&next, "c4");
    has(&t, "Denied by the permission rule `read_file(.env)`");
    assert!(!t.contains("SECRET"), "{t}");
    // grep and list_dir walk past what a read denial covers.
    let t = tool_text(&next, "c5");
    assert!(!t.contains("SECRET=1"), "{t}");
    has(
        &t,
        "1 file(s) not searched: a permission rule denies reading them",
    );
    let t = tool_text(&next, "c6");
    assert!(t.contains(".neocode/") && !t.contains(".env"), "{t}");
    // `show` says which rule decided.
    let id = lines[0]["session_id"].as_str().unwrap();
    let shown = env.cmd(None, &["show", id]).output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    let want = format!(
        "denied by rule run_command(touch blocked*) ({}:2)",
        rules.display()
    );
    assert!(shown.contains(&want), "{shown}");
    let shown = env.cmd(None, &["show", id, "--json"]).output().unwrap();
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    let denied = shown["last_messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["permission"]["rule"] == "run_command(touch blocked*)");
    assert!(denied.is_some(), "{shown:#}");
}

#[test]
fn a_pre_tool_use_exit_2_denies_an_edit_and_the_model_reads_why() {
    let env = with_hooks(
        serde_json::json!({"PreToolUse": [{"matcher": "edit_file|write_file", "hooks": [
            {"type": "command", "command": "echo 'generated files are read-only' >&2; exit 2"}]}]}),
    );
    let srv = ScriptedServer::start(vec![
        Reply::tool_calls(&[("w1", "write_file", r#"{"path":"gen.rs","content":"x"}"#)]),
        Reply::text("ok"),
    ])
    .unwrap();
    let o = run(
        &env,
        &srv,
        &["run", "--approve", "never-ask", "--json", "write it"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!env.workdir.join("gen.rs").exists());
    let t = tool_text(&srv.requests()[1].json(), "w1");
    assert_eq!(
        t,
        "Denied by a PreToolUse hook: generated files are read-only"
    );
    let lines = json_lines(&o);
    assert_eq!(result_of(&lines, "w1")["permission"]["by"], "hook");
}

#[test]
fn a_hook_permission_decision_allow_runs_a_command_unasked() {
    let env = Env::new(KEY, NO_SANDBOX);
    let out = r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": "touch is fine"}}"#;
    hooks_file(
        &env,
        serde_json::json!({"PreToolUse": [{"matcher": "run_command", "hooks": [
            {"type": "command", "command": format!("echo '{out}'")}]}]}),
    );
    let srv = ScriptedServer::start(vec![
        Reply::tool_calls(&[("r1", "run_command", r#"{"command":"touch ran.txt"}"#)]),
        Reply::text("ok"),
    ])
    .unwrap();
    // The default policy asks for commands and there is no terminal: only the hook lets it.
    let o = run(&env, &srv, &["run", "go"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(env.workdir.join("ran.txt").exists(), "{}", stderr(&o));
    has(&stderr(&o), "allowed by hook: touch is fine");
}

#[test]
fn a_hung_hook_is_killed_at_its_timeout_and_the_turn_goes_on() {
    let env = with_hooks(
        serde_json::json!({"PreToolUse": [{"matcher": "*", "hooks": [
            {"type": "command", "command": "sleep 60", "timeout": 0.5}]}]}),
    );
    let srv = ScriptedServer::start(vec![
        Reply::tool_calls(&[("l1", "list_dir", r#"{"path":"."}"#)]),
        Reply::text("listed"),
    ])
    .unwrap();
    let t = Instant::now();
    let o = run(&env, &srv, &["run", "list"]);
    assert!(
        t.elapsed() < Duration::from_secs(15),
        "took {:?}",
        t.elapsed()
    );
    assert!(o.status.success(), "{}", stderr(&o));
    has(&stderr(&o), "PreToolUse hook `sleep 60` was killed after");
    assert!(!tool_text(&srv.requests()[1].json(), "l1").contains("Denied"));
}

#[test]
fn each_hook_event_fires_once_with_the_documented_stdin_and_is_recorded() {
    let env = Env::new(KEY, NO_SANDBOX);
    let log = "cat >> hooks.log; echo >> hooks.log";
    let h = |matcher: &str, cmd: &str| serde_json::json!([{"matcher": matcher, "hooks": [{"type": "command", "command": cmd}]}]);
    hooks_file(
        &env,
        serde_json::json!({
            "SessionStart": h("startup", &format!("{log}; echo 'the build is make'")),
            "UserPromptSubmit": h("", &format!("{log}; echo 'remember: tabs, not spaces'")),
            "PreToolUse": h("list_dir", log),
            "PostToolUse": h("list_dir", log),
            "Notification": h("", log),
            "Stop": h("", log),
        }),
    );
    let srv = ScriptedServer::start(vec![
        Reply::tool_calls(&[
            ("l1", "list_dir", r#"{"path":"."}"#),
            ("r1", "run_command", r#"{"command":"touch x"}"#),
        ]),
        Reply::text("done"),
    ])
    .unwrap();
    let o = run(&env, &srv, &["run", "--json", "look around"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let session = json_lines(&o)[0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, events) = hook_log(&env, "hooks.log");
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["hook_event_name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "Notification",
            "Stop",
            "Notification"
        ]
    );
    let ws = env.workdir.display().to_string();
    for e in &events {
        assert_eq!(e["session_id"], session.as_str());
        assert_eq!(e["cwd"], ws.as_str());
    }
    assert_eq!(events[0]["source"], "startup");
    assert_eq!(events[1]["prompt"], "look around");
    assert_eq!(events[2]["tool_name"], "list_dir");
    assert_eq!(events[2]["tool_input"]["path"], ".");
    assert!(events[3]["tool_response"]["text"].is_string());
    assert_eq!(events[4]["notification_type"], "permission_prompt");
    assert_eq!(events[5]["stop_hook_active"], false);
    assert_eq!(events[6]["notification_type"], "idle_prompt");
    // The prompt hook's output reached the model with the prompt.
    let first = srv.requests()[0].json().to_string();
    assert!(first.contains("remember: tabs, not spaces"), "{first}");
    assert!(first.contains("the build is make"), "{first}");
    // Every run is recorded in the session (event, command, exit, duration).
    let export = env.cmd(None, &["export", &session]).output().unwrap();
    let export: Value = serde_json::from_slice(&export.stdout).unwrap();
    let export = export.to_string();
    // Each event the hooks saw (the list asserted above).
    for ev in &names {
        assert!(
            export.contains(&format!("\"event\":\"{ev}\"")),
            "{ev} not recorded"
        );
    }
    assert!(export.contains("\"duration_ms\""));
    let shown = env.cmd(None, &["show", &session]).output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    has(
        &shown,
        "hook Stop `cat >> hooks.log; echo >> hooks.log` exit 0, ",
    );
}

#[test]
fn a_user_prompt_submit_exit_2_refuses_the_prompt() {
    let env = with_hooks(serde_json::json!({"UserPromptSubmit": [{"hooks": [
            {"type": "command", "command": "grep -q password && { echo 'no secrets in prompts' >&2; exit 2; }; exit 0"}]}]}));
    let srv = ScriptedServer::start(vec![Reply::text("never")]).unwrap();
    let o = run(&env, &srv, &["run", "my password is hunter2"]);
    assert!(!o.status.success());
    has(&stderr(&o), "no secrets in prompts");
    has(&stderr(&o), "(hooks run: `grep -q");
    assert!(srv.requests().is_empty(), "the model saw the prompt");
    // Nothing of the prompt was stored.
    let text = crate::support::stdout(&env.cmd(None, &["export", "last"]).succeeds());
    assert!(text.contains("prompt_refused"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
}

#[test]
fn pre_compact_fires_once_before_an_automatic_compaction() {
    let env = Env::new(KEY, "context_window = 1000\ncompact_at = 0.5\n");
    hooks_file(
        &env,
        serde_json::json!({"PreCompact": [{"matcher": "auto", "hooks": [
            {"type": "command", "command": "cat >> compact.log; echo >> compact.log"}]}]}),
    );
    let srv = ScriptedServer::start(vec![
        neocode::testkit::scripted::Stream::text("big answer")
            .usage(900, 10)
            .reply(),
        neocode::testkit::scripted::Stream::text("short summary")
            .usage(50, 5)
            .reply(),
        Reply::text("answer after compaction"),
    ])
    .unwrap();
    let o = run(&env, &srv, &["run", "first"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        !env.workdir.join("compact.log").exists(),
        "no compaction yet"
    );
    let o = run(&env, &srv, &["run", "--continue", "second"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (log, runs) = hook_log(&env, "compact.log");
    assert_eq!(runs.len(), 1, "{log}");
    assert_eq!(runs[0]["hook_event_name"], "PreCompact");
    assert_eq!(runs[0]["trigger"], "auto");
}

#[test]
fn an_ask_rule_asks_even_under_never_ask_and_says_no_flag_lifts_it() {
    let (env, _) = with_rules("ask = [\"run_command(touch *)\"]\n");
    let srv = ScriptedServer::start(vec![
        Reply::tool_calls(&[("t1", "run_command", r#"{"command":"touch asked.txt"}"#)]),
        Reply::text("ok"),
    ])
    .unwrap();
    let o = run(&env, &srv, &["run", "--approve", "never-ask", "go"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!env.workdir.join("asked.txt").exists());
    let err = stderr(&o);
    has(&err, "the rule `run_command(touch *)` asks (");
    assert!(err.contains("allow it with a rule"), "{err}");
    assert!(!err.contains("--approve"), "{err}");
}

#[test]
fn a_malformed_rule_file_fails_the_turn_with_its_file_and_line() {
    let (env, f) = with_rules("allow = [\n  \"run_command(ls)\",\n  \"run_comand(rm *)\",\n]\n");
    let srv = ScriptedServer::start(vec![Reply::text("never")]).unwrap();
    let o = run(&env, &srv, &["run", "hello"]);
    assert!(!o.status.success());
    let err = stderr(&o);
    has(&err, &format!("{}:3: rule `run_comand(rm *)`", f.display()));
    assert!(srv.requests().is_empty());
}

#[test]
fn a_stop_hook_exit_2_makes_the_turn_go_on_once_with_its_reason() {
    let env = with_hooks(serde_json::json!({"Stop": [{"hooks": [{"type": "command",
            "command": "cat >> stop.log; echo >> stop.log; [ -e stopped ] || { touch stopped; echo 'run the tests first' >&2; exit 2; }"}]}]}));
    let srv = ScriptedServer::start(vec![
        Reply::text("done, I think"),
        Reply::text("tests pass"),
    ])
    .unwrap();
    let o = run(&env, &srv, &["run", "fix it"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(srv.requests().len(), 2);
    let second = srv.requests()[1].json().to_string();
    has(&second, "[a Stop hook asks to go on] run the tests first");
    let log = std::fs::read_to_string(env.workdir.join("stop.log")).unwrap();
    let active: Vec<Value> = log
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["stop_hook_active"].clone())
        .collect();
    assert_eq!(active, [Value::Bool(false), Value::Bool(true)]);
}
