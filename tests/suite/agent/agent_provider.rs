//! The OpenAI provider against a real HTTP server on 127.0.0.1 (the scripted server).

use crate::support::agent::cancel_after;
use crate::support::text::{has, starts};
use std::time::{Duration, Instant};

use neocode::runtime::provider::{
    ChatMessage, ChatRequest, ErrorKind, OpenAi, OpenAiSettings, Provider, StreamEvent,
};
use neocode::runtime::tools::CancelFlag;
use neocode::testkit::scripted::{LlamaLike, RecordedRequest, Reply, ScriptedServer, Stream};

const KEY: &str = "sk-test-SECRET-0123456789";

fn provider(srv: &ScriptedServer) -> OpenAi {
    let mut s = OpenAiSettings::new(&srv.base_url(), "test-model", Some(KEY.into()));
    s.backoff = Duration::from_millis(20);
    s.idle_timeout = Duration::from_secs(5);
    OpenAi::new(s).unwrap()
}

fn req() -> ChatRequest {
    ChatRequest {
        messages: vec![ChatMessage::user_text("hi")],
        ..ChatRequest::default()
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
    starts(&e.message, &format!("cannot reach {url}"));
}

#[test]
fn cancel_stops_a_slow_stream_and_keeps_text() {
    let srv = ScriptedServer::start(vec![
        crate::support::slow_text("abcdefghij", 10, Duration::from_millis(150)).reply(),
    ])
    .unwrap();
    let mut p = provider(&srv);
    let cancel = CancelFlag::default();
    cancel_after(&cancel, Duration::from_millis(700));
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
    let empty = || Stream::new().keep_alive().reply();
    let srv = ScriptedServer::start(vec![Reply::Json(whole), empty(), empty()]).unwrap();
    let mut p = provider(&srv);
    let (evs, r) = call(&mut p);
    let c = r.unwrap();
    assert_eq!(c.text, "whole answer");
    assert_eq!(evs, [StreamEvent::Text("whole answer".into())]);
    assert_eq!(c.usage.output_tokens, 2);
    let e = call(&mut p).1.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Protocol);
    assert!(e.message.contains("ending in /v1"), "{}", e.message);
    assert!(e.message.contains("streamed or not"), "{}", e.message);
    let reqs = srv.requests();
    assert_eq!(reqs.len(), 3, "the empty stream was asked again unstreamed");
    assert_eq!(reqs[2].json()["stream"], false);
}

/// A one-shot HTTP server on 127.0.0.1 answering the requests in order with
/// `(status, Retry-After, body)`; it returns the base URL and when each request arrived. The
/// scripted server only speaks `Retry-After` in seconds.
fn dated_server(
    replies: Vec<(u16, Option<String>, String)>,
) -> (String, std::sync::Arc<std::sync::Mutex<Vec<Instant>>>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let arrived = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = arrived.clone();
    std::thread::spawn(move || {
        for (status, retry_after, body) in replies {
            let Ok((conn, _)) = listener.accept() else {
                return;
            };
            let mut r = BufReader::new(conn.try_clone().unwrap());
            let mut len = 0;
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
            let mut buf = vec![0; len];
            let _ = r.read_exact(&mut buf);
            seen.lock().unwrap().push(Instant::now());
            let retry = retry_after
                .map(|v| format!("Retry-After: {v}\r\n"))
                .unwrap_or_default();
            let mut conn = conn;
            let _ = write!(
                conn,
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{retry}Connection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = conn.flush();
        }
    });
    (base, arrived)
}

fn limited(retry_after: &str) -> (u16, Option<String>, String) {
    let body = r#"{"error":{"message":"Rate limit reached"}}"#;
    (429, Some(retry_after.to_string()), body.to_string())
}

fn answered(text: &str) -> (u16, Option<String>, String) {
    let body = serde_json::json!({
        "id": "x", "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1}
    });
    (200, None, body.to_string())
}

fn http_date(at: chrono::DateTime<chrono::Utc>) -> String {
    at.format("%a, %d %b %Y %H:%M:%S GMT").to_string()
}

fn dated_provider(base: &str, backoff: Duration) -> OpenAi {
    let mut s = OpenAiSettings::new(base, "m", None);
    s.backoff = backoff;
    s.idle_timeout = Duration::from_secs(10);
    OpenAi::new(s).unwrap()
}

type Arrived = std::sync::Arc<std::sync::Mutex<Vec<Instant>>>;

/// One call against a 429 whose `Retry-After` is the date `from_now` away, then `reply`;
/// the provider backs off by `backoff`. The call's result and when each request arrived.
fn after_a_dated_429(
    from_now: chrono::Duration,
    reply: &str,
    backoff: Duration,
) -> (
    Result<neocode::runtime::provider::Completion, neocode::runtime::provider::ProviderError>,
    Arrived,
) {
    let at = chrono::Utc::now() + from_now;
    let (base, arrived) = dated_server(vec![limited(&http_date(at)), answered(reply)]);
    let mut p = dated_provider(&base, backoff);
    (call(&mut p).1, arrived)
}

#[test]
fn retry_after_as_an_http_date_is_waited_for() {
    // Three seconds ahead, cut to whole seconds by the format: a wait of more than two.
    let ahead = chrono::Duration::seconds(3);
    let (c, arrived) = after_a_dated_429(ahead, "ok at last", Duration::from_millis(20));
    let c = c.unwrap();
    assert_eq!(c.text, "ok at last");
    let arrived = arrived.lock().unwrap();
    assert_eq!(arrived.len(), 2);
    let gap = arrived[1] - arrived[0];
    assert!(
        gap >= Duration::from_millis(1500),
        "retried after {gap:?}, before the date"
    );
}

#[test]
fn retry_after_as_a_past_date_retries_at_once() {
    // The backoff alone is longer than any wait allowed: only "at once" gets a second try.
    let ago = -chrono::Duration::hours(1);
    let (c, arrived) = after_a_dated_429(ago, "ok", Duration::from_secs(120));
    let c = c.unwrap();
    assert_eq!(c.text, "ok");
    assert_eq!(arrived.lock().unwrap().len(), 2);
}

#[test]
fn retry_after_as_a_far_date_is_not_waited_for() {
    let (e, arrived) = after_a_dated_429(
        chrono::Duration::hours(2),
        "never",
        Duration::from_millis(20),
    );
    let e = e.unwrap_err();
    assert_eq!(e.kind, ErrorKind::RateLimited);
    assert!(e.message.contains("retry after 71"), "{}", e.message);
    assert_eq!(
        arrived.lock().unwrap().len(),
        1,
        "no retry against the date"
    );
}

#[test]
fn a_malformed_retry_after_falls_back_to_the_backoff() {
    let (base, arrived) = dated_server(vec![
        limited("Wed, 32 Oct 2015 07:28:00 GMT"),
        limited("tomorrow-ish"),
        answered("ok"),
    ]);
    let mut p = dated_provider(&base, Duration::from_millis(300));
    let c = call(&mut p).1.unwrap();
    assert_eq!(c.text, "ok");
    let arrived = arrived.lock().unwrap();
    assert_eq!(arrived.len(), 3);
    // Backoff 300 ms, then doubled.
    assert!(arrived[1] - arrived[0] >= Duration::from_millis(250));
    assert!(arrived[2] - arrived[1] >= Duration::from_millis(500));
}

#[test]
fn a_clean_close_without_a_finish_is_a_cut_not_an_answer() {
    let srv = ScriptedServer::start(vec![
        Stream::new()
            .role()
            .text_deltas("half an ans", 3)
            .no_done()
            .reply(),
        // A finish_reason without [DONE] is a whole answer (many servers end so).
        Stream::text("whole").no_done().reply(),
    ])
    .unwrap();
    let mut p = provider(&srv);
    let e = call(&mut p).1.unwrap_err();
    assert_eq!(e.kind, ErrorKind::StreamCut, "{}", e.message);
    has(&e.message, "cut off after 11 characters");
    let partial = e.partial.unwrap();
    assert!(partial.incomplete);
    assert_eq!(partial.text, "half an ans");
    assert_eq!(call(&mut p).1.unwrap().text, "whole");
}

#[test]
fn each_retry_is_reported_as_it_is_made() {
    let srv = ScriptedServer::start(vec![
        Reply::rate_limited(1),
        Reply::error(500, "boom"),
        Reply::text("ok"),
    ])
    .unwrap();
    let mut p = provider(&srv);
    let (evs, r) = call(&mut p);
    assert_eq!(r.unwrap().text, "ok");
    let retries: Vec<String> = evs
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Retrying {
                status,
                attempt,
                of,
                wait,
            } => Some(StreamEvent::retry_text(*status, *attempt, *of, *wait)),
            _ => None,
        })
        .collect();
    assert_eq!(
        retries,
        [
            "rate limited (429), retry 1/3 in 1 s",
            "server error (500), retry 2/3 in 40 ms"
        ]
    );
}

fn tool_req() -> ChatRequest {
    ChatRequest {
        messages: vec![ChatMessage::user_text("list the files")],
        tools: vec![neocode::runtime::provider::ToolDef::new(
            "list_dir",
            "List a directory",
            serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        )],
        ..ChatRequest::default()
    }
}

#[test]
fn a_server_that_cannot_stream_tool_calls_is_asked_unstreamed_and_remembered() {
    let like = LlamaLike { window: 2048 };
    let srv = ScriptedServer::start_llama_like(
        vec![
            Reply::tool_calls(&[("call__0", "list_dir", r#"{"path":"."}"#)]),
            Reply::text("two files"),
            Reply::text("plain stream"),
        ],
        like,
    )
    .unwrap();
    let mut p = provider(&srv);
    let mut evs = Vec::new();
    let c = p
        .stream(&tool_req(), &CancelFlag::default(), &mut |e| evs.push(e))
        .unwrap();
    assert_eq!(c.tool_calls.len(), 1);
    assert_eq!(c.tool_calls[0].name, "list_dir");
    assert!(!c.usage_estimated, "the unstreamed answer reports usage");
    let told: Vec<&String> = evs
        .iter()
        .filter_map(|e| match e {
            StreamEvent::NotStreamed(m) => Some(m),
            _ => None,
        })
        .collect();
    assert_eq!(told.len(), 1, "{evs:?}");
    assert!(told[0].contains("unstreamed from now on"), "{}", told[0]);
    // Remembered for the process: a new provider sends requests with tools unstreamed at once.
    let mut p = provider(&srv);
    let mut evs = Vec::new();
    let c = p
        .stream(&tool_req(), &CancelFlag::default(), &mut |e| evs.push(e))
        .unwrap();
    assert_eq!(c.text, "two files");
    assert!(
        !evs.iter().any(|e| matches!(e, StreamEvent::NotStreamed(_))),
        "{evs:?}"
    );
    // Without tools it still streams.
    let c = call(&mut p).1.unwrap();
    assert_eq!(c.text, "plain stream");
    let bodies: Vec<_> = srv.requests().iter().map(RecordedRequest::json).collect();
    let streamed: Vec<bool> = bodies.iter().map(|b| b["stream"] == true).collect();
    assert_eq!(streamed, [true, false, false, true]);
    assert!(bodies.iter().take(3).all(|b| b["tool_choice"] == "auto"));
}

#[test]
fn a_stream_without_usage_is_estimated_and_said_once() {
    let srv = ScriptedServer::start_llama_like(
        vec![
            Reply::text("Hello there, how can I help you today?"),
            Reply::text("again"),
        ],
        LlamaLike { window: 2048 },
    )
    .unwrap();
    let mut p = provider(&srv);
    let (evs, r) = call(&mut p);
    let c = r.unwrap();
    assert!(c.usage_estimated);
    assert!(c.usage.input_tokens > 0, "{:?}", c.usage);
    assert!(
        (5..=20).contains(&c.usage.output_tokens),
        "about 10 tokens of text: {:?}",
        c.usage
    );
    let said = |evs: &[StreamEvent]| {
        evs.iter()
            .filter(|e| matches!(e, StreamEvent::UsageEstimated(_)))
            .count()
    };
    assert_eq!(said(&evs), 1, "{evs:?}");
    let (evs, r) = call(&mut p);
    assert!(r.unwrap().usage_estimated);
    assert_eq!(said(&evs), 0, "said once");
}

#[test]
fn an_invalid_request_500_is_not_retried_and_names_the_field() {
    // What llama-cpp-python answered to `content: null`: the field that failed comes last.
    let srv = ScriptedServer::start(vec![
        Reply::error(
            500,
            "3 validation errors:\n  {'type': 'literal_error', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestSystemMessage', 'role'), 'msg': \"Input should be 'system'\", 'input': 'assistant'}\n  {'type': 'literal_error', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestUserMessage', 'role'), 'msg': \"Input should be 'user'\", 'input': 'assistant'}\n  {'type': 'string_type', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestAssistantMessage', 'content'), 'msg': 'Input should be a valid string', 'input': None}",
        ),
        Reply::text("never reached"),
    ])
    .unwrap();
    let mut p = provider(&srv);
    let e = call(&mut p).1.unwrap_err();
    assert_eq!(e.kind, ErrorKind::BadRequest);
    assert!(
        e.message
            .contains("messages[1].content: Input should be a valid string"),
        "{}",
        e.message
    );
    assert!(e.message.contains("not retried"), "{}", e.message);
    assert_eq!(srv.request_count(), 1, "a deterministic 500 is not retried");
}

#[test]
fn an_overflow_behind_an_empty_stream_is_told_with_its_numbers() {
    let srv = ScriptedServer::start_llama_like(vec![], LlamaLike { window: 100 }).unwrap();
    let mut p = provider(&srv);
    let req = ChatRequest {
        messages: vec![ChatMessage::user_text("word ".repeat(400))],
        ..ChatRequest::default()
    };
    let e = p
        .stream(&req, &CancelFlag::default(), &mut |_| {})
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::ContextOverflow);
    assert!(
        e.message.contains("context window at") && e.message.contains("is 100 tokens"),
        "{}",
        e.message
    );
    assert!(e.message.contains("the prompt needs"), "{}", e.message);
    assert!(e.message.contains("compact"), "{}", e.message);
    let reqs = srv.requests();
    assert_eq!(reqs.len(), 2, "streamed, then asked unstreamed: {reqs:?}");
    assert_eq!(reqs[1].json()["stream"], false);
}
