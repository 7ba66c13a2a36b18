//! Claude Code plugins through the real binary: `neocode plugin add|list|enable|disable`,
//! a plugin's command expanded by `run` (read in the request body the scripted server on
//! 127.0.0.1 received), its agent and skill offered, and its hook run only while enabled.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::agent::Env;
use crate::support::git::git;
use crate::support::{stderr, stdout};

use neocode::testkit::scripted::{Reply, ScriptedServer};
use serde_json::Value;

const KEY: &str = "sk-plugin-test-KEY-7a21";
const NO_SANDBOX: &str = "[sandbox]\nmode = \"off\"\n";

fn write(path: PathBuf, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A plugin folder laid out as Claude Code's plugin docs show it: a manifest, a command with
/// front matter, an agent, a skill, a `hooks/hooks.json` with a PreToolUse hook (a script of
/// the plugin's, named through `${CLAUDE_PLUGIN_ROOT}`, that appends to a marker file in the
/// project) and a `.mcp.json`.
fn plugin_folder(dir: &Path) {
    write(
        dir.join(".claude-plugin/plugin.json"),
        r#"{
  "name": "review-kit",
  "version": "1.2.0",
  "description": "Code review tools",
  "author": {"name": "Ann Example", "email": "ann@example.com"},
  "homepage": "https://example.com/review-kit",
  "license": "MIT",
  "keywords": ["review"]
}"#,
    );
    write(
        dir.join("commands/review.md"),
        "---\ndescription: Review a folder\nargument-hint: [path] [focus]\nallowed-tools: Read, Grep\n---\nReview the code in $1, looking at $2 first.\n",
    );
    write(
        dir.join("agents/security-reviewer.md"),
        "---\ndescription: Looks for security problems in a change\ncapabilities: [\"injection\", \"secrets\"]\n---\n# Security reviewer\n\nYou review changes for security problems.\n",
    );
    write(
        dir.join("skills/changelog/SKILL.md"),
        "---\nname: changelog\ndescription: Writes a changelog entry for a change\n---\nWrite the entry in CHANGELOG.md.\n",
    );
    write(
        dir.join("hooks/hooks.json"),
        r#"{
  "description": "Marks every read",
  "hooks": {
    "PreToolUse": [
      {"matcher": "Read", "hooks": [{"type": "command", "command": "sh ${CLAUDE_PLUGIN_ROOT}/scripts/mark.sh", "timeout": 10}]}
    ]
  }
}"#,
    );
    write(
        dir.join("scripts/mark.sh"),
        "#!/bin/sh\necho \"$CLAUDE_PLUGIN_ROOT\" >> \"$CLAUDE_PROJECT_DIR/hook-ran.txt\"\n",
    );
    write(
        dir.join(".mcp.json"),
        r#"{"mcpServers": {"notes": {"command": "${CLAUDE_PLUGIN_ROOT}/servers/notes", "args": ["--stdio"], "env": {"NOTES_DIR": "${CLAUDE_PLUGIN_ROOT}/data"}}}}"#,
    );
}

fn neocode(env: &Env, args: &[&str]) -> Output {
    env.cmd(None, args).output().unwrap()
}

/// How many times the plugin's hook ran in `env`'s workspace.
fn hook_runs(env: &Env) -> usize {
    std::fs::read_to_string(env.workdir.join("hook-ran.txt"))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// One `run` whose model reads a file and then answers.
fn run_reading(env: &Env, prompt: &str) -> (Output, ScriptedServer) {
    let srv = ScriptedServer::start(vec![
        Reply::tool_calls(&[("r1", "read_file", r#"{"path":"notes.txt"}"#)]),
        Reply::text("Read it."),
    ])
    .unwrap();
    let o = env.cmd(Some(&srv), &["run", prompt]).output().unwrap();
    (o, srv)
}

fn user_text(body: &Value) -> String {
    let m = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap();
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        other => panic!("content {other}"),
    }
}

#[test]
fn a_plugin_added_from_a_folder_is_used_only_once_enabled() {
    let env = Env::new(KEY, NO_SANDBOX);
    write(env.workdir.join("notes.txt"), "some notes\n");
    let src = env.tmp.path().join("review-kit");
    plugin_folder(&src);

    // Without a terminal and without --yes: installed, disabled, and told how to enable it.
    let o = neocode(&env, &["plugin", "add", src.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("review-kit 1.2.0: Code review tools (by Ann Example)"),
        "{out}"
    );
    assert!(out.contains("commands: /review-kit:review"), "{out}");
    assert!(
        out.contains("agents: review-kit:security-reviewer"),
        "{out}"
    );
    assert!(out.contains("skills: changelog"), "{out}");
    let installed = env.home.join("plugins/review-kit");
    assert!(
        out.contains(&format!(
            "hook PreToolUse [Read]: sh {}/scripts/mark.sh (runs as you, outside the sandbox)",
            installed.display()
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "MCP server review-kit_notes: {}/servers/notes --stdio",
            installed.display()
        )),
        "{out}"
    );
    assert!(out.contains("`neocode plugin enable review-kit`"), "{out}");

    // Disabled: its hook does not run and its command is not there.
    let (o, _srv) = run_reading(&env, "read notes.txt");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(hook_runs(&env), 0);
    let o = env
        .cmd(None, &["run", "/review-kit:review src/"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));

    let o = neocode(&env, &["plugin", "enable", "review-kit"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = neocode(&env, &["plugin", "list", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let list: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let p = &list[0];
    assert_eq!(p["name"], "review-kit");
    assert_eq!(p["version"], "1.2.0");
    assert_eq!(p["enabled"], true);
    assert_eq!(p["source"], src.display().to_string());
    assert_eq!(p["commands"], serde_json::json!(["/review-kit:review"]));
    assert_eq!(
        p["agents"],
        serde_json::json!(["review-kit:security-reviewer"])
    );
    assert_eq!(p["skills"], serde_json::json!(["changelog"]));
    assert_eq!(p["hooks"][0]["event"], "PreToolUse");
    assert_eq!(p["mcp_servers"][0]["name"], "review-kit_notes");
    assert_eq!(
        p["mcp_servers"][0]["command"],
        format!("{}/servers/notes", installed.display())
    );

    // Enabled: the command expands in `run`, the agent and the skill are offered, the hook runs.
    let (o, srv) = run_reading(&env, "/review-kit:review src/ errors");
    assert!(o.status.success(), "{}", stderr(&o));
    let first = srv.requests()[0].json();
    assert_eq!(
        user_text(&first),
        "Review the code in src/, looking at errors first."
    );
    let body = first.to_string();
    assert!(body.contains("review-kit:security-reviewer"), "{body}");
    assert!(body.contains("Writes a changelog entry"), "{body}");
    assert_eq!(hook_runs(&env), 1);
    // The hook's script reads the plugin's folder from its environment, as under Claude Code.
    assert_eq!(
        std::fs::read_to_string(env.workdir.join("hook-ran.txt")).unwrap(),
        format!("{}\n", installed.display())
    );
    let o = neocode(&env, &["agents", "list"]);
    assert!(
        stdout(&o).contains("review-kit:security-reviewer"),
        "{}",
        stdout(&o)
    );

    // Disabled again: the hook no longer runs.
    let o = neocode(&env, &["plugin", "disable", "review-kit"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (o, _srv) = run_reading(&env, "read notes.txt again");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(hook_runs(&env), 1);

    let o = neocode(&env, &["plugin", "remove", "review-kit"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!installed.exists());
    assert!(stdout(&neocode(&env, &["plugin", "list"])).contains("no plugins installed"));
}

#[test]
fn a_plugin_from_a_git_url_is_cloned_and_enabled_with_yes() {
    let env = Env::new(KEY, NO_SANDBOX);
    let repo = env.tmp.path().join("repo");
    plugin_folder(&repo);
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "plugin"]);
    let url = format!("file://{}", repo.display());
    let o = neocode(&env, &["plugin", "add", &url, "--yes"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("enabled plugin review-kit"),
        "{}",
        stdout(&o)
    );
    let installed = env.home.join("plugins/review-kit");
    assert!(installed.join("commands/review.md").is_file());
    assert!(!installed.join(".git").exists());
    let o = neocode(&env, &["plugin", "list", "--json"]);
    let list: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(list[0]["source"], url);
    assert_eq!(list[0]["enabled"], true);
    // Added twice: refused, the first one kept.
    let o = neocode(&env, &["plugin", "add", &url, "--yes"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("already installed"), "{}", stderr(&o));
    assert!(installed.join("commands/review.md").is_file());
    // A URL git cannot clone: git's own reason, on one line.
    let missing = format!("file://{}", env.tmp.path().join("missing").display());
    let o = neocode(&env, &["plugin", "add", &missing, "--yes"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("does not appear to be a git repository"),
        "{err}"
    );
}

#[test]
fn a_manifest_with_bad_json_is_one_line_and_nothing_is_installed() {
    let env = Env::new(KEY, NO_SANDBOX);
    let src = env.tmp.path().join("broken");
    plugin_folder(&src);
    write(
        src.join(".claude-plugin/plugin.json"),
        "{\"name\": \"broken\",\n",
    );
    let o = neocode(&env, &["plugin", "add", src.to_str().unwrap(), "--yes"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!(
            "{}: not valid JSON",
            src.join(".claude-plugin/plugin.json").display()
        )),
        "{err}"
    );
    assert!(!env.home.join("plugins.toml").exists());
    let left: Vec<_> = std::fs::read_dir(env.home.join("plugins"))
        .map(|d| d.filter_map(Result::ok).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn on_a_terminal_add_asks_and_yes_enables() {
    use portable_pty::CommandBuilder;
    let env = Env::new(KEY, NO_SANDBOX);
    let src = env.tmp.path().join("review-kit");
    plugin_folder(&src);
    let tty = |answer: &str| {
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_neocode"));
        cmd.env("NEOCODE_HOME", env.home.as_path());
        cmd.arg("--workdir");
        cmd.arg(env.workdir.as_path());
        cmd.args(["plugin", "add", src.to_str().unwrap()]);
        crate::support::pty::run_typed(cmd, answer, 40, 200)
    };
    let (status, out) = tty("n\n");
    assert!(status.success(), "{out}");
    assert!(out.contains("enable? [y/N]"), "{out}");
    assert!(out.contains("left disabled"), "{out}");
    let o = neocode(&env, &["plugin", "list", "--json"]);
    let list: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(list[0]["enabled"], false);
    neocode(&env, &["plugin", "remove", "review-kit"]);
    let (status, out) = tty("y\n");
    assert!(status.success(), "{out}");
    assert!(out.contains("enabled plugin review-kit"), "{out}");
}
