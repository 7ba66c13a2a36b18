//! Headless runs (issue 40): `neocode run --output-format text|json|stream-json`, `-o`,
//! `--quiet`, piped standard input, `--prompt-file` and `--output-schema`, through the real
//! binary against the scripted model server on 127.0.0.1. The stream-json lines are compared
//! with golden lines (ids and versions replaced), one per event type (docs/headless.md).

use std::io::Write;
use std::process::{Output, Stdio};

use crate::support::agent::Env;
use crate::support::{stderr, stdout};

use neocode::testkit::scripted::{Reply, ScriptedServer, Stream};
use serde_json::{Value, json};

const KEY: &str = "sk-headless-KEY-40aa02";

fn run(env: &Env, srv: &ScriptedServer, args: &[&str]) -> Output {
    env.cmd(Some(srv), args).output().unwrap()
}

/// Runs with `input` piped to standard input.
fn run_piped(env: &Env, srv: &ScriptedServer, args: &[&str], input: &[u8]) -> Output {
    let mut child = env
        .cmd(Some(srv), args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let data = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&data);
    });
    let o = child.wait_with_output().unwrap();
    writer.join().unwrap();
    o
}

/// Every stdout line parsed: a line that is not one JSON object fails the test.
fn lines(o: &Output) -> Vec<Value> {
    stdout(o)
        .lines()
        .map(|l| {
            let v: Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}"));
            assert!(v.is_object() && v["type"].is_string(), "not an event: {l}");
            v
        })
        .collect()
}

/// A line with ids, versions and timings replaced by placeholders.
fn normal(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        for (k, ph) in [
            ("session_id", "<session>"),
            ("neocode_version", "<version>"),
        ] {
            if o.get(k).is_some_and(Value::is_string) {
                o.insert(k.into(), json!(ph));
            }
        }
    }
    v
}

/// The first line of `ty`, normalised.
fn first(ls: &[Value], ty: &str) -> Value {
    let v = ls
        .iter()
        .find(|v| v["type"] == ty)
        .unwrap_or_else(|| panic!("no {ty} line in {ls:#?}"));
    normal(v)
}

fn types(ls: &[Value]) -> Vec<&str> {
    ls.iter().map(|v| v["type"].as_str().unwrap()).collect()
}

#[test]
fn stream_json_golden_lines_of_a_tool_turn() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![
        Reply::tool_calls(&[("c1", "list_dir", r#"{"path":"."}"#)]),
        Stream::text("Only a.txt.").reasoning("Look.", 1).reply(),
    ]);
    std::fs::write(env.workdir.join("a.txt"), "x").unwrap();
    let o = run(&env, &srv, &["run", "--output-format", "stream-json", "what is here?"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "", "stream-json keeps stderr quiet");
    let ls = lines(&o);
    let t = types(&ls);
    assert_eq!(t.first(), Some(&"run_start"));
    assert_eq!(t.last(), Some(&"result"));
    assert_eq!(t[t.len() - 2], "finish");
    assert_eq!(
        first(&ls, "run_start"),
        json!({"type": "run_start", "version": 1, "neocode_version": "<version>"})
    );
    assert_eq!(
        first(&ls, "session_init"),
        json!({"type": "session_init", "session_id": "<session>"})
    );
    assert_eq!(
        first(&ls, "tool_call"),
        json!({"type": "tool_call", "call_id": "c1", "name": "list_dir",
               "arguments": r#"{"path":"."}"#, "kind": "read", "summary": "list_dir ."})
    );
    let result = first(&ls, "tool_result");
    assert_eq!(
        result,
        json!({"type": "tool_result", "call_id": "c1", "is_error": false, "seq": 3,
               "text": "./\n  a.txt\n", "permission": {"by": "policy", "decision": "allow"}})
    );
    assert_eq!(
        first(&ls, "message_stored"),
        json!({"type": "message_stored", "seq": 2, "usage": {"input_tokens": 20, "output_tokens": 8}})
    );
    assert_eq!(
        first(&ls, "reasoning_delta"),
        json!({"type": "reasoning_delta", "text": "Look."})
    );
    assert_eq!(
        first(&ls, "text_delta"),
        json!({"type": "text_delta", "text": "Only"})
    );
    assert_eq!(
        first(&ls, "finish"),
        json!({"type": "finish", "reason": "completed", "usage": {"input_tokens": 30, "output_tokens": 13}})
    );
    assert_eq!(
        first(&ls, "result"),
        json!({"type": "result", "version": 1, "session_id": "<session>",
               "stop_reason": "completed", "limit": null, "is_error": false, "exit_code": 0,
               "answer": "Only a.txt.", "usage": {"input_tokens": 30, "output_tokens": 13},
               "cost_usd": null, "files_changed": [], "error": null})
    );
    // The result names the session the turn ran in.
    let sid = ls.iter().find(|v| v["type"] == "session_init").unwrap()["session_id"].clone();
    assert_eq!(ls.last().unwrap()["session_id"], sid);
}
