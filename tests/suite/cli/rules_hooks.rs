//! `neocode rules check|list` and `neocode hooks list|import|run` (issue 27), through the
//! binary: what a user types and reads.

use crate::support::text::{has, starts};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::support::Env;
use crate::support::{stderr, stdout};

/// The one [`Env`] with a user home (`tmp/user`, for `~/`) and the workspace's `.neocode/`.
pub(super) struct Ws {
    pub env: Env,
}

impl Ws {
    pub(super) fn new() -> Ws {
        let env = Env::new();
        std::fs::create_dir_all(env.workdir.join(".neocode")).unwrap();
        std::fs::create_dir_all(&env.home).unwrap();
        std::fs::create_dir_all(env.tmp.path().join("user")).unwrap();
        Ws { env }
    }

    /// A workspace with one file written (see [`Ws::write`]), and that file's path.
    pub(super) fn with(rel: &str, text: &str) -> (Ws, PathBuf) {
        let w = Ws::new();
        let file = w.write(rel, text);
        (w, file)
    }

    pub(super) fn ws(&self) -> PathBuf {
        self.env.workdir.clone()
    }

    /// Writes `text` at `rel`: `ws/...` in the workspace, anything else under the temp dir.
    pub(super) fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = match rel.strip_prefix("ws/") {
            Some(r) => self.env.workdir.join(r),
            None => self.env.tmp.path().join(rel),
        };
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        // The workspace's settings are the user's own here: trusted as they now are.
        if rel.starts_with("ws/") {
            self.env.trust_workspace();
        }
        p
    }

    /// The binary with this workspace, a user home and fake keys (which hooks must not see).
    pub(super) fn command(&self) -> Command {
        let mut c = self.env.neocode();
        c.env("HOME", self.env.tmp.path().join("user"))
            .env("OPENAI_API_KEY", "sk-test-secret")
            .env("NEOCODE_API_KEY", "nc-test-secret");
        c
    }

    pub(super) fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().unwrap()
    }

    /// `neocode hooks run <event> --tool <tool> --input <input>`.
    pub(super) fn hooks_run(&self, event: &str, tool: &str, input: &str) -> Output {
        self.run(&["hooks", "run", event, "--tool", tool, "--input", input])
    }
}

const RULES: &str = r#"# shared rules
allow = ["run_command(cargo test *)", "run_command(git diff*)", "edit_file(src/**)"]
ask   = ["run_command(git push *)"]
deny  = ["run_command(rm *)", "read_file(.env)", "mcp__github__delete_repo"]
"#;

#[test]
fn rules_check_prints_the_decision_and_the_rule() {
    let w = Ws::new();
    let file = w.write("ws/.neocode/permissions.toml", RULES);
    let o = w.run(&["rules", "check", "git push origin main"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!("ask: run_command(git push *)  ({}:3)\n", file.display())
    );
    // A compound command: denied by its one denied part, each part shown.
    let o = w.run(&["rules", "check", "cargo test -p core && rm -rf target"]);
    let out = stdout(&o);
    starts(
        &out,
        &format!("deny: run_command(rm *)  ({}:4)\n", file.display()),
    );
    has(
        &out,
        "  cargo test -p core  ←  allow: run_command(cargo test *)",
    );
    let o = w.run(&["rules", "check", "curl https://example.com"]);
    assert_eq!(
        stdout(&o),
        "default: no rule: the approval policy decides\n"
    );
    let o = w.run(&["rules", "check", "eval \"$X\""]);
    starts(&stdout(&o), "ask: no rule: eval runs a string as code");
    assert!(
        stdout(&o).contains(
            "(no rule can allow it: the approval policy decides, asking unless never-ask)"
        ),
        "{}",
        stdout(&o)
    );
    let o = w.run(&["rules", "check", "config/.env", "--tool", "read_file"]);
    starts(&stdout(&o), "deny: read_file(.env)");
    let o = w.run(&["rules", "check", "config", "--tool", "grep"]);
    assert!(stdout(&o).starts_with("default:"), "{}", stdout(&o));
    let o = w.run(&["rules", "check", "x", "--tool", "Bash"]);
    assert_eq!(o.status.code(), Some(2));
    starts(&stderr(&o), "neocode: --tool Bash: not a tool name");
}

#[test]
fn a_bad_rule_file_is_an_error_with_file_and_line() {
    let (w, file) = Ws::with(
        "ws/.neocode/permissions.toml",
        "allow = [\n  \"run_command(ls)\",\n  \"run_comand(cargo test *)\",\n]\n",
    );
    let o = w.run(&["rules", "check", "ls"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    let err = stderr(&o);
    starts(
        &err,
        &format!(
            "neocode: {}:3: rule `run_comand(cargo test *)`: unknown tool",
            file.display()
        ),
    );
    // The home config's table too, and a TOML syntax error.
    w.write("ws/.neocode/permissions.toml", "");
    let cfg = w.write(
        "home/config.toml",
        "model = \"m\"\n[permissions]\ndeny = [\"rm\"\n",
    );
    let o = w.run(&["rules", "list"]);
    assert_eq!(o.status.code(), Some(2));
    starts(&stderr(&o), &format!("neocode: {}:", cfg.display()));
}

#[test]
fn rules_list_shows_every_rule_with_its_source() {
    let w = Ws::new();
    let ws_file = w.write("ws/.neocode/permissions.toml", RULES);
    let cfg = w.write(
        "home/config.toml",
        "model = \"m\"\n\n[permissions]\ndeny = [\"read_file(~/.ssh/**)\"]\n",
    );
    let o = w.run(&["rules", "list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 8, "{out}");
    assert_eq!(
        lines[0],
        format!("allow  run_command(cargo test *)  {}:2", ws_file.display())
    );
    assert_eq!(
        lines[3],
        format!("ask    run_command(git push *)  {}:3", ws_file.display())
    );
    assert_eq!(
        lines[7],
        format!("deny   read_file(~/.ssh/**)  {}:4", cfg.display())
    );
    let empty = Ws::new();
    let o = empty.run(&["rules", "list"]);
    assert!(stdout(&o).starts_with("no rules"), "{}", stdout(&o));
}

/// Issue 35: a session's own rules ("always" for this session) were invisible to `rules list`
/// and `rules check`; `--session ID` shows them and decides with them.
#[test]
fn rules_list_and_check_take_a_sessions_own_rules() {
    use neocode::session::{Change, NewSession, RuntimeLedger, StateUpdate};
    let w = Ws::new();
    let ws_file = w.write("ws/.neocode/permissions.toml", RULES);
    let sessions = w.env.sessions();
    let h = sessions.new_session(NewSession::default()).unwrap();
    sessions
        .update_state(
            &h.id,
            &StateUpdate {
                ledger: Change::Set(RuntimeLedger {
                    approved_tools: vec![
                        "run_command(sed -i s/a/b/ f.py)".into(),
                        "sandbox:network".into(),
                    ],
                    ..RuntimeLedger::default()
                }),
                ..StateUpdate::default()
            },
        )
        .unwrap();
    let short = &h.id[..8];
    let o = w.run(&["rules", "list", "--session", short]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        format!("allow  run_command(sed -i s/a/b/ f.py)  this session ({short})"),
        "{out}"
    );
    assert!(
        lines[1].starts_with("network  its commands may use the network"),
        "{out}"
    );
    assert_eq!(
        lines[2],
        format!("allow  run_command(cargo test *)  {}:2", ws_file.display())
    );
    // Without --session: the files' rules only, as before.
    let o = w.run(&["rules", "list"]);
    assert!(!stdout(&o).contains("this session"), "{}", stdout(&o));

    let line = "sed -i s/a/b/ f.py && cargo test";
    let o = w.run(&["rules", "check", line, "--session", "last"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("allow: "), "{out}");
    assert!(
        out.contains(
            "sed -i s/a/b/ f.py  ←  allow: run_command(sed -i s/a/b/ f.py)  (this session)"
        ),
        "{out}"
    );
    let o = w.run(&["rules", "check", line]);
    assert!(stdout(&o).starts_with("default: "), "{}", stdout(&o));
    // An unknown session is a usage error.
    let o = w.run(&["rules", "list", "--session", "nope"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

const CLAUDE_SETTINGS: &str = r#"{
  "model": "opus",
  "permissions": {"allow": ["Bash(npm test:*)"]},
  "hooks": {
    "PreToolUse": [
      {"matcher": "Edit|MultiEdit|Write", "hooks": [{"type": "command", "command": "echo edit", "timeout": 5}]},
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo bash"}]}
    ],
    "Stop": [{"hooks": [{"type": "command", "command": "echo stop"}]}],
    "SubagentStop": [{"hooks": [{"type": "command", "command": "echo sub"}]}]
  }
}
"#;

#[test]
fn hooks_import_converts_a_claude_code_settings_file() {
    let w = Ws::new();
    let settings = w.write("ws/.claude/settings.json", CLAUDE_SETTINGS);
    let o = w.run(&["hooks", "import"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let target = w.ws().join(".neocode/hooks.json");
    has(
        &out,
        "matcher `Edit|MultiEdit|Write` → `edit_file|write_file`",
    );
    assert!(out.contains("matcher `Bash` → `run_command`"), "{out}");
    assert!(out.contains("SubagentStop skipped"), "{out}");
    has(&out, &format!("wrote 3 hooks to {}\n", target.display()));
    assert!(
        out.ends_with(&format!(
            "added 1 allow rule to {}\n",
            w.ws().join(".neocode/permissions.toml").display()
        )),
        "{out}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&target).unwrap()).unwrap();
    assert_eq!(
        v["hooks"]["PreToolUse"][0]["matcher"],
        "edit_file|write_file"
    );
    assert_eq!(v["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"], 5.0);
    assert_eq!(v["hooks"]["PreToolUse"][1]["matcher"], "run_command");
    assert!(v["hooks"].get("SubagentStop").is_none());
    // Listed as configured.
    let o = w.run(&["hooks", "list"]);
    let out = stdout(&o);
    has(
        &out,
        "PreToolUse  edit_file|write_file  echo edit  (timeout 5s",
    );
    assert!(out.contains("Stop  *  echo stop  (timeout 60s"), "{out}");
    // Not overwritten without --force; replaced with it.
    let o = w.run(&["hooks", "import", settings.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("pass --force"), "{}", stderr(&o));
    let o = w.run(&["hooks", "import", settings.to_str().unwrap(), "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// Issue 35 (and 34's weakness 9): imported Claude Code hooks were sent neocode's names
/// (`run_command`, `path`), so prettier/ruff hooks reading `.tool_input.file_path` did
/// nothing; `permissions.allow/deny` were dropped without a word; and personal hooks were
/// copied into the shared workspace file without being listed. Now each file's hooks and
/// rules are listed with where they go — the user's own to neocode's home, the workspace's
/// to `.neocode/` — and the hooks are sent Claude Code's names.
#[test]
fn hooks_import_lists_where_each_part_goes_and_hooks_get_claude_codes_names() {
    let w = Ws::new();
    let user = w.env.tmp.path().join("user");
    w.write(
        "user/.claude/settings.json",
        r#"{"permissions": {"deny": ["Read(~/.ssh/**)", "WebFetch"]},
            "hooks": {"PostToolUse": [{"matcher": "Edit|Write",
              "hooks": [{"type": "command", "command": "cat > \"$CLAUDE_PROJECT_DIR/payload.json\""}]}]}}"#,
    );
    w.write(
        "ws/.claude/settings.json",
        r#"{"permissions": {"allow": ["Bash(npm test:*)", "Edit(src/**)"], "ask": ["Bash(git push:*)"]},
            "hooks": {"PreToolUse": [{"matcher": "Bash",
              "hooks": [{"type": "command", "command": "echo guard"}]}]}}"#,
    );
    let home_hooks = w.env.home.join("hooks.json");
    let ws_hooks = w.ws().join(".neocode/hooks.json");
    // --dry-run lists and writes nothing.
    let o = w.run(&["hooks", "import", "--dry-run"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("Nothing written (--dry-run)."), "{out}");
    assert!(!home_hooks.exists() && !ws_hooks.exists());
    for want in [
        format!("From {}:", user.join(".claude/settings.json").display()),
        format!(
            "  hooks → {} (yours, in every workspace; sent Claude Code's tool names and fields):",
            home_hooks.display()
        ),
        r#"    PostToolUse  edit_file|write_file  cat > "$CLAUDE_PROJECT_DIR/payload.json""#
            .to_string(),
        "    deny   read_file(~/.ssh/**)  (from Read(~/.ssh/**))".to_string(),
        "  permissions.deny `WebFetch` not imported: neocode has no `WebFetch` tool".to_string(),
        format!(
            "  hooks → {} (shared with the repository; sent Claude Code's tool names and fields):",
            ws_hooks.display()
        ),
        "    PreToolUse  run_command  echo guard".to_string(),
        "    allow  run_command(npm test *)  (from Bash(npm test:*))".to_string(),
        "    allow  write_file(src/**)  (from Edit(src/**))".to_string(),
        "    ask    run_command(git push *)  (from Bash(git push:*))".to_string(),
    ] {
        assert!(out.contains(&want), "{want}\n{out}");
    }
    let o = w.run(&["hooks", "import"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    has(&out, &format!("wrote 1 hook to {}", home_hooks.display()));
    has(&out, &format!("wrote 1 hook to {}", ws_hooks.display()));
    // The personal hook is not in the shared file.
    let shared = std::fs::read_to_string(&ws_hooks).unwrap();
    assert!(!shared.contains("payload.json"), "{shared}");
    let ws_rules = std::fs::read_to_string(w.ws().join(".neocode/permissions.toml")).unwrap();
    has(&ws_rules, "\"run_command(npm test *)\"");
    assert!(!ws_rules.contains(".ssh"), "{ws_rules}");
    let home_cfg = std::fs::read_to_string(w.env.home.join("config.toml")).unwrap();
    assert!(home_cfg.contains("\"read_file(~/.ssh/**)\""), "{home_cfg}");
    let o = w.run(&["rules", "check", "npm test -- --watch"]);
    starts(&stdout(&o), "allow: run_command(npm test *)");

    // The imported hook is sent Claude Code's names, as a session's PostToolUse sends it.
    let o = w.hooks_run(
        "PostToolUse",
        "edit_file",
        r#"{"path":"src/../app.py","old_string":"a","new_string":"b"}"#,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let sent: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(w.ws().join("payload.json")).unwrap())
            .unwrap();
    assert_eq!(sent["tool_name"], "Edit", "{sent:#}");
    assert_eq!(
        sent["tool_input"]["file_path"],
        w.ws().join("app.py").display().to_string(),
        "{sent:#}"
    );
    assert!(sent["tool_input"].get("path").is_none(), "{sent:#}");
    let o = w.run(&["hooks", "list"]);
    has(&stdout(&o), "; sent Claude Code's names)");
}

fn hook(w: &Ws, event: &str, matcher: &str, command: &str, timeout: f64) -> PathBuf {
    let v = serde_json::json!({"hooks": {event: [{"matcher": matcher, "hooks": [
        {"type": "command", "command": command, "timeout": timeout}]}]}});
    w.write("ws/.neocode/hooks.json", &v.to_string())
}

#[test]
fn a_hung_hook_is_killed_at_its_timeout() {
    let w = Ws::new();
    hook(&w, "PreToolUse", "*", "sleep 60 & sleep 60", 0.5);
    let t = Instant::now();
    let o = w.run(&["hooks", "run", "PreToolUse", "--tool", "run_command"]);
    let took = t.elapsed();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let out = stdout(&o);
    has(&out, "ran `sleep 60 & sleep 60`: killed at its timeout");
    has(
        &out,
        "error: PreToolUse hook `sleep 60 & sleep 60` was killed after",
    );
}

#[test]
fn a_pre_tool_use_exit_2_blocks_with_its_reason() {
    let w = Ws::new();
    hook(
        &w,
        "PreToolUse",
        "edit_file|write_file",
        "grep -q generated && echo 'generated files are read-only' >&2 && exit 2; exit 0",
        10.0,
    );
    let o = w.hooks_run("PreToolUse", "edit_file", r#"{"path": "src/generated.rs"}"#);
    let out = stdout(&o);
    assert!(out.contains(": exit 2 in "), "{out}");
    has(&out, "blocked: generated files are read-only\n");
    has(&out, "permission: deny (generated files are read-only)");
    // Not matched by read_file; a path the hook lets through continues.
    let o = w.run(&["hooks", "run", "PreToolUse", "--tool", "read_file"]);
    assert_eq!(stdout(&o), "no PreToolUse hook matches\n");
    let o = w.hooks_run("PreToolUse", "edit_file", r#"{"path": "src/a.rs"}"#);
    assert!(stdout(&o).ends_with("continue\n"), "{}", stdout(&o));
}

#[test]
fn a_json_permission_decision_allow_is_parsed_and_keys_are_hidden() {
    let w = Ws::new();
    let script = w.write(
        "ws/hook.sh",
        "#!/bin/sh\n\
         echo \"${OPENAI_API_KEY-none}/${NEOCODE_API_KEY-none}\" > keys.txt\n\
         echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"allow\", \"permissionDecisionReason\": \"cargo test is fine\"}}'\n",
    );
    hook(
        &w,
        "PreToolUse",
        "run_command",
        &format!("sh {}", script.display()),
        10.0,
    );
    let o = w.hooks_run("PreToolUse", "run_command", r#"{"command": "cargo test"}"#);
    let out = stdout(&o);
    has(&out, "permission: allow (cargo test is fine)\n");
    assert!(!out.contains("blocked"), "{out}");
    let keys = std::fs::read_to_string(w.ws().join("keys.txt")).unwrap();
    assert_eq!(keys.trim(), "none/none");
}

#[test]
fn a_malformed_hooks_file_is_an_error_with_file_and_line() {
    let (w, f) = Ws::with(
        "ws/.neocode/hooks.json",
        "{\"hooks\": {\n  \"PreToolUze\": []\n}}\n",
    );
    let o = w.run(&["hooks", "list"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    starts(
        &err,
        &format!("neocode: {}:2: unknown field `PreToolUze`", f.display()),
    );
}

#[test]
fn doctor_says_where_commands_are_not_held_to_a_read_denial() {
    let w = Ws::new();
    let file = w.write("ws/.neocode/permissions.toml", RULES);
    hook(&w, "Stop", "", "true", 5.0);
    let o = w.run(&["doctor"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    has(&out, &format!("  7 rule(s)  {}", file.display()));
    assert!(
        out.contains(
            "  read_file(.env): read_file, grep and list_dir honour it; commands are not held to it"
        ),
        "{out}"
    );
    assert!(out.contains("  1 hook(s)  "), "{out}");
    // A bad rule file is named with its line here too.
    w.write("ws/.neocode/permissions.toml", "deny = [\"nope(x)\"]\n");
    let out = stdout(&w.run(&["doctor"]));
    has(&out, &format!("  BAD RULE FILE  {}:1:", file.display()));
}
