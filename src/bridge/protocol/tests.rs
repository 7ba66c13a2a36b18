use serde_json::Value;

use super::*;
use crate::runtime::agent::plan::SKIPPED;
use crate::runtime::agent::{FailCode, FinishReason, TurnEvent, WarningCode};
use crate::runtime::tools::ToolKind;
use crate::session::Usage;

fn err_code(line: &str) -> String {
    match parse_request(line.as_bytes()) {
        Err(Event::Error { code, .. }) => code,
        other => panic!("expected an error for {line:?}, got {other:?}"),
    }
}

#[test]
fn malformed_lines_become_error_events() {
    assert_eq!(err_code("{not json"), "invalid_json");
    assert_eq!(err_code("[1,2]"), "invalid_request");
    assert_eq!(err_code(r#"{"messages":[]}"#), "invalid_request");
    assert_eq!(err_code(r#"{"type":"dance"}"#), "unknown_type");
    assert_eq!(err_code(r#"{"type":"chat"}"#), "invalid_request");
    assert_eq!(
        err_code(r#"{"type":"approval","call_id":"c","decision":"maybe"}"#),
        "invalid_request"
    );
    match parse_request(b"\xff\xfe") {
        Err(Event::Error { code, .. }) => assert_eq!(code, "invalid_utf8"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn error_names_the_path_and_keeps_the_request_id() {
    let e = parse_request(
        br#"{"type":"chat","request_id":"r9","messages":[{"role":"user","content":"x","tool_calls":[{"id":1}]}]}"#,
    )
    .unwrap_err();
    let v: Value = serde_json::from_str(&e.to_line()).unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["request_id"], "r9");
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("messages[0].tool_calls[0]"),
        "{v}"
    );
}

#[test]
fn chat_parses_openai_messages() {
    let r = parse_request(
        br#"{"type":"chat","request_id":"r1","session_id":"abc","conversation_key":"k",
            "cwd":"/tmp","model":"m","limits":{"max_turns":3},
            "messages":[{"role":"system","content":"be nice"},
                        {"role":"user","content":[{"type":"text","text":"hi"}]},
                        {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{}"}}]},
                        {"role":"tool","tool_call_id":"c1","content":"data"}]}"#,
    )
    .unwrap();
    let Request::Chat(c) = r else { panic!() };
    assert_eq!(c.request_id.as_deref(), Some("r1"));
    assert_eq!(c.messages.len(), 4);
    assert_eq!(c.messages[2].tool_calls[0].function.name, "read_file");
    assert_eq!(c.limits.unwrap().max_turns, Some(3));
    assert!(!c.new_session);
}

#[test]
fn the_documented_example_lines_parse() {
    let doc = include_str!("../../../docs/bridge.md");
    let mut requests = 0;
    for line in doc.lines() {
        if let Some(req) = line.strip_prefix("→ ") {
            parse_request(req.as_bytes()).unwrap_or_else(|e| panic!("{req}: {e:?}"));
            requests += 1;
        } else if let Some(ev) = line.strip_prefix("← ") {
            let v: Value = serde_json::from_str(ev).unwrap();
            assert!(v["type"].is_string(), "{ev}");
        }
    }
    assert!(requests > 0);
}

#[test]
fn every_event_has_a_type() {
    let events = [
        Event::ProtocolAck {
            protocol: PROTOCOL_NAME,
            version: PROTOCOL_VERSION,
        },
        Event::SessionInit {
            request_id: None,
            session_id: "s".into(),
            recovered: false,
            recovery_reason: None,
        },
        Event::warning(Some("r".into()), "w", "m"),
        Event::error(None, "e", "m"),
    ];
    for e in events {
        let v: Value = serde_json::from_str(&e.to_line()).unwrap();
        assert!(v["type"].is_string(), "{v}");
    }
    let v: Value = serde_json::from_str(
        &Event::SessionInit {
            request_id: None,
            session_id: "s".into(),
            recovered: false,
            recovery_reason: None,
        }
        .to_line(),
    )
    .unwrap();
    // The seed's shape: recovery_reason is always present, null when not recovered.
    assert!(v["recovery_reason"].is_null() && v.get("recovery_reason").is_some());
}

#[test]
fn turn_events_are_the_wire_lines() {
    use crate::session::{StepFailure, ToolCall};
    let usage = Usage {
        input_tokens: 3,
        output_tokens: 1,
    };
    let lines =
        |e: TurnEvent| -> Vec<String> { turn_lines(&e).iter().map(Value::to_string).collect() };
    assert_eq!(
        lines(TurnEvent::ToolCall {
            call: ToolCall {
                id: "c1".into(),
                name: "read_file".into(),
                arguments: r#"{"path":"a"}"#.into(),
            },
            kind: ToolKind::Read,
            summary: "read a".into(),
        }),
        [
            r#"{"arguments":"{\"path\":\"a\"}","call_id":"c1","kind":"read","name":"read_file","summary":"read a","type":"tool_call"}"#
        ]
    );
    assert_eq!(
        lines(TurnEvent::Finished {
            reason: FinishReason::Failed {
                code: FailCode::Auth,
                message: "no key".into(),
            },
            usage,
        }),
        [
            r#"{"code":"auth","message":"no key","type":"error"}"#,
            r#"{"reason":"failed","type":"finish","usage":{"input_tokens":3,"output_tokens":1}}"#
        ]
    );
    assert_eq!(
        lines(TurnEvent::Finished {
            reason: FinishReason::LimitReached("max_turns 2".into()),
            usage,
        }),
        [
            r#"{"limit":"max_turns 2","reason":"limit_reached","type":"finish","usage":{"input_tokens":3,"output_tokens":1}}"#
        ]
    );
    assert_eq!(
        lines(TurnEvent::Step {
            step_id: "s1".into(),
            event: Box::new(TurnEvent::TextDelta("hi".into())),
        }),
        [r#"{"step_id":"s1","text":"hi","type":"text_delta"}"#]
    );
    assert_eq!(
        lines(TurnEvent::StepFinished {
            step_id: "s2".into(),
            outcome: Err(StepFailure {
                error_type: SKIPPED.into(),
                message: "s1 failed".into(),
                traceback: None,
            }),
            usage,
            elapsed_ms: 5,
        }),
        [
            r#"{"elapsed_ms":5,"error_type":"skipped","message":"s1 failed","status":"skipped","step_id":"s2","type":"step_finished","usage":{"input_tokens":3,"output_tokens":1}}"#
        ]
    );
    assert_eq!(
        lines(TurnEvent::Started {
            session_id: "abc".into()
        }),
        [r#"{"session_id":"abc","type":"session_init"}"#]
    );
}

#[test]
fn typed_codes_are_the_same_wire_lines() {
    let line =
        |e: TurnEvent| -> Vec<String> { turn_lines(&e).iter().map(Value::to_string).collect() };
    let warning = |code| TurnEvent::Warning {
        code,
        message: "m".into(),
    };
    assert_eq!(
        line(warning(WarningCode::ReplayingInterruptedCalls)),
        [r#"{"code":"replaying_interrupted_calls","message":"m","type":"warning"}"#]
    );
    assert_eq!(
        line(warning(WarningCode::Retrying)),
        [r#"{"code":"retrying","message":"m","type":"warning"}"#]
    );
    assert_eq!(
        line(warning(WarningCode::McpServerFailed)),
        [r#"{"code":"mcp_server_failed","message":"m","type":"warning"}"#]
    );
    assert_eq!(
        line(TurnEvent::Compacting {
            message: "m".into()
        }),
        [r#"{"code":"compacting","message":"m","type":"warning"}"#]
    );
    assert_eq!(
        line(TurnEvent::CompactionFailed {
            message: "m".into()
        }),
        [r#"{"code":"compaction_failed","message":"m","type":"warning"}"#]
    );
    for (code, text) in [
        (FailCode::ServerError, "server_error"),
        (FailCode::StreamCut, "stream_cut"),
        (FailCode::PlanFailed, "plan_failed"),
        (FailCode::PlanConflict, "plan_conflict"),
        (FailCode::Busy, "busy"),
    ] {
        let got = line(TurnEvent::Finished {
            reason: FinishReason::Failed {
                code,
                message: "m".into(),
            },
            usage: Usage::default(),
        });
        assert_eq!(
            got.first().map(String::as_str),
            Some(format!(r#"{{"code":"{text}","message":"m","type":"error"}}"#).as_str())
        );
    }
    for &code in WarningCode::ALL {
        let v = turn_lines(&warning(code));
        assert_eq!(v[0]["code"], code.as_str());
    }
    for &code in FailCode::ALL {
        let v = turn_lines(&TurnEvent::Finished {
            reason: FinishReason::Failed {
                code,
                message: "m".into(),
            },
            usage: Usage::default(),
        });
        assert_eq!(v[0]["code"], code.as_str());
    }
}
