//! The bridge's request loop through the library (`neocode::bridge::serve`) against a real
//! store in a temp home, with a turn runner that stands in for the model: every branch of
//! seed 000 §2's decision chain with its exact events, history reconciliation, malformed
//! lines, approvals and cancel. The real binary with the real agent is `tests/bridge.rs`.

use crate::support::Env;
use crate::support::bridge::{PLAIN_TURN, TOOL_CALLED, WARNED_TURN, find, next, session_id, until};

use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Duration;

use neocode::bridge::{
    BridgeError, BridgeOptions, ErrorCode, PreparedTurn, TurnRunner, TurnSpec, serve,
};
use neocode::runtime::Sessions;
use neocode::runtime::agent::{
    Commands, FinishReason, Lease, Sink, Started, TurnCommand, TurnEvent, TurnHandle, adopt,
};
use neocode::runtime::tools::ToolKind;
use neocode::session::{AppendMeta, NewMessage, Role, ToolCall, Usage, conversation_key};
use serde_json::{Value, json};

/// Stands in for the agent: takes the session's lease and adopts the caller's history with
/// the runtime's own function (as a turn does), stores the prompt and a reply the way a turn
/// does, and for prompts starting with `ask` or `slow` exercises approvals and cancel.
struct Double;

impl TurnRunner for Double {
    fn prepare(&self, _model: Option<&str>) -> Result<Box<dyn PreparedTurn>, BridgeError> {
        Ok(Box::new(Double))
    }
}

impl PreparedTurn for Double {
    fn start(self: Box<Self>, spec: TurnSpec, sink: Sink) -> Result<Started, BridgeError> {
        let s = spec.sessions.clone();
        let lease = Lease::acquire(s.data_dir(), &spec.session_id)
            .map_err(|e| BridgeError::new(ErrorCode::Busy, format!("{e:?}")))?;
        let (id, lease, adopted, prompt) = match &spec.adopt {
            Some(a) => {
                let done = adopt::adopt(&s, spec.session_id.clone(), lease, a)
                    .map_err(|e| BridgeError::from(&e))?;
                (done.id, done.lease, Some(done.adopted), done.prompt)
            }
            None => (spec.session_id.clone(), lease, None, spec.prompt.clone()),
        };
        let (commands, rx, cancel) = Commands::channel();
        let mut sink = sink.build(&commands);
        let turn_id = id.clone();
        let thread = std::thread::spawn(move || {
            let _lease = lease;
            Double::body(&s, turn_id, prompt, &mut |ev| sink.event(ev), &rx);
        });
        Ok(Started {
            handle: TurnHandle::new(id, commands, cancel, thread),
            adopted,
        })
    }
}

impl Double {
    #[expect(clippy::too_many_lines)]
    fn body(
        s: &Sessions,
        id: String,
        given: Option<String>,
        emit: &mut dyn FnMut(TurnEvent),
        commands: &Receiver<TurnCommand>,
    ) {
        emit(TurnEvent::Started {
            session_id: id.clone(),
        });
        let prompt = match &given {
            Some(p) => {
                s.append(
                    &id,
                    &[NewMessage::text(Role::User, p)],
                    &AppendMeta::default(),
                )
                .unwrap();
                p.clone()
            }
            // A retry: the prompt is the stored, unanswered last message.
            None => s.load(&id).unwrap().messages.last().unwrap().text(),
        };
        let usage = Usage {
            input_tokens: 10,
            output_tokens: 2,
        };
        let finish = |reason| TurnEvent::Finished { reason, usage };
        if prompt.starts_with("fail") && given.is_some() {
            return emit(finish(FinishReason::Failed {
                code: neocode::runtime::agent::FailCode::Unreachable,
                message: "no model at 127.0.0.1:9".into(),
            }));
        }
        if prompt.starts_with("ask") {
            let call = ToolCall {
                id: "call_1".into(),
                name: "run_command".into(),
                arguments: r#"{"command":"make"}"#.into(),
            };
            let seq = s
                .append(
                    &id,
                    &[NewMessage {
                        role: Some(Role::Assistant),
                        tool_calls: vec![call.clone()],
                        ..NewMessage::default()
                    }],
                    &AppendMeta::default(),
                )
                .unwrap()[0];
            emit(TurnEvent::AssistantStored { seq, usage });
            emit(TurnEvent::ToolCall {
                call: call.clone(),
                kind: ToolKind::Command,
                summary: "make".into(),
            });
            emit(TurnEvent::ApprovalNeeded {
                call,
                summary: "make".into(),
                reason: "policy ask".into(),
                rules: vec!["run_command(make)".into()],
            });
            let (text, is_error) = match commands.recv() {
                Ok(TurnCommand::Approve { always, .. }) => {
                    (format!("built (always={always})"), false)
                }
                Ok(TurnCommand::Deny { reason, .. }) => (format!("denied: {reason:?}"), true),
                Ok(TurnCommand::Cancel) | Err(_) => return emit(finish(FinishReason::Cancelled)),
                Ok(
                    TurnCommand::ApprovePlan
                    | TurnCommand::EditPlan { .. }
                    | TurnCommand::RejectPlan,
                ) => unreachable!("the bridge starts no plan runs"),
                Ok(TurnCommand::AlwaysAllow { .. }) => unreachable!("the bridge answers always"),
            };
            let seq = s
                .append(
                    &id,
                    &[NewMessage::tool_result("call_1", &text, is_error)],
                    &AppendMeta::default(),
                )
                .unwrap()[0];
            emit(TurnEvent::ToolResult {
                call_id: "call_1".into(),
                text,
                is_error,
                seq,
                permission: None,
                diagnostics: None,
            });
        }
        if prompt.starts_with("slow") {
            emit(TurnEvent::TextDelta("partial".into()));
            match commands.recv_timeout(Duration::from_secs(20)) {
                Ok(TurnCommand::Cancel) => {
                    s.append(
                        &id,
                        &[NewMessage::text(Role::Assistant, "partial")],
                        &AppendMeta::default(),
                    )
                    .unwrap();
                    return emit(finish(FinishReason::Cancelled));
                }
                other => panic!("expected cancel, got {other:?}"),
            }
        }
        let reply = format!("echo: {prompt}");
        emit(TurnEvent::TextDelta(reply.clone()));
        let seq = s
            .append(
                &id,
                &[NewMessage::text(Role::Assistant, &reply)],
                &AppendMeta::default(),
            )
            .unwrap()[0];
        emit(TurnEvent::AssistantStored { seq, usage });
        emit(finish(FinishReason::Completed));
    }
}

struct ChanReader {
    rx: Receiver<Vec<u8>>,
    buf: Vec<u8>,
}

impl Read for ChanReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.buf.is_empty() {
            match self.rx.recv() {
                Ok(b) => self.buf = b,
                Err(_) => return Ok(0),
            }
        }
        let n = out.len().min(self.buf.len());
        out[..n].copy_from_slice(&self.buf[..n]);
        self.buf.drain(..n);
        Ok(n)
    }
}

struct ChanWriter(Sender<Value>, Vec<u8>);

impl Write for ChanWriter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.1.extend_from_slice(b);
        while let Some(i) = self.1.iter().position(|&c| c == b'\n') {
            let line: Vec<u8> = self.1.drain(..=i).collect();
            let v = serde_json::from_slice(&line).expect("every output line is JSON");
            let _ = self.0.send(v);
        }
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The one [`Env`] and bridges serving it in-process.
struct Ws(Env);

impl std::ops::Deref for Ws {
    type Target = Env;

    fn deref(&self) -> &Env {
        &self.0
    }
}

impl Ws {
    fn new() -> Ws {
        Ws(Env::new())
    }

    /// A live bridge process (in-process): lines in, events out.
    fn bridge(&self) -> Live {
        let (in_tx, in_rx) = mpsc::channel();
        let (out_tx, out_rx) = mpsc::channel();
        let opts = BridgeOptions {
            home: self.home.clone(),
            workdir: Some(self.workdir.clone()),
            runner: Arc::new(Double),
            max_line_bytes: neocode::bridge::MAX_LINE_BYTES,
        };
        let handle = std::thread::spawn(move || {
            let mut w = ChanWriter(out_tx, Vec::new());
            serve(
                opts,
                ChanReader {
                    rx: in_rx,
                    buf: Vec::new(),
                },
                &mut w,
            )
            .unwrap();
        });
        Live {
            input: Some(in_tx),
            output: out_rx,
            handle: Some(handle),
        }
    }

    /// A new conversation whose first message is `first`: the session it opened.
    fn start(&self, first: &str) -> String {
        session_id(&self.turn(json!({"type": "chat", "messages": [user(first)]})))
    }

    /// One bridge process per turn, as the seed's provider runs it: the request, then EOF.
    fn turn(&self, req: Value) -> Vec<Value> {
        let live = self.bridge();
        live.send(&req.to_string());
        live.close()
    }
}

struct Live {
    input: Option<Sender<Vec<u8>>>,
    output: Receiver<Value>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Live {
    fn send(&self, line: &str) {
        let mut b = line.as_bytes().to_vec();
        b.push(b'\n');
        self.input.as_ref().unwrap().send(b).unwrap();
    }

    fn next(&self) -> Value {
        next(&self.output)
    }

    /// Events up to and including the next one of type `ty`.
    fn until(&self, ty: &str) -> Vec<Value> {
        until(&self.output, ty)
    }

    /// Closes stdin and collects everything until the process ends.
    fn close(mut self) -> Vec<Value> {
        self.input.take();
        self.handle.take().unwrap().join().unwrap();
        self.output.try_iter().collect()
    }
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

fn user(t: &str) -> Value {
    json!({"role": "user", "content": t})
}

fn assistant(t: &str) -> Value {
    json!({"role": "assistant", "content": t})
}

fn key(t: &str) -> String {
    conversation_key(t)
}

/// What a session holds after the echo model answered each of `prompts`: the prompt, then
/// `echo: ` and the prompt.
fn echoed(prompts: &[&str]) -> Vec<(Role, String)> {
    prompts
        .iter()
        .flat_map(|p| {
            [
                (Role::User, p.to_string()),
                (Role::Assistant, format!("echo: {p}")),
            ]
        })
        .collect()
}

fn texts(s: &Sessions, id: &str) -> Vec<(Role, String)> {
    s.load(id)
        .unwrap()
        .messages
        .iter()
        .map(|m| (m.role, m.text()))
        .collect()
}

#[test]
fn a_new_conversation_gets_a_new_session_with_its_key() {
    let ws = Ws::new();
    let ev = ws.turn(json!({"type": "chat", "request_id": "r1",
        "messages": [{"role": "system", "content": "plugin rules"}, user("hello there")]}));
    assert_eq!(types(&ev), PLAIN_TURN);
    assert_eq!(
        ev[0],
        json!({"type": "protocol_ack", "protocol": "neocode-bridge", "version": 1})
    );
    let init = &ev[1];
    assert_eq!(init["request_id"], "r1");
    assert_eq!(init["recovered"], false);
    assert!(init["recovery_reason"].is_null());
    let id = init["session_id"].as_str().unwrap();
    let s = ws.sessions();
    let h = s.header(id).unwrap();
    assert_eq!(
        h.conversation_key.as_deref(),
        Some(key("hello there").as_str())
    );
    assert_eq!(h.workdir, ws.workdir.display().to_string());
    // The system message is the plugin's, not part of the transcript.
    assert_eq!(texts(&s, id), echoed(&["hello there"]));
    assert_eq!(
        find(&ev, "finish")["usage"],
        json!({"input_tokens": 10, "output_tokens": 2})
    );
}

#[test]
fn a_known_id_continues_without_duplicating_the_history() {
    let ws = Ws::new();
    let id = ws.start("one");
    for (n, msgs) in [
        json!([user("one"), assistant("echo: one"), user("two")]),
        json!([
            user("one"),
            assistant("echo: one"),
            user("two"),
            assistant("echo: two"),
            user("three")
        ]),
    ]
    .into_iter()
    .enumerate()
    {
        let ev = ws.turn(json!({"type": "chat", "session_id": id, "conversation_key": key("one"), "messages": msgs}));
        assert_eq!(types(&ev), PLAIN_TURN, "turn {n}");
        let init = find(&ev, "session_init");
        assert_eq!(init["session_id"], id.as_str());
        assert_eq!(init["recovered"], false);
    }
    let s = ws.sessions();
    assert_eq!(s.count().unwrap(), 1);
    let t = texts(&s, &id);
    assert_eq!(t.len(), 6, "{t:?}");
    assert_eq!(t[4], (Role::User, "three".to_string()));
}

#[test]
fn new_session_true_always_starts_fresh() {
    let ws = Ws::new();
    let id = ws.start("one");
    let ev = ws.turn(
        json!({"type": "chat", "new_session": true, "session_id": id,
        "conversation_key": key("one"),
        "messages": [user("one"), assistant("echo: one"), user("two")]}),
    );
    assert_eq!(types(&ev), PLAIN_TURN);
    let new_id = find(&ev, "session_init")["session_id"].as_str().unwrap();
    assert_ne!(new_id, id);
    assert_eq!(find(&ev, "session_init")["recovered"], false);
    assert_eq!(ws.sessions().count().unwrap(), 2);
}

#[test]
fn an_unknown_id_starts_new_with_a_warning_listing_recent_sessions() {
    let ws = Ws::new();
    let earlier = ws.start("earlier work");
    let ev = ws.turn(json!({"type": "chat", "request_id": "r2",
        "session_id": "0000dead-0000-4000-8000-000000000000",
        "conversation_key": key("never stored"),
        "messages": [user("never stored"), assistant("hm"), user("go on")]}));
    assert_eq!(types(&ev), WARNED_TURN);
    let init = find(&ev, "session_init");
    let id = init["session_id"].as_str().unwrap();
    assert_ne!(id, earlier);
    assert_eq!(init["recovered"], false);
    let w = find(&ev, "warning");
    assert_eq!(w["code"], "session_not_found_starting_new");
    assert_eq!(w["request_id"], "r2");
    assert!(w["message"].as_str().unwrap().contains("0000dead"), "{w}");
    // The sessions the caller may have meant, not the one just created.
    assert_eq!(
        w["recent_sessions"],
        json!([{"id": earlier, "title": "earlier work"}])
    );
    // The caller's history came along into the new session.
    assert_eq!(texts(&ws.sessions(), id).len(), 4);
}

/// An unknown id, and a missing (empty) one, with the key of an existing session: that
/// session is recovered, saying why.
#[test]
fn an_unknown_or_missing_id_whose_key_matches_recovers_that_session() {
    for (session_id, next, reason) in [
        (
            "0000dead-0000-4000-8000-000000000000",
            "and the other one",
            "session_not_found",
        ),
        ("", "more", "session_id_missing"),
    ] {
        let ws = Ws::new();
        let id = ws.start("fix the login test");
        let ev = ws.turn(json!({"type": "chat", "session_id": session_id,
            "conversation_key": key("fix the login test"),
            "messages": [user("fix the login test"), assistant("echo: fix the login test"), user(next)]}));
        assert_eq!(types(&ev), PLAIN_TURN, "{reason}");
        let init = find(&ev, "session_init");
        assert_eq!(init["session_id"], id.as_str());
        assert_eq!(init["recovered"], true);
        assert_eq!(init["recovery_reason"], reason);
        assert_eq!(ws.sessions().count().unwrap(), 1, "{reason}");
        assert_eq!(texts(&ws.sessions(), &id).len(), 4, "{reason}");
    }
}

#[test]
fn a_missing_id_on_a_continuation_without_a_match_starts_fresh_with_a_warning() {
    let ws = Ws::new();
    let other = ws.start("something else");
    let ev = ws.turn(json!({"type": "chat",
        "messages": [user("lost one"), {"role": "assistant", "content": null,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "text"}, user("continue")]}));
    assert_eq!(types(&ev), WARNED_TURN);
    let w = find(&ev, "warning");
    assert_eq!(w["code"], "session_id_missing_starting_fresh");
    assert_eq!(
        w["recent_sessions"],
        json!([{"id": other, "title": "something else"}])
    );
    let id = find(&ev, "session_init")["session_id"].as_str().unwrap();
    assert_ne!(id, other);
    assert_eq!(find(&ev, "session_init")["recovered"], false);
    let m = ws.sessions().load(id).unwrap().messages;
    assert_eq!(m[1].tool_calls[0].id, "c1");
    assert_eq!(m[2].tool_call_id.as_deref(), Some("c1"));
}

#[test]
fn a_missing_id_on_a_new_conversation_is_a_plain_new_session() {
    let ws = Ws::new();
    ws.turn(json!({"type": "chat", "messages": [user("same first words")]}));
    // Same first message, no key sent (the provider sends none for a new conversation): the
    // old session is not pulled in.
    let ev = ws.turn(json!({"type": "chat", "messages": [user("same first words")]}));
    assert_eq!(types(&ev), PLAIN_TURN);
    assert_eq!(ws.sessions().count().unwrap(), 2);
}

#[test]
fn after_new_session_recovery_picks_the_most_recent_conversation_with_the_key() {
    let ws = Ws::new();
    let first = ws.start("hello");
    let second = session_id(
        &ws.turn(json!({"type": "chat", "new_session": true, "messages": [user("hello")]})),
    );
    assert_ne!(first, second);
    std::thread::sleep(Duration::from_millis(5));
    ws.turn(
        json!({"type": "chat", "session_id": second, "conversation_key": key("hello"),
        "messages": [user("hello"), assistant("echo: hello"), user("next")]}),
    );
    let ev = ws.turn(json!({"type": "chat", "conversation_key": key("hello"),
        "messages": [user("hello"), assistant("echo: hello"), user("next"), assistant("echo: next"), user("last")]}));
    let init = find(&ev, "session_init");
    assert_eq!(init["session_id"], second.as_str());
    assert_eq!(init["recovery_reason"], "session_id_missing");
    assert_eq!(texts(&ws.sessions(), &second).len(), 6);
    assert_eq!(texts(&ws.sessions(), &first).len(), 2);
}

#[test]
fn a_diverging_history_forks_and_leaves_the_session_alone() {
    let ws = Ws::new();
    let id = ws.start("plan a trip");
    ws.turn(json!({"type": "chat", "session_id": id,
        "messages": [user("plan a trip"), assistant("echo: plan a trip"), user("to Rome")]}));
    // The caller edited its second question and asks on.
    let ev = ws.turn(json!({"type": "chat", "request_id": "r3", "session_id": id,
        "conversation_key": key("plan a trip"),
        "messages": [user("plan a trip"), assistant("echo: plan a trip"), user("to Oslo"),
                     assistant("echo: to Oslo"), user("by train")]}));
    assert_eq!(types(&ev), WARNED_TURN);
    let fork = session_id(&ev);
    assert_ne!(fork, id);
    let w = find(&ev, "warning");
    assert_eq!(w["code"], "history_diverged");
    assert!(w["message"].as_str().unwrap().contains(&fork), "{w}");
    let s = ws.sessions();
    // The original is untouched ...
    assert_eq!(texts(&s, &id), echoed(&["plan a trip", "to Rome"]));
    // ... and the fork holds the caller's history, taken at the divergence point.
    assert_eq!(
        texts(&s, &fork),
        echoed(&["plan a trip", "to Oslo", "by train"])
    );
    let h = s.header(&fork).unwrap();
    assert_eq!(h.parent_id.as_deref(), Some(id.as_str()));
    assert_eq!(h.fork_seq, Some(2));
    // The caller continues in the fork: a lost id now recovers the fork.
    let ev = ws.turn(json!({"type": "chat", "conversation_key": key("plan a trip"),
        "messages": [user("plan a trip"), assistant("echo: plan a trip"), user("to Oslo"),
                     assistant("echo: to Oslo"), user("by train"), assistant("echo: by train"), user("thanks")]}));
    assert_eq!(
        types(&ev).iter().filter(|t| **t == "warning").count(),
        0,
        "{ev:#?}"
    );
    assert_eq!(find(&ev, "session_init")["session_id"], fork.as_str());
}

#[test]
fn malformed_lines_get_errors_and_never_touch_the_session() {
    let ws = Ws::new();
    let id = ws.start("keep me");
    let before = texts(&ws.sessions(), &id);
    let live = ws.bridge();
    assert_eq!(live.next()["type"], "protocol_ack");
    for (line, code) in [
        ("{\"type\":\"chat\",", "invalid_json"),
        ("[\"chat\"]", "invalid_request"),
        ("{\"type\":\"teleport\"}", "unknown_type"),
        (
            &*json!({"type": "chat", "request_id": "bad1", "session_id": id, "messages": [user("keep me"), assistant("x")]}).to_string(),
            "invalid_request",
        ),
        (
            &*json!({"type": "chat", "session_id": id, "messages": [{"role": "tool", "tool_call_id": "nope", "content": "x"}, user("q")]}).to_string(),
            "invalid_request",
        ),
        (
            &*json!({"type": "chat", "session_id": id, "protocol_version": 99, "messages": [user("q")]}).to_string(),
            "unsupported_version",
        ),
        (
            &*json!({"type": "chat", "cwd": "/nonexistent/neocode-bridge", "messages": [user("q")]}).to_string(),
            "invalid_cwd",
        ),
        ("{\"type\":\"cancel\"}", "no_running_turn"),
        ("{\"type\":\"approval\",\"call_id\":\"x\",\"decision\":\"approve\"}", "no_running_turn"),
    ] {
        live.send(line);
        let e = live.next();
        assert_eq!(e["type"], "error", "{line}: {e}");
        assert_eq!(e["code"], code, "{line}: {e}");
    }
    // Bytes that are not UTF-8, and blank lines (ignored).
    live.input
        .as_ref()
        .unwrap()
        .send(b"\xff\xfe\n\n   \n".to_vec())
        .unwrap();
    assert_eq!(live.next()["code"], "invalid_utf8");
    // The bridge still works, and the stored session is exactly as it was.
    live.send(&json!({"type": "chat", "session_id": id, "messages": [user("keep me"), assistant("echo: keep me"), user("still here?")]}).to_string());
    let ev = live.until("finish");
    assert_eq!(find(&ev, "session_init")["session_id"], id.as_str());
    let rest = live.close();
    assert!(rest.is_empty(), "{rest:?}");
    let after = texts(&ws.sessions(), &id);
    assert_eq!(after[..2], before[..]);
    assert_eq!(after.len(), 4);
    assert_eq!(ws.sessions().count().unwrap(), 1);
}

#[test]
fn session_init_is_sent_once_per_session_in_one_process() {
    let ws = Ws::new();
    let live = ws.bridge();
    live.send(&json!({"type": "chat", "request_id": "a", "messages": [user("one")]}).to_string());
    let ev = live.until("finish");
    let id = session_id(&ev);
    live.send(&json!({"type": "chat", "request_id": "b", "session_id": id, "messages": [user("one"), assistant("echo: one"), user("two")]}).to_string());
    let ev = live.until("finish");
    assert!(!types(&ev).contains(&"session_init"), "{ev:#?}");
    assert!(ev.iter().all(|e| e["request_id"] == "b"), "{ev:#?}");
    live.send(
        &json!({"type": "chat", "request_id": "c", "new_session": true, "messages": [user("one")]})
            .to_string(),
    );
    let ev = live.until("finish");
    assert_ne!(find(&ev, "session_init")["session_id"], id.as_str());
    live.close();
}

#[test]
fn approvals_are_answered_by_approval_requests() {
    let ws = Ws::new();
    let live = ws.bridge();
    live.send(
        &json!({"type": "chat", "request_id": "r1", "messages": [user("ask to build")]})
            .to_string(),
    );
    let ev = live.until("approval_request");
    assert_eq!(
        types(&ev),
        [&TOOL_CALLED[..], &["approval_request"]].concat()
    );
    let ask = ev.last().unwrap();
    assert_eq!(ask["call_id"], "call_1");
    assert_eq!(ask["name"], "run_command");
    assert_eq!(ask["reason"], "policy ask");
    assert_eq!(find(&ev, "tool_call")["kind"], "command");
    // A chat while one runs, and an answer for a call no one asked about.
    live.send(&json!({"type": "chat", "messages": [user("x")]}).to_string());
    assert_eq!(live.next()["code"], "busy");
    live.send(r#"{"type":"approval","call_id":"call_9","decision":"approve"}"#);
    assert_eq!(live.next()["code"], "unknown_call");
    live.send(r#"{"type":"approval","call_id":"call_1","decision":"always"}"#);
    let ev = live.until("finish");
    let r = find(&ev, "tool_result");
    assert_eq!(r["text"], "built (always=true)");
    assert_eq!(r["is_error"], false);
    assert_eq!(find(&ev, "finish")["reason"], "completed");

    live.send(&json!({"type": "chat", "request_id": "r2", "new_session": true, "messages": [user("ask again")]}).to_string());
    live.until("approval_request");
    live.send(r#"{"type":"approval","call_id":"call_1","decision":"deny","reason":"not now"}"#);
    let ev = live.until("finish");
    assert_eq!(
        find(&ev, "tool_result")["text"],
        "denied: Some(\"not now\")"
    );
    assert_eq!(find(&ev, "tool_result")["is_error"], true);
    live.close();
}

#[test]
fn with_stdin_closed_approvals_are_denied_and_the_turn_finishes() {
    let ws = Ws::new();
    let ev = ws.turn(json!({"type": "chat", "messages": [user("ask while no one listens")]}));
    assert_eq!(types(&ev).last(), Some(&"finish"));
    let r = find(&ev, "tool_result");
    assert_eq!(r["is_error"], true);
    assert!(
        r["text"].as_str().unwrap().contains("input is closed"),
        "{r}"
    );
}

#[test]
fn cancel_stops_the_running_turn_and_keeps_what_arrived() {
    let ws = Ws::new();
    let live = ws.bridge();
    live.send(
        &json!({"type": "chat", "request_id": "r1", "messages": [user("slow please")]}).to_string(),
    );
    let ev = live.until("text_delta");
    let id = session_id(&ev);
    live.send(r#"{"type":"cancel","request_id":"other"}"#);
    assert_eq!(live.next()["code"], "unknown_request");
    live.send(r#"{"type":"cancel","request_id":"r1"}"#);
    let ev = live.until("finish");
    assert_eq!(ev.last().unwrap()["reason"], "cancelled");
    live.close();
    assert_eq!(
        texts(&ws.sessions(), &id),
        [
            (Role::User, "slow please".into()),
            (Role::Assistant, "partial".into())
        ]
    );
}

#[test]
fn the_cwd_of_a_request_picks_the_workspace() {
    let ws = Ws::new();
    let other = ws.sibling("other");
    let ev = ws.turn(json!({"type": "chat", "cwd": other.root(), "messages": [user("elsewhere")]}));
    let id = find(&ev, "session_init")["session_id"].as_str().unwrap();
    assert_eq!(ws.sessions().count().unwrap(), 0);
    let there = Sessions::open(&other).unwrap();
    assert!(there.header(id).is_ok());
}

#[test]
fn a_retry_after_a_failed_turn_answers_the_stored_prompt_without_a_fork() {
    let ws = Ws::new();
    let ev = ws.turn(json!({"type": "chat", "messages": [user("fail once")]}));
    assert_eq!(
        types(&ev),
        ["protocol_ack", "session_init", "error", "finish"]
    );
    assert_eq!(find(&ev, "error")["code"], "unreachable");
    assert_eq!(find(&ev, "finish")["reason"], "failed");
    let id = session_id(&ev);
    // The editor retries the same request.
    let ev = ws.turn(json!({"type": "chat", "session_id": id, "messages": [user("fail once")]}));
    assert_eq!(types(&ev), PLAIN_TURN);
    assert_eq!(find(&ev, "session_init")["session_id"], id.as_str());
    assert_eq!(texts(&ws.sessions(), &id), echoed(&["fail once"]));
    assert_eq!(ws.sessions().count().unwrap(), 1);
}
