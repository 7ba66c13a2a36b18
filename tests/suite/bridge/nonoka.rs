//! `neocode bridge --dialect nonoka` driven as nonoka's OpenCode provider drives it
//! (`nonoka-opencode-provider`, which is not published on npm): [`Provider`] below is a driver
//! written from that provider's source. It keeps an AI SDK `LanguageModelV3` prompt, renders
//! it into nonoka's chat request the way the provider does (flat `tool_calls`, calls drawn
//! into the assistant text as `<tool_call>name(json)</tool_call>`, approval answers inside
//! `tool` messages, the protocol contract, `purpose: "title"`), spawns one bridge process per
//! call, checks the acknowledgement as the provider's stream transformer does, turns the
//! events into AI SDK stream parts, writes the session id file, and kills the process at the
//! terminal part. The model is a scripted server on 127.0.0.1.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use neocode::session::{Role, Status};
use neocode::testkit::scripted::{Reply, Stream};
use serde_json::{Value, json};

use crate::support;
use crate::support::bridge::{Env, NotJson, command_call, spawn_json};

const BIN: &str = env!("CARGO_BIN_EXE_neocode");

/// What nonoka's provider 0.2.19 requires (`NONOKA_REQUIRED_CAPABILITIES`): the driver
/// sends this contract.
const PROVIDER_CAPABILITIES: [&str; 5] = [
    "external_tool_receipts",
    "persistent_runtime_limits",
    "termination_reasons",
    "tool_approval_resume",
    "typed_verification_receipts",
];

const TITLE_SENTINEL: &str = "Generate a title for this conversation";

impl Env {
    /// A provider instance (a fresh OpenCode process): it reads the id file now.
    fn provider(&self) -> Provider {
        let cwd = self.workdir.clone();
        let chat_session_id = std::fs::read_to_string(cwd.join(".nonoka/provider-session.id"))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty());
        Provider {
            cwd,
            env: vec![
                ("NEOCODE_HOME".into(), self.home.display().to_string()),
                ("NEOCODE_BASE_URL".into(), self.server.base_url()),
                ("NEOCODE_MODEL".into(), "scripted-model".into()),
                ("NEOCODE_API_KEY".into(), "sk-test-nonoka".into()),
                ("OPENAI_API_KEY".into(), String::new()),
            ],
            capabilities: PROVIDER_CAPABILITIES
                .iter()
                .map(ToString::to_string)
                .collect(),
            chat_session_id,
            extra: json!({}),
        }
    }
}

/// The provider's state between calls of one OpenCode process.
struct Provider {
    cwd: PathBuf,
    env: Vec<(String, String)>,
    capabilities: Vec<String>,
    chat_session_id: Option<String>,
    /// Fields merged into the chat request (limits, tools).
    extra: Value,
}

/// One `doStream` call.
#[derive(Debug)]
struct Call {
    request: Value,
    /// The bridge's events, in order.
    events: Vec<Value>,
    /// The AI SDK stream parts the provider made of them.
    parts: Vec<Value>,
    /// The streamed text.
    text: String,
    /// `finish.finishReason.raw`.
    finish: Option<String>,
    /// The `error` part, or the stream's own error (a refused acknowledgement).
    error: Option<String>,
    /// A compatible `protocol_ack` (or an `error`) came first.
    acknowledged: bool,
    /// Text not yet closed into a text part.
    pending: String,
}

impl Call {
    fn event(&self, ty: &str) -> Option<&Value> {
        self.events.iter().find(|e| e["type"] == ty)
    }

    fn session(&self) -> String {
        self.event("session_init")
            .unwrap_or_else(|| panic!("no session_init in {:#?}", self.events))["session_id"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// The assistant message OpenCode keeps from this stream (AI SDK shape): text, the
    /// calls with their results, more text, in stream order.
    fn assistant(&self) -> Value {
        let content: Vec<Value> = self
            .parts
            .iter()
            .filter(|p| p["type"] != "tool-approval-request")
            .cloned()
            .collect();
        json!({"role": "assistant", "content": content})
    }

    fn approval(&self) -> Option<String> {
        self.parts
            .iter()
            .find(|p| p["type"] == "tool-approval-request")
            .map(|p| p["approvalId"].as_str().unwrap().to_string())
    }
}

fn system() -> Value {
    json!({"role": "system", "content": "You are OpenCode's agent."})
}

fn user(t: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": t}]})
}

/// OpenCode's tool message answering an approval request.
fn approval_answer(id: &str, approved: bool) -> Value {
    json!({"role": "tool", "content": [{"type": "tool-approval-response", "approvalId": id, "approved": approved}]})
}

/// The text of AI SDK content parts, with tool calls drawn as the provider draws them.
fn rendered_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .map(|p| match p["type"].as_str() {
                Some("text") => p["text"].as_str().unwrap_or_default().to_string(),
                Some("tool-call") => format!(
                    "<tool_call>{}({})</tool_call>",
                    p["toolName"].as_str().unwrap_or_default(),
                    serde_json::to_string(&p["input"]).unwrap()
                ),
                _ => String::new(),
            })
            .collect(),
        _ => String::new(),
    }
}

fn tool_output_text(output: &Value) -> String {
    match output["type"].as_str() {
        Some("text" | "error-text") => output["value"].as_str().unwrap_or_default().to_string(),
        Some("execution-denied") => output["reason"]
            .as_str()
            .unwrap_or("Execution denied.")
            .to_string(),
        _ => output["value"].to_string(),
    }
}

impl Provider {
    fn id_file(&self) -> PathBuf {
        self.cwd.join(".nonoka").join("provider-session.id")
    }

    /// The prompt as nonoka messages.
    fn messages(prompt: &[Value], title: bool) -> Vec<Value> {
        let mut out: Vec<Value> = Vec::new();
        for m in prompt {
            match m["role"].as_str().unwrap() {
                "system" => {
                    out.push(json!({"role": "system", "content": rendered_text(&m["content"])}))
                }
                "user" => {
                    let text = rendered_text(&m["content"]);
                    if title
                        && let Some(last) = out.last_mut()
                        && last["role"] == "user"
                    {
                        let merged = format!("{}\n\n{text}", last["content"].as_str().unwrap());
                        last["content"] = json!(merged);
                        continue;
                    }
                    out.push(json!({"role": "user", "content": text}));
                }
                "assistant" => {
                    let calls: Vec<Value> = m["content"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter(|p| p["type"] == "tool-call")
                        .map(|p| {
                            json!({"id": p["toolCallId"], "name": p["toolName"],
                                   "arguments": serde_json::to_string(&p["input"]).unwrap()})
                        })
                        .collect();
                    let mut a =
                        json!({"role": "assistant", "content": rendered_text(&m["content"])});
                    if !calls.is_empty() {
                        a["tool_calls"] = json!(calls);
                    }
                    out.push(a);
                }
                "tool" => {
                    for p in m["content"].as_array().unwrap() {
                        match p["type"].as_str() {
                            Some("tool-result") => {
                                let mut t = json!({
                                    "role": "tool", "tool_call_id": p["toolCallId"],
                                    "content": tool_output_text(&p["output"])});
                                // The receipt the provider builds for a host result
                                // (`normalizeExternalToolOutput` + its verification).
                                if !p["receipt"].is_null() {
                                    t["result"] = p["receipt"].clone();
                                }
                                out.push(t);
                            }
                            Some("tool-approval-response") => out.push(json!({
                                "role": "tool", "tool_call_id": p["approvalId"],
                                "content": json!([{"type": "tool-approval-response",
                                    "toolCallId": p["approvalId"], "approved": p["approved"]}]).to_string()})),
                            _ => {}
                        }
                    }
                }
                other => panic!("role {other}"),
            }
        }
        out
    }

    fn request(&mut self, prompt: &[Value], title: bool) -> Value {
        let new_session = !prompt
            .iter()
            .any(|m| m["role"] == "assistant" || m["role"] == "tool");
        let session_id = if title {
            Some(format!("title-{}", std::process::id()))
        } else {
            if new_session {
                self.chat_session_id = None;
            }
            self.chat_session_id.clone()
        };
        let mut req = json!({
            "type": "chat",
            "protocol": {"version": "1.1", "required_capabilities": self.capabilities,
                         "provider_version": "0.2.19"},
            "purpose": if title { "title" } else { "chat" },
            "messages": Provider::messages(prompt, title),
            "new_session": new_session || title,
            "cwd": self.cwd.display().to_string(),
            "request_id": format!("req-{}", prompt.len()),
        });
        if let Some(id) = session_id {
            req["session_id"] = json!(id);
        }
        if !title && let Some(extra) = self.extra.as_object() {
            for (k, v) in extra {
                req[k] = v.clone();
            }
        }
        req
    }

    fn spawn(&self) -> (Child, Receiver<Value>) {
        // The provider ignores lines that are not JSON.
        spawn_json(
            Command::new(BIN)
                .args(["bridge", "--dialect", "nonoka"])
                .envs(self.env.iter().map(|(k, v)| (k, v)))
                .current_dir(&self.cwd),
            Stdio::null(),
            NotJson::Skip,
        )
    }

    fn chat(&mut self, prompt: &[Value]) -> Call {
        self.call(prompt, false, |_, _| {})
    }

    fn title(&mut self, prompt: &[Value]) -> Call {
        self.call(prompt, true, |_, _| {})
    }

    /// One `doStream`: a process, the request, the events until `finish` or `error` (or the
    /// end of output), then the process is killed as the provider kills it. `during` sees
    /// each event with the child (to cancel mid-stream).
    fn call(
        &mut self,
        prompt: &[Value],
        title: bool,
        mut during: impl FnMut(&Value, &mut Child),
    ) -> Call {
        let request = self.request(prompt, title);
        let (mut child, rx) = self.spawn();
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "{request}").unwrap();
        stdin.flush().unwrap();
        let mut c = Call {
            request,
            events: Vec::new(),
            parts: Vec::new(),
            text: String::new(),
            finish: None,
            error: None,
            acknowledged: false,
            pending: String::new(),
        };
        while let Ok(ev) = rx.recv_timeout(Duration::from_secs(30)) {
            c.events.push(ev.clone());
            during(&ev, &mut child);
            if ev["type"] == "session_init" && !title {
                // `onSessionInit`: a chat's id is kept and written down; a title's is not.
                let id = ev["session_id"].as_str().unwrap().to_string();
                std::fs::create_dir_all(self.id_file().parent().unwrap()).unwrap();
                std::fs::write(self.id_file(), &id).unwrap();
                self.chat_session_id = Some(id);
            }
            if c.take(&ev, &self.capabilities) {
                break;
            }
        }
        c.flush();
        // `killChild`: stdin destroyed, SIGTERM.
        drop(stdin);
        terminate(&mut child);
        c
    }
}

impl Call {
    fn flush(&mut self) {
        if !self.pending.is_empty() {
            let text = std::mem::take(&mut self.pending);
            self.parts.push(json!({"type": "text", "text": text}));
        }
    }

    /// The stream transformer: one event into stream parts; `true` at a terminal part.
    fn take(&mut self, ev: &Value, required: &[String]) -> bool {
        let ty = ev["type"].as_str().unwrap_or_default();
        if !self.acknowledged && ty != "protocol_ack" {
            if ty != "error" {
                self.error =
                    Some("nonoka-cli did not acknowledge the bridge protocol contract".into());
                return true;
            }
            self.acknowledged = true;
        }
        match ty {
            "protocol_ack" => {
                // `event.version.split('.')`: a string, its major the provider's.
                let major = ev["version"]
                    .as_str()
                    .expect("version is a string")
                    .split('.')
                    .next();
                let caps: Vec<&str> = ev["capabilities"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c.as_str().unwrap())
                    .collect();
                let missing: Vec<&String> = required
                    .iter()
                    .filter(|r| !caps.contains(&r.as_str()))
                    .collect();
                if major != Some("1") || !missing.is_empty() {
                    self.error = Some(format!("incompatible (missing={missing:?})"));
                    return true;
                }
                self.acknowledged = true;
            }
            "text_delta" => {
                let t = ev["text"].as_str().unwrap_or_default();
                self.text.push_str(t);
                self.pending.push_str(t);
            }
            "tool_call" => {
                self.flush();
                self.parts.push(
                    json!({"type": "tool-call", "toolCallId": ev["tool_call_id"],
                    "toolName": ev["tool_name"], "input": ev["args"]}),
                );
            }
            "tool_result" => {
                self.flush();
                let result = if ev["result"].is_null() {
                    ev["content"].clone()
                } else {
                    ev["result"].clone()
                };
                let output = match result {
                    Value::String(s) => json!({"type": "text", "value": s}),
                    v => json!({"type": "json", "value": v}),
                };
                self.parts.push(
                    json!({"type": "tool-result", "toolCallId": ev["tool_call_id"],
                    "toolName": ev["tool_name"], "output": output}),
                );
            }
            "approval_request" => {
                self.flush();
                let id = if ev["tool_call_id"].is_string() {
                    &ev["tool_call_id"]
                } else {
                    &ev["id"]
                };
                self.parts
                    .push(json!({"type": "tool-approval-request", "approvalId": id,
                    "toolCallId": ev["tool_call_id"]}));
            }
            "finish" => {
                self.flush();
                let reason = ev["finish_reason"].as_str().expect("finish_reason");
                self.finish = Some(reason.to_string());
                return true;
            }
            "error" => {
                self.flush();
                self.error = Some(ev["message"].as_str().unwrap_or_default().to_string());
                return true;
            }
            _ => {}
        }
        false
    }
}

fn terminate(child: &mut Child) {
    // SAFETY: signalling our own child process.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    wait_exit(child);
}

/// Waits for the bridge process to end (it must, within 20 s).
fn wait_exit(child: &mut Child) -> std::process::ExitStatus {
    for _ in 0..2000 {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    panic!("the bridge did not exit");
}

/// The event types in order, a run of `text_delta`s counted once, `debug` lines left out.
/// The codes of the `debug` warnings among the events.
fn warnings(c: &Call) -> Vec<&str> {
    c.events
        .iter()
        .filter(|e| e["type"] == "debug")
        .map(|e| e["payload"]["code"].as_str().unwrap_or_default())
        .collect()
}

/// The chain and the history were followed as they are: no new session, no fork.
fn continued(c: &Call) -> bool {
    !warnings(c).iter().any(|w| {
        matches!(
            *w,
            "history_diverged"
                | "session_not_found_starting_new"
                | "session_id_missing_starting_fresh"
        )
    })
}

fn types(c: &Call) -> Vec<&str> {
    let mut t: Vec<&str> = c
        .events
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .filter(|t| *t != "debug")
        .collect();
    t.dedup_by(|a, b| *a == "text_delta" && *b == "text_delta");
    t
}

#[test]
fn new_continue_restart_lost_id_file_and_new_as_the_provider_drives_them() {
    let env = Env::numbered(5);
    let mut p = env.provider();
    let mut prompt = vec![system(), user("remember the milk")];
    let t1 = p.chat(&prompt);
    // The acknowledgement comes first, after the request was read; version is a string.
    assert_eq!(
        types(&t1),
        ["protocol_ack", "session_init", "text_delta", "finish"],
        "{:#?}",
        t1.events
    );
    assert_eq!(t1.events[0]["version"], "1.1");
    assert_eq!(t1.finish.as_deref(), Some("stop"));
    assert_eq!(t1.error, None);
    assert_eq!(t1.text, "answer 0");
    assert_eq!(t1.request["new_session"], true);
    assert!(t1.request.get("session_id").is_none());
    let id = t1.session();
    assert_eq!(std::fs::read_to_string(p.id_file()).unwrap(), id);
    let finish = t1.event("finish").unwrap();
    assert_eq!(finish["termination"]["reason"], "completed");
    assert_eq!(finish["runtime"]["usage"]["input_tokens"], 10);

    // Continue by the id in memory.
    prompt.push(t1.assistant());
    prompt.push(user("and eggs"));
    let t2 = p.chat(&prompt);
    assert_eq!(t2.request["session_id"], id.as_str());
    assert_eq!(t2.session(), id);
    assert_eq!(t2.finish.as_deref(), Some("stop"));

    // A restarted OpenCode reads the id file.
    prompt.push(t2.assistant());
    prompt.push(user("and bread"));
    let mut p = env.provider();
    let t3 = p.chat(&prompt);
    assert_eq!(t3.request["session_id"], id.as_str());
    assert_eq!(t3.session(), id);

    // The id file is lost: the history's first user message finds the session again.
    std::fs::remove_file(p.id_file()).unwrap();
    prompt.push(t3.assistant());
    prompt.push(user("what did I say?"));
    let mut p = env.provider();
    let t4 = p.chat(&prompt);
    assert!(t4.request.get("session_id").is_none());
    assert!(t4.request.get("conversation_key").is_none());
    let init = t4.event("session_init").unwrap();
    assert_eq!(init["session_id"], id.as_str());
    assert_eq!(init["recovered"], true);
    assert_eq!(init["recovery_reason"], "session_id_missing");
    assert_eq!(
        std::fs::read_to_string(p.id_file()).unwrap(),
        id,
        "re-saved"
    );
    assert_eq!(env.sessions().count().unwrap(), 1);
    assert_eq!(env.texts(&id).len(), 8, "{:#?}", env.texts(&id));

    // OpenCode's /new: system + user only, the same first words: a new session.
    let t5 = p.chat(&[system(), user("remember the milk")]);
    assert_eq!(t5.request["new_session"], true);
    assert_ne!(t5.session(), id);
    assert_eq!(env.sessions().count().unwrap(), 2);
}

#[test]
fn a_tool_turn_comes_back_in_the_ai_sdk_shape_and_continues_without_fork_or_rerun() {
    let env = Env::new(vec![
        Stream::new()
            .role()
            .text_deltas("Let me look.", 2)
            .tool_call(0, "call_r1", "read_file", r#"{"path":"a.rs"}"#, 2)
            .finish("tool_calls")
            .usage(20, 8)
            .reply(),
        Reply::text("It prints hi."),
        Reply::text("You're welcome."),
    ]);
    std::fs::write(
        env.workdir.join("a.rs"),
        "fn main() { println!(\"hi\"); }\n",
    )
    .unwrap();
    let mut p = env.provider();
    let mut prompt = vec![system(), user("read a.rs")];
    let t1 = p.chat(&prompt);
    assert_eq!(t1.finish.as_deref(), Some("stop"), "{:#?}", t1.events);
    let call = t1.event("tool_call").unwrap();
    assert_eq!(call["tool_call_id"], "call_r1");
    assert_eq!(call["tool_name"], "read_file");
    assert_eq!(call["args"], json!({"path": "a.rs"}), "args is an object");
    let result = t1.event("tool_result").unwrap();
    assert_eq!(result["tool_name"], "read_file");
    assert_eq!(result["is_error"], false);
    assert!(
        result["content"].as_str().unwrap().contains("println!"),
        "{result}"
    );
    let id = t1.session();

    // One assistant message holding text, call, result and text; no tool message.
    prompt.push(t1.assistant());
    prompt.push(user("thanks"));
    let t2 = p.chat(&prompt);
    let sent = &t2.request["messages"][2];
    assert!(
        sent["content"]
            .as_str()
            .unwrap()
            .contains("<tool_call>read_file("),
        "{sent}"
    );
    assert_eq!(sent["tool_calls"][0]["id"], "call_r1");
    assert_eq!(t2.session(), id, "{:#?}", t2.events);
    assert!(continued(&t2), "no fork: {:#?}", t2.events);
    assert!(t2.event("tool_call").is_none(), "nothing ran again");
    assert_eq!(t2.text, "You're welcome.");
    assert_eq!(env.sessions().count().unwrap(), 1);
    let roles: Vec<Role> = env.texts(&id).iter().map(|m| m.0).collect();
    use Role::{Assistant as A, Tool as T, User as U};
    assert_eq!(roles, [U, A, T, A, U, A]);
    // The model was asked three times and saw the one stored result once.
    assert_eq!(env.server.request_count(), 3);
    let third = env.server.requests()[2].json();
    let tools = support::messages_of_role(&third, "tool");
    assert_eq!(tools, 1);
}

/// `call` ended the turn `approval_required` (and only that happened after the call), the
/// session is paused with the call stored without a result, and its file is not written.
fn assert_paused_on(env: &Env, t: &Call, call: &str, path: &str) {
    assert_eq!(
        t.finish.as_deref(),
        Some("approval_required"),
        "{:#?}",
        t.events
    );
    let after_init: Vec<&str> = types(t)
        .into_iter()
        .skip_while(|ty| *ty != "session_init")
        .collect();
    assert_eq!(
        after_init,
        ["session_init", "tool_call", "approval_request", "finish"]
    );
    let ask = t.event("approval_request").unwrap();
    assert_eq!(
        (
            ask["id"].as_str(),
            ask["tool_call_id"].as_str(),
            ask["tool_name"].as_str()
        ),
        (Some(call), Some(call), Some("write_file"))
    );
    assert_eq!(ask["args"]["path"], path);
    let id = t.session();
    let s = env.sessions();
    assert_eq!(s.header(&id).unwrap().status, Status::Paused);
    let pending: Vec<String> = s
        .interrupted_tool_calls(&id)
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(pending, [call]);
    assert!(!env.workdir.join(path).exists());
}

#[test]
fn an_approval_ends_the_process_and_the_next_one_runs_or_denies_exactly_that_call() {
    let env = Env::new(vec![
        Reply::tool_calls(&[(
            "call_w1",
            "write_file",
            r#"{"path":"a.txt","content":"one\n"}"#,
        )]),
        Reply::text("Written."),
        Reply::tool_calls(&[(
            "call_w2",
            "write_file",
            r#"{"path":"b.txt","content":"two\n"}"#,
        )]),
        Reply::text("Fine, I won't."),
    ]);
    let mut p = env.provider();
    let mut prompt = vec![system(), user("write a.txt")];
    let t1 = p.chat(&prompt);
    let id = t1.session();
    assert_paused_on(&env, &t1, "call_w1", "a.txt");
    assert!(!env.workdir.join("a.txt").exists());

    // The user approves in OpenCode; the resume carries only system + tool messages.
    prompt.push(t1.assistant());
    let answer = approval_answer(&t1.approval().unwrap(), true);
    prompt.push(answer.clone());
    let mut p = env.provider();
    let t2 = p.chat(&[system(), answer]);
    assert_eq!(t2.finish.as_deref(), Some("stop"), "{:#?}", t2.events);
    assert_eq!(t2.session(), id);
    assert!(t2.event("approval_request").is_none());
    assert_eq!(t2.event("tool_result").unwrap()["is_error"], false);
    assert_eq!(t2.text, "Written.");
    assert_eq!(
        std::fs::read_to_string(env.workdir.join("a.txt")).unwrap(),
        "one\n"
    );
    // Said as what it is: the answered call runs (it was paused on purpose, not interrupted).
    assert!(
        !warnings(&t2).contains(&"replaying_interrupted_calls"),
        "{:#?}",
        t2.events
    );
    let resumed = t2
        .events
        .iter()
        .find(|e| e["payload"]["code"] == "paused_turn_resumed")
        .unwrap_or_else(|| panic!("{:#?}", t2.events));
    assert!(
        resumed["message"]
            .as_str()
            .unwrap()
            .contains("call call_w1 approved (it runs now)"),
        "{resumed}"
    );

    // The next turn carries the whole history again (the paused call, its answer, the
    // resumed turn announcing it once more): it continues the session, nothing forks.
    prompt.push(t2.assistant());
    prompt.push(user("now b.txt"));
    let t3 = p.chat(&prompt);
    assert_eq!(t3.session(), id, "{:#?}", t3.events);
    assert!(continued(&t3), "{:#?}", t3.events);
    assert_paused_on(&env, &t3, "call_w2", "b.txt");
    // Denied, this time with the id file lost and the whole history sent (as older providers
    // do): the first user message finds the paused session.
    std::fs::remove_file(p.id_file()).unwrap();
    prompt.push(t3.assistant());
    prompt.push(approval_answer(&t3.approval().unwrap(), false));
    let t4 = env.provider().chat(&prompt);
    assert!(t4.request.get("session_id").is_none());
    let init = t4.event("session_init").unwrap();
    assert_eq!(
        (
            init["session_id"].as_str(),
            init["recovery_reason"].as_str()
        ),
        (Some(id.as_str()), Some("session_id_missing"))
    );
    assert_eq!(t4.finish.as_deref(), Some("stop"), "{:#?}", t4.events);
    let denied = t4.event("tool_result").unwrap();
    assert_eq!(denied["is_error"], true);
    assert!(
        denied["content"].as_str().unwrap().contains("denied"),
        "{denied}"
    );
    assert_eq!(t4.text, "Fine, I won't.");
    assert!(!env.workdir.join("b.txt").exists());

    let s = env.sessions();
    assert_eq!(s.count().unwrap(), 1);
    assert_eq!(s.header(&id).unwrap().status, Status::Completed);
    assert!(s.interrupted_tool_calls(&id).unwrap().is_empty());
    use Role::{Assistant as A, Tool as T, User as U};
    let roles: Vec<Role> = env.texts(&id).iter().map(|m| m.0).collect();
    assert_eq!(roles, [U, A, T, A, U, A, T, A]);
    // An answer for a call that waits nowhere is refused, nothing runs.
    let t5 = env
        .provider()
        .chat(&[system(), approval_answer("call_zz", true)]);
    assert_eq!(t5.event("error").unwrap()["code"], "unknown_call");
    assert_eq!(env.server.request_count(), 4);
}

#[test]
fn a_title_request_answers_with_text_and_stores_nothing() {
    let env = Env::new(vec![Reply::text("Greeting the world")]);
    let mut p = env.provider();
    std::fs::create_dir_all(p.id_file().parent().unwrap()).unwrap();
    std::fs::write(p.id_file(), "chat-session-kept").unwrap();
    let t = p.title(&[
        system(),
        user(&format!("{TITLE_SENTINEL}:\n")),
        user("hello world"),
    ]);
    assert_eq!(t.request["purpose"], "title");
    assert_eq!(t.finish.as_deref(), Some("stop"), "{:#?}", t.events);
    assert_eq!(t.text, "Greeting the world");
    assert!(t.event("session_init").is_none());
    assert_eq!(env.sessions().count().unwrap(), 0, "nothing stored");
    assert_eq!(
        std::fs::read_to_string(p.id_file()).unwrap(),
        "chat-session-kept"
    );
    // The model was asked with the merged prompt.
    let sent = env.server.requests()[0].json();
    let last = sent["messages"].as_array().unwrap().last().unwrap().clone();
    assert!(
        last["content"].as_str().unwrap().contains("hello world"),
        "{last}"
    );
}

/// `text` streamed in twelve pieces 300 ms apart, then `stop`.
fn slowly(text: &str) -> Stream {
    crate::support::slow_text(text, 12, Duration::from_millis(300)).finish("stop")
}

#[test]
fn sigterm_mid_stream_records_the_turn_cancelled_with_its_partial_text() {
    let env = Env::new(vec![
        slowly("Once upon a time there was a very long story")
            .usage(10, 5)
            .reply(),
    ]);
    let mut p = env.provider();
    let mut deltas = 0;
    // OpenCode aborts after two deltas: the provider kills the process group at once.
    let t = p.call(&[system(), user("tell me a story")], false, |ev, child| {
        if ev["type"] == "text_delta" {
            deltas += 1;
            if deltas == 2 {
                // SAFETY: signalling our own child.
                unsafe {
                    libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
                }
            }
        }
    });
    assert_eq!(t.finish.as_deref(), Some("cancel"), "{:#?}", t.events);
    let id = t.session();
    let s = env.sessions();
    assert_eq!(s.header(&id).unwrap().status, Status::Cancelled);
    let msgs = env.texts(&id);
    assert_eq!(msgs[0], (Role::User, "tell me a story".into()));
    let (role, partial) = &msgs[1];
    assert_eq!(*role, Role::Assistant);
    assert!(partial.starts_with("Once"), "{partial:?}");
    assert!(partial.len() < "Once upon a time there was a very long story".len());
}

#[test]
fn a_closed_stdin_cancels_the_running_turn_too() {
    let env = Env::new(vec![
        slowly("A long answer that takes its time to arrive").reply(),
    ]);
    let mut p = env.provider();
    let req = p.request(&[system(), user("go slowly")], false);
    let (mut child, rx) = p.spawn();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{req}").unwrap();
    let mut id = None;
    loop {
        let ev = rx.recv_timeout(Duration::from_secs(30)).unwrap();
        if ev["type"] == "session_init" {
            id = ev["session_id"].as_str().map(str::to_string);
        }
        if ev["type"] == "text_delta" {
            break;
        }
    }
    drop(stdin);
    assert!(wait_exit(&mut child).success());
    let last: Vec<Value> = rx.iter().collect();
    assert_eq!(last.last().unwrap()["finish_reason"], "cancel", "{last:#?}");
    let id = id.unwrap();
    assert_eq!(
        env.sessions().header(&id).unwrap().status,
        Status::Cancelled
    );
}

#[test]
fn the_provider_0_2_19_contract_is_acknowledged_with_all_five_capabilities() {
    let env = Env::new(vec![Reply::text("hello")]);
    let t = env.provider().chat(&[system(), user("hi")]);
    assert_eq!(
        t.request["protocol"]["required_capabilities"],
        json!(PROVIDER_CAPABILITIES)
    );
    assert_eq!(t.error, None, "{:#?}", t.events);
    assert_eq!(t.finish.as_deref(), Some("stop"));
    let mut caps: Vec<&str> = t.events[0]["capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    caps.sort_unstable();
    assert_eq!(caps, PROVIDER_CAPABILITIES);
}

#[test]
fn a_refused_contract_is_one_error_the_provider_shows_and_nothing_is_stored() {
    let env = Env::new(vec![Reply::text("never")]);
    // A provider requiring a capability neocode does not honour.
    let mut p = env.provider();
    p.capabilities.push("telepathic_edits".into());
    let t = p.chat(&[system(), user("hi")]);
    assert_eq!(types(&t), ["error"], "{:#?}", t.events);
    let e = &t.events[0];
    assert_eq!(e["code"], "protocol_incompatible");
    assert_eq!(
        e["details"]["missing_capabilities"],
        json!(["telepathic_edits"])
    );
    assert!(e["message"].as_str().unwrap().contains("telepathic_edits"));
    assert_eq!(
        t.error.as_deref(),
        e["message"].as_str(),
        "shown as the stream's error"
    );

    // Another major version.
    let mut req = p.request(&[system(), user("hi")], false);
    req["protocol"] = json!({"version": "2.0", "required_capabilities": []});
    let (mut child, rx) = p.spawn();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{req}").unwrap();
    // No contract at all.
    let mut bare = req.clone();
    bare.as_object_mut().unwrap().remove("protocol");
    writeln!(stdin, "{bare}").unwrap();
    drop(stdin);
    assert!(wait_exit(&mut child).success());
    let events: Vec<Value> = rx.iter().collect();
    let codes: Vec<&str> = events.iter().map(|e| e["code"].as_str().unwrap()).collect();
    assert_eq!(
        codes,
        ["protocol_incompatible", "protocol_contract_required"]
    );
    assert_eq!(env.sessions().count().unwrap(), 0);
    assert_eq!(env.server.request_count(), 0);
}

#[test]
fn flat_limits_reach_the_ledger_and_the_rest_is_named_in_one_warning() {
    let env = Env::new(vec![Reply::text("ok")]);
    let mut p = env.provider();
    p.extra = json!({"max_turns": 7, "tool_budget": 3, "wall_timeout_seconds": 90.5,
                     "temperature": 0, "max_context_bytes": 262144,
                     "require_focused_verification": true, "verification_enforcement": "strict"});
    let t = p.chat(&[system(), user("hi")]);
    assert_eq!(t.finish.as_deref(), Some("stop"), "{:#?}", t.events);
    let ignored: Vec<&Value> = t
        .events
        .iter()
        .filter(|e| e["type"] == "debug" && e["payload"]["code"] == "limits_ignored")
        .collect();
    assert_eq!(ignored.len(), 1, "{:#?}", t.events);
    let m = ignored[0]["message"].as_str().unwrap();
    assert!(
        m.contains("temperature") && m.contains("max_context_bytes"),
        "{m}"
    );
    // Completion requirements are not enforced, and the warning says so.
    assert!(
        m.contains("require_focused_verification, verification_enforcement")
            && m.contains("not held back"),
        "{m}"
    );
    let ledger = env.sessions().header(&t.session()).unwrap().ledger.unwrap();
    assert_eq!(
        (
            ledger.limits.max_turns,
            ledger.limits.max_tool_calls,
            ledger.limits.max_wall_secs
        ),
        (Some(7), Some(3), Some(91))
    );
}

#[test]
fn host_tools_are_offered_run_by_the_host_and_their_results_resume_the_turn() {
    let env = Env::new(vec![
        command_call("call_h1", "bash", "echo hi"),
        Reply::text("The host said hi."),
        Reply::text("Bye."),
    ]);
    let mut p = env.provider();
    let schema = json!({"type": "object", "properties": {"command": {"type": "string"}}});
    p.extra = json!({"tools": [
        {"name": "bash", "description": "Run a shell command", "parameters": schema},
        {"name": "grep", "description": "OpenCode's grep", "parameters": {"type": "object"}},
    ]});
    let mut prompt = vec![system(), user("say hi through the shell")];
    let t1 = p.chat(&prompt);
    assert_eq!(t1.finish.as_deref(), Some("tool_calls"), "{:#?}", t1.events);
    let call = t1.event("tool_call").unwrap();
    assert_eq!(call["tool_name"], "bash");
    assert_eq!(call["args"], json!({"command": "echo hi"}));
    assert_eq!(call["metadata"]["executor"], "host");
    assert!(t1.event("approval_request").is_none());
    assert!(
        warnings(&t1).contains(&"host_tool_hidden"),
        "{:#?}",
        t1.events
    );
    // The model saw the host's bash beside neocode's tools, and one grep: neocode's.
    let sent = env.server.requests()[0].json();
    let names = support::tool_names(&sent);
    assert!(names.contains(&"bash"), "{names:?}");
    assert_eq!(
        names.iter().filter(|n| **n == "grep").count(),
        1,
        "{names:?}"
    );
    let id = t1.session();
    let pending: Vec<String> = env
        .sessions()
        .interrupted_tool_calls(&id)
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(pending, ["call_h1"]);

    // OpenCode ran it; the results-only resume carries system + the tool message.
    prompt.push(t1.assistant());
    let result = json!({"role": "tool", "content": [{"type": "tool-result", "toolCallId": "call_h1",
        "toolName": "bash", "output": {"type": "text", "value": "hi\n"}}]});
    prompt.push(result.clone());
    let t2 = p.chat(&[system(), result]);
    assert_eq!(t2.finish.as_deref(), Some("stop"), "{:#?}", t2.events);
    assert_eq!(t2.session(), id);
    assert_eq!(t2.text, "The host said hi.");
    let second = env.server.requests()[1].json();
    let tool_msgs: Vec<&Value> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(tool_msgs.len(), 1);
    assert_eq!(tool_msgs[0]["content"], "hi\n");

    // The whole history next time: the same session, nothing forks or runs again.
    prompt.push(t2.assistant());
    prompt.push(user("bye"));
    let t3 = p.chat(&prompt);
    assert_eq!(t3.session(), id, "{:#?}", t3.events);
    assert!(continued(&t3), "{:#?}", t3.events);
    assert_eq!(t3.text, "Bye.");
    use Role::{Assistant as A, Tool as T, User as U};
    let msgs = env.texts(&id);
    let roles: Vec<Role> = msgs.iter().map(|m| m.0).collect();
    assert_eq!(roles, [U, A, T, A, U, A]);
    assert_eq!(msgs[2].1, "hi\n");
    assert_eq!(env.sessions().count().unwrap(), 1);
}

/// The text of the last tool message the model was sent in its request `i`.
fn last_tool_seen(env: &Env, i: usize) -> String {
    let sent = env.server.requests()[i].json();
    let messages = sent["messages"].as_array().unwrap().clone();
    let tool = messages.iter().rev().find(|m| m["role"] == "tool").unwrap();
    tool["content"].as_str().unwrap().to_string()
}

/// The stored `tool_metadata` of the result of `call` in session `id`.
fn stored_meta(env: &Env, id: &str, call: &str) -> Value {
    env.sessions()
        .load(id)
        .unwrap()
        .messages
        .iter()
        .find(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(call))
        .and_then(|m| m.tool_metadata.clone())
        .unwrap_or_else(|| panic!("no stored result of {call}"))
}

#[test]
fn neocodes_own_test_run_carries_a_typed_verification_receipt_to_the_provider() {
    let cmd = "NONOKA_VERIFY=focused ./pytest -q tests/test_api.py";
    let env = Env::new(vec![
        command_call("call_t1", "run_command", cmd),
        Reply::text("Both tests pass."),
        Reply::text("Done."),
    ]);
    // A stand-in test runner: prints what pytest prints and exits 0.
    let runner = env.workdir.join("pytest");
    std::fs::write(
        &runner,
        "#!/bin/sh\necho 'collected 2 items'\necho '2 passed in 0.01s'\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&runner, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut p = env.provider();
    let mut prompt = vec![system(), user("run the api tests")];
    let t1 = p.chat(&prompt);
    assert_eq!(
        t1.finish.as_deref(),
        Some("approval_required"),
        "{:#?}",
        t1.events
    );
    let id = t1.session();
    prompt.push(t1.assistant());
    let answer = approval_answer(&t1.approval().unwrap(), true);
    prompt.push(answer.clone());
    let t2 = p.chat(&[system(), answer]);
    assert_eq!(t2.finish.as_deref(), Some("stop"), "{:#?}", t2.events);
    let result = t2.event("tool_result").unwrap();
    let receipt = &result["result"];
    assert!(
        receipt["result"].as_str().unwrap().contains("2 passed"),
        "{result}"
    );
    assert_eq!(receipt["completeness"], "complete");
    let v = &receipt["verification"];
    assert_eq!(
        (
            v["status"].as_str(),
            v["level"].as_str(),
            v["kind"].as_str()
        ),
        (Some("passed"), Some("focused"), Some("test")),
        "{receipt:#}"
    );
    assert_eq!(v["command"], cmd);
    assert_eq!(
        (v["exit_code"].as_i64(), v["timed_out"].as_bool()),
        (Some(0), Some(false))
    );
    assert_eq!(
        (v["collected_tests"].as_u64(), v["executed_tests"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(v["truncated"], false);
    // Stored with the result, as the views and an export see it.
    assert_eq!(stored_meta(&env, &id, "call_t1")["verification"], *v);
    // The receipt travels inside the assistant message the provider keeps: the next turn
    // continues the session, nothing runs again.
    prompt.push(t2.assistant());
    prompt.push(user("thanks"));
    let t3 = p.chat(&prompt);
    assert_eq!(t3.session(), id);
    assert!(continued(&t3), "{:#?}", t3.events);
    assert!(t3.event("tool_call").is_none());
}

#[test]
fn a_host_verification_receipt_is_validated_stored_and_summarised_for_the_model() {
    let env = Env::new(vec![
        command_call("call_h1", "bash", "NONOKA_VERIFY=focused pytest -q"),
        Reply::text("Verified."),
        command_call("call_h2", "bash", "pytest -q"),
        Reply::text("Hm."),
        Reply::text("Bye."),
    ]);
    let mut p = env.provider();
    let schema = json!({"type": "object", "properties": {"command": {"type": "string"}}});
    p.extra = json!({"tools": [{"name": "bash", "description": "Run a shell command", "parameters": schema}]});
    let mut prompt = vec![system(), user("fix and verify")];
    let t1 = p.chat(&prompt);
    assert_eq!(t1.finish.as_deref(), Some("tool_calls"), "{:#?}", t1.events);
    let id = t1.session();
    let verification = json!({"status": "passed", "level": "focused", "kind": "test",
        "command": "NONOKA_VERIFY=focused pytest -q", "cwd": env.workdir.display().to_string(),
        "exit_code": 0, "timed_out": false, "timeout_seconds": 120, "truncated": false,
        "completeness": "complete", "collected_tests": 3, "executed_tests": 3,
        "summary": "3 passed in 0.20s"});
    let receipt = json!({"result": "3 passed in 0.20s", "exit_code": 0, "host": "opencode",
        "truncated": false, "completeness": "complete", "verification": verification});
    let result = |call: &str, receipt: &Value| {
        json!({"role": "tool", "content": [{"type": "tool-result", "toolCallId": call,
            "toolName": "bash", "output": {"type": "text", "value": "3 passed in 0.20s"},
            "receipt": receipt}]})
    };
    prompt.push(t1.assistant());
    let r1 = result("call_h1", &receipt);
    prompt.push(r1.clone());
    let t2 = p.chat(&[system(), r1]);
    assert_eq!(t2.finish.as_deref(), Some("stop"), "{:#?}", t2.events);
    assert!(!warnings(&t2).contains(&"invalid_verification_receipt"));
    // The model read the result and the receipt's one line.
    let seen = last_tool_seen(&env, 1);
    assert_eq!(
        seen,
        "3 passed in 0.20s\n[verification: test (focused) passed: 3 passed in 0.20s; `NONOKA_VERIFY=focused pytest -q`]"
    );
    let meta = stored_meta(&env, &id, "call_h1");
    assert_eq!(meta["executor"], "host");
    assert_eq!(meta["verification"]["status"], "passed");
    assert_eq!(meta["verification"]["executed_tests"], 3);

    // A malformed receipt: warned about, stored with the reason, and the model is told it
    // proves nothing; never dropped silently.
    prompt.push(t2.assistant());
    prompt.push(user("once more"));
    let t3 = p.chat(&prompt);
    assert_eq!(t3.session(), id);
    assert!(continued(&t3), "{:#?}", t3.events);
    assert_eq!(t3.finish.as_deref(), Some("tool_calls"), "{:#?}", t3.events);
    let mut bad = receipt;
    bad["verification"]["status"] = json!("green");
    prompt.push(t3.assistant());
    let r2 = result("call_h2", &bad);
    prompt.push(r2.clone());
    let t4 = p.chat(&[system(), r2]);
    assert_eq!(t4.finish.as_deref(), Some("stop"), "{:#?}", t4.events);
    let warning = t4
        .events
        .iter()
        .find(|e| e["payload"]["code"] == "invalid_verification_receipt")
        .unwrap_or_else(|| panic!("{:#?}", t4.events));
    let m = warning["message"].as_str().unwrap();
    assert!(m.contains("call_h2") && m.contains("status"), "{m}");
    let meta = stored_meta(&env, &id, "call_h2");
    assert!(
        meta["verification_error"]
            .as_str()
            .unwrap()
            .contains("status")
    );
    assert!(meta["verification"].is_null());
    let last_tool = last_tool_seen(&env, 3);
    assert!(last_tool.contains("was not accepted"), "{last_tool}");

    // The whole history again: the same session, no fork, nothing reruns.
    prompt.push(t4.assistant());
    prompt.push(user("bye"));
    let t5 = p.chat(&prompt);
    assert_eq!(t5.session(), id);
    assert!(continued(&t5), "{:#?}", t5.events);
    assert_eq!(t5.text, "Bye.");
    assert_eq!(env.sessions().count().unwrap(), 1);
}
