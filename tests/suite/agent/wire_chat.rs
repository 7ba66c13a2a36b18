//! Chat Completions keeping what servers need, through the real binary (`neocode run`) against
//! the scripted server on 127.0.0.1 told to refuse as DeepSeek and Gemini do: the
//! `reasoning_content` of a tool turn and a call's thought signature sent back (in the turn
//! and in a second process), cached and reasoning tokens stored, a model switch leaving them
//! out (said once), and `reasoning_effort` sent only when set.

use std::process::Output;

use neocode::session::{Message, Part, Role, Session};
use neocode::testkit::scripted::{Reply, ScriptedServer, Stream};
use serde_json::Value;

use crate::support::Succeeds;
use crate::support::agent::Env;
use crate::support::flows::bodies;

const KEY: &str = "sk-chat-test-KEY-7a7a";
const LIST: &str = r#"{"path":"."}"#;

fn run(env: &Env, srv: &ScriptedServer, model: &str, args: &[&str]) -> Output {
    env.cmd(Some(srv), args)
        .env("NEOCODE_MODEL", model)
        .succeeds()
}

fn last_session(env: &Env) -> Session {
    let s = env.sessions();
    let id = s.resolve("last").unwrap();
    s.load(&id).unwrap()
}

/// The assistant messages of a request body: those with tool calls, and the others.
fn assistants(body: &Value) -> (Vec<Value>, Vec<Value>) {
    body["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("no messages in {body:#}"))
        .iter()
        .filter(|m| m["role"] == "assistant")
        .cloned()
        .partition(|m| m.get("tool_calls").is_some())
}

fn replies(s: &Session) -> Vec<&Message> {
    s.messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .collect()
}

/// A DeepSeek thinking-mode tool turn: reasoning, one call, usage with cache details.
fn deepseek_tool_turn(thought: &str) -> Reply {
    Stream::new()
        .role()
        .reasoning(thought, 3)
        .tool_call(0, "call_ds1", "list_dir", LIST, 3)
        .finish("tool_calls")
        .usage_detail(1200, 60, 1024, 40)
        .reply()
}

fn answer(thought: &str, text: &str) -> Reply {
    Stream::new()
        .role()
        .reasoning(thought, 2)
        .text_deltas(text, 2)
        .finish("stop")
        .usage(30, 8)
        .reply()
}

#[test]
fn a_deepseek_tool_turn_sends_its_reasoning_back_also_after_a_restart() {
    let env = Env::new(KEY, "");
    std::fs::write(env.workdir.join("a.txt"), "x").unwrap();
    let thought = "The user wants the folder listed.";
    let srv = ScriptedServer::start(vec![
        deepseek_tool_turn(thought),
        answer("Now say it.", "It holds a.txt."),
    ])
    .unwrap();
    srv.require_reasoning_back();
    let o = run(&env, &srv, "deepseek-reasoner", &["run", "what is here?"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("It holds a.txt."));
    let b = bodies(&srv);
    assert!(b[0].get("reasoning_effort").is_none(), "not set: {}", b[0]);
    let (calls, _) = assistants(&b[1]);
    assert_eq!(calls[0]["reasoning_content"], thought, "{:#}", b[1]);
    assert_eq!(calls[0]["tool_calls"][0]["id"], "call_ds1");

    // Stored with its provenance; cached and reasoning tokens counted apart.
    let s = last_session(&env);
    let r = replies(&s);
    assert!(
        matches!(&r[0].parts[0], Part::Reasoning { text, replay: Some(p) }
            if text == thought && p.provider == "openai" && p.model == "deepseek-reasoner"),
        "{:?}",
        r[0].parts
    );
    assert_eq!(
        r[0].usage.input_tokens, 176,
        "cached tokens are counted apart"
    );
    assert_eq!(r[0].extra.tokens.cached_input_tokens, 1024);
    assert_eq!(r[0].extra.tokens.reasoning_tokens, 40);
    assert_eq!(
        s.header.ledger.as_ref().unwrap().usage.cached_input_tokens,
        1024
    );
    // The reasoning of a reply without calls is text only: never sent back.
    assert!(matches!(
        &r[1].parts[0],
        Part::Reasoning { replay: None, .. }
    ));

    // A second process continues: the tool turn's reasoning goes back again.
    srv.push([answer("Still.", "Still a.txt.")]);
    run(
        &env,
        &srv,
        "deepseek-reasoner",
        &["run", "--continue", "and now?"],
    );
    let again = &bodies(&srv)[2];
    let (calls, plain) = assistants(again);
    assert_eq!(calls[0]["reasoning_content"], thought, "{again:#}");
    assert!(
        plain.iter().all(|m| m.get("reasoning_content").is_none()),
        "{plain:#?}"
    );
}

#[test]
fn a_gemini_thought_signature_comes_back_on_its_call_also_after_a_restart() {
    let env = Env::new(KEY, "reasoning_effort = \"low\"\n");
    std::fs::write(env.workdir.join("a.txt"), "x").unwrap();
    let srv = ScriptedServer::start(vec![
        Stream::new()
            .role()
            .signed_tool_call(0, "call_g1", "list_dir", LIST, "CiQB-sig-g1")
            .finish("tool_calls")
            .usage(50, 5)
            .reply(),
        Reply::text("It holds a.txt."),
    ])
    .unwrap();
    srv.require_thought_signatures();
    let model = "gemini-3-pro-preview";
    run(&env, &srv, model, &["run", "what is here?"]);
    let b = bodies(&srv);
    assert_eq!(b[0]["reasoning_effort"], "low");
    let signed = |body: &Value| {
        let (calls, _) = assistants(body);
        calls[0]["tool_calls"][0]["extra_content"]["google"]["thought_signature"].clone()
    };
    assert_eq!(signed(&b[1]), "CiQB-sig-g1", "{:#}", b[1]);
    srv.push([Reply::text("Same.")]);
    run(&env, &srv, model, &["run", "--continue", "again?"]);
    let again = &bodies(&srv)[2];
    assert_eq!(signed(again), "CiQB-sig-g1", "{again:#}");
    assert_eq!(again["reasoning_effort"], "low");
    // The signature is kept to be sent back; `show` has no reasoning to print for it.
    let text = crate::support::stdout(&env.cmd(None, &["show", "last"]).succeeds());
    assert!(text.contains("It holds a.txt."), "{text}");
    assert!(!text.contains("[reasoning]"), "{text}");
}

#[test]
fn a_switch_of_model_leaves_chat_reasoning_out_and_says_so_once() {
    let env = Env::new(KEY, "");
    std::fs::write(env.workdir.join("a.txt"), "x").unwrap();
    let srv = ScriptedServer::start(vec![
        deepseek_tool_turn("Deep thoughts."),
        Reply::text("It holds a.txt."),
        // The other model makes a tool turn too: two requests, one warning.
        Reply::tool_calls(&[("call_q1", "list_dir", LIST)]),
        Reply::text("Still a.txt."),
    ])
    .unwrap();
    run(&env, &srv, "deepseek-reasoner", &["run", "what is here?"]);
    let o = run(
        &env,
        &srv,
        "qwen3-coder",
        &["run", "--continue", "--model", "qwen3-coder", "look again"],
    );
    let b = bodies(&srv);
    assert_eq!(b.len(), 4);
    for body in &b[2..] {
        assert_eq!(body["model"], "qwen3-coder");
        let (calls, _) = assistants(body);
        assert!(
            calls.iter().all(|m| m.get("reasoning_content").is_none()),
            "{calls:#?}"
        );
    }
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        err.matches("reasoning part(s) from another provider or model are left out")
            .count(),
        1,
        "{err}"
    );
}
