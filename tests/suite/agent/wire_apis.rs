//! The Anthropic Messages and OpenAI Responses providers through the real binary
//! (`neocode run --api ...`) against the scripted server on 127.0.0.1: tool turns, thinking
//! and encrypted reasoning replayed in the next request (also in a second process), cache
//! breakpoints and cached tokens, a model switch leaving foreign reasoning out, a key from
//! `api_key_command`, and the stop reasons a user is told about.

use crate::support::text::has;
use std::process::Output;

use neocode::session::{Part, Role, Session};
use neocode::testkit::scripted::{Reply, ScriptedServer};
use neocode::testkit::scripted_wire::{Messages, ResponsesStream, overloaded};
use serde_json::{Value, json};

use crate::support::agent::Env;
use crate::support::flows::{bodies, messages_text, responses_text};
use crate::support::stderr;
use crate::support::{Succeeds, assert_no_file_holds};

const KEY: &str = "sk-wire-test-KEY-5e5e";
const CLAUDE: &str = "claude-sonnet-4-5";

impl Env {
    fn run_model(&self, srv: &ScriptedServer, model: &str, args: &[&str]) -> Output {
        self.cmd(Some(srv), args)
            .env("NEOCODE_MODEL", model)
            .succeeds()
    }

    /// Like [`Env::run_model`], for a run that may fail: its output.
    fn try_model(&self, srv: &ScriptedServer, model: &str, args: &[&str]) -> Output {
        self.cmd(Some(srv), args)
            .env("NEOCODE_MODEL", model)
            .output()
            .unwrap()
    }

    fn last_session(&self) -> Session {
        let s = self.sessions();
        let id = s.resolve("last").unwrap();
        s.load(&id).unwrap()
    }
}

/// A Messages reply that says "done" to a prompt of `input` tokens.
fn claude_done(input: u64) -> Reply {
    messages_text(input, "done")
}

/// A Messages reply of `text` (in two chunks) to a prompt of `input` tokens, stopping for
/// `stop` after `output` tokens.
fn claude_says(input: u64, text: &str, stop: &str, output: u64) -> Reply {
    Messages::start(input, 0, 0)
        .text(text, 2)
        .stop(stop, output)
        .reply()
}

/// A Messages reply that thinks (signed `sig-old`) and says "hello": what a model switch
/// must not send to another family.
fn claude_thinks_hello() -> Reply {
    Messages::start(5, 0, 0)
        .thinking("hm", "sig-old", 1)
        .text("hello", 1)
        .stop("end_turn", 3)
        .reply()
}

/// A Responses reply that says "hi".
fn gpt_says_hi() -> Reply {
    responses_text(5, "hi")
}

/// A Messages reply calling `list_dir` on `.` as `id`, with these token counts.
fn claude_lists_dir(id: &str, input: u64, cache_read: u64, output: u64) -> Reply {
    Messages::start(input, cache_read, 0)
        .tool_use(id, "list_dir", r#"{"path":"."}"#, 2)
        .stop("tool_use", output)
        .reply()
}

/// Asserts the last session's last message is the cut reply `text`, stopped for `reason`.
#[track_caller]
fn assert_last_cut(env: &Env, text: &str, reason: &str) {
    let s = env.last_session();
    let m = s.messages.last().unwrap();
    assert_eq!(m.text(), text);
    assert_eq!(m.tool_metadata.as_ref().unwrap()["stop_reason"], reason);
}

fn anthropic_tool_turn() -> Vec<Reply> {
    vec![
        overloaded(),
        Messages::start(900, 0, 2100)
            .thinking("I should list the folder.", "sig-EUgK1", 3)
            .redacted("REDACTED-blob")
            .ping()
            .tool_use("toolu_01", "list_dir", r#"{"path":"."}"#, 4)
            .stop("tool_use", 33)
            .reply(),
        // Overloaded mid-stream, before anything was shown: asked again.
        Messages::start(950, 0, 0)
            .error("overloaded_error", "Overloaded")
            .reply(),
        Messages::start(40, 3000, 0)
            .text("The folder holds a.txt.", 3)
            .stop("end_turn", 9)
            .reply(),
    ]
}

#[test]
fn an_anthropic_tool_turn_replays_thinking_caches_and_counts_cache_tokens() {
    let env = Env::new(KEY, "api = \"anthropic\"\nthinking_budget = 2000\n");
    std::fs::write(env.workdir.join("a.txt"), "x").unwrap();
    let srv = ScriptedServer::start(anthropic_tool_turn()).unwrap();
    let o = env.run_model(&srv, CLAUDE, &["run", "what is here?"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("The folder holds a.txt."));
    let reqs = srv.requests();
    assert_eq!(reqs.len(), 4, "529, tool turn, overloaded event, answer");
    for r in &reqs {
        assert_eq!(r.path, "/v1/messages");
        assert_eq!(r.header("x-api-key"), Some(KEY));
        assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
        assert!(r.header("authorization").is_none());
    }
    let first = reqs[1].json();
    assert!(
        first["system"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("You are neocode")
    );
    assert_eq!(first["thinking"]["budget_tokens"], 2000);
    let last_tool = first["tools"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last_tool["cache_control"], json!({"type": "ephemeral"}));
    assert_eq!(
        first["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert_eq!(
        first["messages"][0]["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    // The request after the tool: the thinking blocks verbatim, then the call, then the
    // result with the end-of-conversation breakpoint.
    let next = reqs[3].json();
    let msgs = next["messages"].as_array().unwrap();
    let assistant = &msgs[1]["content"];
    assert_eq!(
        assistant[0],
        json!({"type": "thinking", "thinking": "I should list the folder.", "signature": "sig-EUgK1"})
    );
    assert_eq!(
        assistant[1],
        json!({"type": "redacted_thinking", "data": "REDACTED-blob"})
    );
    assert_eq!(assistant[2]["type"], "tool_use");
    assert_eq!(assistant[2]["input"], json!({"path": "."}));
    let result = &msgs[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_01");
    assert!(result["content"].as_str().unwrap().contains("a.txt"));
    assert_eq!(result["cache_control"], json!({"type": "ephemeral"}));

    let s = env.last_session();
    assert_eq!(s.header.provider, "anthropic");
    let replies: Vec<_> = s
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .collect();
    assert_eq!(replies[0].extra.tokens.cache_write_tokens, 2100);
    assert_eq!(replies[0].usage.input_tokens, 900);
    assert_eq!(replies[1].extra.tokens.cached_input_tokens, 3000);
    let ledger = s.header.ledger.unwrap();
    assert_eq!(ledger.usage.cached_input_tokens, 3000);
    assert_eq!(ledger.usage.cache_write_tokens, 2100);
    // A second process continues: the stored thinking goes back verbatim.
    srv.push([Messages::start(10, 3500, 0)
        .text("Still a.txt.", 2)
        .stop("end_turn", 4)
        .reply()]);
    env.run_model(&srv, CLAUDE, &["run", "--continue", "and now?"]);
    let again = srv.requests()[4].json();
    assert_eq!(
        again["messages"][1]["content"][0]["signature"], "sig-EUgK1",
        "{again:#}"
    );
}

#[test]
fn a_responses_tool_turn_replays_encrypted_reasoning_across_processes() {
    let env = Env::new(KEY, "api = \"responses\"\nreasoning_effort = \"high\"\n");
    std::fs::write(env.workdir.join("a.txt"), "x").unwrap();
    let srv = ScriptedServer::start(vec![
        Reply::rate_limited(0),
        ResponsesStream::start()
            .reasoning("rs_A1", "Listing first.", "gAAAA-enc-1", 3)
            .function_call("call_7", "list_dir", r#"{"path":"."}"#, 3)
            .completed(1200, 1024, 60, 40)
            .reply(),
        ResponsesStream::start()
            .text("It holds a.txt.", 3)
            .completed(1300, 1200, 8, 0)
            .reply(),
    ])
    .unwrap();
    let o = env.run_model(&srv, "gpt-5", &["run", "what is here?"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("It holds a.txt."));
    let s = env.last_session();
    let b = bodies(&srv);
    assert_eq!(srv.requests()[1].path, "/v1/responses");
    assert_eq!(
        srv.requests()[1].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(b[1]["store"], false);
    assert_eq!(b[1]["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(b[1]["reasoning"]["effort"], "high");
    assert_eq!(b[1]["prompt_cache_key"], s.header.id.as_str());
    let input = b[2]["input"].as_array().unwrap();
    let reasoning = input.iter().find(|i| i["type"] == "reasoning").unwrap();
    assert_eq!(reasoning["encrypted_content"], "gAAAA-enc-1");
    assert_eq!(reasoning["summary"][0]["text"], "Listing first.");
    let call = input.iter().find(|i| i["type"] == "function_call").unwrap();
    assert_eq!(call["call_id"], "call_7");
    let out = input
        .iter()
        .find(|i| i["type"] == "function_call_output")
        .unwrap();
    assert_eq!(out["call_id"], "call_7");
    assert!(out["output"].as_str().unwrap().contains("a.txt"));

    let first = s
        .messages
        .iter()
        .find(|m| m.role == Role::Assistant)
        .unwrap();
    assert_eq!(
        first.usage.input_tokens, 176,
        "cached tokens are counted apart"
    );
    assert_eq!(first.extra.tokens.cached_input_tokens, 1024);
    assert_eq!(first.extra.tokens.reasoning_tokens, 40);
    assert!(
        matches!(&first.parts[0], Part::Reasoning { text, replay: Some(r) }
        if text == "Listing first." && r.encrypted.as_deref() == Some("gAAAA-enc-1"))
    );

    srv.push([ResponsesStream::start()
        .text("Same.", 1)
        .completed(10, 0, 2, 0)
        .reply()]);
    env.run_model(&srv, "gpt-5", &["run", "--continue", "again?"]);
    let again = &bodies(&srv)[3];
    let reasoning = again["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "reasoning")
        .unwrap_or_else(|| panic!("no reasoning replayed after a restart: {again:#}"));
    assert_eq!(reasoning["encrypted_content"], "gAAAA-enc-1");
    assert_eq!(again["prompt_cache_key"], s.header.id.as_str());
}

#[test]
fn a_switch_of_model_leaves_foreign_reasoning_out_and_says_so_once() {
    let (env, srv) =
        Env::new(KEY, "api = \"anthropic\"\nthinking_budget = 1024\n").with_server(vec![
            claude_thinks_hello(),
            Messages::start(5, 0, 0)
                .text("again", 1)
                .stop("end_turn", 3)
                .reply(),
            gpt_says_hi(),
        ]);
    env.run_model(&srv, "claude-sonnet-4-5-20250929", &["run", "hi"]);
    // Another model family of the same API: no thinking block goes to it.
    let o = env.run_model(
        &srv,
        "claude-opus-4-1",
        &["run", "--continue", "--model", "claude-opus-4-1", "again"],
    );
    let b = bodies(&srv);
    let assistant = &b[1]["messages"][1]["content"];
    assert_eq!(
        assistant,
        &json!([{"type": "text", "text": "hello"}]),
        "{assistant}"
    );
    let err = stderr(&o);
    assert_eq!(
        err.matches("reasoning part(s) from another provider")
            .count(),
        1,
        "{err}"
    );
    // Another API: no reasoning item reaches it either.
    let o = env.run_model(
        &srv,
        "gpt-5",
        &[
            "run",
            "--continue",
            "--api",
            "responses",
            "--model",
            "gpt-5",
            "and?",
        ],
    );
    let input = b_input(&bodies(&srv)[2]);
    assert!(input.iter().all(|i| i["type"] != "reasoning"), "{input:#?}");
    has(&stderr(&o), "left out of the request");
}

fn b_input(body: &Value) -> Vec<Value> {
    body["input"].as_array().cloned().unwrap_or_default()
}

#[test]
fn the_key_comes_from_api_key_command_run_once_and_stored_nowhere() {
    let env = Env::new(KEY, "");
    let count = env.tmp.path().join("count");
    let vault = env.tmp.path().join("vault");
    std::fs::write(&vault, "sk-ant-CMDKEY-9f9f\n").unwrap();
    let config = format!(
        "[provider]\napi = \"anthropic\"\napi_key_command = \"echo run >> '{}'; cat '{}'\"\n",
        count.display(),
        vault.display()
    );
    std::fs::write(env.home.join("config.toml"), config).unwrap();
    std::fs::write(env.workdir.join("a.txt"), "x").unwrap();
    let srv =
        ScriptedServer::start(vec![claude_lists_dir("toolu_9", 5, 0, 3), claude_done(5)]).unwrap();
    let o = env
        .cmd(Some(&srv), &["run", "look"])
        .env_remove("NEOCODE_API_KEY")
        .env("NEOCODE_MODEL", CLAUDE)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let reqs = srv.requests();
    assert_eq!(reqs.len(), 2);
    for r in &reqs {
        assert_eq!(r.header("x-api-key"), Some("sk-ant-CMDKEY-9f9f"));
    }
    assert_eq!(
        std::fs::read_to_string(&count).unwrap(),
        "run\n",
        "run once"
    );
    assert_no_file_holds(&env.home, &["CMDKEY"]);
    // A command that fails is one clear line, without its output.
    std::fs::write(
        env.home.join("config.toml"),
        "[provider]\napi = \"anthropic\"\napi_key_command = \"echo secret-out; exit 7\"\n",
    )
    .unwrap();
    let o = env
        .cmd(Some(&srv), &["run", "look"])
        .env_remove("NEOCODE_API_KEY")
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = stderr(&o);
    has(&err, "api_key_command failed with exit status 7");
    assert!(!err.contains("secret-out"), "{err}");
}

#[test]
fn max_tokens_refusal_and_incomplete_are_told_and_kept() {
    let (env, srv) = Env::new(KEY, "api = \"anthropic\"\n").with_server(vec![
        claude_says(5, "The first half of", "max_tokens", 16000),
        Messages::start(5, 0, 0).stop("refusal", 0).reply(),
    ]);
    // A reply cut at the output limit is kept incomplete and pauses the session (exit 3),
    // as a Chat Completions `finish_reason: length` does.
    let o = env.try_model(&srv, CLAUDE, &["run", "write a lot"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("output limit"), "{}", stderr(&o));
    assert_eq!(
        stderr(&o).matches("warning:").count(),
        1,
        "told once: {}",
        stderr(&o)
    );
    assert_eq!(srv.request_count(), 1, "a cut reply is not asked for again");
    assert_last_cut(&env, "The first half of", "max_tokens");
    let o = env.run_model(&srv, CLAUDE, &["run", "--continue", "something bad"]);
    assert!(stderr(&o).contains("the model refused"), "{}", stderr(&o));

    let (env, srv) = Env::new(KEY, "api = \"responses\"\n").with_server(vec![
        ResponsesStream::start()
            .text("Partial answ", 2)
            .incomplete("max_output_tokens", 50, 100)
            .reply(),
    ]);
    let o = env.try_model(&srv, "gpt-5", &["run", "long"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("output limit"), "{}", stderr(&o));
    assert_last_cut(&env, "Partial answ", "max_output_tokens");
}

#[test]
fn a_model_named_with_its_api_switches_the_api_and_stays_with_the_session() {
    let env = Env::new(KEY, "");
    let answer = || responses_text(5, "from responses");
    let srv = ScriptedServer::start(vec![Reply::text("from chat"), answer(), answer()]).unwrap();
    env.run_model(&srv, "test-model", &["run", "hi"]);
    let id = env.last_session().header.id;
    // What `/model responses:gpt-5` does in the TUI.
    env.agent(&srv).set_model(&id, "responses:gpt-5").unwrap();
    env.run_model(&srv, "test-model", &["run", "--continue", "again"]);
    env.run_model(&srv, "test-model", &["run", "--continue", "more"]);
    let reqs = srv.requests();
    let paths: Vec<&str> = reqs.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(
        paths,
        ["/v1/chat/completions", "/v1/responses", "/v1/responses"]
    );
    assert_eq!(reqs[2].json()["model"], "gpt-5");
    let h = env.last_session().header;
    assert_eq!(
        (h.provider.as_str(), h.model.as_str()),
        ("openai-responses", "responses:gpt-5")
    );
}

#[test]
fn dollars_are_counted_per_priced_call_and_max_cost_pauses_until_raised() {
    let env = Env::new(KEY, "api = \"anthropic\"\n");
    std::fs::write(env.workdir.join("a.txt"), "x").unwrap();
    // claude-sonnet-4-5: 10k input ($0.03) + 50k cache reads ($0.015) + 10k output ($0.15).
    let srv = ScriptedServer::start(vec![
        claude_lists_dir("toolu_1", 10_000, 50_000, 10_000),
        claude_done(10),
    ])
    .unwrap();
    let o = env.try_model(&srv, CLAUDE, &["run", "--max-cost", "0.10", "look"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    has(&stderr(&o), "max_cost_usd reached");
    assert!(stderr(&o).contains("--max-cost"), "{}", stderr(&o));
    assert_eq!(
        srv.request_count(),
        1,
        "the budget stops the next model call"
    );
    let show = |env: &Env| -> Value {
        let o = env.cmd(None, &["show", "last", "--json"]).output().unwrap();
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let spent = show(&env)["runtime"]["usage"]["cost_usd"].as_f64().unwrap();
    assert!((spent - 0.195).abs() < 1e-9, "{spent}");
    assert_eq!(show(&env)["runtime"]["limits"]["max_cost_usd"], 0.1);
    // The budget is stored: a resume without the flag stops again; raising it goes on.
    let o = env.try_model(&srv, CLAUDE, &["run", "--continue"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    env.run_model(&srv, CLAUDE, &["run", "--continue", "--max-cost", "2"]);
    assert_eq!(srv.request_count(), 2);
    let text = String::from_utf8_lossy(&env.cmd(None, &["show", "last"]).output().unwrap().stdout)
        .into_owned();
    assert!(text.contains("$0.1950 / $2.00"), "{text}");

    // A model without a price: tokens only, no dollars.
    let (env, srv) = Env::new(KEY, "").with_server(vec![Reply::text("hi")]);
    env.run_model(&srv, "test-model", &["run", "hi"]);
    let usage = &show(&env)["runtime"]["usage"];
    assert!(usage.get("cost_usd").is_none(), "{usage}");
    assert_eq!(usage["input_tokens"], 10);
}

#[test]
fn cached_prompt_tokens_count_towards_the_context_window() {
    let env = Env::new(KEY, "api = \"anthropic\"\ncontext_window = 1000\n");
    let reply = |text: &str, input: u64, cached: u64| {
        Messages::start(input, cached, 0)
            .text(text, 1)
            .stop("end_turn", 5)
            .reply()
    };
    let srv = ScriptedServer::start(vec![
        // 5 new tokens, 5,000 read from the cache: the window is full all the same.
        reply("hello", 5, 5000),
        reply("Summary: greeted.", 50, 0),
        reply("after", 20, 0),
    ])
    .unwrap();
    env.run_model(&srv, CLAUDE, &["run", "hi"]);
    let o = env.run_model(&srv, CLAUDE, &["run", "--continue", "more"]);
    assert!(stderr(&o).contains("compacting"), "{}", stderr(&o));
    assert_eq!(srv.request_count(), 3);
}

#[test]
fn a_server_that_is_not_the_configured_api_is_named_not_taken_for_a_cut() {
    let (env, srv) = Env::new(KEY, "api = \"anthropic\"\n")
        .with_server(vec![Reply::Json(json!({"choices": []}))]);
    let o = env.try_model(&srv, CLAUDE, &["run", "hi"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("sent no event stream") && err.contains("NEOCODE_API"),
        "{err}"
    );
    assert!(!err.contains(KEY), "{err}");
}

#[test]
fn a_paused_turn_is_continued_with_what_it_said_so_far() {
    let (env, srv) = Env::new(KEY, "api = \"anthropic\"\n").with_server(vec![
        claude_says(5, "Part one. ", "pause_turn", 4),
        claude_says(9, "Part two.", "end_turn", 3),
    ]);
    let o = env.run_model(&srv, CLAUDE, &["run", "go"]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim_end(),
        "Part one. Part two."
    );
    let last = crate::support::last_message(&srv, 1);
    assert_eq!(last["role"], "assistant");
    assert_eq!(last["content"][0]["text"], "Part one. ");
    let s = env.last_session();
    let reply = s.messages.last().unwrap();
    assert_eq!(reply.text(), "Part one. Part two.");
    assert_eq!(reply.usage.output_tokens, 7);
}

/// A connection reset by peer (llama-cpp-python under an overflowing prompt) before the
/// answer, or after a 200 head before any event, is asked once more, for every API; a second
/// reset in a row is named, never taken for an answer.
#[test]
fn a_connection_reset_before_the_reply_is_asked_once_more_for_every_api() {
    let chat = || Reply::text("after the reset");
    let responses = || {
        ResponsesStream::start()
            .text("after the reset", 2)
            .completed(10, 0, 3, 0)
            .reply()
    };
    let anthropic = || claude_says(10, "after the reset", "end_turn", 3);
    let cases: [(&str, &dyn Fn() -> Reply); 3] = [
        ("chat", &chat),
        ("responses", &responses),
        ("anthropic", &anthropic),
    ];
    for (api, answer) in cases {
        for after_head in [false, true] {
            let (env, srv) = Env::new(KEY, &format!("api = \"{api}\"\n"))
                .with_server(vec![Reply::Reset { after_head }, answer()]);
            let o = env.run_model(&srv, CLAUDE, &["run", "hello"]);
            assert!(
                String::from_utf8_lossy(&o.stdout).contains("after the reset"),
                "{api} after_head={after_head}: {}",
                stderr(&o)
            );
            assert_eq!(srv.request_count(), 2, "{api} after_head={after_head}");
        }
    }
    // Reset twice in a row on the Messages API: said, exit non-zero, nothing stored as a reply.
    let (env, srv) = Env::new(KEY, "api = \"anthropic\"\n").with_server(vec![
        Reply::Reset { after_head: true },
        Reply::Reset { after_head: true },
    ]);
    let o = env.cmd(Some(&srv), &["run", "hello"]).output().unwrap();
    assert!(!o.status.success());
    has(
        &stderr(&o),
        "dropped the connection before the reply began, twice",
    );
    assert_eq!(srv.request_count(), 2);
}

#[test]
fn a_session_keeps_its_dollars_and_profile_for_the_list_after_two_priced_turns() {
    let env = Env::new(KEY, "[providers.claude]\napi = \"anthropic\"\n");
    // Turn 1: 10k input ($0.03) + 1k output ($0.015). Turn 2: 20k input ($0.06) + 100k cache
    // reads ($0.03) + 2k output ($0.03). claude-sonnet-4-5: $0.165 in all.
    let srv = ScriptedServer::start(vec![
        Messages::start(10_000, 0, 0)
            .text("one", 1)
            .stop("end_turn", 1_000)
            .reply(),
        Messages::start(20_000, 100_000, 0)
            .text("two", 1)
            .stop("end_turn", 2_000)
            .reply(),
    ])
    .unwrap();
    env.run_model(&srv, CLAUDE, &["run", "--provider", "claude", "hi"]);
    env.run_model(
        &srv,
        CLAUDE,
        &["run", "--provider", "claude", "--continue", "again"],
    );
    let list = |env: &Env| -> Value {
        let o = env.cmd(None, &["--list", "--json"]).output().unwrap();
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let v = list(&env);
    let row = &v[0];
    let cost = row["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.165).abs() < 1e-9, "{row}");
    assert_eq!(row["profile"], "claude", "{row}");
    assert_eq!(row["provider"], "anthropic", "{row}");
    assert_eq!(row["model"], CLAUDE, "{row}");
    let table =
        String::from_utf8_lossy(&env.cmd(None, &["--list"]).output().unwrap().stdout).into_owned();
    assert!(table.contains("COST") && table.contains("$0.1"), "{table}");
    let text = String::from_utf8_lossy(&env.cmd(None, &["show", "last"]).output().unwrap().stdout)
        .into_owned();
    assert!(text.contains("profile    [providers.claude]"), "{text}");
    assert!(!text.contains(KEY));

    // A model without a price: null dollars, no profile, no COST column.
    let (env, srv) = Env::new(KEY, "").with_server(vec![Reply::text("hi"), Reply::text("again")]);
    env.run_model(&srv, "test-model", &["run", "hi"]);
    env.run_model(&srv, "test-model", &["run", "--continue", "again"]);
    let v = list(&env);
    assert_eq!(v[0]["cost_usd"], Value::Null, "{}", v[0]);
    assert_eq!(v[0]["profile"], Value::Null, "{}", v[0]);
    let table =
        String::from_utf8_lossy(&env.cmd(None, &["--list"]).output().unwrap().stdout).into_owned();
    assert!(!table.contains("COST") && !table.contains('$'), "{table}");
}

#[test]
fn a_switch_of_profile_gives_the_session_its_model_and_leaves_foreign_reasoning_out() {
    let srv = ScriptedServer::start(vec![claude_thinks_hello(), gpt_says_hi()]).unwrap();
    let env = Env::new(
        KEY,
        &format!(
            "api = \"anthropic\"\nthinking_budget = 1024\n\
             [providers.gpt]\napi = \"responses\"\nmodel = \"gpt-5\"\nbase_url = \"{}\"\n\
             reasoning_effort = \"low\"\n\
             api_key_command = \"echo {KEY}\"\n",
            srv.base_url()
        ),
    );
    env.run_model(&srv, CLAUDE, &["run", "hi"]);
    let id = env.last_session().header.id;
    // What `/provider gpt` does in the TUI: the profile's agent, the session its model.
    let gpt = env.agent(&srv).with_profile("gpt").unwrap();
    assert_eq!(gpt.api_model().as_deref(), Some("responses:gpt-5"));
    gpt.set_model(&id, &gpt.api_model().unwrap()).unwrap();
    // The next run names no profile: the session's own is used (its reasoning effort).
    let o = env
        .cmd(Some(&srv), &["run", "--continue", "and?"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let reqs = srv.requests();
    assert_eq!(reqs[1].path, "/v1/responses");
    assert_eq!(reqs[1].json()["model"], "gpt-5");
    assert_eq!(reqs[1].json()["reasoning"]["effort"], "low");
    let input = b_input(&reqs[1].json());
    assert!(input.iter().all(|i| i["type"] != "reasoning"), "{input:#?}");
    let err = stderr(&o);
    assert_eq!(err.matches("left out of the request").count(), 1, "{err}");
    let h = env.last_session().header;
    assert_eq!(h.profile.as_deref(), Some("gpt"));
    assert_eq!(h.model, "responses:gpt-5");
}
