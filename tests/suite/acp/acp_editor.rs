//! `neocode acp` using what the editor offers: the MCP servers it passes, its file buffers
//! (`fs/read_text_file` / `fs/write_text_file`), command output on tool call updates, and the
//! model as a session config option.

use super::acp_process::{Acp, agent_text, updates};
use crate::support::bridge::{Env, command_call};
use crate::support::tool_names;

use std::process::Command;

use neocode::testkit::scripted::Reply;
use serde_json::{Value, json};

/// The tiny stdio MCP server the tests pass as the editor's (Python, standard library only).
fn shout_server() -> Option<Value> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/acp-client/mcp-shout.py");
    let python = Command::new("python3").arg("--version").output();
    if !python.is_ok_and(|o| o.status.success()) {
        eprintln!("SKIPPED: python3 is not installed; the editor's MCP server cannot run");
        return None;
    }
    Some(json!({
        "name": "editor",
        "command": "python3",
        "args": [script],
        "env": [{"name": "SHOUT_PREFIX", "value": "EDITOR:"}]
    }))
}

fn allow(_: &Value) -> Value {
    json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}})
}

#[test]
fn the_editors_mcp_server_starts_for_the_session_and_the_model_calls_its_tool() {
    let Some(server) = shout_server() else { return };
    let env = Env::new(vec![
        Reply::tool_calls(&[("call_1", "mcp__editor__shout", r#"{"text":"hi"}"#)]),
        Reply::text("It shouted."),
    ]);
    let mut acp = Acp::start(&env);
    let init = acp.initialize();
    let mcp = &init["result"]["agentCapabilities"]["mcpCapabilities"];
    assert_eq!(mcp["http"], true, "{init}");
    assert_eq!(mcp["sse"], false, "{init}");
    let (_, r) = acp.call(
        "session/new",
        json!({"cwd": env.workdir, "mcpServers": [server]}),
    );
    let id = r["result"]["sessionId"].as_str().unwrap().to_string();
    let pid = acp.prompt(&id, "shout hi");
    let (seen, resp) = acp.until_response(pid, allow);
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    let offered = env.server.requests()[0].json();
    let names = tool_names(&offered);
    assert!(names.contains(&"mcp__editor__shout"), "{names:?}");
    let done = updates(&seen, "tool_call_update");
    let last = done.last().unwrap();
    assert_eq!(last["status"], "completed", "{done:#?}");
    assert_eq!(last["content"][0]["content"]["text"], "EDITOR:HI", "{last}");
    assert_eq!(agent_text(&seen), "It shouted.");
    acp.close();
}

/// Every message up to the response to `id`, answering the editor's side: `fs/read_text_file`
/// with `buffer`, `fs/write_text_file` by keeping what was written, permissions with allow
/// once. Returns (messages seen, the response, the writes as (path, content)).
fn as_editor(acp: &mut Acp, id: u64, buffer: &str) -> (Vec<Value>, Value, Vec<(String, String)>) {
    let (mut seen, mut writes) = (Vec::new(), Vec::new());
    loop {
        let m = acp.next();
        if m["id"] == json!(id) && m.get("method").is_none() {
            return (seen, m, writes);
        }
        let result = match m["method"].as_str() {
            Some("fs/read_text_file") => Some(json!({"content": buffer})),
            Some("fs/write_text_file") => {
                let p = &m["params"];
                writes.push((
                    p["path"].as_str().unwrap().to_string(),
                    p["content"].as_str().unwrap().to_string(),
                ));
                Some(json!({}))
            }
            Some("session/request_permission") => Some(allow(&m)),
            _ => None,
        };
        if let Some(result) = result {
            acp.send(&json!({"jsonrpc": "2.0", "id": m["id"], "result": result}));
        }
        seen.push(m);
    }
}

/// A workspace holding `notes.txt` ("on disk") whose model first reads it (`call_r`), then
/// answers `then`.
fn reading_notes_then(then: Vec<Reply>) -> Env {
    let mut replies = vec![Reply::tool_calls(&[(
        "call_r",
        "read_file",
        r#"{"path":"notes.txt"}"#,
    )])];
    replies.extend(then);
    let env = Env::new(replies);
    std::fs::write(env.workdir.join("notes.txt"), "on disk\n").unwrap();
    env
}

#[test]
fn with_the_editors_fs_the_model_reads_its_buffer_and_writes_go_to_the_editor_not_disk() {
    let env = reading_notes_then(vec![
        Reply::tool_calls(&[(
            "call_w",
            "edit_file",
            r#"{"path":"notes.txt","old_string":"unsaved","new_string":"edited"}"#,
        )]),
        Reply::text("Done."),
    ]);
    let mut acp = Acp::start(&env);
    let (_, init) = acp.call(
        "initialize",
        json!({"protocolVersion": 1,
               "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}}}),
    );
    assert!(init.get("result").is_some(), "{init}");
    let id = acp.new_session(&env);
    let pid = acp.prompt(&id, "edit the notes");
    let (seen, resp, writes) = as_editor(&mut acp, pid, "unsaved buffer\n");
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    let reads: Vec<&Value> = seen
        .iter()
        .filter(|m| m["method"] == "fs/read_text_file")
        .collect();
    let abs = env.workdir.join("notes.txt").display().to_string();
    assert_eq!(reads[0]["params"]["path"], abs.as_str(), "{reads:#?}");
    assert_eq!(reads[0]["params"]["sessionId"], id.as_str());
    let results = updates(&seen, "tool_call_update");
    let read = results
        .iter()
        .find(|u| u["toolCallId"] == "call_r" && u["status"] == "completed")
        .unwrap_or_else(|| panic!("{results:#?}"));
    let text = read["content"][0]["content"]["text"].as_str().unwrap();
    assert!(text.contains("unsaved buffer"), "{text}");
    assert!(!text.contains("on disk"), "{text}");
    // The edit's diff is against the buffer too, shown before the edit is approved.
    let calls = updates(&seen, "tool_call");
    let edit = calls
        .iter()
        .find(|u| u["toolCallId"] == "call_w")
        .unwrap_or_else(|| panic!("{calls:#?}"));
    let diff = &edit["content"][0];
    assert_eq!(diff["type"], "diff", "{edit}");
    assert_eq!(diff["path"], abs.as_str(), "{edit}");
    assert_eq!(diff["oldText"], "unsaved buffer\n", "{edit}");
    assert_eq!(diff["newText"], "edited buffer\n", "{edit}");
    let asked = seen
        .iter()
        .position(|m| m["method"] == "session/request_permission")
        .unwrap();
    let shown = seen
        .iter()
        .position(|m| m["params"]["update"]["toolCallId"] == "call_w")
        .unwrap();
    assert!(shown < asked, "the diff comes before the question");
    assert_eq!(writes, vec![(abs, "edited buffer\n".to_string())]);
    assert_eq!(
        std::fs::read_to_string(env.workdir.join("notes.txt")).unwrap(),
        "on disk\n",
        "the disk is left to the editor"
    );
    // The model read the buffer too (its next request carries the result).
    let second = env.server.requests()[1].json().to_string();
    assert!(second.contains("unsaved buffer"), "{second}");
    acp.close();
}

#[test]
fn an_editor_that_dies_while_reading_a_file_for_the_model_cancels_the_turn() {
    let env = reading_notes_then(vec![Reply::text("Resumed.")]);
    let mut acp = Acp::start(&env);
    acp.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true}}}),
    );
    let id = acp.new_session(&env);
    acp.prompt(&id, "read the notes");
    while acp.next()["method"] != "fs/read_text_file" {}
    let exit = acp.vanish();
    assert!(exit.success(), "{exit}");
    assert_eq!(
        env.server.requests().len(),
        1,
        "the failed read never went to the model"
    );
    let texts = env.texts(&id);
    assert_eq!(texts[0].1, "read the notes", "{texts:?}");
    let out = super::acp_process::run_resume(&env, &id, "go on");
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn without_the_editors_fs_the_file_tools_use_the_disk() {
    let env = reading_notes_then(vec![Reply::text("Read.")]);
    let (mut acp, id) = Acp::opened(&env);
    let pid = acp.prompt(&id, "read the notes");
    let (seen, resp, _) = as_editor(&mut acp, pid, "unsaved buffer\n");
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    assert!(!seen.iter().any(|m| m["method"] == "fs/read_text_file"));
    let results = updates(&seen, "tool_call_update");
    let text = results.last().unwrap()["content"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("on disk"), "{text}");
    acp.close();
}

#[test]
fn a_commands_output_comes_back_as_terminal_text_on_its_tool_call_update() {
    let env = Env::new(vec![
        command_call("call_c", "run_command", "echo hello-from-acp"),
        Reply::text("Ran it."),
    ]);
    let (mut acp, id) = Acp::opened(&env);
    let pid = acp.prompt(&id, "run echo");
    let (seen, resp) = acp.until_response(pid, allow);
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    let call = updates(&seen, "tool_call");
    assert_eq!(call[0]["kind"], "execute", "{call:#?}");
    let done = updates(&seen, "tool_call_update");
    let last = done.last().unwrap();
    assert_eq!(last["toolCallId"], "call_c");
    assert_eq!(last["status"], "completed", "{last}");
    let text = last["content"][0]["content"]["text"].as_str().unwrap();
    assert!(text.starts_with("```console\n"), "{text}");
    assert!(text.contains("hello-from-acp"), "{text}");
    assert!(text.ends_with("\n```"), "{text}");

    // Loading the session replays the same terminal text.
    acp.close();
    let mut acp = Acp::ready(&env);
    let (seen, _) = acp.reopen(&env, "session/load", &id);
    let replayed = updates(&seen, "tool_call_update");
    let text = replayed[0]["content"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(
        text.starts_with("```console\n") && text.contains("hello-from-acp"),
        "{text}"
    );
    acp.close();
}

#[test]
fn the_model_is_a_config_option_listing_the_profiles_and_a_choice_holds_for_the_next_prompt() {
    let env = Env::new(vec![Reply::text("From the other model.")])
        .configured("[providers.alt]\nmodel = \"alt-model\"\n");
    let mut acp = Acp::ready(&env);
    let (_, r) = acp.call("session/new", json!({"cwd": env.workdir, "mcpServers": []}));
    let id = r["result"]["sessionId"].as_str().unwrap().to_string();
    let option = &r["result"]["configOptions"][0];
    assert_eq!(option["id"], "model", "{r}");
    assert_eq!(option["category"], "model", "{r}");
    assert_eq!(option["currentValue"], "default", "{r}");
    let values: Vec<(&str, &str)> = option["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["value"].as_str().unwrap(), o["name"].as_str().unwrap()))
        .collect();
    assert!(
        values.contains(&("provider:alt", "chat:alt-model (alt)")),
        "{values:?}"
    );
    assert_eq!(values[0].0, "default", "{values:?}");

    let (_, r) = acp.call(
        "session/set_config_option",
        json!({"sessionId": id, "configId": "model", "value": "provider:alt"}),
    );
    assert_eq!(
        r["result"]["configOptions"][0]["currentValue"], "provider:alt",
        "{r}"
    );
    let (_, bad) = acp.call(
        "session/set_config_option",
        json!({"sessionId": id, "configId": "model", "value": "nope"}),
    );
    assert_eq!(bad["error"]["code"], -32602, "{bad}");

    let pid = acp.prompt(&id, "hi");
    let (_, resp) = acp.until_response(pid, allow);
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    assert_eq!(env.server.requests()[0].json()["model"], "alt-model");
    acp.close();
}
