//! Property test of the history converters: any sequence of records from a small, overlapping
//! vocabulary (streamed lines sharing message ids, repeated and unknown tool ids, re-appended
//! uuids, results before calls, garbage lines) converts without a panic into documents the
//! store accepts, with every call once and every result after its call.

use crate::support::Env;
use std::io::Write;

use neocode::runtime::import::{self, SourceTool};
use neocode::session::Role;
use neocode::session::file;
use proptest::prelude::*;
use serde_json::{Value, json};

fn claude_record() -> impl Strategy<Value = Value> {
    let uuid = (0u8..12).prop_map(|n| format!("u{n}"));
    let id = (0u8..4).prop_map(|n| format!("t{n}"));
    let mid = (0u8..3).prop_map(|n| format!("m{n}"));
    prop_oneof![
        (uuid.clone(), ".{0,20}").prop_map(|(u, t)| json!({"type": "user", "uuid": u, "message": {"role": "user", "content": t}})),
        (uuid.clone(), mid, id.clone(), any::<bool>(), 0u64..50).prop_map(|(u, m, t, call, out)| {
            let block = if call {
                json!({"type": "tool_use", "id": t, "name": "Bash", "input": {"command": "ls"}})
            } else {
                json!({"type": "text", "text": "hi"})
            };
            json!({"type": "assistant", "uuid": u, "message": {"id": m, "role": "assistant", "content": [block],
                "usage": {"input_tokens": 1, "output_tokens": out}}})
        }),
        (uuid.clone(), id, any::<bool>()).prop_map(|(u, t, e)| json!({"type": "user", "uuid": u,
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": t, "content": "out", "is_error": e}]}})),
        (uuid.clone(), any::<bool>()).prop_map(|(u, side)| json!({"type": "user", "uuid": u, "isSidechain": side,
            "parentUuid": null, "message": {"role": "user", "content": "side"}})),
        uuid.prop_map(|u| json!({"type": "weird", "uuid": u})),
        Just(Value::String("not an object".into())),
    ]
}

fn codex_record() -> impl Strategy<Value = Value> {
    let id = (0u8..4).prop_map(|n| format!("c{n}"));
    let item = |p: Value| json!({"timestamp": "2026-01-01T00:00:00Z", "type": "response_item", "payload": p});
    prop_oneof![
        ".{0,10}".prop_map(move |t| item(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": t}]}))),
        Just(item(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}))),
        Just(item(json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}]}))),
        id.clone().prop_map(move |c| item(json!({"type": "function_call", "name": "shell", "arguments": "{}", "call_id": c}))),
        id.clone().prop_map(move |c| item(json!({"type": "custom_tool_call", "name": "apply_patch", "input": "x", "call_id": c}))),
        (id, 0i64..3).prop_map(move |(c, code)| item(json!({"type": "function_call_output", "call_id": c,
            "output": format!("Process exited with code {code}")}))),
        (1u64..5).prop_map(|n| json!({"timestamp": "2026-01-01T00:00:00Z", "type": "event_msg", "payload": {"type": "token_count",
            "info": {"total_token_usage": {"input_tokens": n * 10, "output_tokens": n}, "last_token_usage": {"input_tokens": 10, "output_tokens": 1}}}})),
        Just(json!({"timestamp": "2026-01-01T00:00:00Z", "type": "compacted", "payload": {"message": "sum"}})),
        Just(json!({"type": "mystery"})),
    ]
}

fn check(tool: SourceTool, name: &str, records: &[Value], torn: bool) -> Result<(), TestCaseError> {
    let env = Env::new();
    let path = env.tmp.path().join(name);
    let mut f = std::fs::File::create(&path).unwrap();
    for r in records {
        writeln!(f, "{r}").unwrap();
    }
    if torn {
        write!(f, "{{\"type\":\"us").unwrap();
    }
    drop(f);
    let conv = import::convert(tool, &path).unwrap();
    prop_assert_eq!(conv.stats.torn_tail, torn);
    let store = env.store();
    for doc in &conv.sessions {
        let mut calls = std::collections::HashSet::new();
        let mut answered = std::collections::HashSet::new();
        for m in &doc.messages {
            for c in &m.tool_calls {
                prop_assert!(calls.insert(c.id.clone()), "call {} twice", c.id);
            }
            if m.role == Role::Tool {
                let id = m.tool_call_id.clone().unwrap();
                prop_assert!(calls.contains(&id), "result {} before its call", id);
                prop_assert!(answered.insert(id.clone()), "result {} twice", id);
            }
        }
        file::import(&store, doc, false).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(
            &file::export(&store, &doc.session.id).unwrap().messages,
            &doc.messages
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn any_claude_record_sequence_converts_into_a_valid_session(records in proptest::collection::vec(claude_record(), 0..40), torn in any::<bool>()) {
        check(SourceTool::ClaudeCode, "s-1.jsonl", &records, torn)?;
    }

    #[test]
    fn any_codex_record_sequence_converts_into_a_valid_session(records in proptest::collection::vec(codex_record(), 0..40), torn in any::<bool>()) {
        check(SourceTool::Codex, "rollout-2026-01-01T00-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000.jsonl", &records, torn)?;
    }
}
