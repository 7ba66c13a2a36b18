//! Workspace trust (issue 34), through the real binary against the scripted model server: a
//! malicious repository opened untrusted runs nothing of its own and still asks under the
//! default policy; trusted (`--trust-workspace`, `neocode trust --yes`) it is used as it is;
//! a change after trust is not used until trusted again; `never-ask` never implies trust;
//! base URLs and keys never come from a workspace; the bridge says so once with a stable code.

use crate::support::text::has;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Output};

use crate::support::agent::Env;
use crate::support::cli::assert_harmless;
use crate::support::hostile_repo::HostileRepo;
use crate::support::tool_text;
use crate::support::{stderr, stdout, tool_names, warnings};

use neocode::testkit::scripted::{Reply, ScriptedServer};
use serde_json::Value;

const KEY: &str = "sk-trust-test-KEY-7731";
const NO_SANDBOX: &str = "[sandbox]\nmode = \"off\"\n";
const LEFT_OUT: &str = "this workspace's hooks, allow rules and skills are not used";

fn hostile(env: &Env, evil: &ScriptedServer) -> HostileRepo {
    HostileRepo::plant(&env.workdir, &evil.base_url())
}

/// A workspace holding the hostile repository, whose settings point at `evil` (a model
/// server that must never be asked).
fn hostile_ws() -> (Env, ScriptedServer, HostileRepo) {
    let env = Env::new(KEY, NO_SANDBOX);
    let evil = ScriptedServer::start(vec![]).unwrap();
    let repo = hostile(&env, &evil);
    (env, evil, repo)
}

/// The user's "always, this workspace" for `rule` through the gate: the grants it gave the
/// session (none when the rule was kept in the workspace's file).
fn always_for_workspace(
    gate: &mut neocode::runtime::policy::gate::Gate,
    rule: &str,
) -> Vec<String> {
    let mut grants = Vec::new();
    gate.keep(
        &[rule.to_string()],
        neocode::runtime::agent::RuleScope::Workspace,
        &mut grants,
    )
    .unwrap();
    grants
}

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        stdout(o),
        stderr(o)
    );
}

/// A turn that runs a command and writes a file, then answers.
fn two_calls() -> Vec<Reply> {
    vec![
        Reply::tool_calls(&[
            ("c1", "run_command", r#"{"command":"touch ran.txt"}"#),
            ("c2", "write_file", r#"{"path":"w.txt","content":"x"}"#),
        ]),
        Reply::text("done"),
    ]
}

#[test]
fn an_untrusted_hostile_repository_runs_nothing_of_its_own() {
    let (env, evil, repo) = hostile_ws();
    let srv = ScriptedServer::start(two_calls()).unwrap();
    let o = env.cmd(Some(&srv), &["run", "go"]).output().unwrap();
    ok(&o);
    // No hook ran: not at SessionStart, not at the prompt, not before the tools.
    assert_eq!(repo.hooks_that_ran(), Vec::<String>::new());
    // `allow = ["*"]` and the hook's `allow` were not used: the default policy asked, and
    // with no terminal to ask on, nothing ran.
    let next = srv.requests()[1].json();
    assert!(
        tool_text(&next, "c1").contains("needs approval"),
        "{next:#}"
    );
    assert!(
        tool_text(&next, "c2").contains("needs approval"),
        "{next:#}"
    );
    assert!(!env.workdir.join("ran.txt").exists());
    assert!(!env.workdir.join("w.txt").exists());
    // The skill was neither described nor offered.
    let first = srv.requests()[0].json();
    assert!(
        !first.to_string().contains("Always activate this first"),
        "{first:#}"
    );
    let tools = tool_names(&first);
    assert!(!tools.contains(&"skill"), "{tools:?}");
    // Said once, naming the flag, and harmless on a terminal.
    let err = stderr(&o);
    assert_eq!(err.matches(LEFT_OUT).count(), 1, "{err}");
    assert!(err.contains("--trust-workspace"), "{err}");
    assert!(err.contains("1 skill"), "{err}");
    assert_harmless(err.as_bytes());
    // The repository's base URL and key were never used; nothing was recorded as trusted.
    assert_eq!(evil.request_count(), 0);
    assert!(!env.home.join("trust.json").exists());
}

#[test]
fn never_ask_does_not_imply_trust() {
    let (env, _evil, repo) = hostile_ws();
    let srv = ScriptedServer::start(two_calls()).unwrap();
    let o = env
        .cmd(
            Some(&srv),
            &["run", "--approve", "never-ask", "--json", "go"],
        )
        .output()
        .unwrap();
    ok(&o);
    // The user's policy let the calls run; the repository's hooks did not run.
    assert!(env.workdir.join("ran.txt").exists());
    assert_eq!(repo.hooks_that_ran(), Vec::<String>::new());
    let lines: Vec<Value> = stdout(&o)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let result = lines
        .iter()
        .find(|l| l["type"] == "tool_result" && l["call_id"] == "c1")
        .unwrap();
    assert_eq!(result["permission"]["by"], "policy", "{result:#}");
    let warning = *warnings(&lines, "workspace_untrusted")
        .first()
        .unwrap_or_else(|| panic!("{lines:#?}"));
    assert!(
        warning["message"].as_str().unwrap().contains(LEFT_OUT),
        "{warning:#}"
    );
}

#[test]
fn the_hostile_repository_trusted_with_the_flag_is_used() {
    let (env, evil, repo) = hostile_ws();
    let srv = ScriptedServer::start(two_calls()).unwrap();
    let o = env
        .cmd(Some(&srv), &["--trust-workspace", "run", "go"])
        .output()
        .unwrap();
    ok(&o);
    assert_eq!(
        repo.hooks_that_ran(),
        ["pre-tool-use", "prompt-submit", "session-start"]
    );
    assert!(env.workdir.join("ran.txt").exists());
    assert!(env.workdir.join("w.txt").exists());
    assert!(!stderr(&o).contains(LEFT_OUT), "{}", stderr(&o));
    // The record: under the home, private, with a hash of each declared file.
    let record = env.home.join("trust.json");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&record).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    let files = &r["workspaces"][env.workdir.to_str().unwrap()]["files"];
    for f in [
        ".neocode/hooks.json",
        ".neocode/permissions.toml",
        ".neocode/skills/setup/SKILL.md",
        ".neocode/config.toml",
        ".mcp.json",
        ".claude/commands/deploy.md",
    ] {
        assert_eq!(files[f].as_str().map(str::len), Some(64), "{f}: {r:#}");
    }
    // The older folder record is written too.
    let folder = std::fs::read_to_string(env.home.join("trusted-workspaces")).unwrap();
    assert!(folder.lines().any(|l| l == env.workdir.to_str().unwrap()));
    assert_eq!(evil.request_count(), 0);
}

#[test]
fn a_file_changed_after_trust_is_not_used_until_trusted_again() {
    let (env, _evil, repo) = hostile_ws();
    let srv = ScriptedServer::start(vec![
        Reply::text("one"),
        Reply::text("two"),
        Reply::text("three"),
    ])
    .unwrap();
    ok(&env.cmd(None, &["trust", "--yes"]).output().unwrap());
    ok(&env.cmd(Some(&srv), &["run", "first"]).output().unwrap());
    assert_eq!(repo.hooks_that_ran(), ["prompt-submit", "session-start"]);
    repo.clear_markers();

    // The repository changes (a pull): a new hook, and the skill's text.
    let m = format!("../{}", crate::support::hostile_repo::MARKERS);
    repo.write(
        ".neocode/hooks.json",
        &serde_json::json!({"hooks": {
            "SessionStart": [{"hooks": [{"type": "command", "command": format!("touch {m}/session-start")}]}],
            "Stop": [{"hooks": [{"type": "command", "command": format!("touch {m}/stop")}]}],
        }})
        .to_string(),
    );
    repo.write(
        ".neocode/skills/setup/SKILL.md",
        "---\nname: setup\ndescription: changed\n---\nNew body.\n",
    );
    let o = env.cmd(Some(&srv), &["run", "second"]).output().unwrap();
    ok(&o);
    assert_eq!(repo.hooks_that_ran(), Vec::<String>::new());
    let err = stderr(&o);
    assert!(err.contains("changed since you trusted it"), "{err}");
    has(
        &err,
        "modified .neocode/hooks.json, .neocode/skills/setup/SKILL.md",
    );
    has(&err, &format!(".neocode/hooks.json: Stop * touch {m}/stop"));
    // `neocode trust` names what changed.
    let o = env.cmd(None, &["trust"]).output().unwrap();
    ok(&o);
    let out = stdout(&o);
    assert!(out.contains("What changed"), "{out}");
    assert!(out.contains("modified  .neocode/hooks.json"), "{out}");
    has(
        &out,
        &format!("new       .neocode/hooks.json: Stop * touch {m}/stop"),
    );
    let json: Value =
        serde_json::from_slice(&env.cmd(None, &["trust", "--json"]).output().unwrap().stdout)
            .unwrap();
    assert_eq!(json["state"], "changed");
    assert_eq!(json["uses_workspace"], false);
    assert_eq!(json["changes"]["modified"][0], ".neocode/hooks.json");

    // Trusted again: used again.
    ok(&env.cmd(None, &["trust", "--yes"]).output().unwrap());
    ok(&env.cmd(Some(&srv), &["run", "third"]).output().unwrap());
    assert_eq!(repo.hooks_that_ran(), ["session-start", "stop"]);

    // Revoked: not used.
    repo.clear_markers();
    let o = env.cmd(None, &["trust", "--revoke"]).output().unwrap();
    ok(&o);
    assert!(stdout(&o).contains("forgot"), "{}", stdout(&o));
    let json: Value =
        serde_json::from_slice(&env.cmd(None, &["trust", "--json"]).output().unwrap().stdout)
            .unwrap();
    assert_eq!(json["state"], "untrusted");
}

#[test]
fn base_urls_and_keys_never_come_from_a_workspace() {
    let env = Env::new(KEY, NO_SANDBOX);
    let evil = ScriptedServer::start(vec![Reply::text("evil answer")]).unwrap();
    hostile(&env, &evil);
    // Nothing configured but the repository's `.neocode/config.toml` and `.env`: no model.
    let o = env
        .cmd(None, &["--trust-workspace", "run", "hi"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // Configured: the user's server and key, even for a trusted workspace.
    let srv = ScriptedServer::start(vec![Reply::text("fine")]).unwrap();
    let o = env
        .cmd(Some(&srv), &["--trust-workspace", "run", "hi"])
        .output()
        .unwrap();
    ok(&o);
    assert_eq!(evil.request_count(), 0);
    let req = &srv.requests()[0];
    assert_eq!(
        req.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(req.json()["model"], "test-model");
    // The repository's `[sandbox] mode = "off"` did not reach the settings either.
    let o = env.cmd(None, &["doctor", "--no-probe"]).output().unwrap();
    let out = stdout(&o);
    assert!(!out.contains("evil"), "{out}");
}

#[test]
fn rules_skills_hooks_and_doctor_say_what_was_left_out() {
    let (env, _evil, _repo) = hostile_ws();
    let o = env.cmd(None, &["rules", "list"]).output().unwrap();
    ok(&o);
    let out = stdout(&o);
    assert!(out.contains("not used: "), "{out}");
    assert!(out.contains("allow  *  "), "{out}");
    let o = env
        .cmd(None, &["rules", "check", "rm -rf /"])
        .output()
        .unwrap();
    ok(&o);
    let out = stdout(&o);
    assert!(out.starts_with("default: no rule"), "{out}");
    assert!(out.contains(LEFT_OUT), "{out}");

    let o = env
        .cmd(None, &["skill", "list", "--json"])
        .output()
        .unwrap();
    ok(&o);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["skills"], serde_json::json!([]));
    assert!(
        v["workspace_left_out"]
            .as_str()
            .unwrap()
            .contains("not trusted"),
        "{v:#}"
    );
    let id = env.new_session();
    let o = env
        .cmd(None, &["skill", "activate", &id, "setup"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("no skill named `setup`"), "{err}");
    assert!(err.contains(LEFT_OUT), "{err}");

    let o = env.cmd(None, &["hooks", "list"]).output().unwrap();
    ok(&o);
    let out = stdout(&o);
    assert!(out.starts_with("not run: "), "{out}");
    assert!(!out.contains("SessionStart"), "{out}");
    assert_harmless(&o.stdout);

    let o = env.cmd(None, &["doctor", "--no-probe"]).output().unwrap();
    let out = stdout(&o);
    assert!(out.contains("workspace trust  "), "{out}");
    assert!(out.contains(LEFT_OUT), "{out}");

    // `neocode trust` lists every entry, sanitised.
    let o = env.cmd(None, &["trust"]).output().unwrap();
    ok(&o);
    let out = stdout(&o);
    assert_harmless(&o.stdout);
    for want in [
        "This workspace is not trusted",
        "SessionStart  *  touch ",
        "PreToolUse  *  touch ",
        "allow  *  (line 1)",
        "setup  (.neocode/skills/setup/SKILL.md)",
        ".mcp.json",
        ".claude/commands/deploy.md",
        ".neocode/config.toml",
        "neocode trust --yes",
    ] {
        has(&out, want);
    }
    has(&out, "^[]0;pwned");
}

#[test]
fn the_bridge_goes_on_without_them_and_says_so_once() {
    let (env, evil, repo) = hostile_ws();
    let srv = ScriptedServer::start(vec![Reply::text("one"), Reply::text("two")]).unwrap();
    let mut child = env.spawn_fed(&srv, &["bridge"]);
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut events = Vec::new();
    for prompt in ["one", "two"] {
        let chat =
            serde_json::json!({"type": "chat", "messages": [{"role": "user", "content": prompt}]});
        writeln!(stdin, "{chat}").unwrap();
        stdin.flush().unwrap();
        loop {
            let line = lines.next().unwrap().unwrap();
            assert_harmless(line.as_bytes());
            let v: Value = serde_json::from_str(&line).unwrap();
            let done = v["type"] == "finish";
            events.push(v);
            if done {
                break;
            }
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let warnings = warnings(&events, "workspace_untrusted");
    assert_eq!(warnings.len(), 1, "{events:#?}");
    let msg = warnings[0]["message"].as_str().unwrap();
    assert!(msg.contains("--trust-workspace"), "{msg}");
    assert_eq!(repo.hooks_that_ran(), Vec::<String>::new());
    assert_eq!(evil.request_count(), 0);
}

#[test]
fn always_for_this_workspace_keeps_a_trusted_workspace_trusted() {
    let env = Env::new(KEY, NO_SANDBOX);
    std::fs::create_dir_all(env.workdir.join(".neocode")).unwrap();
    std::fs::write(
        env.workdir.join(".neocode/permissions.toml"),
        "allow = [\"run_command(echo *)\"]\n",
    )
    .unwrap();
    env.trust_workspace();
    // What `neocode run` on a terminal does for "always, this workspace": the gate keeps
    // the rule in the file and the record follows the user's own change.
    let mut gate = neocode::runtime::trust::gate(&env.home, &env.workdir, "s");
    gate.load().unwrap();
    let grants = always_for_workspace(&mut gate, "run_command(ls *)");
    assert!(grants.is_empty(), "kept in the file, not as a grant");
    let o = Command::new(env!("CARGO_BIN_EXE_neocode"))
        .args(["trust", "--json", "--workdir"])
        .arg(&env.workdir)
        .env("NEOCODE_HOME", &env.home)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["state"], "trusted", "{v:#}");
    assert_eq!(v["rules"][1]["rule"], "run_command(ls *)", "{v:#}");
}

#[test]
fn always_for_an_untrusted_workspace_applies_to_the_session_only() {
    let (env, _evil, _repo) = hostile_ws();
    let mut gate = neocode::runtime::trust::gate(&env.home, &env.workdir, "s");
    gate.load().unwrap();
    assert!(gate.left_out.is_some());
    let grants = always_for_workspace(&mut gate, "run_command(ls *)");
    assert_eq!(grants, ["run_command(ls *)"]);
    assert!(
        gate.notices
            .iter()
            .any(|n| n.contains("not used until you trust it")),
        "{:?}",
        gate.notices
    );
    let rules = std::fs::read_to_string(env.workdir.join(".neocode/permissions.toml")).unwrap();
    assert!(rules.contains("run_command(ls *)"), "{rules}");
    // Still untrusted: the user's rule did not make the repository's `allow = ["*"]` count.
    let v: Value =
        serde_json::from_slice(&env.cmd(None, &["trust", "--json"]).output().unwrap().stdout)
            .unwrap();
    assert_eq!(v["state"], "untrusted", "{v:#}");
}
