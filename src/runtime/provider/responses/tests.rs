use super::*;
use crate::runtime::provider::anthropic;
use crate::runtime::provider::http::fold_wire_bytes;
use crate::testkit::scripted_wire::{Messages, ResponsesStream};

#[test]
fn an_output_schema_is_the_text_format() {
    let st = ApiSettings::for_test("http://127.0.0.1:9/v1", "gpt-5");
    let p = Responses::new(st).unwrap();
    let mut req = ChatRequest {
        messages: vec![ChatMessage::user_text("list")],
        ..ChatRequest::default()
    };
    assert!(p.body(&req).get("text").is_none());
    req.output_schema = Some(json!({"type": "object"}));
    assert_eq!(
        p.body(&req)["text"],
        json!({"format": {"type": "json_schema", "name": "output", "schema": {"type": "object"}, "strict": false}})
    );
}

#[test]
fn a_stream_with_reasoning_and_a_call_folds_into_one_completion() {
    let mut f = Fold::new("gpt-5");
    let evs = [
        json!({"type": "response.created", "response": {"status": "in_progress"}}),
        json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
        json!({"type": "response.reasoning_summary_part.added", "output_index": 0}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "delta": "Plan"}),
        json!({"type": "response.output_item.done", "output_index": 0,
            "item": {"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAA",
                "summary": [{"type": "summary_text", "text": "Plan"}]}}),
        json!({"type": "response.output_item.added", "output_index": 1,
            "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1",
                "name": "grep", "arguments": ""}}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "{\"pat"}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "tern\":\"x\"}"}),
        json!({"type": "response.output_item.done", "output_index": 1,
            "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1",
                "name": "grep", "arguments": "{\"pattern\":\"x\"}"}}),
        json!({"type": "response.completed", "response": {"status": "completed", "usage": {
            "input_tokens": 1000, "input_tokens_details": {"cached_tokens": 800},
            "output_tokens": 50, "output_tokens_details": {"reasoning_tokens": 30}}}}),
    ];
    let mut out = Vec::new();
    for e in &evs {
        out.extend(f.feed("", &e.to_string()).unwrap());
    }
    assert_eq!(out, [StreamEvent::Reasoning("Plan".into())]);
    let c = f.finish(false);
    assert_eq!(
        c.tool_calls,
        [ToolCall {
            id: "call_1".into(),
            name: "grep".into(),
            arguments: r#"{"pattern":"x"}"#.into()
        }]
    );
    assert_eq!(
        c.usage,
        Usage {
            input_tokens: 200,
            output_tokens: 50
        }
    );
    assert_eq!(c.detail.cached_input_tokens, 800);
    assert_eq!(c.detail.reasoning_tokens, 30);
    let r = c.reasoning_items[0].replay.as_ref().unwrap();
    assert_eq!(
        (r.id.as_deref(), r.encrypted.as_deref()),
        (Some("rs_1"), Some("gAAA"))
    );
    assert_eq!(c.finish_reason.as_deref(), Some("tool_calls"));
}

#[test]
fn incomplete_keeps_its_reason_and_errors_say_theirs() {
    let mut f = Fold::new("gpt-5");
    f.feed(
        "",
        &json!({"type": "response.output_text.delta", "output_index": 0, "delta": "Hal"})
            .to_string(),
    )
    .unwrap();
    f.feed(
        "",
        &json!({"type": "response.incomplete", "response": {"status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"}, "usage": {}}})
        .to_string(),
    )
    .unwrap();
    assert!(f.is_done());
    let c = f.finish(false);
    assert_eq!(
        c.stop,
        Some(StopNote::Truncated("max_output_tokens".into()))
    );
    let mut f = Fold::new("gpt-5");
    let e = f
        .feed(
            "error",
            r#"{"type":"error","code":"server_error","message":"try again"}"#,
        )
        .unwrap_err();
    assert!(e.retryable);
    assert_eq!(e.message, "try again (server_error)");
}

/// llama.cpp's `llama-server` ends a reply cut at `max_output_tokens` with
/// `response.completed`: one that used the whole limit is cut all the same (`length`, as
/// `response.incomplete` gives), and one that stopped short of it, or called a tool, is not.
#[test]
fn a_completed_reply_that_used_the_whole_limit_is_cut() {
    let completed = |out: u64| {
        json!({"type": "response.completed", "response": {"status": "completed",
            "usage": {"input_tokens": 30, "output_tokens": out}}})
        .to_string()
    };
    let text = json!({"type": "response.output_text.delta", "output_index": 0,
        "delta": "Once"})
    .to_string();
    let fold = |limit: Option<u64>, out: u64| {
        let mut f = Fold::new("smollm2").with_limit(limit);
        f.feed("", &text).unwrap();
        f.feed("", &completed(out)).unwrap();
        let c = f.finish(false);
        (c.stop, c.finish_reason)
    };
    let cut = (
        Some(StopNote::Truncated("max_output_tokens".into())),
        Some("length".to_string()),
    );
    let stop = (None, Some("stop".to_string()));
    assert_eq!(fold(Some(8), 8), cut);
    assert_eq!(fold(Some(8), 5), stop);
    assert_eq!(fold(None, 8), stop);
    let mut f = Fold::new("smollm2").with_limit(Some(8));
    f.feed(
        "",
        &json!({"type": "response.output_item.done", "output_index": 0,
            "item": {"type": "function_call", "call_id": "c1", "name": "list_dir",
            "arguments": "{}"}})
        .to_string(),
    )
    .unwrap();
    f.feed("", &completed(8)).unwrap();
    let c = f.finish(false);
    assert_eq!(
        (c.stop, c.finish_reason.as_deref()),
        (None, Some("tool_calls"))
    );
}

#[test]
fn max_tokens_is_sent_as_max_output_tokens() {
    let mut st = ApiSettings::for_test("http://127.0.0.1:9/v1", "smollm2");
    st.http.max_tokens = Some(8);
    let p = Responses::new(st).unwrap();
    let b = p.body(&ChatRequest {
        system: String::new(),
        messages: vec![ChatMessage::user_text("hi")],
        tools: vec![],
        cache_key: String::new(),
        output_schema: None,
        require_tool: false,
    });
    assert_eq!(b["max_output_tokens"], 8);
}

#[test]
fn the_body_is_stateless_with_cache_key_and_own_reasoning_replayed() {
    let mut st = ApiSettings::for_test("http://127.0.0.1:9/v1", "gpt-5");
    st.reasoning_effort = Some("high".into());
    st.http.max_retries = 0;
    let p = Responses::new(st).unwrap();
    let item = |provider: &str| Reasoning {
        text: "sum".into(),
        replay: Some(Box::new(ReasoningReplay {
            provider: provider.into(),
            model: "gpt-5".into(),
            id: Some("rs_9".into()),
            signature: None,
            encrypted: Some("enc".into()),
            redacted: false,
        })),
    };
    let req = ChatRequest {
        system: "rules".into(),
        messages: vec![
            ChatMessage::user_text("hi"),
            ChatMessage::Assistant {
                text: "looking".into(),
                reasoning: vec![item(NAME), item("anthropic")],
                tool_calls: vec![ToolCall {
                    id: "call_1".into(),
                    name: "grep".into(),
                    arguments: "{}".into(),
                }],
            },
            ChatMessage::ToolResult {
                call_id: "call_1".into(),
                text: "found".into(),
                is_error: false,
            },
        ],
        tools: vec![],
        cache_key: "session-1".into(),
        output_schema: None,
        require_tool: false,
    };
    let b = p.body(&req);
    assert!(b.get("max_output_tokens").is_none(), "{b}");
    assert_eq!(b["store"], false);
    assert_eq!(b["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(b["reasoning"], json!({"summary": "auto", "effort": "high"}));
    assert_eq!(b["prompt_cache_key"], "session-1");
    assert_eq!(b["instructions"], "rules");
    let input = b["input"].as_array().unwrap();
    let kinds: Vec<&str> = input
        .iter()
        .map(|i| i["type"].as_str().unwrap_or("user"))
        .collect();
    assert_eq!(
        kinds,
        [
            "user",
            "reasoning",
            "message",
            "function_call",
            "function_call_output"
        ]
    );
    assert_eq!(input[1]["encrypted_content"], "enc");
    assert_eq!(input[1]["summary"][0]["text"], "sum");
    assert!(
        input[1].get("id").is_none(),
        "store: false keeps no item to point at"
    );
}

#[test]
fn both_streams_fold_the_same_in_every_split() {
    let m = Messages::start(3, 0, 0)
        .thinking("ünï think", "sig", 3)
        .text("héllo ✓", 4)
        .ping()
        .tool_use("t1", "grep", r#"{"pattern":"ä"}"#, 5)
        .stop("tool_use", 7)
        .body_bytes();
    let r = ResponsesStream::start()
        .reasoning("rs_1", "plän", "enc", 2)
        .text("héllo ✓", 4)
        .function_call("c1", "grep", r#"{"pattern":"ä"}"#, 5)
        .completed(10, 4, 7, 2)
        .body_bytes();
    for split in [1, 2, 3, 7, 64, 4096] {
        let pieces = |b: &[u8]| b.chunks(split).map(<[u8]>::to_vec).collect();
        let (_, a) = fold_wire_bytes(pieces(&m), anthropic::Fold::new("m")).unwrap();
        assert_eq!(a.text, "héllo ✓", "split {split}");
        assert_eq!(a.reasoning, "ünï think");
        assert_eq!(a.tool_calls[0].arguments, r#"{"pattern":"ä"}"#);
        let (_, o) = fold_wire_bytes(pieces(&r), Fold::new("m")).unwrap();
        assert_eq!(o.text, "héllo ✓", "split {split}");
        assert_eq!(o.reasoning, "plän");
        assert_eq!(o.tool_calls[0].arguments, r#"{"pattern":"ä"}"#);
        assert_eq!(o.detail.cached_input_tokens, 4);
    }
}
