//! `neocode doctor` probes the configured provider, whichever API it speaks (issues 24, 25):
//! four small calls (a text reply, a tool turn, its follow-up repeating the tool turn's
//! prompt) say per feature — streaming usage, tool calls, parallel tool calls, reasoning round
//! trip, prompt caching — supported / not seen / not applicable, the window where the server
//! tells it, and what neocode does about what is missing. `--no-probe` makes no call.

use crate::support::text::has;
use neocode::testkit::scripted::{LlamaLike, Reply, ScriptedServer};
use neocode::testkit::scripted_wire::{Messages, ResponsesStream};

use crate::support::agent::Env;
use crate::support::flows::{bodies, messages_text, responses_text};

const KEY: &str = "sk-doctor-probe-key";

fn doctor(env: &Env, srv: Option<&ScriptedServer>, args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["doctor"];
    all.extend_from_slice(args);
    let o = env.cmd(srv, &all).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The report's row for `label` (what follows the label column), or "" when absent.
fn row(out: &str, label: &str) -> String {
    out.lines()
        .find_map(|l| {
            let rest = l.strip_prefix("  ")?.strip_prefix(label)?;
            rest.starts_with("  ").then(|| rest.trim().to_string())
        })
        .unwrap_or_default()
}

/// Asserts that the report's row for `label` starts with `start`.
#[track_caller]
fn row_starts(out: &str, label: &str, start: &str) {
    let r = row(out, label);
    assert!(r.starts_with(start), "{label}: {r:?}\n{out}");
}

/// Doctor's report on `srv`, which must exit 0.
fn probed(env: &Env, srv: &ScriptedServer) -> String {
    let (code, out, err) = doctor(env, Some(srv), &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    out
}

/// The probe's first call answered by the Messages API: a plain "ok".
fn messages_ok() -> Reply {
    messages_text(10, "ok")
}

/// The probe's first call answered by the Responses API: a plain "ok".
fn responses_ok() -> Reply {
    responses_text(10, "ok")
}

/// The one `echo` call of a chat tool turn.
const ECHO: (&str, &str, &str) = ("call_1", "echo", r#"{"text":"ok"}"#);

/// A llama-cpp-python-like server with a `window`-token context, answering the probe with
/// one `echo` call.
fn llama_like(window: u64) -> ScriptedServer {
    ScriptedServer::start_llama_like(chat_answers(&[ECHO]), LlamaLike { window }).unwrap()
}

/// The Messages API's tool turn with one `echo` call and its follow-up, neither cached.
fn messages_one_call() -> [Reply; 2] {
    [
        Messages::start(1200, 0, 0)
            .tool_use("toolu_1", "echo", r#"{"text":"ok"}"#, 2)
            .stop("tool_use", 20)
            .reply(),
        Messages::start(1260, 0, 0)
            .text("ok", 1)
            .stop("end_turn", 2)
            .reply(),
    ]
}

fn chat_answers(calls: &[(&str, &str, &str)]) -> Vec<Reply> {
    vec![
        Reply::text("ok"),
        Reply::tool_calls(calls),
        Reply::text("ok"),
        Reply::text(r#"{"ok": true}"#),
    ]
}

#[test]
fn doctor_finds_what_a_llama_cpp_python_like_server_lacks_and_says_what_neocode_does() {
    let env = Env::new(KEY, "");
    let srv = llama_like(2048);
    srv.set_props(serde_json::json!({"default_generation_settings": {"n_ctx": 2048}}));
    let (code, out, err) = doctor(&env, Some(&srv), &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    has(&out, "\nProvider probe (four small calls, api = chat");
    assert_eq!(row(&out, "streamed text"), "supported", "{out}");
    row_starts(
        &out,
        "streaming usage",
        "not seen: neocode counts the tokens itself",
    );
    row_starts(
        &out,
        "streamed tool calls",
        "not seen: requests with tools are sent without streaming",
    );
    assert_eq!(row(&out, "tool calls"), "supported", "{out}");
    row_starts(&out, "parallel tool calls", "not seen: one call per reply");
    row_starts(&out, "reasoning round trip", "not seen: no reasoning came");
    // The unstreamed follow-up reports usage, without cached tokens.
    row_starts(&out, "prompt caching", "not seen: the repeat");
    assert!(!out.contains("^J"), "{out}");
    row_starts(&out, "context window", "2048 tokens (told by the server");
    assert!(!out.contains(KEY) && !err.contains(KEY));
    // The text call, the streamed tool call (an empty stream), the tool call asked again
    // whole, and its follow-up (unstreamed from then on), which fits the 2,048 window.
    row_starts(&out, "structured output", "supported");
    let b = bodies(&srv);
    assert_eq!(b.len(), 5, "{b:#?}");
    assert_eq!(b[4]["response_format"]["type"], "json_schema", "{:#}", b[4]);
    assert!(b[0].get("tools").is_none(), "{:#}", b[0]);
    assert_eq!(b[1]["tool_choice"], "auto", "{:#}", b[1]);
    assert_eq!(b[1]["stream"], true);
    assert_eq!(b[2]["stream"], false);
    let last = b[3]["messages"].as_array().unwrap();
    assert_eq!(last.last().unwrap()["role"], "tool", "{:#}", b[3]);
    assert!(srv.requests()[3].body.len() / 4 < 2048);
}

#[test]
fn doctor_says_what_a_full_chat_server_does_and_asks_for_the_window_it_does_not_tell() {
    let (env, srv) = Env::new(KEY, "").with_server(chat_answers(&[
        ECHO,
        ("call_2", "echo", r#"{"text":"yes"}"#),
    ]));
    let out = probed(&env, &srv);
    assert_eq!(row(&out, "streamed text"), "supported", "{out}");
    assert_eq!(row(&out, "streaming usage"), "supported", "{out}");
    assert_eq!(row(&out, "streamed tool calls"), "supported", "{out}");
    row_starts(
        &out,
        "parallel tool calls",
        "supported (2 calls in one reply",
    );
    row_starts(
        &out,
        "prompt caching",
        "not seen: the repeat of the tool turn's prompt",
    );
    row_starts(
        &out,
        "context window",
        "not told by the server: set context_window in config.toml",
    );
    assert!(out.contains("\"window unknown\""), "{out}");
    assert_eq!(srv.request_count(), 4);
    // The follow-up repeats the tool turn's prompt (long enough to cache) and adds both results.
    let b = bodies(&srv);
    assert_eq!(b[2]["messages"][0], b[1]["messages"][0]);
    assert!(b[1]["messages"][0]["content"].as_str().unwrap().len() > 4 * 1024 * 3);
    let results = b[2]["messages"].as_array().unwrap();
    assert_eq!(results.iter().filter(|m| m["role"] == "tool").count(), 2);
}

#[test]
fn doctor_uses_the_configured_window_when_the_server_tells_none() {
    let env = Env::new(KEY, "context_window = 4096\n");
    let srv = ScriptedServer::start(chat_answers(&[ECHO])).unwrap();
    let out = probed(&env, &srv);
    has(
        &out,
        "not told by the server; context_window = 4096 from config.toml is used",
    );
}

#[test]
fn no_probe_makes_no_call_and_a_failing_probe_exits_1() {
    let (env, srv) =
        Env::new(KEY, "").with_server(vec![Reply::error(401, "Incorrect API key provided")]);
    let (code, out, err) = doctor(&env, Some(&srv), &["--no-probe"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!out.contains("Provider probe"), "{out}");
    assert_eq!(srv.request_count(), 0);
    // Without a provider there is nothing to probe.
    let (code, out, err) = doctor(&env, None, &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!out.contains("Provider probe"), "{out}");
    // A call that fails is named, and doctor exits 1 saying how to skip the probe.
    let (code, out, err) = doctor(&env, Some(&srv), &[]);
    assert_eq!(code, 1, "{out}\n{err}");
    row_starts(&out, "FAILED", "a plain streamed call: ");
    assert!(err.contains("--no-probe"), "{err}");
    assert_eq!(srv.request_count(), 1);
}

/// The Anthropic Messages API: a server that thinks, calls twice and caches, and one that
/// does none of it; the report names each difference.
#[test]
fn doctor_probes_the_anthropic_api_with_and_without_caching() {
    let caching = Env::new(KEY, "api = \"anthropic\"\nthinking_budget = 2000\n");
    let srv = ScriptedServer::start(vec![
        messages_ok(),
        Messages::start(40, 0, 1100)
            .thinking("I will echo twice.", "sig-probe-1", 2)
            .ping()
            .tool_use("toolu_1", "echo", r#"{"text":"ok"}"#, 2)
            .tool_use("toolu_2", "echo", r#"{"text":"yes"}"#, 2)
            .stop("tool_use", 20)
            .reply(),
        Messages::start(60, 1100, 0)
            .text("ok yes", 1)
            .stop("end_turn", 2)
            .reply(),
        messages_ok(),
    ])
    .unwrap();
    let out = probed(&caching, &srv);
    assert!(out.contains("Provider probe (four small calls, api = anthropic"));
    assert_eq!(
        row(&out, "streamed text"),
        "",
        "Chat Completions only: {out}"
    );
    assert_eq!(row(&out, "streaming usage"), "supported", "{out}");
    assert_eq!(row(&out, "tool calls"), "supported", "{out}");
    row_starts(&out, "parallel tool calls", "supported (2 calls");
    row_starts(
        &out,
        "reasoning round trip",
        "supported: the tool turn's reasoning",
    );
    let cached = row(&out, "prompt caching");
    assert!(cached.starts_with("supported (1100 prompt tokens"), "{out}");
    row_starts(&out, "context window", "not told by the server");
    let b = bodies(&srv);
    assert_eq!(b.len(), 4);
    assert!(srv.requests().iter().all(|r| r.path.ends_with("/messages")));
    assert_eq!(b[3]["output_config"]["format"]["type"], "json_schema");
    // Breakpoints on the long system text; the signed thinking sent back with both results.
    assert_eq!(b[1]["system"][0]["cache_control"]["type"], "ephemeral");
    assert_eq!(b[1]["thinking"]["budget_tokens"], 2000, "{:#}", b[1]);
    let follow = b[2]["messages"].to_string();
    assert!(follow.contains("sig-probe-1"), "{follow}");
    assert!(follow.contains("toolu_2"), "{follow}");

    let plain = Env::new(KEY, "api = \"anthropic\"\n");
    let [call, follow_up] = messages_one_call();
    let srv = ScriptedServer::start(vec![messages_ok(), call, follow_up, messages_ok()]).unwrap();
    let out = probed(&plain, &srv);
    row_starts(&out, "parallel tool calls", "not seen: one call per reply");
    row_starts(
        &out,
        "reasoning round trip",
        "not applicable: thinking is off",
    );
    let uncached = row(&out, "prompt caching");
    assert!(
        uncached.starts_with("not seen: the repeat of the tool turn's prompt read nothing"),
        "{out}"
    );
    assert!(uncached.contains("full prompt price"), "{out}");
    assert_ne!(cached, uncached);
    assert!(bodies(&srv)[1].get("thinking").is_none());
}

/// The OpenAI Responses API: encrypted reasoning sent back and a cache hit, then a server
/// with neither.
#[test]
fn doctor_probes_the_responses_api_with_and_without_caching() {
    let caching = Env::new(KEY, "api = \"responses\"\nreasoning_effort = \"low\"\n");
    let srv = ScriptedServer::start(vec![
        responses_ok(),
        ResponsesStream::start()
            .reasoning("rs_1", "Echo twice.", "enc-probe-1", 2)
            .function_call("call_1", "echo", r#"{"text":"ok"}"#, 2)
            .function_call("call_2", "echo", r#"{"text":"yes"}"#, 2)
            .completed(1200, 0, 20, 8)
            .reply(),
        ResponsesStream::start()
            .text("ok yes", 1)
            .completed(1300, 1152, 3, 0)
            .reply(),
        responses_ok(),
    ])
    .unwrap();
    let out = probed(&caching, &srv);
    assert!(out.contains("Provider probe (four small calls, api = responses"));
    assert_eq!(row(&out, "streaming usage"), "supported", "{out}");
    row_starts(&out, "parallel tool calls", "supported (2 calls");
    row_starts(&out, "reasoning round trip", "supported");
    let cached = row(&out, "prompt caching");
    assert!(cached.starts_with("supported (1152 prompt tokens"), "{out}");
    let b = bodies(&srv);
    assert_eq!(b.len(), 4);
    assert!(
        srv.requests()
            .iter()
            .all(|r| r.path.ends_with("/responses"))
    );
    assert_eq!(b[3]["text"]["format"]["type"], "json_schema", "{:#}", b[3]);
    assert_eq!(b[1]["prompt_cache_key"], b[2]["prompt_cache_key"]);
    assert!(b[1]["prompt_cache_key"].is_string(), "{:#}", b[1]);
    let input = b[2]["input"].to_string();
    assert!(input.contains("enc-probe-1"), "{input}");
    assert!(input.contains("function_call_output"), "{input}");

    let plain = Env::new(KEY, "api = \"responses\"\n");
    let no_call = || {
        ResponsesStream::start()
            .text("I cannot call tools.", 2)
            .completed(1200, 0, 5, 0)
            .reply()
    };
    let srv = ScriptedServer::start(vec![
        responses_ok(),
        no_call(),
        no_call(),
        Reply::error(400, "text.format is not supported"),
    ])
    .unwrap();
    let out = probed(&plain, &srv);
    row_starts(
        &out,
        "tool calls",
        "not seen: the model answered without calling",
    );
    row_starts(&out, "parallel tool calls", "not applicable: no tool call");
    row_starts(
        &out,
        "reasoning round trip",
        "not seen: no reasoning came with the tool turn",
    );
    assert!(row(&out, "reasoning round trip").contains("reasoning_effort"));
    let uncached = row(&out, "prompt caching");
    assert!(uncached.starts_with("not seen: the repeat"), "{out}");
    assert_ne!(cached, uncached);
    row_starts(&out, "structured output", "refused (");
    assert!(
        row(&out, "structured output").contains("--output-schema still works"),
        "{out}"
    );
    // Without a call the repeat is the same request again.
    let b = bodies(&srv);
    assert_eq!(b[1]["input"], b[2]["input"]);
}

/// A server that refuses the thinking sent back (a proxy that rewrites signatures): the
/// round trip is named as failed, with the server's words, and doctor exits 1.
#[test]
fn doctor_names_a_refused_reasoning_round_trip() {
    let (env, srv) =
        Env::new(KEY, "api = \"anthropic\"\nthinking_budget = 2000\n").with_server(vec![
            messages_ok(),
            Messages::start(40, 0, 0)
                .thinking("Echo.", "sig-bad", 1)
                .tool_use("toolu_1", "echo", r#"{"text":"ok"}"#, 1)
                .stop("tool_use", 5)
                .reply(),
            Reply::error(
                400,
                "messages.1.content.0: Invalid `signature` in `thinking` block",
            ),
        ]);
    let (code, out, err) = doctor(&env, Some(&srv), &[]);
    assert_eq!(code, 1, "{out}\n{err}");
    row_starts(
        &out,
        "reasoning round trip",
        "FAILED: the server refused the reasoning",
    );
    assert!(row(&out, "FAILED").contains("Invalid `signature`"), "{out}");
    assert_eq!(srv.request_count(), 3, "a 400 is not retried");
}

/// Issue 35: on a 2,048-token server (llama-cpp-python's behaviour: a streamed overflow is an
/// empty answer, an unstreamed one a 400 with the numbers) doctor always failed — its tool
/// turn's prompt needed about 4,700 tokens even with `context_window = 2048` set — and its
/// advice spoke of compacting a session that does not exist. Now the probe is sized to the
/// configured window, and without one it is sent again sized to the window the overflow told.
#[test]
fn doctor_fits_its_probe_to_a_small_window_configured_or_told_by_an_overflow() {
    for config in ["context_window = 2048\n", ""] {
        let env = Env::new(KEY, config);
        let srv = llama_like(2048);
        let (code, out, err) = doctor(&env, Some(&srv), &[]);
        assert_eq!(code, 0, "{config:?}\n{out}\n{err}");
        assert_eq!(row(&out, "tool calls"), "supported", "{out}");
        assert!(!out.contains("FAILED"), "{out}");
        assert!(!out.contains("session"), "{out}");
        assert!(!err.contains("session"), "{err}");
        // With the window configured no request overflows; without, the first tool turn
        // does (the overflow tells the window), and everything after it fits.
        let sizes: Vec<usize> = srv.requests().iter().map(|r| r.body.len() / 4).collect();
        let first_over = sizes.iter().position(|t| *t > 2048);
        if config.is_empty() {
            let last_over = sizes.iter().rposition(|t| *t > 2048);
            assert!(first_over.is_some(), "{sizes:?}");
            assert!(last_over < Some(sizes.len() - 2), "{sizes:?}");
        } else {
            assert_eq!(first_over, None, "{sizes:?}");
        }
        if config.is_empty() {
            // The overflow told the window: the report says it.
            row_starts(&out, "context window", "2048 tokens (told by the server");
        }
    }
}

/// A window too small for any probe: the failure says what to set, not to compact a session.
#[test]
fn doctor_on_a_window_too_small_for_the_probe_says_what_to_set() {
    let env = Env::new(KEY, "");
    let srv = llama_like(120);
    let (code, out, err) = doctor(&env, Some(&srv), &[]);
    assert_eq!(code, 1, "{out}\n{err}");
    let failed = row(&out, "FAILED");
    assert!(
        failed.contains("the probe's prompt does not fit the server's context window"),
        "{out}"
    );
    assert!(failed.contains("set context_window in"), "{out}");
    assert!(!out.contains("session"), "{out}");
}

/// A gateway whose Messages route passes the system text blocks on as content lists that the
/// server behind it refuses: doctor finds that plain text works and names the setting.
#[test]
fn doctor_names_system_as_text_when_the_system_blocks_are_refused() {
    let env = Env::new(KEY, "api = \"anthropic\"\nmax_retries = 0\n");
    let [call, follow_up] = messages_one_call();
    let srv = ScriptedServer::start(vec![
        messages_ok(),
        Reply::error(400, "messages: system: Input should be a valid string"),
        call,
        follow_up,
        messages_ok(),
    ])
    .unwrap();
    let out = probed(&env, &srv);
    row_starts(&out, "system prompt", "refused as text blocks");
    assert!(
        row(&out, "system prompt").contains("set system_as_text = true in [provider]"),
        "{out}"
    );
    assert_eq!(row(&out, "tool calls"), "supported", "{out}");
    let b = bodies(&srv);
    assert!(b[1]["system"].is_array(), "{:#}", b[1]);
    assert!(
        b[2]["system"].is_string(),
        "asked again with plain text: {:#}",
        b[2]
    );
    assert!(b[3]["system"].is_string(), "{:#}", b[3]);
}
