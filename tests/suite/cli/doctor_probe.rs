//! `neocode doctor` probes the configured provider (issue 24): does a streamed call report
//! usage, can the server stream a call with a tool, does it tell its window, and what neocode
//! does about each that is missing. `--no-probe` makes no call.

use neocode::runtime::scripted::{LlamaLike, Reply, ScriptedServer};

use crate::support::agent::Env;

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

#[test]
fn doctor_finds_what_a_llama_cpp_python_like_server_lacks_and_says_what_neocode_does() {
    let env = Env::new(KEY, "");
    let srv = ScriptedServer::start_llama_like(
        vec![
            Reply::text("ok"),
            Reply::tool_calls(&[("call_1", "echo", r#"{"text":"ok"}"#)]),
        ],
        LlamaLike { window: 2048 },
    )
    .unwrap();
    srv.set_props(serde_json::json!({"default_generation_settings": {"n_ctx": 2048}}));
    let (code, out, err) = doctor(&env, Some(&srv), &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("Provider probe"), "{out}");
    assert!(out.contains("  streamed text   yes"), "{out}");
    assert!(
        out.contains("  streamed usage  no: neocode counts the tokens itself (an estimate"),
        "{out}"
    );
    assert!(
        out.contains("  streamed tools  no: requests with tools are sent without streaming"),
        "{out}"
    );
    assert!(
        out.contains("  window          2048 tokens (told by the server"),
        "{out}"
    );
    assert!(!out.contains(KEY) && !err.contains(KEY));
    // The text call, the streamed tool call (an empty stream) and the tool call asked again whole.
    let bodies: Vec<_> = srv.requests().iter().map(|r| r.json()).collect();
    assert_eq!(bodies.len(), 3, "{bodies:#?}");
    assert!(bodies[0].get("tools").is_none(), "{:#}", bodies[0]);
    assert_eq!(bodies[1]["tool_choice"], "auto", "{:#}", bodies[1]);
    assert_eq!(bodies[1]["stream"], true);
    assert_eq!(bodies[2]["stream"], false);
}

#[test]
fn doctor_says_yes_to_a_full_server_and_asks_for_the_window_it_does_not_tell() {
    let env = Env::new(KEY, "");
    let srv = ScriptedServer::start(vec![
        Reply::text("ok"),
        Reply::tool_calls(&[("call_1", "echo", r#"{"text":"ok"}"#)]),
    ])
    .unwrap();
    let (code, out, err) = doctor(&env, Some(&srv), &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("  streamed text   yes"), "{out}");
    assert!(out.contains("  streamed usage  yes"), "{out}");
    assert!(out.contains("  streamed tools  yes"), "{out}");
    assert!(
        out.contains("  window          not told by the server: set context_window in config.toml"),
        "{out}"
    );
    assert!(out.contains("\"window unknown\""), "{out}");
    assert_eq!(srv.request_count(), 2);
}

#[test]
fn doctor_uses_the_configured_window_when_the_server_tells_none() {
    let env = Env::new(KEY, "context_window = 4096\n");
    let srv = ScriptedServer::start(vec![
        Reply::text("ok"),
        Reply::tool_calls(&[("call_1", "echo", r#"{"text":"ok"}"#)]),
    ])
    .unwrap();
    let (code, out, err) = doctor(&env, Some(&srv), &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("not told by the server; context_window = 4096 from config.toml is used"),
        "{out}"
    );
}

#[test]
fn no_probe_makes_no_call_and_a_failing_probe_exits_1() {
    let env = Env::new(KEY, "");
    let srv = ScriptedServer::start(vec![Reply::error(401, "Incorrect API key provided")]).unwrap();
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
    assert!(
        out.contains("  FAILED          a plain streamed call: "),
        "{out}"
    );
    assert!(err.contains("--no-probe"), "{err}");
    assert_eq!(srv.request_count(), 1);
}
