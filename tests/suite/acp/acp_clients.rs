//! `neocode acp` driven by ACP clients nobody here wrote: the official TypeScript SDK's client
//! (`tests/acp-client/sdk-client.mjs`) and the `acpx` headless client, both installed by
//! `scripts/acp-clients.sh` (npm; CI runs it before the tests). The tests only ask it where
//! the clients are (`--installed`, never fetching): when they are not there it prints
//! nothing, and these tests say so on stderr and pass without running.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::support::flows::stalled;
use neocode::testkit::scripted::Reply;
use serde_json::Value;

use super::acp_process::{list_ids, run_resume, vars};
use crate::support::bridge::{Env, command_call, write_call};

const BIN: &str = env!("CARGO_BIN_EXE_neocode");

/// The folder the clients are installed in, or `None` (said on stderr) when they cannot be.
fn clients(test: &str) -> Option<PathBuf> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/acp-clients.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg("--installed")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if dir.is_empty() {
        eprintln!(
            "SKIPPED {test}: the ACP clients are not installed ({})",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        return None;
    }
    Some(PathBuf::from(dir))
}

#[test]
fn the_official_sdk_client_runs_a_whole_editor_session() {
    let Some(dir) = clients("the_official_sdk_client_runs_a_whole_editor_session") else {
        return;
    };
    let slow = stalled(Duration::from_secs(60));
    let env = Env::new(vec![
        write_call("call_1", "notes.txt", "hello from the sdk\n"),
        Reply::text("I wrote notes.txt."),
        slow,
        Reply::text("Continued in the terminal."),
    ]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp-client/sdk-client.mjs");
    let out = Command::new("node")
        .arg(&script)
        .arg(&dir)
        .arg(BIN)
        .arg(&env.workdir)
        .envs(vars(&env))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let s: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(s["exitCode"], 0, "{s}");
    assert_eq!(s["agent"], "neocode", "{s}");
    for cap in ["load", "list", "fork", "resume", "close"] {
        assert_eq!(s["capabilities"][cap], true, "{cap}: {s}");
    }
    assert_eq!(s["prompt"]["stopReason"], "end_turn", "{s}");
    assert_eq!(s["prompt"]["toolCalls"][0]["id"], "call_1", "{s}");
    assert_eq!(s["prompt"]["toolCalls"][0]["kind"], "edit", "{s}");
    assert_eq!(s["prompt"]["toolCalls"][0]["diff"], true, "{s}");
    assert_eq!(s["prompt"]["completed"], 1, "{s}");
    assert_eq!(s["prompt"]["text"], "I wrote notes.txt.", "{s}");
    assert_eq!(s["permissions"].as_array().unwrap().len(), 1, "{s}");
    assert_eq!(s["permissions"][0]["toolCallId"], "call_1", "{s}");
    assert_eq!(s["cancel"]["stopReason"], "cancelled", "{s}");
    assert_eq!(
        std::fs::read_to_string(env.workdir.join("notes.txt")).unwrap(),
        "hello from the sdk\n"
    );
    // user, tool call, its result, text; then the cancelled prompt.
    assert!(s["load"]["updates"].as_u64().unwrap() >= 5, "{s}");
    assert_eq!(s["load"]["user"][0], "write the notes", "{s}");
    assert_eq!(s["load"]["user"][1], "take your time", "{s}");
    assert_eq!(s["load"]["toolCalls"], 1, "{s}");
    assert_eq!(s["load"]["text"], "I wrote notes.txt.", "{s}");
    let id = s["sessionId"].as_str().unwrap().to_string();
    let fork = s["fork"].as_str().unwrap().to_string();
    assert!(
        s["list"]
            .as_array()
            .unwrap()
            .contains(&Value::from(id.clone())),
        "{s}"
    );

    // The same sessions are neocode's: listed, and the editor's one continues in the terminal.
    let listed = list_ids(&env);
    assert!(listed.contains(&id) && listed.contains(&fork), "{listed:?}");
    let out = run_resume(&env, &id, "and now from the terminal");
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Continued in the terminal."),
        "{out:?}"
    );
}

/// `acpx exec PROMPT` (installed in `dir`) with neocode as its agent, approving everything and
/// printing in `format`; asserted to succeed: its output and its stdout.
fn acpx_exec(dir: &Path, env: &Env, format: &str, prompt: &str) -> (std::process::Output, String) {
    // acpx keeps its own state under HOME: a fresh one per run.
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(dir.join("node_modules/.bin/acpx"))
        .args(["--agent", &format!("{BIN} acp"), "--cwd"])
        .arg(&env.workdir)
        .args([
            "--approve-all",
            "--format",
            format,
            "--timeout",
            "60",
            "exec",
            prompt,
        ])
        .envs(vars(env))
        .env("HOME", home.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{out:?}");
    (out, stdout)
}

#[test]
fn acpx_runs_a_prompt_against_neocode_as_a_custom_agent() {
    let Some(dir) = clients("acpx_runs_a_prompt_against_neocode_as_a_custom_agent") else {
        return;
    };
    let env = Env::new(vec![
        Reply::text("Hello from neocode."),
        Reply::text("Continued."),
    ]);
    let (out, stdout) = acpx_exec(&dir, &env, "quiet", "say hello");
    assert_eq!(stdout.trim(), "Hello from neocode.", "{out:?}");
    // The session acpx made is neocode's.
    let listed = list_ids(&env);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(env.texts(&listed[0])[0].1, "say hello");
    let out = run_resume(&env, &listed[0], "more");
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn acpx_runs_a_command_in_its_own_terminal_with_neocodes_wrapper() {
    let Some(dir) = clients("acpx_runs_a_command_in_its_own_terminal_with_neocodes_wrapper") else {
        return;
    };
    let env = Env::new(vec![
        command_call(
            "call_c",
            "run_command",
            "echo via-acpx-terminal; echo kept > inside.txt",
        ),
        Reply::text("Ran it."),
    ]);
    let (_, stdout) = acpx_exec(&dir, &env, "json", "run it");
    // acpx (terminal capability on by default) ran neocode's wrapper: the tool call showed
    // its terminal, the command ran, and the model read its output.
    assert!(stdout.contains(r#""type":"terminal""#), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(env.workdir.join("inside.txt")).unwrap(),
        "kept\n"
    );
    let second = env.server.requests()[1].json().to_string();
    assert!(second.contains("via-acpx-terminal"), "{second}");
}
