//! Custom slash commands and `/init` through `neocode run`: the real binary against the
//! scripted server on 127.0.0.1; what the command expanded to is read in the request body
//! the server received.

use crate::support::agent::Env;
use crate::support::flows::called_twice;
use crate::support::{stderr, stdout};

use std::process::Output;

use neocode::testkit::scripted::{Reply, ScriptedServer};
use serde_json::Value;

const KEY: &str = "sk-slash-test-KEY-31c9";

/// The text of the last user message of a recorded request body.
fn user_text(body: &Value) -> String {
    let last = body["messages"]
        .as_array()
        .expect("the request has messages")
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .expect("a user message");
    match &last["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        other => panic!("content {other}"),
    }
}

/// `neocode run PROMPT` on `srv`, which must succeed.
fn run_ok(env: &Env, srv: &ScriptedServer, prompt: &str) -> Output {
    let o = env.cmd(Some(srv), &["run", prompt]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    o
}

/// [`run_ok`], then the text of the prompt the model was sent.
fn sent_for(env: &Env, srv: &ScriptedServer, prompt: &str) -> String {
    run_ok(env, srv, prompt);
    user_text(&srv.requests().last().unwrap().json())
}

fn write(path: std::path::PathBuf, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Claude Code's documented example of a command with front matter, as a user has it.
const CLAUDE_COMMIT: &str = "---
allowed-tools: Bash(git add:*), Bash(git status:*), Bash(git commit:*)
argument-hint: [message]
description: Create a git commit
model: claude-3-5-haiku-20241022
---

## Context

- Current git status: !`git status`

## Your task

Create a git commit with message: $ARGUMENTS
";

#[test]
fn run_expands_arguments_and_positions_of_workspace_and_claude_code_commands() {
    let env = Env::new(KEY, "");
    write(
        env.workdir.join(".neocode/commands/review.md"),
        "---\ndescription: Review a folder\nargument-hint: PATH [FOCUS]\n---\nReview the code in $1, looking at $2 first.\n(asked: $ARGUMENTS)\n",
    );
    write(
        env.workdir.join(".claude/commands/git/commit.md"),
        CLAUDE_COMMIT,
    );
    env.trust_workspace();
    let srv =
        ScriptedServer::start(vec![Reply::text("Reviewed."), Reply::text("Committed.")]).unwrap();
    let o = run_ok(&env, &srv, "/review src/ \"error handling\"");
    assert_eq!(stdout(&o).trim(), "Reviewed.");
    assert_eq!(
        user_text(&srv.requests()[0].json()),
        "Review the code in src/, looking at error handling first.\n(asked: src/ \"error handling\")"
    );
    // A subfolder of `.claude/commands/` is part of the name, as Claude Code names it; the
    // file is read as it is (front matter off, body with `$ARGUMENTS`).
    let sent = sent_for(&env, &srv, "/git:commit fix the parser");
    assert!(sent.starts_with("## Context\n"), "{sent}");
    assert!(
        sent.ends_with("Create a git commit with message: fix the parser"),
        "{sent}"
    );
    assert!(!sent.contains("allowed-tools"), "{sent}");
}

#[test]
fn untrusted_workspace_commands_are_not_run_and_an_unknown_name_exits_2() {
    let env = Env::new(KEY, "");
    write(env.workdir.join(".claude/commands/review.md"), "Review $1");
    write(
        env.home.join("commands/explain.md"),
        "Explain $ARGUMENTS simply.",
    );
    write(env.home.join("commands/help.md"), "Shadowing a built-in");
    let srv = ScriptedServer::start(vec![Reply::text("Explained.")]).unwrap();
    let o = env
        .cmd(Some(&srv), &["run", "/review src/"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("unknown command /review"), "{err}");
    assert!(err.contains("/init, /explain"), "{err}");
    assert!(err.contains("not trusted"), "{err}");
    // The file named like a built-in is named in a warning, once.
    assert!(
        err.contains("commands/help.md: /help is a built-in command"),
        "{err}"
    );
    assert_eq!(srv.request_count(), 0);
    // Home commands need no trust.
    assert_eq!(
        sent_for(&env, &srv, "/explain lifetimes"),
        "Explain lifetimes simply."
    );
}

#[test]
fn a_path_is_a_prompt_not_a_command() {
    let env = Env::new(KEY, "");
    let srv = ScriptedServer::start(vec![Reply::text("It is the hosts file.")]).unwrap();
    let sent = sent_for(&env, &srv, "/etc/hosts: what is it?");
    assert_eq!(sent, "/etc/hosts: what is it?");
}

#[test]
fn init_sends_its_prompt_and_the_agents_md_write_is_asked_like_any_edit() {
    let env = Env::new(KEY, "");
    let args = r##"{"path":"AGENTS.md","content":"# Agents\n\nBuild: cargo build\n"}"##;
    let srv = ScriptedServer::start(called_twice(
        ["w1", "w2"],
        "write_file",
        args,
        ["I could not write AGENTS.md.", "Wrote AGENTS.md."],
    ))
    .unwrap();
    let o = run_ok(&env, &srv, "/init mention the fuzz targets");
    let sent = user_text(&srv.requests()[0].json());
    assert!(sent.starts_with("Write or update AGENTS.md"), "{sent}");
    assert!(
        sent.ends_with("The user adds: mention the fuzz targets"),
        "{sent}"
    );
    // No terminal to ask on: the edit is denied as any edit is, naming the flag.
    assert!(stderr(&o).contains("--approve auto-edit"), "{}", stderr(&o));
    assert!(!env.workdir.join("AGENTS.md").exists());
    // Approved (by the policy the flag sets), the same call writes it.
    let o = env
        .cmd(Some(&srv), &["run", "--approve", "auto-edit", "/init"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(env.workdir.join("AGENTS.md")).unwrap(),
        "# Agents\n\nBuild: cargo build\n"
    );
    assert!(
        stderr(&o).contains("write_file AGENTS.md"),
        "{}",
        stderr(&o)
    );
}
