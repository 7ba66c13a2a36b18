//! End-to-end tests of `neocode acp`: the real binary as an editor's ACP agent, against a
//! scripted model on 127.0.0.1, driven line by line over stdin/stdout.

use crate::support::bridge::{Env, NotJson, spawn_json, write_call};

use std::io::Write;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use crate::support::flows::stalled;
use neocode::testkit::scripted::{Reply, Stream};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_neocode");

pub(super) fn vars(env: &Env) -> Vec<(String, String)> {
    vec![
        ("NEOCODE_HOME".into(), env.home.display().to_string()),
        ("NEOCODE_BASE_URL".into(), env.server.base_url()),
        ("NEOCODE_MODEL".into(), "scripted-model".into()),
        ("NEOCODE_API_KEY".into(), "sk-test-acp".into()),
        ("OPENAI_API_KEY".into(), String::new()),
        ("NO_COLOR".into(), "1".into()),
    ]
}

/// A `neocode acp` process and the JSON lines it writes.
pub(super) struct Acp {
    child: Child,
    stdin: Option<ChildStdin>,
    out: Receiver<Value>,
    next_id: u64,
}

impl Acp {
    pub(super) fn start(env: &Env) -> Acp {
        let (mut child, out) = spawn_json(
            Command::new(BIN)
                .arg("acp")
                .envs(vars(env))
                .current_dir(&env.workdir),
            Stdio::inherit(),
            NotJson::Panic,
        );
        Acp {
            stdin: child.stdin.take(),
            child,
            out,
            next_id: 0,
        }
    }

    pub(super) fn line(&mut self, line: &str) {
        let w = self.stdin.as_mut().unwrap();
        writeln!(w, "{line}").unwrap();
        w.flush().unwrap();
    }

    pub(super) fn send(&mut self, v: &Value) {
        self.line(&v.to_string());
    }

    /// Sends a request; returns its id.
    pub(super) fn request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    pub(super) fn next(&self) -> Value {
        self.out
            .recv_timeout(Duration::from_secs(30))
            .expect("a message from neocode acp within 30 s")
    }

    /// The next message, when one comes within `wait`.
    pub(super) fn try_next(&self, wait: Duration) -> Option<Value> {
        self.out.recv_timeout(wait).ok()
    }

    /// Every message up to the response to request `id`, answering permission requests with
    /// `choose`; returns (notifications and requests seen, the response).
    pub(super) fn until_response(
        &mut self,
        id: u64,
        mut choose: impl FnMut(&Value) -> Value,
    ) -> (Vec<Value>, Value) {
        let mut seen = Vec::new();
        loop {
            let m = self.next();
            if m["id"] == json!(id) && m.get("method").is_none() {
                return (seen, m);
            }
            if m["method"] == "session/request_permission" {
                let result = choose(&m);
                self.send(&json!({"jsonrpc": "2.0", "id": m["id"], "result": result}));
            }
            seen.push(m);
        }
    }

    pub(super) fn call(&mut self, method: &str, params: Value) -> (Vec<Value>, Value) {
        let id = self.request(method, params);
        self.until_response(id, |_| json!({"outcome": {"outcome": "cancelled"}}))
    }

    pub(super) fn initialize(&mut self) -> Value {
        let (_, r) = self.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        );
        r
    }

    /// A process started and initialized.
    pub(super) fn ready(env: &Env) -> Acp {
        let mut acp = Acp::start(env);
        acp.initialize();
        acp
    }

    /// Asks for session `id` of `env`'s workspace by `method` (`session/load` or
    /// `session/resume`): the messages before the response, and the response.
    pub(super) fn reopen(&mut self, env: &Env, method: &str, id: &str) -> (Vec<Value>, Value) {
        self.call(
            method,
            json!({"sessionId": id, "cwd": env.workdir, "mcpServers": []}),
        )
    }

    /// A process started and initialized, with a new session open; the session's id.
    pub(super) fn opened(env: &Env) -> (Acp, String) {
        let mut acp = Acp::ready(env);
        let id = acp.new_session(env);
        (acp, id)
    }

    /// Sends `text` as a prompt to session `id`; returns the request's id.
    pub(super) fn prompt(&mut self, id: &str, text: &str) -> u64 {
        self.request("session/prompt", text_prompt(id, text))
    }

    /// Prompts session `id` with `text` (every permission asked answered `cancelled`) and
    /// asserts the turn ended normally; (what came before the response, the response).
    pub(super) fn answer(&mut self, id: &str, text: &str) -> (Vec<Value>, Value) {
        let pid = self.prompt(id, text);
        let (seen, resp) =
            self.until_response(pid, |_| json!({"outcome": {"outcome": "cancelled"}}));
        assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
        (seen, resp)
    }

    pub(super) fn new_session(&mut self, env: &Env) -> String {
        let (_, r) = self.call("session/new", json!({"cwd": env.workdir, "mcpServers": []}));
        r["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("{r}"))
            .to_string()
    }

    /// The client dies: stdin closes and nothing reads stdout any more; waits for the
    /// process and returns how it exited.
    pub(super) fn vanish(mut self) -> std::process::ExitStatus {
        self.stdin.take();
        drop(self.child.stdout.take());
        // The reader thread drops stdout at its next line (it has nowhere to send it).
        drop(self.out);
        self.child.wait().unwrap()
    }

    /// Closes stdin and waits for the process; it must exit 0.
    pub(super) fn close(mut self) {
        self.stdin.take();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "neocode acp exited with {status}");
    }
}

/// The params of a `session/prompt` of `text` to session `id`.
pub(super) fn text_prompt(id: &str, text: &str) -> Value {
    json!({"sessionId": id, "prompt": [{"type": "text", "text": text}]})
}

pub(super) fn updates<'a>(seen: &'a [Value], kind: &str) -> Vec<&'a Value> {
    seen.iter()
        .filter(|m| m["method"] == "session/update")
        .map(|m| &m["params"]["update"])
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

pub(super) fn agent_text(seen: &[Value]) -> String {
    updates(seen, "agent_message_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

/// `neocode ARGS` in the env's workspace, run to its end.
fn neocode(env: &Env, args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .args(args)
        .envs(vars(env))
        .current_dir(&env.workdir)
        .output()
        .unwrap()
}

pub(super) fn list_ids(env: &Env) -> Vec<String> {
    let out = neocode(env, &["--list", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let v: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    v.iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn an_editor_creates_prompts_with_an_approved_edit_lists_and_loads_a_session() {
    let env = Env::new(vec![
        write_call("call_1", "notes.txt", "hello from acp\n"),
        Reply::text("I wrote notes.txt."),
    ]);
    let mut acp = Acp::start(&env);
    let init = acp.initialize();
    assert_eq!(
        init["result"]["agentCapabilities"]["loadSession"], true,
        "{init}"
    );
    assert_eq!(init["result"]["agentInfo"]["name"], "neocode", "{init}");
    let id = acp.new_session(&env);

    let pid = acp.prompt(&id, "write the notes");
    let mut asked = Vec::new();
    let (seen, resp) = acp.until_response(pid, |req| {
        asked.push(req.clone());
        json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}})
    });
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    assert_eq!(asked.len(), 1, "one permission asked: {asked:#?}");
    let kinds: Vec<&str> = asked[0]["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"allow_once") && kinds.contains(&"reject_once"),
        "{kinds:?}"
    );
    let call = updates(&seen, "tool_call");
    assert_eq!(call.len(), 1, "{seen:#?}");
    assert_eq!(call[0]["toolCallId"], "call_1");
    assert_eq!(call[0]["kind"], "edit");
    assert_eq!(call[0]["content"][0]["type"], "diff", "{}", call[0]);
    assert_eq!(call[0]["content"][0]["newText"], "hello from acp\n");
    let done = updates(&seen, "tool_call_update");
    assert_eq!(done.last().unwrap()["status"], "completed", "{done:#?}");
    assert_eq!(agent_text(&seen), "I wrote notes.txt.");
    assert_eq!(
        std::fs::read_to_string(env.workdir.join("notes.txt")).unwrap(),
        "hello from acp\n"
    );

    let (_, listed) = acp.call("session/list", json!({"cwd": env.workdir}));
    assert_eq!(
        listed["result"]["sessions"][0]["sessionId"],
        id.as_str(),
        "{listed}"
    );
    acp.close();
    assert!(
        list_ids(&env).contains(&id),
        "the session is in neocode --list"
    );

    // Another editor process loads it: the transcript is replayed as updates.
    let mut acp = Acp::ready(&env);
    let (seen, resp) = acp.reopen(&env, "session/load", &id);
    assert!(resp.get("error").is_none(), "{resp}");
    let user = updates(&seen, "user_message_chunk");
    assert_eq!(user[0]["content"]["text"], "write the notes");
    assert_eq!(updates(&seen, "tool_call")[0]["toolCallId"], "call_1");
    assert_eq!(agent_text(&seen), "I wrote notes.txt.");
    acp.close();
}

/// A model that writes `x` to `path` (call `call_1`), then answers `then`, and a process with
/// a session open on it: the env, the process and the session.
fn opened_writing(path: &str, then: &str) -> (Env, Acp, String) {
    let env = Env::new(vec![write_call("call_1", path, "x"), Reply::text(then)]);
    let (acp, id) = Acp::opened(&env);
    (env, acp, id)
}

#[test]
fn a_rejected_call_is_not_run_and_the_model_is_told() {
    let (env, mut acp, id) = opened_writing("nope.txt", "Understood, not writing.");
    let pid = acp.prompt(&id, "write nope");
    let (seen, resp) = acp.until_response(
        pid,
        |_| json!({"outcome": {"outcome": "selected", "optionId": "reject_once"}}),
    );
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    assert!(!env.workdir.join("nope.txt").exists());
    let done = updates(&seen, "tool_call_update");
    assert_eq!(done.last().unwrap()["status"], "failed", "{done:#?}");
    acp.close();
}

#[test]
fn cancel_stops_the_prompt_with_stop_reason_cancelled() {
    let env = Env::new(vec![stalled(Duration::from_secs(60))]);
    let (mut acp, id) = Acp::opened(&env);
    let pid = acp.prompt(&id, "take your time");
    acp.send(&json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": id}}));
    let (_, resp) = acp.until_response(pid, |_| json!({"outcome": {"outcome": "cancelled"}}));
    assert_eq!(resp["result"]["stopReason"], "cancelled", "{resp}");
    acp.close();
}

#[test]
fn bad_lines_unknown_methods_and_sessions_are_json_rpc_errors() {
    let env = Env::new(vec![]);
    let mut acp = Acp::ready(&env);
    let (_, r) = acp.call("session/teleport", json!({}));
    assert_eq!(r["error"]["code"], -32601, "{r}");
    let (_, r) = acp.call(
        "session/prompt",
        json!({"sessionId": "no-such-session", "prompt": [{"type": "text", "text": "hi"}]}),
    );
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown session"),
        "{r}"
    );
    acp.line("{this is not json");
    let r = acp.next();
    assert_eq!(r["error"]["code"], -32700, "{r}");
    // Still serving.
    let init = acp.initialize();
    assert!(init.get("result").is_some(), "{init}");
    acp.close();
}

#[test]
fn a_client_that_exits_mid_turn_leaves_the_turn_cancelled_and_stored() {
    let env = Env::new(vec![stalled(Duration::from_secs(60))]);
    let (mut acp, id) = Acp::opened(&env);
    acp.prompt(&id, "take your time");
    // The turn has started once the prompt is stored; then the editor goes away.
    let mut waited = 0;
    while env.server.request_count() == 0 {
        assert!(waited < 3000, "the model was never asked");
        std::thread::sleep(Duration::from_millis(10));
        waited += 1;
    }
    acp.close();
    let texts = env.texts(&id);
    assert_eq!(texts[0].1, "take your time", "{texts:?}");
    let out = neocode(&env, &["--list", "--json"]);
    let listed: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let row = listed.iter().find(|s| s["id"] == id.as_str()).unwrap();
    assert_ne!(row["status"], "running", "{row}");
}

/// `neocode show <id> --json` in the env.
fn show(env: &Env, id: &str) -> Value {
    let out = neocode(env, &["show", id, "--json"]);
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_client_that_dies_while_the_turn_streams_leaves_it_interrupted_and_resumable() {
    let slow = Stream::new()
        .role()
        .text_deltas("Partial answer, streamed slowly, never finished.", 8)
        .finish("stop")
        .usage(10, 5)
        .delays(Duration::ZERO, Duration::from_millis(400))
        .reply();
    let env = Env::new(vec![slow, Reply::text("Resumed from the terminal.")]);
    let (mut acp, id) = Acp::opened(&env);
    acp.prompt(&id, "stream slowly");
    // The first chunk has arrived: the turn is streaming. Then the editor dies: both its
    // pipes close (neocode acp's next write finds no reader).
    loop {
        let m = acp.next();
        if m["params"]["update"]["sessionUpdate"] == "agent_message_chunk" {
            break;
        }
    }
    let started = std::time::Instant::now();
    let exit = acp.vanish();
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(10),
        "neocode acp outlived its client by {took:?}"
    );
    assert!(exit.success(), "a client going away is no failure: {exit}");
    assert_eq!(
        env.server.requests().len(),
        1,
        "the turn asked the model nothing more"
    );

    let shown = show(&env, &id);
    let status = shown["status"].as_str().unwrap();
    assert!(
        status == "interrupted" || status == "cancelled",
        "stored as {status}: {shown}"
    );
    let texts = env.texts(&id);
    assert_eq!(texts[0].1, "stream slowly", "the prompt is kept: {texts:?}");
    let kept = &texts[1].1;
    assert!(
        !kept.is_empty()
            && "Partial answer, streamed slowly, never finished.".starts_with(kept.as_str()),
        "what streamed before the client died is kept: {texts:?}"
    );

    // The lease went with the process: the terminal resumes the session.
    let out = run_resume(&env, &id, "go on");
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Resumed from the terminal."),
        "{out:?}"
    );
    let texts = env.texts(&id);
    assert_eq!(
        texts.last().unwrap().1,
        "Resumed from the terminal.",
        "{texts:?}"
    );
}

#[test]
fn a_client_that_dies_while_asked_for_permission_leaves_the_call_unrun_and_resumable() {
    let (env, mut acp, id) = opened_writing("never.txt", "Resumed.");
    acp.prompt(&id, "write never");
    while acp.next()["method"] != "session/request_permission" {}
    let started = std::time::Instant::now();
    let exit = acp.vanish();
    assert!(started.elapsed() < Duration::from_secs(10), "{exit}");
    assert!(exit.success(), "{exit}");
    assert!(!env.workdir.join("never.txt").exists());
    assert_eq!(
        env.server.requests().len(),
        1,
        "no denial went to the model: the turn was cancelled"
    );
    let shown = show(&env, &id);
    assert_ne!(shown["status"], "running", "{shown}");
    assert_ne!(shown["status"], "completed", "{shown}");
    assert_eq!(env.texts(&id)[0].1, "write never");
    let out = run_resume(&env, &id, "go on");
    assert!(out.status.success(), "{out:?}");
    assert!(!env.workdir.join("never.txt").exists());
}

#[test]
fn auto_edit_mode_runs_the_edit_without_asking() {
    let env = Env::new(vec![
        write_call("call_1", "auto.txt", "written\n"),
        Reply::text("Done."),
    ]);
    let mut acp = Acp::ready(&env);
    let (_, created) = acp.call("session/new", json!({"cwd": env.workdir, "mcpServers": []}));
    let modes = &created["result"]["modes"];
    assert_eq!(modes["currentModeId"], "ask", "{created}");
    let id = created["result"]["sessionId"].as_str().unwrap().to_string();
    let (_, r) = acp.call(
        "session/set_mode",
        json!({"sessionId": id, "modeId": "auto-edit"}),
    );
    assert!(r.get("error").is_none(), "{r}");
    let (_, r) = acp.call(
        "session/set_mode",
        json!({"sessionId": id, "modeId": "yolo"}),
    );
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let pid = acp.prompt(&id, "write it");
    let mut asked = 0;
    let (_, resp) = acp.until_response(pid, |_| {
        asked += 1;
        json!({"outcome": {"outcome": "cancelled"}})
    });
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    assert_eq!(asked, 0, "auto-edit asks nothing for an edit");
    assert_eq!(
        std::fs::read_to_string(env.workdir.join("auto.txt")).unwrap(),
        "written\n"
    );
    acp.close();
}

#[test]
fn always_allow_keeps_the_rule_so_the_next_like_call_does_not_ask() {
    let first = r#"{"path":"a.txt","content":"a\n"}"#;
    let second = r#"{"path":"b.txt","content":"b\n"}"#;
    let env = Env::new(vec![
        Reply::tool_calls(&[("call_1", "write_file", first)]),
        Reply::tool_calls(&[("call_2", "write_file", second)]),
        Reply::text("Both written."),
    ]);
    let (mut acp, id) = Acp::opened(&env);
    let pid = acp.prompt(&id, "write a and b");
    let mut asked = Vec::new();
    let (_, resp) = acp.until_response(pid, |req| {
        asked.push(req["params"]["toolCall"]["toolCallId"].clone());
        json!({"outcome": {"outcome": "selected", "optionId": "allow_always"}})
    });
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    assert_eq!(asked, [json!("call_1")], "only the first write asks");
    assert!(env.workdir.join("a.txt").exists() && env.workdir.join("b.txt").exists());
    acp.close();
}

/// `neocode run --resume <id> <message>` in the env: its exit status, stdout and stderr.
pub(super) fn run_resume(env: &Env, id: &str, message: &str) -> std::process::Output {
    neocode(env, &["run", "--resume", id, message])
}

/// A session with one answered prompt, made by an ACP process that is still open.
fn prompted(acp: &mut Acp, env: &Env, text: &str) -> String {
    acp.initialize();
    let id = acp.new_session(env);
    acp.answer(&id, text);
    id
}

#[test]
fn fork_makes_a_listed_session_with_the_parents_messages_or_up_to_a_named_one() {
    let env = Env::new(vec![Reply::text("First answer.")]);
    let mut acp = Acp::start(&env);
    let id = prompted(&mut acp, &env, "hello");
    let (_, init) = acp.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    let caps = &init["result"]["agentCapabilities"]["sessionCapabilities"];
    for cap in ["list", "fork", "resume", "close"] {
        assert!(caps[cap].is_object(), "{cap} is advertised: {init}");
    }

    let (_, r) = acp.call(
        "session/fork",
        json!({"sessionId": id, "cwd": env.workdir, "mcpServers": []}),
    );
    let fork = r["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_string();
    assert_ne!(fork, id);
    assert_eq!(
        env.texts(&fork),
        env.texts(&id),
        "the fork holds the parent's messages"
    );
    assert_eq!(env.texts(&fork).len(), 2);

    let (_, r) = acp.call(
        "session/fork",
        json!({"sessionId": id, "cwd": env.workdir, "_meta": {"neocode": {"atMessage": 1}}}),
    );
    let early = r["result"]["sessionId"].as_str().unwrap().to_string();
    let texts = env.texts(&early);
    assert_eq!(texts.len(), 1, "{texts:?}");
    assert_eq!(texts[0].1, "hello");
    let (_, r) = acp.call(
        "session/fork",
        json!({"sessionId": id, "cwd": env.workdir, "_meta": {"neocode": {"atMessage": 9}}}),
    );
    assert_eq!(r["error"]["code"], -32602, "a fork past the end fails: {r}");
    acp.close();
    let listed = list_ids(&env);
    assert!(
        listed.contains(&fork) && listed.contains(&early),
        "{listed:?}"
    );
}

#[test]
fn resume_continues_without_replay_and_close_lets_neocode_run_resume_it() {
    let env = Env::new(vec![
        Reply::text("First answer."),
        Reply::text("Second answer."),
        Reply::text("From the terminal."),
    ]);
    let mut acp = Acp::start(&env);
    let id = prompted(&mut acp, &env, "hello");
    acp.close();

    let mut acp = Acp::ready(&env);
    let (seen, r) = acp.reopen(&env, "session/resume", &id);
    assert!(r.get("error").is_none(), "{r}");
    assert!(seen.is_empty(), "resume replays nothing: {seen:#?}");
    let (seen, resp) = acp.answer(&id, "again");
    assert_eq!(agent_text(&seen), "Second answer.");
    assert_eq!(env.texts(&id).len(), 4, "the session continued");
    // The turn's usage (the scripted reply reports 10 in, 5 out) rides on the response.
    let usage = &resp["result"]["usage"];
    assert_eq!(
        (
            &usage["inputTokens"],
            &usage["outputTokens"],
            &usage["totalTokens"]
        ),
        (&json!(10), &json!(5), &json!(15)),
        "{resp}"
    );

    // The editor still has it open: another process cannot run it, and is told who has it.
    let out = run_resume(&env, &id, "from the terminal");
    assert!(!out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&acp.child.id().to_string()), "{err}");

    let (_, r) = acp.call("session/close", json!({"sessionId": id}));
    assert!(r.get("error").is_none(), "{r}");
    let (_, r) = acp.call("session/prompt", text_prompt(&id, "closed?"));
    assert_eq!(
        r["error"]["code"], -32602,
        "a closed session is unknown: {r}"
    );
    let out = run_resume(&env, &id, "from the terminal");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(env.texts(&id).len(), 6);
    acp.close();
}

#[test]
fn a_prompt_over_the_cap_is_a_json_rpc_error_and_nothing_is_stored() {
    let env = Env::new(vec![Reply::text("fine")]);
    let (mut acp, id) = Acp::opened(&env);
    let huge = "x".repeat((1 << 20) + 1);
    let (_, r) = acp.call("session/prompt", text_prompt(&id, &huge));
    assert_eq!(r["error"]["code"], -32602, "{}", &r.to_string()[..200]);
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("1048577 bytes") && msg.contains("1 MiB"),
        "{msg}"
    );
    assert!(env.texts(&id).is_empty());
    assert_eq!(env.server.request_count(), 0);
    // Still serving, and the session still takes prompts.
    acp.answer(&id, "small");
    acp.close();
}

#[test]
fn a_second_process_on_an_open_session_is_told_which_process_holds_it() {
    let env = Env::new(vec![Reply::text("First answer."), Reply::text("Second.")]);
    let mut first = Acp::start(&env);
    let id = prompted(&mut first, &env, "hello");

    let mut second = Acp::ready(&env);
    let (seen, r) = second.reopen(&env, "session/load", &id);
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let msg = r["error"]["message"].as_str().unwrap();
    let holder = format!("pid {}", first.child.id());
    assert!(msg.contains(&holder) && msg.contains(&id), "{msg}");
    assert!(seen.is_empty(), "nothing is replayed: {seen:#?}");
    let (_, r) = second.call("session/prompt", text_prompt(&id, "mine now"));
    assert_eq!(r["error"]["code"], -32602, "{r}");

    // Once the first closes it, the second loads and prompts it.
    let (_, r) = first.call("session/close", json!({"sessionId": id}));
    assert!(r.get("error").is_none(), "{r}");
    let (_, r) = second.reopen(&env, "session/load", &id);
    assert!(r.get("error").is_none(), "{r}");
    second.answer(&id, "mine now");
    first.close();
    second.close();
}
