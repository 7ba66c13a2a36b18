//! The OpenAI provider against a real HTTP server on 127.0.0.1 (the scripted server).

use std::time::{Duration, Instant};

use neocode::runtime::provider::{
    ChatRequest, ErrorKind, OpenAi, OpenAiSettings, Provider, StreamEvent,
};
use neocode::runtime::scripted::{Reply, ScriptedServer, Stream};
use neocode::runtime::tools::CancelFlag;

const KEY: &str = "sk-test-SECRET-0123456789";

fn provider(srv: &ScriptedServer) -> OpenAi {
    let mut s = OpenAiSettings::new(&srv.base_url(), "test-model", Some(KEY.into()));
    s.backoff = Duration::from_millis(20);
    s.idle_timeout = Duration::from_secs(5);
    OpenAi::new(s).unwrap()
}

fn req() -> ChatRequest {
    ChatRequest {
        messages: vec![serde_json::json!({"role": "user", "content": "hi"})],
        tools: vec![],
    }
}

fn call(
    p: &mut OpenAi,
) -> (
    Vec<StreamEvent>,
    Result<neocode::runtime::provider::Completion, neocode::runtime::provider::ProviderError>,
) {
    let mut evs = Vec::new();
    let r = p.stream(&req(), &CancelFlag::default(), &mut |e| evs.push(e));
    (evs, r)
}

#[test]
fn streams_text_with_keepalives_crlf_and_small_writes() {
    let srv = ScriptedServer::start(vec![
        Stream::text("Hello there, friend.")
            .keep_alives_between()
            .crlf()
            .write_size(3)
            .reply(),
    ])
    .unwrap();
    let mut p = provider(&srv);
    let (evs, r) = call(&mut p);
    let c = r.unwrap();
    assert_eq!(c.text, "Hello there, friend.");
    assert!(!c.incomplete);
    assert!(evs.len() >= 3, "text arrives in deltas: {evs:?}");
    assert_eq!(c.usage.input_tokens, 10);
    let reqs = srv.requests();
    assert_eq!(reqs.len(), 1);
    let body = reqs[0].json();
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
    assert_eq!(reqs[0].path, "/v1/chat/completions");
    assert_eq!(
        reqs[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[test]
fn fragmented_and_interleaved_tool_calls_without_done() {
    let a = r#"{"path":"a.txt"}"#;
    let b = r#"{"steps":[{"id":"s1","title":"one"}]}"#;
    let srv = ScriptedServer::start(vec![
        Stream::new()
            .role()
            .interleaved_calls(&[("c1", "read_file", a), ("c2", "update_plan", b)], 4)
            .finish("tool_calls")
            .usage(3, 4)
            .no_done()
            .reply(),
    ])
    .unwrap();
    let mut p = provider(&srv);
    let c = call(&mut p).1.unwrap();
    assert_eq!(c.tool_calls.len(), 2);
    assert_eq!(c.tool_calls[0].arguments, a);
    assert_eq!(c.tool_calls[1].name, "update_plan");
    assert_eq!(c.tool_calls[1].arguments, b);
    assert_eq!(c.finish_reason.as_deref(), Some("tool_calls"));
}

#[test]
fn unauthorized_is_auth_error_without_the_key() {
    let srv = ScriptedServer::start(vec![Reply::error(
        401,
        &format!("Incorrect API key provided: {KEY}"),
    )])
    .unwrap();
    let mut p = provider(&srv);
    let e = call(&mut p).1.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Auth);
    assert!(e.message.contains("NEOCODE_API_KEY"), "{}", e.message);
    assert!(!e.message.contains("SECRET"), "{}", e.message);
    assert_eq!(srv.request_count(), 1, "401 is not retried");
}

#[test]
fn not_found_names_model_and_url() {
    let srv = ScriptedServer::start(vec![Reply::error(404, "model not found")]).unwrap();
    let mut p = provider(&srv);
    let e = call(&mut p).1.unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotFound);
    assert!(e.message.contains("test-model"));
    assert!(e.message.contains("/v1/chat/completions"));
}

#[test]
fn rate_limit_then_success_honours_retry_after() {
    let srv = ScriptedServer::start(vec![Reply::rate_limited(1), Reply::text("ok now")]).unwrap();
    let mut p = provider(&srv);
    let t = Instant::now();
    let c = call(&mut p).1.unwrap();
    assert_eq!(c.text, "ok now");
    assert_eq!(srv.request_count(), 2);
    assert!(
        t.elapsed() >= Duration::from_millis(900),
        "waited for Retry-After"
    );
}

#[test]
fn server_errors_are_retried_then_reported() {
    let srv = ScriptedServer::start(vec![
        Reply::error(500, "boom"),
        Reply::error(502, "boom"),
        Reply::error(503, "boom"),
        Reply::error(500, "still boom"),
        Reply::text("never reached"),
    ])
    .unwrap();
    let mut p = provider(&srv);
    let e = call(&mut p).1.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Server);
    assert!(e.message.contains("still boom"), "{}", e.message);
    assert!(e.message.contains("4 attempts"), "{}", e.message);
    assert_eq!(srv.request_count(), 4, "bounded: 1 try + 3 retries");
}

#[test]
fn cut_mid_reply_keeps_what_arrived() {
    let srv = ScriptedServer::start(vec![
        Stream::new()
            .role()
            .text_deltas("partial answer here", 4)
            .finish("stop")
            .cut_after(3)
            .reply(),
    ])
    .unwrap();
    let mut p = provider(&srv);
    let e = call(&mut p).1.unwrap_err();
    assert_eq!(e.kind, ErrorKind::StreamCut, "{}", e.message);
    let partial = e.partial.unwrap();
    assert!(partial.incomplete);
    assert!(!partial.text.is_empty());
    assert!("partial answer here".starts_with(&partial.text));
    assert!(partial.text.len() < "partial answer here".len());
}

#[test]
fn silent_server_times_out() {
    let srv = ScriptedServer::start(vec![
        Stream::text("slow")
            .delays(Duration::ZERO, Duration::from_secs(3))
            .reply(),
    ])
    .unwrap();
    let mut s = OpenAiSettings::new(&srv.base_url(), "m", None);
    s.idle_timeout = Duration::from_millis(300);
    let mut p = OpenAi::new(s).unwrap();
    let t = Instant::now();
    let e = call(&mut p).1.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Timeout, "{}", e.message);
    assert!(t.elapsed() < Duration::from_secs(2));
    assert!(srv.requests()[0].header("authorization").is_none());
}

#[test]
fn refused_connection_says_cannot_reach() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/v1");
    let mut p = OpenAi::new(OpenAiSettings::new(&url, "m", Some(KEY.into()))).unwrap();
    let e = call(&mut p).1.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unreachable);
    assert!(
        e.message.starts_with(&format!("cannot reach {url}")),
        "{}",
        e.message
    );
}

#[test]
fn cancel_stops_a_slow_stream_and_keeps_text() {
    let srv = ScriptedServer::start(vec![
        Stream::new()
            .role()
            .text_deltas("abcdefghij", 10)
            .delays(Duration::ZERO, Duration::from_millis(150))
            .reply(),
    ])
    .unwrap();
    let mut p = provider(&srv);
    let cancel = CancelFlag::default();
    let c2 = cancel.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(700));
        c2.cancel();
    });
    let t = Instant::now();
    let e = p.stream(&req(), &cancel, &mut |_| {}).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Cancelled);
    assert!(t.elapsed() < Duration::from_millis(1300));
    let partial = e.partial.unwrap();
    assert!(!partial.text.is_empty() && partial.text.len() < 10);
}

#[test]
fn a_non_streaming_answer_is_accepted_and_an_empty_one_is_an_error() {
    let whole = serde_json::json!({
        "id": "x", "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "whole answer"}}],
        "usage": {"prompt_tokens": 4, "completion_tokens": 2}
    });
    let srv = ScriptedServer::start(vec![Reply::Json(whole), Stream::new().keep_alive().reply()])
        .unwrap();
    let mut p = provider(&srv);
    let (evs, r) = call(&mut p);
    let c = r.unwrap();
    assert_eq!(c.text, "whole answer");
    assert_eq!(evs, [StreamEvent::Text("whole answer".into())]);
    assert_eq!(c.usage.output_tokens, 2);
    let e = call(&mut p).1.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Protocol);
    assert!(e.message.contains("ending in /v1"), "{}", e.message);
}
