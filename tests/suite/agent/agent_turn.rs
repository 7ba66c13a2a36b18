//! Agent turns end to end in the library: the real OpenAI provider against the scripted server
//! on 127.0.0.1, real tools, the real store. Every turn is checked in the store afterwards.

use crate::support;
use crate::support::agent::{Env, drive, watch};
use crate::support::text::{has, starts};
use crate::support::{assert_no_file_holds, finish};

use std::sync::Arc;
use std::time::Duration;

use neocode::runtime::agent::{
    Agent, FinishReason, ProviderFactory, StartError, Target, TurnCommand, TurnEvent, TurnRequest,
    Watched,
};
use neocode::runtime::config::{Overrides, Settings};
use neocode::runtime::provider::{
    ChatRequest, Completion, ErrorKind, OpenAi, Provider, ProviderError, StreamEvent,
};
use neocode::runtime::tools::CancelFlag;
use neocode::session::{
    AppendMeta, Message, NewMessage, Part, Role, RuntimeLimits, Status, ToolCall,
};
use neocode::testkit::scripted::{Reply, ScriptedServer, Stream};

const KEY: &str = "sk-agent-test-KEY-5f3a9c";

fn run(agent: &Agent, target: Target, prompt: &str) -> (String, Vec<TurnEvent>) {
    let h = watch(agent, target, prompt);
    let evs = drive(&h, |_| None);
    (h.session_id.clone(), evs)
}

/// Continues session `id` with no new prompt and the default limits, watching its events.
fn resume(agent: &Agent, id: &str) -> Watched {
    resume_with(agent, id, |_| {})
}

/// Continues session `id` with no new prompt under the default limits as `raise` changes
/// them (what the user raised), watching its events.
fn resume_with(agent: &Agent, id: &str, raise: impl FnOnce(&mut RuntimeLimits)) -> Watched {
    let mut limits = RuntimeLimits::default();
    raise(&mut limits);
    agent
        .watch(
            Target::Resume(id.to_string()),
            TurnRequest {
                limits,
                ..TurnRequest::default()
            },
        )
        .unwrap()
}

/// The error of a new turn that must not start; `started` says what starting would mean.
#[track_caller]
fn refused(agent: &Agent, req: TurnRequest, started: &str) -> StartError {
    let Err(e) = agent.watch(Target::New, req) else {
        panic!("{started}");
    };
    e
}

/// Sends queued message `queued` of session `id` as a turn of its own; every event of it.
fn send_queued(agent: &Agent, id: &str, queued: i64) -> Vec<TurnEvent> {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = agent.start_queued(id, queued, None, tx).unwrap();
    let evs: Vec<TurnEvent> = rx.iter().collect();
    h.join();
    evs
}

fn approve_all(always: bool) -> impl FnMut(&TurnEvent) -> Option<TurnCommand> {
    move |e| match e {
        TurnEvent::ApprovalNeeded { call, .. } => Some(TurnCommand::Approve {
            call_id: call.id.clone(),
            always,
        }),
        _ => None,
    }
}

#[test]
fn text_turn_streams_and_is_persisted_with_usage_title_and_ledger() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![
        Stream::new()
            .role()
            .reasoning("Greeting the user.", 2)
            .text_deltas("Hello! How can I help?", 4)
            .finish("stop")
            .usage(42, 7)
            .keep_alives_between()
            .crlf()
            .reply(),
    ]);
    let agent = env.agent(&srv);
    let (id, evs) = run(&agent, Target::New, "Say hello\nto me");
    assert_eq!(finish(&evs), FinishReason::Completed);
    assert!(matches!(&evs[0], TurnEvent::Started { session_id } if *session_id == id));
    let text: String = evs
        .iter()
        .filter_map(|e| match e {
            TurnEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Hello! How can I help?");
    assert!(
        evs.iter()
            .any(|e| matches!(e, TurnEvent::ReasoningDelta(_)))
    );

    let s = env.sessions().load(&id).unwrap();
    assert_eq!(s.header.title, "Say hello");
    assert_eq!(s.header.status, Status::Completed);
    assert_eq!(s.header.model, "test-model");
    assert_eq!(s.messages.len(), 2);
    assert_eq!(s.messages[0].role, Role::User);
    assert_eq!(s.messages[0].text(), "Say hello\nto me");
    let a = &s.messages[1];
    assert_eq!(a.role, Role::Assistant);
    assert_eq!(a.text(), "Hello! How can I help?");
    assert!(matches!(&a.parts[0], Part::Reasoning { text, .. } if text == "Greeting the user."));
    assert_eq!((a.usage.input_tokens, a.usage.output_tokens), (42, 7));
    assert_eq!(
        (s.header.token_input_total, s.header.token_output_total),
        (42, 7)
    );
    let ledger = s.header.ledger.unwrap();
    assert_eq!(ledger.usage.turns, 1);
    assert_eq!(ledger.usage.input_tokens, 42);
    assert_eq!(ledger.termination.as_deref(), Some("completed"));
    assert!(ledger.usage.wall_ms > 0, "time spent is counted");

    let req = srv.requests()[0].json();
    let msgs = req["messages"].as_array().unwrap();
    assert_eq!(msgs[0]["role"], "system");
    assert!(
        msgs[0]["content"]
            .as_str()
            .unwrap()
            .contains(&env.workdir.canonicalize().unwrap().display().to_string())
    );
    assert_eq!(msgs[1]["content"], "Say hello\nto me");
    let tools = support::tool_names(&req);
    assert!(
        tools.contains(&"update_plan") && tools.contains(&"write_file"),
        "{tools:?}"
    );
    assert_no_file_holds(&env.home, &[KEY, "KEY-5f3a9c"]);
}

#[test]
fn approved_edit_runs_denied_edit_does_not_and_the_model_sees_both() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![
        Stream::new()
            .role()
            .interleaved_calls(
                &[
                    (
                        "c1",
                        "write_file",
                        r#"{"path":"yes.txt","content":"approved\n"}"#,
                    ),
                    (
                        "c2",
                        "write_file",
                        r#"{"path":"no.txt","content":"denied\n"}"#,
                    ),
                ],
                4,
            )
            .finish("tool_calls")
            .usage(30, 10)
            .no_done()
            .reply(),
        Reply::text("Wrote yes.txt; you declined no.txt."),
    ]);
    let agent = env.agent(&srv);
    let h = watch(&agent, Target::New, "write two files");
    let mut asked = Vec::new();
    let evs = drive(&h, |e| match e {
        TurnEvent::ApprovalNeeded { call, .. } => {
            asked.push(call.id.clone());
            Some(if call.id == "c1" {
                TurnCommand::Approve {
                    call_id: "c1".into(),
                    always: false,
                }
            } else {
                TurnCommand::Deny {
                    call_id: call.id.clone(),
                    reason: Some("not that one".into()),
                }
            })
        }
        _ => None,
    });
    assert_eq!(finish(&evs), FinishReason::Completed);
    assert_eq!(asked, ["c1", "c2"]);
    assert_eq!(
        std::fs::read_to_string(env.workdir.join("yes.txt")).unwrap(),
        "approved\n"
    );
    assert!(!env.workdir.join("no.txt").exists());

    let s = env.sessions().load(&h.session_id).unwrap();
    let roles: Vec<Role> = s.messages.iter().map(|m| m.role).collect();
    use Role::{Assistant as A, Tool as T, User as U};
    assert_eq!(roles, [U, A, T, T, A]);
    assert_eq!(s.messages[1].tool_calls.len(), 2);
    assert_eq!(
        s.messages[1].tool_calls[1].arguments,
        r#"{"path":"no.txt","content":"denied\n"}"#
    );
    assert!(!s.messages[2].is_error);
    assert!(s.messages[3].is_error);
    assert!(s.messages[3].text().contains("not that one"));
    let ledger = s.header.ledger.unwrap();
    assert_eq!(ledger.usage.tool_calls, 1, "a denied call did not run");
    assert_eq!(ledger.usage.turns, 2);
    assert!(ledger.approved_tools.is_empty());

    // The second model call carried both results, paired with their calls.
    let second = srv.requests()[1].json();
    let msgs = second["messages"].as_array().unwrap();
    let tool_msgs: Vec<&serde_json::Value> = msgs.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tool_msgs.len(), 2);
    assert_eq!(tool_msgs[0]["tool_call_id"], "c1");
    assert!(tool_msgs[1]["content"].as_str().unwrap().contains("denied"));
}

#[test]
fn always_survives_a_restart() {
    let env = Env::new(KEY, "");
    std::fs::create_dir_all(env.workdir.join("notes")).unwrap();
    let srv = ScriptedServer::start(vec![
        Reply::tool_calls(&[(
            "a1",
            "write_file",
            r#"{"path":"notes/a.txt","content":"1"}"#,
        )]),
        Reply::text("done"),
        Reply::tool_calls(&[(
            "a2",
            "write_file",
            r#"{"path":"notes/b.txt","content":"2"}"#,
        )]),
        Reply::text("done again"),
    ])
    .unwrap();
    let id = {
        let agent = env.agent(&srv);
        let h = watch(&agent, Target::New, "one");
        let evs = drive(&h, approve_all(true));
        assert_eq!(finish(&evs), FinishReason::Completed);
        h.session_id.clone()
    };
    let ledger = env.sessions().header(&id).unwrap().ledger.unwrap();
    // "always" keeps the rule proposed from the call: its folder.
    assert_eq!(ledger.approved_tools, ["write_file(notes/**)"]);
    // A new agent and store, as after a restart: no question this time.
    let agent = env.agent(&srv);
    let (_, evs) = run(&agent, Target::Resume(id[..8].to_string()), "two");
    assert_eq!(finish(&evs), FinishReason::Completed);
    assert!(
        !evs.iter()
            .any(|e| matches!(e, TurnEvent::ApprovalNeeded { .. }))
    );
    assert_eq!(
        std::fs::read_to_string(env.workdir.join("notes/b.txt")).unwrap(),
        "2"
    );
}

#[test]
fn update_plan_writes_the_plan_and_step_statuses() {
    let env = Env::new(KEY, "");
    let plan = r#"{"steps":[{"id":"a","title":"read","status":"completed"},{"id":"b","title":"fix","depends_on":["a"],"status":"running"}]}"#;
    let srv = ScriptedServer::start(vec![
        Reply::tool_calls(&[("p1", "update_plan", plan)]),
        Reply::text("planned"),
    ])
    .unwrap();
    let agent = env.agent(&srv);
    let (id, evs) = run(&agent, Target::New, "plan it");
    assert_eq!(finish(&evs), FinishReason::Completed);
    assert!(
        !evs.iter()
            .any(|e| matches!(e, TurnEvent::ApprovalNeeded { .. }))
    );
    let s = env.sessions().load(&id).unwrap();
    let p = s.header.plan.unwrap();
    assert_eq!(p.steps.len(), 2);
    assert_eq!(p.steps[1].depends_on, ["a"]);
    assert_eq!(s.plan_progress.status("a").as_str(), "completed");
    assert_eq!(s.plan_progress.status("b").as_str(), "running");
    // The next model call saw the plan progress in its system prompt.
    let sys = srv.requests()[1].json()["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(sys.contains("[completed] a: read"), "{sys}");
}

#[test]
fn budget_is_enforced_across_a_restart_and_only_a_flag_raises_it() {
    let (env, srv) = Env::new(KEY, "[limits]\nmax_turns = 1\n").with_server(vec![
        Reply::tool_calls(&[("r1", "list_dir", r#"{"path":"."}"#)]),
        Reply::text("after raise"),
    ]);
    let agent = env.agent(&srv);
    let (id, evs) = run(&agent, Target::New, "look around");
    match finish(&evs) {
        FinishReason::LimitReached(why) => assert!(why.contains("max_turns"), "{why}"),
        other => panic!("{other:?}"),
    }
    let h = env.sessions().header(&id).unwrap();
    assert_eq!(h.status, Status::Paused);
    let l = h.ledger.unwrap();
    assert!(l.termination.unwrap().contains("max_turns"));
    assert_eq!(l.usage.tool_calls, 1);

    // Restart: the stored ledger wins over a fresh one; no model call is made.
    let agent = env.agent(&srv);
    let h = resume(&agent, &id);
    let evs = drive(&h, |_| None);
    assert!(matches!(finish(&evs), FinishReason::LimitReached(_)));
    assert_eq!(srv.request_count(), 1);
    h.join();

    // The user raises the limit explicitly.
    let h = resume_with(&agent, &id, |l| l.max_turns = Some(5));
    let evs = drive(&h, |_| None);
    assert_eq!(finish(&evs), FinishReason::Completed);
    let l = env.sessions().header(&id).unwrap().ledger.unwrap();
    assert_eq!(l.usage.turns, 2);
    assert_eq!(l.limits.max_turns, Some(5));
}

#[test]
fn cancel_keeps_what_arrived_and_the_session_continues() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![
        crate::support::slow_text(
            "one two three four five six seven eight",
            8,
            Duration::from_millis(200),
        )
        .reply(),
        Reply::text("continued"),
    ]);
    let agent = env.agent(&srv);
    let h = watch(&agent, Target::New, "count");
    let mut deltas = 0;
    let evs = drive(&h, |e| {
        if matches!(e, TurnEvent::TextDelta(_)) {
            deltas += 1;
            if deltas == 2 {
                return Some(TurnCommand::Cancel);
            }
        }
        None
    });
    assert_eq!(finish(&evs), FinishReason::Cancelled);
    let s = env.sessions().load(&h.session_id).unwrap();
    assert_eq!(s.header.status, Status::Cancelled);
    let l = s.header.ledger.clone().unwrap();
    assert!(l.cancelled_at_ms.is_some());
    assert_eq!(s.messages.len(), 2);
    let kept = s.messages[1].text();
    assert!(!kept.is_empty() && "one two three four five six seven eight".starts_with(&kept));
    assert_eq!(
        s.messages[1].tool_metadata.as_ref().unwrap()["incomplete"],
        true
    );
    h.join();

    let (_, evs) = run(&agent, Target::Resume(s.header.id.clone()), "go on");
    assert_eq!(finish(&evs), FinishReason::Completed);
    assert_eq!(
        env.sessions().header(&s.header.id).unwrap().status,
        Status::Completed
    );
}

#[test]
fn a_running_session_cannot_be_started_twice() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![
        Stream::text("slow reply")
            .delays(Duration::from_millis(800), Duration::ZERO)
            .reply(),
    ]);
    let agent = env.agent(&srv);
    let h = watch(&agent, Target::New, "x");
    let other = env.agent(&srv);
    let Err(StartError { code, message }) =
        other.watch(Target::Resume(h.session_id.clone()), TurnRequest::default())
    else {
        panic!("second start succeeded");
    };
    assert_eq!(code, "busy");
    has(&message, &format!("running in pid {}", std::process::id()));
    let evs = drive(&h, |_| None);
    assert_eq!(finish(&evs), FinishReason::Completed);
    let sid = h.session_id.clone();
    h.join();
    // Released: the other agent may continue it now (nothing is unanswered, so no model call).
    let h2 = resume(&other, &sid);
    assert_eq!(finish(&drive(&h2, |_| None)), FinishReason::Completed);
    assert_eq!(srv.request_count(), 1);
}

#[test]
fn dangling_calls_rerun_exactly_the_unanswered_ones() {
    let env = Env::new(KEY, "");
    std::fs::write(env.workdir.join("notes.txt"), "hello notes\n").unwrap();
    let srv = ScriptedServer::start(vec![Reply::text("all answered")]).unwrap();
    let sessions = env.sessions();
    let h = sessions.new_session(Default::default()).unwrap();
    let calls = vec![
        ToolCall {
            id: "d1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"notes.txt"}"#.into(),
        },
        ToolCall {
            id: "d2".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"notes.txt"}"#.into(),
        },
        ToolCall {
            id: "d3".into(),
            name: "write_file".into(),
            arguments: r#"{"path":"out.txt","content":"x"}"#.into(),
        },
    ];
    sessions
        .append(
            &h.id,
            &[
                NewMessage::text(Role::User, "do three things"),
                // As a turn that crashed leaves it: the calls came from the model here.
                NewMessage {
                    role: Some(Role::Assistant),
                    tool_calls: calls,
                    tool_metadata: Some(serde_json::json!({ "calls_from": "model" })),
                    ..Default::default()
                },
                NewMessage::tool_result("d1", "hello notes", false),
            ],
            &AppendMeta::default(),
        )
        .unwrap();
    let agent = env.agent(&srv);
    let hd = resume(&agent, &h.id);
    let mut approvals = Vec::new();
    let evs = drive(&hd, |e| match e {
        TurnEvent::ApprovalNeeded { call, reason, .. } => {
            approvals.push((call.id.clone(), reason.clone()));
            Some(TurnCommand::Approve {
                call_id: call.id.clone(),
                always: false,
            })
        }
        _ => None,
    });
    assert_eq!(finish(&evs), FinishReason::Completed);
    assert!(evs.iter().any(
        |e| matches!(e, TurnEvent::Warning { code, .. } if code == "replaying_interrupted_calls")
    ));
    let ran: Vec<&str> = evs
        .iter()
        .filter_map(|e| match e {
            TurnEvent::ToolResult { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ran, ["d2", "d3"], "d1 was answered and never reruns");
    assert_eq!(approvals.len(), 1, "only the write asks: {approvals:?}");
    assert!(approvals[0].1.contains("may already have run"));
    let s = env.sessions().load(&h.id).unwrap();
    let answers: Vec<&str> = s
        .messages
        .iter()
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    assert_eq!(answers, ["d1", "d2", "d3"]);
    assert_eq!(srv.request_count(), 1);
}

#[test]
fn compaction_keeps_every_message_and_a_failed_summary_changes_nothing() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![
        Reply::text("first answer"),
        Reply::text("second answer"),
        Reply::error(500, "no summary today"),
        Reply::error(500, "no summary today"),
        Reply::error(500, "no summary today"),
        Reply::error(500, "no summary today"),
        Stream::text("SUMMARY: the user asked twice.")
            .usage(100, 20)
            .reply(),
    ]);
    let agent = env.agent(&srv);
    let (id, _) = run(&agent, Target::New, "first");
    run(&agent, Target::Resume(id.clone()), "second");
    let before = env.sessions().load(&id).unwrap();
    assert_eq!(before.messages.len(), 4);

    assert!(agent.compact(&id).is_err());
    assert_eq!(
        env.sessions().load(&id).unwrap(),
        before,
        "a failed summary changed nothing"
    );

    let c = agent.compact(&id).unwrap();
    assert_eq!((c.summarised, c.kept, c.stored), (2, 2, 5));
    // Nothing was removed: the four messages, then the summary naming where the model's
    // context starts (the kept tail: "second" on).
    let s = env.sessions().load(&id).unwrap();
    let texts: Vec<String> = s.messages.iter().map(Message::text).collect();
    assert_eq!(
        texts[..4],
        before
            .messages
            .iter()
            .map(Message::text)
            .collect::<Vec<_>>()[..]
    );
    assert_eq!(s.messages[4].role, Role::System);
    assert_eq!(s.messages[4].seq, 5);
    assert!(
        texts[4].contains("SUMMARY: the user asked twice."),
        "{}",
        texts[4]
    );
    assert!(texts[4].contains("the messages from #3 on"), "{}", texts[4]);
    assert_eq!(s.messages[4].context_from(), Some(3));
    // The model's context: the tail and the summary, not what it stands for.
    let ctx = env.sessions().load_context(&id).unwrap();
    let seqs: Vec<i64> = ctx.messages.iter().map(|m| m.seq).collect();
    assert_eq!(seqs, [3, 4, 5]);
    assert_eq!(
        s.header.task_state.unwrap()["summary"],
        "SUMMARY: the user asked twice."
    );
    let l = s.header.ledger.unwrap();
    assert_eq!(l.usage.input_tokens, 10 + 10 + 100, "lifetime usage stays");
    // The header's totals are the lifetime usage too (compaction does not zero them).
    assert_eq!(
        (s.header.token_input_total, s.header.token_output_total),
        (l.usage.input_tokens, l.usage.output_tokens)
    );
    // The summary request carried the whole conversation and no tools.
    let req = srv.requests().last().unwrap().json();
    assert!(req.get("tools").is_none());
    assert!(req.to_string().contains("first answer"));
}

/// The real OpenAI provider under another name, as a second provider would be.
struct Renamed(OpenAi);

impl Provider for Renamed {
    fn name(&self) -> &'static str {
        "gateway"
    }

    fn model(&self) -> &str {
        self.0.model()
    }

    fn stream(
        &mut self,
        req: &ChatRequest,
        cancel: &CancelFlag,
        on_event: &mut dyn FnMut(StreamEvent),
    ) -> Result<Completion, ProviderError> {
        self.0.stream(req, cancel, on_event)
    }
}

#[test]
fn the_stored_provider_name_is_the_one_of_the_provider_that_ran() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![
        Reply::text("first answer"),
        Reply::text("second answer"),
        Stream::text("SUMMARY: asked twice.").reply(),
    ]);
    let settings = env.settings(&srv);
    let openai = settings.openai().unwrap();
    let factory: ProviderFactory =
        Arc::new(move || Ok(Box::new(Renamed(OpenAi::new(openai.clone())?)) as Box<dyn Provider>));
    let agent = Agent::with_provider(env.sessions(), settings.clone(), factory);
    let (id, _) = run(&agent, Target::New, "first");
    assert_eq!(env.sessions().header(&id).unwrap().provider, "gateway");
    run(&agent, Target::Resume(id.clone()), "second");
    agent.compact(&id).unwrap();
    assert_eq!(
        env.sessions().header(&id).unwrap().provider,
        "gateway",
        "the compaction's replacement names the provider that wrote the summary"
    );

    // A provider that could not be built answered nothing, so the session names none.
    let broken: ProviderFactory = Arc::new(|| {
        Err(ProviderError {
            kind: ErrorKind::Protocol,
            message: "cannot start".into(),
            partial: None,
        })
    });
    let agent = Agent::with_provider(env.sessions(), settings, broken);
    let (id, evs) = run(&agent, Target::New, "hi");
    assert!(matches!(finish(&evs), FinishReason::Failed { code, .. } if code == "config"));
    assert_eq!(env.sessions().header(&id).unwrap().provider, "");
}

#[test]
fn automatic_compaction_past_the_share_of_the_window() {
    let (env, srv) = Env::new(KEY, "context_window = 1000\ncompact_at = 0.5\n").with_server(vec![
        Stream::text("big answer").usage(900, 10).reply(),
        Stream::text("short summary").usage(50, 5).reply(),
        Reply::text("answer after compaction"),
    ]);
    let agent = env.agent(&srv);
    let (id, _) = run(&agent, Target::New, "first");
    let (_, evs) = run(&agent, Target::Resume(id.clone()), "second");
    assert_eq!(finish(&evs), FinishReason::Completed);
    assert!(
        evs.iter()
            .any(|e| matches!(e, TurnEvent::Compacting { .. }))
    );
    let s = env.sessions().load(&id).unwrap();
    assert_eq!(s.header.task_state.unwrap()["summary"], "short summary");
    assert_eq!(s.messages.last().unwrap().text(), "answer after compaction");
    let third = srv.requests()[2].json();
    assert!(
        third["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("short summary")
    );
    assert!(
        !third.to_string().contains("big answer"),
        "the summary stands for the old turns in the request"
    );
    assert!(
        s.messages.iter().any(|m| m.text() == "big answer"),
        "and they stay in the transcript"
    );
}

#[test]
fn provider_failures_fail_the_turn_with_an_actionable_message() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![
        Reply::error(401, &format!("Incorrect API key provided: {KEY}")),
        Stream::new()
            .role()
            .text_deltas("half of it", 4)
            .cut_after(3)
            .reply(),
    ]);
    let agent = env.agent(&srv);
    let (id, evs) = run(&agent, Target::New, "hi");
    match finish(&evs) {
        FinishReason::Failed { code, message } => {
            assert_eq!(code, "auth");
            assert!(
                message.contains("NEOCODE_API_KEY") && !message.contains("KEY-5f3a9c"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(env.sessions().header(&id).unwrap().status, Status::Failed);

    let (id, evs) = run(&agent, Target::New, "again");
    assert!(matches!(finish(&evs), FinishReason::Failed { code, .. } if code == "stream_cut"));
    let s = env.sessions().load(&id).unwrap();
    assert_eq!(s.messages.len(), 2);
    assert!(s.messages[1].is_error);
    assert!(!s.messages[1].text().is_empty());
    assert_no_file_holds(&env.home, &[KEY, "KEY-5f3a9c"]);
}

#[test]
fn nothing_configured_says_what_to_set() {
    let env = Env::new(KEY, "");
    let settings = Settings::load_with(&env.home, &Overrides::default(), &|_| None).unwrap();
    let agent = Agent::new(env.sessions(), settings);
    let e = refused(
        &agent,
        TurnRequest {
            prompt: Some("x".into()),
            ..Default::default()
        },
        "started without a provider",
    );
    assert_eq!(e.code, "config");
    assert!(e.message.contains("NEOCODE_BASE_URL"), "{}", e.message);
    assert_eq!(env.sessions().count().unwrap(), 0, "nothing was written");
}

#[test]
fn a_prompt_carries_its_images_and_a_bad_one_refuses_the_turn_before_anything_is_written() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![Reply::text("A screenshot.")]);
    let agent = env.agent(&srv);
    let notes = env.workdir.join("notes.txt");
    std::fs::write(&notes, "not an image").unwrap();
    let e = refused(
        &agent,
        TurnRequest {
            prompt: Some("look".into()),
            images: vec![notes],
            ..Default::default()
        },
        "started with a text file as an image",
    );
    assert_eq!(e.code, "usage");
    assert!(e.message.contains("is not an image"), "{}", e.message);
    assert_eq!(env.sessions().count().unwrap(), 0, "nothing was written");
    let png = env.workdir.join("shot.png");
    std::fs::write(&png, b"\x89PNG\r\n\x1a\n0000").unwrap();
    let h = agent
        .watch(
            Target::New,
            TurnRequest {
                prompt: Some("look".into()),
                images: vec![png],
                ..Default::default()
            },
        )
        .unwrap();
    let evs = drive(&h, |_| None);
    assert_eq!(finish(&evs), FinishReason::Completed);
    let s = env.sessions().load(&h.session_id).unwrap();
    let user = &s.messages[0];
    assert_eq!(user.text(), "look");
    assert!(
        user.parts
            .iter()
            .any(|p| matches!(p, Part::Image { mime_type: Some(m), .. } if m == "image/png")),
        "{user:?}"
    );
    // The model got the image with the message.
    assert!(
        srv.requests()[0]
            .json()
            .to_string()
            .contains("data:image/png;base64,"),
    );
}

#[test]
fn images_from_assets_are_sent_as_data_urls() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![Reply::text("a red pixel")]);
    let sessions = env.sessions();
    let h = sessions.new_session(Default::default()).unwrap();
    let png = b"\x89PNG\r\n\x1a\nfakepixel";
    let asset = sessions.save_asset(&h.id, "image/png", png).unwrap();
    sessions
        .append(
            &h.id,
            &[NewMessage {
                role: Some(Role::User),
                parts: vec![
                    Part::text("what is this?"),
                    Part::Image {
                        asset_id: asset.id,
                        mime_type: Some("image/png".into()),
                    },
                ],
                ..Default::default()
            }],
            &AppendMeta::default(),
        )
        .unwrap();
    let agent = env.agent(&srv);
    // No prompt: the stored user message has no answer yet, so the turn answers it.
    let hd = resume(&agent, &h.id);
    assert_eq!(finish(&drive(&hd, |_| None)), FinishReason::Completed);
    let req = srv.requests()[0].json();
    let content = &req["messages"][1]["content"];
    assert_eq!(content[0]["text"], "what is this?");
    use base64::Engine;
    let expect = format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(png)
    );
    assert_eq!(content[1]["image_url"]["url"], expect.as_str());
}

#[test]
fn calls_stopped_by_a_budget_or_cancel_are_answered_not_run() {
    let (env, srv) = Env::new(KEY, "[limits]\nmax_tool_calls = 1\n").with_server(vec![
        Reply::tool_calls(&[
            ("b1", "list_dir", r#"{"path":"."}"#),
            ("b2", "list_dir", r#"{"path":"."}"#),
            ("b3", "write_file", r#"{"path":"x.txt","content":"x"}"#),
        ]),
        Reply::text("carrying on"),
    ]);
    let agent = env.agent(&srv);
    let (id, evs) = run(&agent, Target::New, "three calls");
    assert!(matches!(finish(&evs), FinishReason::LimitReached(w) if w.contains("max_tool_calls")));
    let sessions = env.sessions();
    assert!(sessions.interrupted_tool_calls(&id).unwrap().is_empty());
    let s = sessions.load(&id).unwrap();
    let results: Vec<(String, bool, String)> = s
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| (m.tool_call_id.clone().unwrap(), m.is_error, m.text()))
        .collect();
    assert_eq!(results.len(), 3);
    assert!(!results[0].1);
    assert!(
        results[1].2.starts_with("Not run: a budget was reached"),
        "{results:?}"
    );
    assert!(results[2].1);
    assert_eq!(s.header.ledger.unwrap().usage.tool_calls, 1);

    // Raising the limit continues with the model, which sees all three answers.
    let h = resume_with(&agent, &id, |l| l.max_tool_calls = Some(10));
    assert_eq!(finish(&drive(&h, |_| None)), FinishReason::Completed);
    let msgs = srv.requests()[1].json()["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(msgs.iter().filter(|m| m["role"] == "tool").count(), 3);
}

#[test]
fn approve_network_opens_the_sandboxed_network_for_that_session_across_a_restart() {
    use neocode::runtime::tools::{SandboxSettings, sandbox};
    let status = sandbox::status(&SandboxSettings::default());
    if !status.is_enforced() {
        eprintln!(
            "NOTE: {}: the network grant is not testable here",
            status.describe()
        );
        return;
    }
    let env = Env::new(KEY, "[approval]\npolicy = \"never-ask\"\n");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let args = serde_json::json!({
        "command": format!("bash -c 'echo hello > /dev/tcp/127.0.0.1/{port}'")
    })
    .to_string();
    let srv = ScriptedServer::start(vec![
        Reply::tool_calls(&[("n1", "run_command", &args)]),
        Reply::text("blocked"),
        Reply::tool_calls(&[("n2", "run_command", &args)]),
        Reply::text("connected"),
    ])
    .unwrap();
    let result_of = |evs: &[TurnEvent]| {
        evs.iter()
            .find_map(|e| match e {
                TurnEvent::ToolResult { text, .. } => Some(text.clone()),
                _ => None,
            })
            .unwrap()
    };
    let agent = env.agent(&srv);
    let (id, evs) = run(&agent, Target::New, "reach the service");
    let denied = result_of(&evs);
    assert!(denied.contains("Permission denied"), "{denied}");
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_err(), "connected without the grant");

    // The user allows the network for this session; it is stored with the session.
    assert_eq!(agent.allow_network(&id[..8]).unwrap(), id);
    assert_eq!(agent.allow_network(&id).unwrap(), id, "idempotent");
    let ledger = env.sessions().header(&id).unwrap().ledger.unwrap();
    let grants: Vec<_> = ledger
        .approved_tools
        .iter()
        .filter(|t| t.as_str() == "sandbox:network")
        .collect();
    assert_eq!(grants.len(), 1);

    // A new agent, as after a restart: the same command connects.
    let agent = env.agent(&srv);
    let (_, evs) = run(&agent, Target::Resume(id), "try again");
    let ok = result_of(&evs);
    assert!(!ok.contains("Permission denied"), "{ok}");
    listener.set_nonblocking(false).unwrap();
    let (_conn, _) = listener.accept().unwrap();
}

/// `neocode show` of a session, as text.
fn show(env: &Env, id: &str) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_neocode"))
        .env("NEOCODE_HOME", &env.home)
        .arg("--workdir")
        .arg(&env.workdir)
        .args(["show", id])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn one_definition_of_tokens_through_compaction_fork_and_show() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![
        Stream::text("first answer").usage(1000, 100).reply(),
        Stream::text("second answer").usage(2000, 200).reply(),
        Stream::text("the summary").usage(2500, 50).reply(),
        Stream::text("after compaction").usage(400, 40).reply(),
    ]);
    let agent = env.agent(&srv);
    let (id, _) = run(&agent, Target::New, "one");
    run(&agent, Target::Resume(id.clone()), "two");
    let rt = env.sessions();
    let lifetime = |id: &str| {
        let h = rt.header(id).unwrap();
        let l = h.ledger.clone().unwrap_or_default();
        // The header's totals (the list's column) are the ledger's: one figure.
        assert_eq!(
            (h.token_input_total, h.token_output_total),
            (l.usage.input_tokens, l.usage.output_tokens),
            "{id}"
        );
        (h.token_input_total, h.token_output_total)
    };
    assert_eq!(lifetime(&id), (3000, 300));
    let s = show(&env, &id);
    assert!(s.contains("3000 in / 300 out (lifetime)"), "{s}");
    has(&s, "2200 tokens (what the next request carries)");

    // Compaction spends a call and keeps the lifetime; the context shrinks to an estimate.
    agent.compact(&id).unwrap();
    assert_eq!(lifetime(&id), (5500, 350));
    let list = rt
        .list(&neocode::session::ListQuery::default())
        .unwrap()
        .items;
    assert_eq!(list[0].token_input_total, 5500, "the list does not show 0");
    let s = show(&env, &id);
    assert!(s.contains("5500 in / 350 out (lifetime)"), "{s}");
    assert!(s.contains("context    ~"), "{s}");
    run(&agent, Target::Resume(id.clone()), "three");
    assert_eq!(lifetime(&id), (5900, 390));
    assert!(show(&env, &id).contains("440 tokens (what the next request carries)"));

    // A fork starts its own lifetime at 0; the parent keeps its own.
    let fork = rt.fork(&id, None).unwrap();
    assert_eq!(lifetime(&fork.id), (0, 0));
    assert_eq!(rt.header(&fork.id).unwrap().ledger.unwrap().usage.turns, 0);
    assert_eq!(lifetime(&id), (5900, 390));
    let s = show(&env, &fork.id);
    assert!(s.contains("0 in / 0 out (lifetime)"), "{s}");
    // Its context is the parent's transcript it carries.
    has(&s, "440 tokens (what the next request carries)");
}

fn warnings(evs: &[TurnEvent], code: &str) -> Vec<String> {
    evs.iter()
        .filter_map(|e| match e {
            TurnEvent::Warning { code: c, message } if *c == code => Some(message.clone()),
            _ => None,
        })
        .collect()
}

/// The one warning of `code` among the events (panics when there is not exactly one).
#[track_caller]
fn one_warning(evs: &[TurnEvent], code: &str) -> String {
    let all = warnings(evs, code);
    assert_eq!(all.len(), 1, "{evs:#?}");
    all[0].clone()
}

#[test]
fn a_tool_turn_and_a_continue_work_against_a_llama_cpp_python_like_server() {
    use neocode::testkit::scripted::LlamaLike;
    let env = Env::new(KEY, "");
    std::fs::write(env.workdir.join("a.txt"), "x").unwrap();
    let srv = ScriptedServer::start_llama_like(
        vec![
            Stream::new()
                .role()
                .repeated_tool_call(0, "call__0_list_dir", "list_dir", r#"{"path":"."}"#, 5)
                .finish("tool_calls")
                .reply(),
            Reply::text("There is a.txt."),
            Reply::text("Still a.txt."),
        ],
        LlamaLike { window: 100_000 },
    )
    .unwrap();
    let agent = env.agent(&srv);
    let (id, evs) = run(&agent, Target::New, "list the files");
    assert_eq!(finish(&evs), FinishReason::Completed, "{evs:#?}");
    assert_eq!(warnings(&evs, "not_streamed").len(), 1, "{evs:#?}");
    let results: Vec<&String> = evs
        .iter()
        .filter_map(|e| match e {
            TurnEvent::ToolResult { text, is_error, .. } if !is_error => Some(text),
            _ => None,
        })
        .collect();
    assert!(
        results.len() == 1 && results[0].contains("a.txt"),
        "list_dir ran once under its own name: {evs:#?}"
    );
    // The next turn in the session is accepted: the call's message carries content "".
    let (_, evs) = run(&agent, Target::Resume(id.clone()), "and now?");
    assert_eq!(finish(&evs), FinishReason::Completed, "{evs:#?}");
    let last = srv.requests().last().unwrap().json();
    let call_msg = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m.get("tool_calls").is_some())
        .unwrap()
        .clone();
    assert_eq!(call_msg["content"], "", "{call_msg}");
    assert_eq!(call_msg["tool_calls"][0]["function"]["name"], "list_dir");
    let s = env.sessions().load(&id).unwrap();
    assert_eq!(s.header.status, Status::Completed);
}

#[test]
fn a_reply_cut_at_the_length_limit_is_kept_incomplete_and_the_turn_pauses() {
    let (env, srv) = Env::new(KEY, "max_tokens = 16\n").with_server(vec![
        Stream::new()
            .role()
            .text_deltas("The answer begins and then", 3)
            .finish("length")
            .usage(30, 16)
            .reply(),
    ]);
    let agent = env.agent(&srv);
    let (id, evs) = run(&agent, Target::New, "explain");
    assert!(
        matches!(finish(&evs), FinishReason::LimitReached(ref w) if w.contains("finish_reason: length")),
        "{evs:#?}"
    );
    let cut = one_warning(&evs, "reply_cut");
    assert!(cut.contains("after 16 tokens"), "{cut}");
    assert_eq!(srv.requests()[0].json()["max_tokens"], 16);
    let s = env.sessions().load(&id).unwrap();
    assert_eq!(s.header.status, Status::Paused);
    let a = s.messages.last().unwrap();
    assert_eq!(a.text(), "The answer begins and then");
    assert_eq!(
        a.tool_metadata.as_ref().unwrap()["incomplete"],
        true,
        "marked incomplete"
    );
}

#[test]
fn a_prompt_that_was_never_answered_is_not_stored_again() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![
        Reply::error(400, "bad request"),
        Reply::text("answered at last"),
    ]);
    let agent = env.agent(&srv);
    let (id, evs) = run(&agent, Target::New, "do the thing");
    assert!(matches!(finish(&evs), FinishReason::Failed { .. }));
    let (_, evs) = run(&agent, Target::Resume(id.clone()), "do the thing");
    assert_eq!(finish(&evs), FinishReason::Completed, "{evs:#?}");
    let s = env.sessions().load(&id).unwrap();
    let users = s.messages.iter().filter(|m| m.role == Role::User).count();
    assert_eq!(users, 1, "{:#?}", s.messages);
    let sent = srv.requests()[1].json();
    let user_msgs = support::messages_of_role(&sent, "user");
    assert_eq!(user_msgs, 1);
}

#[test]
fn an_overflow_fails_in_words_and_prompt_and_tools_past_a_third_of_the_window_warn() {
    use neocode::testkit::scripted::LlamaLike;
    let env = Env::new(KEY, "context_window = 2048\n");
    let srv = ScriptedServer::start_llama_like(vec![], LlamaLike { window: 2048 }).unwrap();
    let agent = env.agent(&srv);
    let (_, evs) = run(&agent, Target::New, &"word ".repeat(3000));
    let large = one_warning(&evs, "prompt_large");
    assert!(large.contains("2048-token context window"), "{large}");
    match finish(&evs) {
        FinishReason::Failed { code, message } => {
            assert_eq!(code, "context_overflow");
            assert!(
                message.contains("is 2048 tokens") && message.contains("the prompt needs"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_window_the_server_tells_in_props_replaces_a_larger_configured_one() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![Reply::text("hi")]);
    srv.set_props(serde_json::json!({"default_generation_settings": {"n_ctx": 2048}}));
    let agent = env.agent(&srv);
    let (_, evs) = run(&agent, Target::New, "hello");
    assert_eq!(finish(&evs), FinishReason::Completed, "{evs:#?}");
    let large = one_warning(&evs, "prompt_large");
    assert!(large.contains("2048-token context window"), "{large}");
    assert_eq!(srv.request_count(), 1, "the probe is not a model call");
}

#[test]
fn a_transcript_too_long_for_the_window_is_summarised_in_pieces_that_fit() {
    use neocode::testkit::scripted::LlamaLike;
    let env = Env::new(KEY, "");
    let window = 1200;
    let replies = (1..=40)
        .map(|i| Reply::text(&format!("summary {i}")))
        .collect();
    let srv = ScriptedServer::start_llama_like(replies, LlamaLike { window }).unwrap();
    let agent = env.agent(&srv);
    let id = env.session_with(20);
    let c = agent.compact(&id).unwrap();
    assert!(c.kept < c.summarised, "{c:?}");
    assert_eq!(c.stored, 21, "every message stays: {c:?}");
    let reqs = srv.requests();
    // The whole transcript overflowed (streamed: empty; unstreamed: the numbers), then pieces.
    assert_eq!(reqs[0].json()["stream"], true);
    assert_eq!(reqs[1].json()["stream"], false);
    let pieces = &reqs[2..];
    assert!(pieces.len() >= 2, "{} pieces", pieces.len());
    for p in pieces {
        assert!(
            (p.body.len() as u64) / 4 <= window,
            "a piece of {} bytes does not fit",
            p.body.len()
        );
    }
    let second = pieces[1].json()["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    starts(
        &second,
        "Summary of the earlier parts:\n\nsummary 1\n\nPart 2 of",
    );
    let s = env.sessions().load(&id).unwrap();
    let summary = s.header.task_state.unwrap()["summary"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(summary, format!("summary {}", pieces.len()));
}

#[test]
fn a_turn_past_the_window_compacts_once_and_asks_again() {
    use neocode::testkit::scripted::LlamaLike;
    let env = Env::new(KEY, "");
    let replies = (1..=40)
        .map(|i| Reply::text(&format!("reply {i}")))
        .collect();
    let srv = ScriptedServer::start_llama_like(replies, LlamaLike { window: 3000 }).unwrap();
    let agent = env.agent(&srv);
    let id = env.session_with(40);
    let (_, evs) = run(&agent, Target::Resume(id.clone()), "and now?");
    assert_eq!(finish(&evs), FinishReason::Completed, "{evs:#?}");
    let compacting: Vec<&String> = evs
        .iter()
        .filter_map(|e| match e {
            TurnEvent::Compacting { message } => Some(message),
            _ => None,
        })
        .collect();
    assert_eq!(compacting.len(), 1, "{evs:#?}");
    assert!(
        compacting[0].contains("is 3000 tokens") && compacting[0].contains("asking again"),
        "{}",
        compacting[0]
    );
    // What the model is sent shrank; every message stays stored.
    let ctx = env.sessions().load_context(&id).unwrap();
    assert!(ctx.messages.len() < 20, "compacted: {}", ctx.messages.len());
    let s = env.sessions().load(&id).unwrap();
    assert_eq!(
        s.messages.iter().filter(|m| !m.is_compaction()).count(),
        42,
        "the 40 messages, the prompt and its answer"
    );
    let users: Vec<String> = s
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .map(Message::text)
        .collect();
    assert_eq!(users.last().map(String::as_str), Some("and now?"));
    assert_eq!(users.iter().filter(|u| *u == "and now?").count(), 1);
    assert!(s.messages.last().unwrap().text().starts_with("reply "));
}

/// The durable queue in the runtime, with the real provider: a steering message waiting when
/// the turn reaches a tool boundary goes in as a user message before the next model call; a
/// queued message starts its own turn only while it still waits (under the lease; the append
/// storing it marks it delivered).
#[test]
fn steering_goes_in_at_the_tool_boundary_and_a_queued_message_is_claimed_once() {
    let env = Env::new(KEY, "");
    std::fs::write(env.workdir.join("a.txt"), "alpha\n").unwrap();
    let srv = ScriptedServer::start(vec![
        Reply::tool_calls(&[("r1", "read_file", r#"{"path":"a.txt"}"#)]),
        Reply::text("Read it, and saw your note."),
        Reply::text("Second turn."),
    ])
    .unwrap();
    let agent = env.agent(&srv);
    let sessions = env.sessions();
    let id = env.new_session();
    // Waiting to steer when the turn starts: it goes in at the first tool boundary, not before.
    sessions
        .enqueue(&id, "also mention the size", true)
        .unwrap();
    let h = watch(&agent, Target::Resume(id.clone()), "read a.txt");
    let evs = drive(&h, |_| None);
    assert_eq!(finish(&evs), FinishReason::Completed);
    assert!(evs.iter().any(|e| matches!(
        e,
        TurnEvent::Warning { code, .. } if code.as_str() == "steered"
    )));
    let s = sessions.load(&id).unwrap();
    let roles: Vec<Role> = s.messages.iter().map(|m| m.role).collect();
    use Role::{Assistant as A, Tool as T, User as U};
    assert_eq!(roles, [U, A, T, U, A]);
    assert_eq!(s.messages[3].text(), "also mention the size");
    let last = crate::support::last_message(&srv, 1);
    assert_eq!(last["role"], "user");
    assert!(last.to_string().contains("also mention the size"), "{last}");
    assert!(sessions.queued(&id).unwrap().is_empty());

    // A message removed before it was sent is not sent; one still waiting is, once.
    let gone = sessions.enqueue(&id, "never mind", false).unwrap();
    assert!(sessions.remove_queued(&id, gone.id).unwrap());
    let (tx, _rx) = std::sync::mpsc::channel();
    let err = agent.start_queued(&id, gone.id, None, tx).err().unwrap();
    assert_eq!(err.code.as_str(), "usage", "{}", err.message);
    let q = sessions.enqueue(&id, "and then this", false).unwrap();
    let evs = send_queued(&agent, &id, q.id);
    assert_eq!(finish(&evs), FinishReason::Completed);
    assert!(sessions.queued(&id).unwrap().is_empty(), "delivered");
    let s = sessions.load(&id).unwrap();
    assert_eq!(s.messages[5].text(), "and then this");
    assert_eq!(srv.requests().len(), 3);
}

/// A queued message is stored (and its row marked delivered by that append) even when its
/// text is the session's unanswered last prompt: skipped as a retry, it would stay queued and
/// be sent again and again.
#[test]
fn a_queued_message_equal_to_the_unanswered_last_prompt_is_stored_and_delivered() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![Reply::text("Answered.")]);
    let agent = env.agent(&srv);
    let sessions = env.sessions();
    let id = env.new_session();
    // A prompt whose model call never answered.
    sessions
        .append(
            &id,
            &[NewMessage::text(Role::User, "retry me")],
            &AppendMeta::default(),
        )
        .unwrap();
    let q = sessions.enqueue(&id, "retry me", false).unwrap();
    let evs = send_queued(&agent, &id, q.id);
    assert_eq!(finish(&evs), FinishReason::Completed);
    assert!(sessions.queued(&id).unwrap().is_empty(), "delivered");
    let s = sessions.load(&id).unwrap();
    let texts: Vec<String> = s.messages.iter().map(Message::text).collect();
    assert_eq!(texts, ["retry me", "retry me", "Answered."]);
    assert_eq!(
        s.messages[1].tool_metadata.as_ref().unwrap()["queued"]["id"],
        q.id
    );
}
