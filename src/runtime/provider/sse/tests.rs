use super::*;
use crate::testkit::scripted::{Piece, Stream};

fn fold_all(body: &[u8], split: usize) -> (Vec<StreamEvent>, Completion) {
    let pieces = body.chunks(split.max(1)).map(<[u8]>::to_vec).collect();
    fold_sse_bytes(pieces).unwrap()
}

fn text_of(ev: &[StreamEvent]) -> String {
    ev.iter()
        .filter_map(|e| match e {
            StreamEvent::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn text_stream_in_every_split_gives_the_same_answer() {
    let s = Stream::text("héllo wörld, ünïcode ✓")
        .keep_alives_between()
        .crlf();
    let body = s.body_bytes();
    for split in [1, 2, 3, 7, 64, body.len()] {
        let (ev, c) = fold_all(&body, split);
        assert_eq!(text_of(&ev), "héllo wörld, ünïcode ✓", "split {split}");
        assert_eq!(c.text, "héllo wörld, ünïcode ✓");
        assert_eq!(
            c.usage,
            Usage {
                input_tokens: 10,
                output_tokens: 5
            }
        );
        assert_eq!(c.finish_reason.as_deref(), Some("stop"));
        assert!(c.tool_calls.is_empty());
    }
}

#[test]
fn interleaved_fragmented_tool_calls_are_assembled_by_index() {
    let a = r#"{"path":"src/main.rs","limit":20}"#;
    let b = r#"{"pattern":"fn main","path":"."}"#;
    let s = Stream::new()
        .role()
        .reasoning("think first", 4)
        .interleaved_calls(&[("call_a", "read_file", a), ("call_b", "grep", b)], 5)
        .finish("tool_calls")
        .usage(7, 3)
        .no_done();
    let (ev, c) = fold_all(&s.body_bytes(), 5);
    assert_eq!(c.tool_calls.len(), 2);
    assert_eq!(c.tool_calls[0].id, "call_a");
    assert_eq!(c.tool_calls[0].name, "read_file");
    assert_eq!(c.tool_calls[0].arguments, a);
    assert_eq!(c.tool_calls[1].arguments, b);
    assert_eq!(c.reasoning, "think first");
    assert!(ev.contains(&StreamEvent::Reasoning("thi".into())) || !ev.is_empty());
    assert_eq!(c.usage.input_tokens, 7);
}

#[test]
fn the_deltas_of_one_read_are_one_event() {
    let body = Stream::new()
        .role()
        .text_deltas("one two three four five six", 6)
        .finish("stop")
        .usage(3, 6)
        .body_bytes();
    // Arrived together: one event with the whole text.
    let (ev, c) = fold_all(&body, body.len());
    assert_eq!(
        ev,
        [StreamEvent::Text("one two three four five six".into())]
    );
    assert_eq!(c.text, "one two three four five six");
    // Arrived apart: as many events, the same text.
    let (ev, _) = fold_all(&body, 40);
    assert!(ev.len() > 1, "{ev:?}");
    assert_eq!(text_of(&ev), "one two three four five six");
}

/// A chunk's `field` as one of the shapes servers send, and some they should not.
fn shape() -> impl proptest::strategy::Strategy<Value = Option<Value>> {
    use proptest::prelude::*;
    prop_oneof![
        Just(None),
        Just(Some(Value::Null)),
        "[a-z é\\\\\"]{0,6}".prop_map(|t| Some(Value::String(t))),
        Just(Some(serde_json::json!(""))),
        (0u64..3).prop_map(|n| Some(serde_json::json!(n))),
        Just(Some(serde_json::json!(-1))),
        Just(Some(serde_json::json!(1.5))),
        Just(Some(serde_json::json!(["x"]))),
        Just(Some(serde_json::json!({"message": "m"}))),
        Just(Some(
            serde_json::json!([{"index": 0, "id": "c", "function": {"name": "grep", "arguments": "{}"}}])
        )),
    ]
}

proptest::proptest! {
    /// The borrowed reading of a chunk folds exactly as the JSON tree does, whatever each
    /// field holds (a shape it cannot read goes to the tree).
    #[test]
    fn the_fast_reading_folds_as_the_tree(
        fields in proptest::collection::vec(shape(), 14),
        as_array in proptest::prelude::any::<bool>(),
        twice in proptest::prelude::any::<bool>(),
    ) {
        let put = |o: &mut serde_json::Map<String, Value>, k: &str, v: &Option<Value>| {
            if let Some(v) = v {
                o.insert(k.to_string(), v.clone());
            }
        };
        let mut delta = serde_json::Map::new();
        for (k, v) in ["content", "reasoning_content", "reasoning", "tool_calls"].iter().zip(&fields[..4]) {
            put(&mut delta, k, v);
        }
        let mut choice = serde_json::Map::new();
        put(&mut choice, "index", &fields[4]);
        put(&mut choice, "finish_reason", &fields[5]);
        match &fields[6] {
            Some(Value::Null) => {
                choice.insert("delta".into(), Value::Null);
            }
            Some(_) if as_array => {
                choice.insert("delta".into(), Value::Array(delta.values().cloned().collect()));
            }
            Some(_) => {
                choice.insert("delta".into(), Value::Object(delta));
            }
            None => {}
        }
        put(&mut choice, "message", &fields[7]);
        let mut chunk = serde_json::Map::new();
        put(&mut chunk, "error", &fields[8]);
        put(&mut chunk, "usage", &fields[9].as_ref().map(|v| match v {
            Value::Array(_) => serde_json::json!({"prompt_tokens": 5, "completion_tokens": 2}),
            other => other.clone(),
        }));
        match &fields[10] {
            Some(Value::Null) => {
                chunk.insert("choices".into(), Value::Null);
            }
            Some(Value::String(_)) => {
                chunk.insert("choices".into(), serde_json::json!("x"));
            }
            Some(_) => {
                chunk.insert("choices".into(), Value::Array(vec![Value::Object(choice)]));
            }
            None => {}
        }
        put(&mut chunk, "id", &fields[11]);
        let mut text = Value::Object(chunk).to_string();
        if twice {
            // A duplicate key: the tree keeps the last.
            text = text.replacen('{', r#"{"choices":[{"delta":{"content":"dup"}}],"#, 1);
        }
        let (mut fast, mut tree) = (Folder::new(), Folder::new());
        let (mut fast_out, mut tree_out) = (Vec::new(), Vec::new());
        let a = fast.feed_into(&text, &mut fast_out);
        let b = match serde_json::from_str::<Value>(&text) {
            Ok(v) => tree.value(&v, &mut tree_out),
            Err(_) => Ok(()),
        };
        proptest::prop_assert_eq!(a, b);
        proptest::prop_assert_eq!(fast_out, tree_out);
        proptest::prop_assert_eq!(fast.finish(false), tree.finish(false));
    }
}

#[test]
fn error_chunk_is_an_error_and_junk_lines_are_skipped() {
    let mut f = Folder::new();
    assert!(f.feed("not json").unwrap().is_empty());
    assert!(f.feed("").unwrap().is_empty());
    let e = f.feed(r#"{"error":{"message":"overloaded"}}"#).unwrap_err();
    assert_eq!(e.0, "overloaded");
}

#[test]
fn call_without_id_gets_one_and_empty_arguments_become_an_object() {
    let mut f = Folder::new();
    f.feed(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"list_dir"}}]}}]}"#)
        .unwrap();
    let c = f.finish(true);
    assert!(c.incomplete);
    assert_eq!(c.tool_calls[0].name, "list_dir");
    assert_eq!(c.tool_calls[0].arguments, "{}");
    assert!(c.tool_calls[0].id.starts_with("call_0_"));
}

#[test]
fn raw_event_split_inside_the_data_prefix() {
    let s = Stream::new()
        .piece(Piece::Raw("da".into()))
        .piece(Piece::Raw(
            "ta: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n".into(),
        ));
    let (_, c) = fold_all(&s.body_bytes(), 1);
    assert_eq!(c.text, "x");
}

#[test]
fn repeated_names_and_ids_in_every_delta_fold_into_one_call() {
    // As llama-cpp-python and vLLM stream a call: id and the whole name in every delta.
    let args = r#"{"path":"."}"#;
    let s = Stream::new()
        .role()
        .repeated_tool_call(0, "call__0_list_dir", "list_dir", args, 6)
        .finish("tool_calls");
    for split in [1, 9, 4096] {
        let (_, c) = fold_all(&s.body_bytes(), split);
        assert_eq!(c.tool_calls.len(), 1, "split {split}");
        assert_eq!(c.tool_calls[0].name, "list_dir");
        assert_eq!(c.tool_calls[0].id, "call__0_list_dir");
        assert_eq!(c.tool_calls[0].arguments, args);
        assert_eq!(c.text, "", "content: null is no text");
    }
    // A name that really arrives in pieces is still joined.
    let mut f = Folder::new();
    for n in ["list_", "dir"] {
        f.feed(&format!(
            r#"{{"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"function":{{"name":"{n}"}}}}]}}}}]}}"#
        ))
        .unwrap();
    }
    assert_eq!(f.finish(false).tool_calls[0].name, "list_dir");
}

#[test]
fn a_tool_turn_keeps_its_reasoning_and_signatures_with_provenance_and_cache_counts() {
    let s = Stream::new()
        .role()
        .reasoning("I should list it.", 3)
        .signed_tool_call(0, "call_g", "list_dir", r#"{"path":"."}"#, "sig-G1")
        .tool_call(1, "call_h", "grep", "{}", 1)
        .finish("tool_calls")
        .usage_detail(1200, 60, 1024, 40);
    let mut f = Folder::new();
    f.set_origin("openai", "deepseek-reasoner");
    for p in &s.pieces {
        if let Piece::Data(v) = p {
            f.feed(&v.to_string()).unwrap();
        }
    }
    let c = f.finish(false);
    assert_eq!(c.usage.input_tokens, 176, "cached tokens are counted apart");
    assert_eq!(c.detail.cached_input_tokens, 1024);
    assert_eq!(c.detail.reasoning_tokens, 40);
    assert_eq!(c.reasoning, "I should list it.");
    let items: Vec<(&str, Option<&str>, Option<&str>)> = c
        .reasoning_items
        .iter()
        .map(|r| {
            let p = r.replay.as_ref().unwrap();
            assert_eq!(
                (p.provider.as_str(), p.model.as_str()),
                ("openai", "deepseek-reasoner")
            );
            (r.text.as_str(), p.id.as_deref(), p.signature.as_deref())
        })
        .collect();
    assert_eq!(
        items,
        [
            ("I should list it.", None, None),
            ("", Some("call_g"), Some("sig-G1"))
        ]
    );
    // DeepSeek's own cache fields.
    let mut f = Folder::new();
    f.feed(r#"{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":5,"prompt_cache_hit_tokens":64,"prompt_cache_miss_tokens":36}}"#)
        .unwrap();
    let c = f.finish(false);
    assert_eq!(
        (c.usage.input_tokens, c.detail.cached_input_tokens),
        (36, 64)
    );
}

#[test]
fn reasoning_without_calls_is_text_only_and_sent_once_under_either_key() {
    let mut f = Folder::new();
    f.set_origin("openai", "m");
    f.feed(r#"{"choices":[{"index":0,"delta":{"reasoning_content":"hm","reasoning":"hm"}}]}"#)
        .unwrap();
    f.feed(r#"{"choices":[{"index":0,"delta":{"reasoning":" ok","content":"hi"}}]}"#)
        .unwrap();
    let c = f.finish(false);
    assert_eq!(c.reasoning, "hm ok");
    assert!(c.reasoning_items.is_empty(), "{:?}", c.reasoning_items);
}

#[test]
fn a_stream_without_usage_says_so_and_length_is_kept() {
    let s = Stream::new()
        .role()
        .text_deltas("a long answer that", 3)
        .finish("length");
    let mut f = Folder::new();
    for p in &s.pieces {
        if let Piece::Data(v) = p {
            f.feed(&v.to_string()).unwrap();
        }
    }
    assert!(!f.usage_reported(), "no usage chunk arrived");
    let c = f.finish(false);
    assert_eq!(c.finish_reason.as_deref(), Some("length"));
    assert_eq!(c.usage, Usage::default());
    let mut f = Folder::new();
    f.feed(&crate::testkit::scripted::usage_chunk(0, 0).to_string())
        .unwrap();
    assert!(f.usage_reported(), "a reported zero is reported");
}
