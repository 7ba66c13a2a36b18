//! Headless runs (issue 40): `neocode run --output-format text|json|stream-json`, `-o`,
//! `--quiet`, piped standard input, `--prompt-file` and `--output-schema`, through the real
//! binary against the scripted model server on 127.0.0.1. The stream-json lines are compared
//! with golden lines (ids and versions replaced), one per event type (docs/headless.md).

use std::io::Write;
use std::process::Output;

use crate::support::agent::Env;
use crate::support::{stderr, stdout, warnings};

use neocode::testkit::scripted::{Reply, ScriptedServer, Stream};
use serde_json::{Value, json};

const KEY: &str = "sk-headless-KEY-40aa02";

fn run(env: &Env, srv: &ScriptedServer, args: &[&str]) -> Output {
    env.cmd(Some(srv), args).output().unwrap()
}

/// Runs with `input` piped to standard input.
fn run_piped(env: &Env, srv: &ScriptedServer, args: &[&str], input: &[u8]) -> Output {
    let mut child = env.spawn_fed(srv, args);
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
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}"));
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
    let o = run(
        &env,
        &srv,
        &["run", "--output-format", "stream-json", "what is here?"],
    );
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

#[test]
fn stream_json_golden_error_and_a_failed_result() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![Reply::error(401, "bad key")]);
    let o = run(&env, &srv, &["run", "--output-format", "stream-json", "hi"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let ls = lines(&o);
    let t = types(&ls);
    assert_eq!(t[t.len() - 3..], ["error", "finish", "result"], "{t:?}");
    let err = first(&ls, "error");
    assert_eq!(err["code"], "auth", "{err}");
    let mut keys = err.as_object().unwrap().keys().collect::<Vec<_>>();
    keys.sort();
    assert_eq!(keys, ["code", "message", "type"]);
    let fin = first(&ls, "finish");
    assert_eq!(
        fin,
        json!({"type": "finish", "reason": "failed", "usage": {"input_tokens": 0, "output_tokens": 0}})
    );
    let res = first(&ls, "result");
    assert_eq!(res["is_error"], true);
    assert_eq!(res["exit_code"], 1);
    assert_eq!(res["stop_reason"], "failed");
    assert_eq!(res["answer"], "");
    assert!(res["error"].as_str().unwrap().contains("(auth)"), "{res}");
    // The failure's line is on stderr too, for a script that only reads the exit code.
    assert!(stderr(&o).contains("(auth)"), "{}", stderr(&o));
}

#[test]
fn stream_json_golden_warning_for_cut_piped_input_and_the_prompt_carries_it() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![Reply::text("Reviewed.")]);
    let mut big = b"diff --git a/x b/x\n".to_vec();
    big.resize(300 * 1024, b'+');
    let o = run_piped(
        &env,
        &srv,
        &["run", "--output-format", "stream-json", "review this"],
        &big,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let ls = lines(&o);
    assert_eq!(
        first(&ls, "warning"),
        json!({"type": "warning", "code": "stdin_truncated",
               "message": "standard input was cut to its first 256 KiB of 307200 bytes"})
    );
    let sent = srv.requests()[0].json();
    let user = sent["messages"][1]["content"].as_str().unwrap().to_string();
    assert!(user.starts_with("review this\n\nStandard input:\n<stdin>\ndiff --git a/x b/x\n+++"));
    assert!(user.ends_with("</stdin>\n[standard input was cut to its first 256 KiB of 307200 bytes; the rest was left out]"));
    assert!(user.len() < 256 * 1024 + 300, "{}", user.len());
}

/// The arguments of the one write the model asks for here.
const WRITE_NEW: &str = r#"{"path":"new.txt","content":"hi\n"}"#;

/// A model that writes `new.txt` ([`WRITE_NEW`], call `w1`), then says `then`.
fn writing_new_txt(then: &str) -> (Env, ScriptedServer) {
    Env::new(KEY, "").with_server(vec![
        Reply::tool_calls(&[("w1", "write_file", WRITE_NEW)]),
        Reply::text(then),
    ])
}

#[test]
fn stream_json_golden_approval_request_and_a_denied_write() {
    let (env, srv) = writing_new_txt("I could not write it.");
    let o = run(
        &env,
        &srv,
        &["run", "--output-format", "stream-json", "write it"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let ls = lines(&o);
    let req = first(&ls, "approval_request");
    assert_eq!(
        (&req["call_id"], &req["name"], &req["arguments"]),
        (&json!("w1"), &json!("write_file"), &json!(WRITE_NEW))
    );
    let mut keys: Vec<&String> = req.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "arguments",
            "call_id",
            "name",
            "reason",
            "rules",
            "summary",
            "type"
        ]
    );
    let res = first(&ls, "result");
    assert_eq!(res["answer"], "I could not write it.");
    assert_eq!(res["files_changed"], json!([]));
    assert!(!env.workdir.join("new.txt").exists());
}

/// `run --output-format json --approve never-ask -o out ARGS...`.
fn json_to_file(env: &Env, srv: &ScriptedServer, out: &std::path::Path, args: &[&str]) -> Output {
    let out = out.to_str().unwrap();
    let head = [
        "run",
        "--output-format",
        "json",
        "--approve",
        "never-ask",
        "-o",
        out,
    ];
    let all: Vec<&str> = head.iter().chain(args).copied().collect();
    run(env, srv, &all)
}

#[test]
fn json_is_only_the_result_and_names_the_files_changed() {
    let (env, srv) = writing_new_txt("Written.");
    let out = env.workdir.join("answer.md");
    let o = json_to_file(&env, &srv, &out, &["write it"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ls = lines(&o);
    assert_eq!(types(&ls), ["result"]);
    assert_eq!(ls[0]["answer"], "Written.");
    assert_eq!(ls[0]["files_changed"], json!(["new.txt"]));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "Written.");
}

#[test]
fn a_continued_run_reports_only_its_own_answer_and_files() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![
        Reply::tool_calls(&[("w1", "write_file", WRITE_NEW)]),
        Reply::text("Written."),
        Reply::tool_calls(&[("c1", "list_dir", r#"{"path":"."}"#)]),
        Reply::text("Checked."),
    ]);
    let first = run(&env, &srv, &["run", "--approve", "never-ask", "write it"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let o = run(
        &env,
        &srv,
        &["run", "--continue", "--output-format", "json", "check it"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let ls = lines(&o);
    assert_eq!(types(&ls), ["result"]);
    assert_eq!(ls[0]["answer"], "Checked.");
    assert_eq!(
        ls[0]["files_changed"],
        json!([]),
        "new.txt was the first run's"
    );
    assert_eq!(srv.requests().len(), 4);
}

/// A continued run that compacts between its tool call and its answer: compaction appends a
/// summary and keeps every message, so what the run wrote and said is still after where the
/// session stood before it (the result, `-o`, and not the first run's file).
#[test]
fn a_run_that_compacts_midway_still_reports_its_own_answer_and_files() {
    let (env, srv) = Env::new(KEY, "context_window = 1000\ncompact_at = 0.5\n").with_server(vec![
        Reply::tool_calls(&[("w1", "write_file", WRITE_NEW)]),
        Reply::text("Written."),
        Stream::tool_calls(&[(
            "w2",
            "write_file",
            r#"{"path":"other.txt","content":"two\n"}"#,
        )])
        .usage(900, 10)
        .reply(),
        Stream::text("short summary").usage(50, 5).reply(),
        Reply::text("Done after compaction."),
    ]);
    let first = run(&env, &srv, &["run", "--approve", "never-ask", "write it"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let out = env.workdir.join("answer.txt");
    let o = json_to_file(&env, &srv, &out, &["--continue", "write the other"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(srv.requests().len(), 5, "the compaction call was made");
    assert!(
        srv.requests()[4]
            .json()
            .to_string()
            .contains("short summary"),
        "the answer came after the compaction"
    );
    let ls = lines(&o);
    assert_eq!(types(&ls), ["result"]);
    assert_eq!(ls[0]["answer"], "Done after compaction.");
    assert_eq!(ls[0]["files_changed"], json!(["other.txt"]));
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "Done after compaction."
    );
}

#[test]
fn quiet_text_prints_the_answer_only_and_a_prompt_file_takes_piped_input() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![
        Reply::tool_calls(&[("c1", "list_dir", r#"{"path":"."}"#)]),
        Reply::text("Looks fine."),
    ]);
    let pf = env.workdir.join("task.md");
    std::fs::write(&pf, "Review the diff below.").unwrap();
    let o = run_piped(
        &env,
        &srv,
        &["run", "--quiet", "--prompt-file", pf.to_str().unwrap()],
        b"+ one line\n",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "Looks fine.\n");
    assert_eq!(stderr(&o), "", "--quiet: no tool activity on stderr");
    let sent = srv.requests()[0].json();
    assert_eq!(
        sent["messages"][1]["content"],
        "Review the diff below.\n\nStandard input:\n<stdin>\n+ one line\n</stdin>"
    );
}

#[test]
fn a_limit_ends_with_exit_3_and_the_limit_in_the_result() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![Reply::tool_calls(&[(
        "c1",
        "list_dir",
        r#"{"path":"."}"#,
    )])]);
    let o = run(
        &env,
        &srv,
        &["run", "--output-format", "json", "--max-turns", "1", "look"],
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let ls = lines(&o);
    assert_eq!(ls[0]["stop_reason"], "limit_reached");
    assert_eq!(ls[0]["exit_code"], 3);
    assert!(
        ls[0]["limit"].as_str().unwrap().contains("turn"),
        "{}",
        ls[0]
    );
}

fn schema_file(env: &Env) -> String {
    let p = env.workdir.join("schema.json");
    std::fs::write(
        &p,
        r#"{"type":"object","required":["todos"],"properties":{"todos":{"type":"array","items":{"type":"string"}}}}"#,
    )
    .unwrap();
    p.to_str().unwrap().to_string()
}

/// `run --output-format FORMAT --output-schema schema.json "list the TODOs"`.
fn run_with_schema(env: &Env, srv: &ScriptedServer, format: &str) -> Output {
    let schema = schema_file(env);
    let args = [
        "run",
        "--output-format",
        format,
        "--output-schema",
        &schema,
        "list the TODOs",
    ];
    run(env, srv, &args)
}

#[test]
fn output_schema_invalid_then_valid_is_fixed_by_one_retry() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![
        Reply::text(r#"{"todos": "fix it"}"#),
        Reply::text("```json\n{\"todos\": [\"fix it\"]}\n```"),
    ]);
    let o = run_with_schema(&env, &srv, "json");
    assert!(o.status.success(), "{}", stderr(&o));
    let ls = lines(&o);
    assert_eq!(ls[0]["structured_output"], json!({"todos": ["fix it"]}));
    assert_eq!(ls[0]["exit_code"], 0);
    let reqs = srv.requests();
    assert_eq!(reqs.len(), 2);
    for r in &reqs {
        let rf = &r.json()["response_format"];
        assert_eq!(rf["type"], "json_schema", "sent as structured output: {rf}");
        assert_eq!(rf["json_schema"]["schema"]["required"], json!(["todos"]));
    }
    let first_prompt = reqs[0].json()["messages"][1]["content"].clone();
    assert!(
        first_prompt
            .as_str()
            .unwrap()
            .contains(r#""required":["todos"]"#),
        "the schema is in the prompt: {first_prompt}"
    );
    let retry = reqs[1].json()["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["content"]
        .clone();
    assert!(
        retry.as_str().unwrap().contains("at /todos"),
        "the retry names what was wrong: {retry}"
    );
    assert!(
        stderr(&o).contains("asking the model once to fix it"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_server_that_refuses_structured_output_is_asked_again_without_it_and_told_once() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![
        Reply::error(400, "response_format is not supported by this server"),
        Reply::text(r#"{"todos": ["one"]}"#),
    ]);
    let o = run_with_schema(&env, &srv, "stream-json");
    assert!(o.status.success(), "{}", stderr(&o));
    let ls = lines(&o);
    let warnings = warnings(&ls, "structured_output_refused");
    assert_eq!(warnings.len(), 1, "said once: {ls:#?}");
    let said = warnings[0]["message"].as_str().unwrap();
    assert!(said.contains("response_format is not supported"), "{said}");
    assert_eq!(
        first(&ls, "result")["structured_output"],
        json!({"todos": ["one"]})
    );
    let reqs = srv.requests();
    assert_eq!(reqs.len(), 2);
    assert!(reqs[0].json().get("response_format").is_some());
    assert!(
        reqs[1].json().get("response_format").is_none(),
        "asked again without the option"
    );
}

#[test]
fn output_schema_invalid_twice_exits_1_with_the_validation_error() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![
        Reply::text("Here are the TODOs: fix it."),
        Reply::text(r#"{"todos": [1]}"#),
    ]);
    let o = run_with_schema(&env, &srv, "stream-json");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("the answer is not valid against the output schema: at /todos/0:"),
        "{err}"
    );
    let ls = lines(&o);
    assert_eq!(
        first(&ls, "warning")["code"],
        "output_schema_retry",
        "the first refusal is a warning line"
    );
    let res = first(&ls, "result");
    assert_eq!(res["is_error"], true);
    assert_eq!(res["exit_code"], 1);
    assert!(res.get("structured_output").is_none());
    assert_eq!(srv.requests().len(), 2, "one retry, no more");
}

#[test]
fn a_schema_that_is_not_json_schema_is_bad_usage() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![]);
    let p = env.workdir.join("bad.json");
    std::fs::write(&p, r#"{"type": 12}"#).unwrap();
    let o = run(
        &env,
        &srv,
        &["run", "--output-schema", p.to_str().unwrap(), "x"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("is not a valid JSON Schema"),
        "{}",
        stderr(&o)
    );
    assert!(srv.requests().is_empty());
}

#[test]
fn stream_json_golden_plan_events() {
    let plan = json!({"steps": [{"id": "a", "title": "A"}, {"id": "b", "title": "B", "depends_on": ["a"]}]});
    let (env, srv) = Env::new(KEY, "").with_server(vec![
        Reply::tool_calls(&[("p1", "update_plan", &plan.to_string())]),
        Reply::text("Plan stored."),
        Reply::text("RESULT-a"),
        Reply::text("RESULT-b"),
    ]);
    let o = run(
        &env,
        &srv,
        &[
            "run",
            "--plan",
            "--yes",
            "--output-format",
            "stream-json",
            "two steps",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let ls = lines(&o);
    let t = types(&ls);
    assert_eq!(t.first(), Some(&"run_start"));
    assert_eq!(t.last(), Some(&"result"));
    let proposed = first(&ls, "plan_proposed");
    assert_eq!(proposed["layers"], json!([["a"], ["b"]]), "{proposed}");
    assert_eq!(proposed["approved"], true, "{proposed}");
    let started: Vec<&Value> = ls.iter().filter(|v| v["type"] == "step_started").collect();
    assert_eq!(started.len(), 2);
    assert_eq!(started[0]["step_id"], "a");
    let finished: Vec<Value> = ls
        .iter()
        .filter(|v| v["type"] == "step_finished")
        .map(normal)
        .collect();
    assert_eq!(finished.len(), 2);
    assert_eq!(finished[0]["step_id"], "a");
    assert_eq!(finished[0]["status"], "completed");
    assert_eq!(finished[0]["result"], "RESULT-a");
    assert_eq!(finished[1]["result"], "RESULT-b");
    // A step's own events carry its step, and every line is one event a script can parse.
    assert!(
        ls.iter()
            .any(|v| v["type"] == "text_delta" && v["step_id"] == "b"),
        "{t:?}"
    );
    let res = first(&ls, "result");
    assert_eq!(res["stop_reason"], "completed", "{res}");
    assert_eq!(res["exit_code"], 0);
}

/// `tool_choice = "required"`: the first model call of a prompt must call a tool, the
/// calls after it are free to answer; a bad value is a one-line usage error.
#[test]
fn tool_choice_required_binds_the_first_call_of_a_prompt_only() {
    let (env, srv) = Env::new(KEY, "tool_choice = \"required\"\n").with_server(vec![
        Reply::tool_calls(&[("c1", "list_dir", r#"{"path":"."}"#)]),
        Reply::text("Done."),
    ]);
    let o = run(&env, &srv, &["run", "--output-format", "json", "look"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let reqs = srv.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].json()["tool_choice"], "required");
    assert_eq!(reqs[1].json()["tool_choice"], "auto");

    let bad = Env::new(KEY, "tool_choice = \"always\"\n");
    let o = run(&bad, &srv, &["run", "look"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("tool_choice must be \"auto\" or \"required\""),
        "{}",
        stderr(&o)
    );
}
