//! `neocode acp` using what the editor offers: the MCP servers it passes, its file buffers
//! (`fs/read_text_file` / `fs/write_text_file`), command output on tool call updates, and the
//! model as a session config option.

use super::acp_process::{Acp, agent_text, updates};
use crate::support::bridge::Env;

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
    assert_eq!(mcp["http"], false, "{init}");
    assert_eq!(mcp["sse"], false, "{init}");
    let (_, r) = acp.call(
        "session/new",
        json!({"cwd": env.workdir, "mcpServers": [server]}),
    );
    let id = r["result"]["sessionId"].as_str().unwrap().to_string();
    let pid = acp.request(
        "session/prompt",
        json!({"sessionId": id, "prompt": [{"type": "text", "text": "shout hi"}]}),
    );
    let (seen, resp) = acp.until_response(pid, allow);
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    let offered = env.server.requests()[0].json();
    let names: Vec<&str> = offered["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(names.contains(&"mcp__editor__shout"), "{names:?}");
    let done = updates(&seen, "tool_call_update");
    let last = done.last().unwrap();
    assert_eq!(last["status"], "completed", "{done:#?}");
    assert_eq!(last["content"][0]["content"]["text"], "EDITOR:HI", "{last}");
    assert_eq!(agent_text(&seen), "It shouted.");
    acp.close();
}
