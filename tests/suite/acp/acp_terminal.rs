//! `neocode acp` with an editor that offers its terminal (`terminal: true`): `run_command`
//! asks the editor to run neocode's sandboxed argv, and the test plays the editor by really
//! running it, so the sandbox applies as it does for the local tool. Also the `usage_update`
//! after each model reply.

use super::acp_process::{Acp, updates};
use crate::support::bridge::{Env, command_call};

use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use neocode::runtime::tools::{SandboxSettings, sandbox};
use neocode::testkit::scripted::Reply;
use serde_json::{Value, json};

/// A terminal the test editor runs: the process and the file its output goes to.
struct Term {
    child: Child,
    out: std::path::PathBuf,
}

/// The editor's side of the prompt `id`: terminals run for real, permissions allowed once.
/// Calls `on_create` once a terminal runs. Returns (messages seen, the response).
fn as_editor(
    acp: &mut Acp,
    id: u64,
    scratch: &std::path::Path,
    mut on_create: impl FnMut(&mut Acp, &Value),
) -> (Vec<Value>, Value) {
    let (mut seen, mut terms, mut waits) = (Vec::new(), HashMap::<String, Term>::new(), Vec::new());
    let reply = |acp: &mut Acp, m: &Value, result: Value| {
        acp.send(&json!({"jsonrpc": "2.0", "id": m["id"], "result": result}));
    };
    loop {
        // Waits answered when their process has ended.
        waits.retain(|(mid, tid): &(Value, String)| {
            let t = terms.get_mut(tid).unwrap();
            let Some(st) = t.child.try_wait().unwrap() else {
                return true;
            };
            // The exit status is the whole result (flattened), unlike in `terminal/output`.
            acp.send(&json!({"jsonrpc": "2.0", "id": mid, "result": exit_status(st)}));
            false
        });
        let Some(m) = acp.try_next(Duration::from_millis(20)) else {
            continue;
        };
        if m["id"] == json!(id) && m.get("method").is_none() {
            return (seen, m);
        }
        let p = &m["params"];
        match m["method"].as_str() {
            Some("session/request_permission") => reply(
                acp,
                &m,
                json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}}),
            ),
            Some("terminal/create") => {
                let tid = format!("term-{}", terms.len() + 1);
                let out = scratch.join(format!("{tid}.out"));
                let file = std::fs::File::create(&out).unwrap();
                let args: Vec<&str> = args_of(p);
                let child = Command::new(p["command"].as_str().unwrap())
                    .args(&args)
                    .current_dir(p["cwd"].as_str().unwrap())
                    .stdin(Stdio::null())
                    .stdout(file.try_clone().unwrap())
                    .stderr(file)
                    .spawn()
                    .unwrap();
                terms.insert(tid.clone(), Term { child, out });
                reply(acp, &m, json!({"terminalId": tid}));
                on_create(acp, &m);
            }
            Some("terminal/wait_for_exit") => {
                waits.push((m["id"].clone(), p["terminalId"].as_str().unwrap().into()));
            }
            Some("terminal/output") => {
                let t = terms.get_mut(p["terminalId"].as_str().unwrap()).unwrap();
                let output = std::fs::read_to_string(&t.out).unwrap();
                let status = t.child.try_wait().unwrap().map(exit_status);
                reply(
                    acp,
                    &m,
                    json!({"output": output, "truncated": false, "exitStatus": status}),
                );
            }
            Some("terminal/kill" | "terminal/release") => {
                if let Some(t) = terms.get_mut(p["terminalId"].as_str().unwrap()) {
                    let _ = t.child.kill();
                    let _ = t.child.wait();
                }
                reply(acp, &m, json!({}));
            }
            _ => {}
        }
        seen.push(m);
    }
}

fn exit_status(st: std::process::ExitStatus) -> Value {
    use std::os::unix::process::ExitStatusExt;
    match (st.code(), st.signal()) {
        (Some(c), _) => json!({"exitCode": c}),
        (None, Some(9)) => json!({"signal": "SIGKILL"}),
        (None, s) => json!({"signal": s.map(|s| s.to_string())}),
    }
}

fn start_with_terminal(env: &Env) -> (Acp, String) {
    let mut acp = Acp::start(env);
    let (_, init) = acp.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {"terminal": true}}),
    );
    assert!(init.get("result").is_some(), "{init}");
    let id = acp.new_session(env);
    (acp, id)
}

fn methods(seen: &[Value]) -> Vec<&str> {
    seen.iter().filter_map(|m| m["method"].as_str()).collect()
}

/// The `args` of a `terminal/create` request's params.
fn args_of(p: &Value) -> Vec<&str> {
    p["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect()
}

/// `terminal/create` asked for neocode's wrapper around `command`: `env -i` (no secrets),
/// the sandbox helper when the sandbox is enforced here, the shell with the command.
fn wrapper_asked(p: &Value, id: &str, command: &str, env: &Env, enforced: bool) {
    assert_eq!(p["sessionId"], id);
    assert_eq!(p["command"], "/usr/bin/env", "{p}");
    let args: Vec<&str> = args_of(p);
    assert_eq!(args[0], "-i", "the environment is cleared: {args:?}");
    assert!(
        !args.iter().any(|a| a.contains("sk-test-acp")),
        "the API key is not passed: {args:?}"
    );
    assert!(args.iter().any(|a| a.starts_with("TMPDIR=")), "{args:?}");
    assert_eq!(args.last(), Some(&command), "{args:?}");
    let root = env.workdir.canonicalize().unwrap();
    assert_eq!(p["cwd"], root.display().to_string().as_str());
    assert_eq!(p["outputByteLimit"], 30_000, "{p}");
    if enforced {
        let at = args.iter().position(|a| *a == "__sandbox-exec").unwrap();
        assert!(args[at - 1].ends_with("neocode"), "{args:?}");
        assert_eq!(
            args[at + 1..at + 3],
            ["--root", &root.display().to_string()]
        );
        assert!(!args.contains(&"--parent"), "{args:?}");
    } else {
        eprintln!("NOTE: the sandbox is not enforced here; the wrapper is the shell alone");
    }
}

#[test]
fn with_the_editors_terminal_the_command_runs_there_in_neocodes_sandbox_and_is_shown_live() {
    let outside = tempfile::tempdir().unwrap();
    let escape = outside.path().join("escaped.txt");
    let command = format!(
        "echo in-the-editor; echo kept > inside.txt; echo bad > {}; echo after",
        escape.display()
    );
    let env = Env::new(vec![
        command_call("call_c", "run_command", &command),
        Reply::text("Ran it."),
    ]);
    let (mut acp, id) = start_with_terminal(&env);
    let pid = acp.prompt(&id, "run it");
    let (seen, resp) = as_editor(&mut acp, pid, outside.path(), |_, _| {});
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");

    // The editor was asked to run neocode's own wrapper around the command.
    let create = seen
        .iter()
        .find(|m| m["method"] == "terminal/create")
        .unwrap_or_else(|| panic!("{:?}", methods(&seen)));
    let enforced = sandbox::status(&SandboxSettings::default()).is_enforced();
    wrapper_asked(&create["params"], &id, &command, &env, enforced);

    // The terminal is shown on the call (after the call itself), then the result.
    let pos = |f: &dyn Fn(&Value) -> bool| seen.iter().position(f).unwrap();
    let call = pos(&|m| m["params"]["update"]["sessionUpdate"] == "tool_call");
    let shown = pos(&|m| m["params"]["update"]["content"][0]["type"] == "terminal");
    let created = pos(&|m| m["method"] == "terminal/create");
    assert!(call < shown && created < shown, "{:?}", methods(&seen));
    let live = &seen[shown]["params"]["update"];
    assert_eq!(live["toolCallId"], "call_c");
    assert_eq!(live["status"], "in_progress");
    assert_eq!(live["content"][0]["terminalId"], "term-1", "{live}");
    let done = updates(&seen, "tool_call_update");
    let last = done.last().unwrap();
    assert_eq!(last["status"], "completed", "{last}");
    assert_eq!(last["content"][0]["terminalId"], "term-1", "{last}");
    let text = last["content"][1]["content"]["text"].as_str().unwrap();
    assert!(
        text.contains("in-the-editor") && text.contains("after"),
        "{text}"
    );
    assert!(text.contains("[exit code 0, "), "{text}");
    let order = methods(&seen);
    let tail: Vec<&&str> = order
        .iter()
        .filter(|m| m.starts_with("terminal/"))
        .collect();
    assert_eq!(
        tail,
        [
            &"terminal/create",
            &"terminal/wait_for_exit",
            &"terminal/output",
            &"terminal/release"
        ]
    );

    // It ran for real: the workspace write landed, the one outside did not (when confined),
    // and the model read the same shaped result.
    assert_eq!(
        std::fs::read_to_string(env.workdir.join("inside.txt")).unwrap(),
        "kept\n"
    );
    if enforced {
        assert!(
            !escape.exists(),
            "the sandbox let the command write outside"
        );
        assert!(text.contains("[sandbox:"), "{text}");
    }
    let second = env.server.requests()[1].json().to_string();
    assert!(second.contains("in-the-editor"), "{second}");

    // A usage_update follows each model reply: the tokens in context of the window.
    let usage = updates(&seen, "usage_update");
    assert_eq!(usage.len(), 2, "{usage:#?}");
    assert_eq!(usage[0]["used"], 28, "{usage:#?}");
    assert_eq!(usage[1]["used"], 15, "{usage:#?}");
    assert_eq!(usage[0]["size"], 128_000, "{usage:#?}");
    acp.close();
}

#[test]
fn cancel_during_a_command_in_the_editors_terminal_kills_and_releases_it() {
    let scratch = tempfile::tempdir().unwrap();
    let env = Env::new(vec![
        command_call("call_s", "run_command", "sleep 30"),
        Reply::text("never asked"),
    ]);
    let (mut acp, id) = start_with_terminal(&env);
    let pid = acp.prompt(&id, "sleep");
    let started = Instant::now();
    let sid = id.clone();
    let (seen, resp) = as_editor(&mut acp, pid, scratch.path(), |acp, _| {
        acp.send(&json!({"jsonrpc": "2.0", "method": "session/cancel",
                         "params": {"sessionId": sid}}));
    });
    assert_eq!(resp["result"]["stopReason"], "cancelled", "{resp}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the sleep was not cut short"
    );
    let order: Vec<&str> = methods(&seen)
        .into_iter()
        .filter(|m| m.starts_with("terminal/"))
        .collect();
    let kill = order.iter().position(|m| *m == "terminal/kill");
    let release = order.iter().position(|m| *m == "terminal/release");
    assert!(
        kill.is_some() && kill < release,
        "kill, then release: {order:?}"
    );
    assert_eq!(
        env.server.requests().len(),
        1,
        "the model was not asked again"
    );
    let texts = env.texts(&id);
    let result = &texts.last().unwrap().1;
    assert!(result.contains("[cancelled by the user"), "{texts:?}");
    acp.close();
}

#[test]
fn a_command_past_its_time_limit_in_the_editors_terminal_is_killed_and_the_model_told() {
    let scratch = tempfile::tempdir().unwrap();
    let env = Env::new(vec![
        Reply::tool_calls(&[(
            "call_t",
            "run_command",
            r#"{"command":"echo started; sleep 30","timeout_secs":1}"#,
        )]),
        Reply::text("It timed out."),
    ]);
    let (mut acp, id) = start_with_terminal(&env);
    let pid = acp.prompt(&id, "sleep");
    let started = Instant::now();
    let (seen, resp) = as_editor(&mut acp, pid, scratch.path(), |_, _| {});
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(
        methods(&seen).contains(&"terminal/kill"),
        "{:?}",
        methods(&seen)
    );
    let second = env.server.requests()[1].json().to_string();
    assert!(second.contains("started"), "{second}");
    assert!(second.contains("[timed out after 1 s"), "{second}");
    acp.close();
}
