//! The one port into the agent (`Agent::submit`): a turn's sink is built with the turn's own
//! commands, turn commands reach the turn this process runs in the session, and the one-call
//! ops answer with typed outcomes. The real provider against the scripted server on
//! 127.0.0.1, real tools, the real store.

use crate::support::agent::Env;

use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use neocode::runtime::agent::{
    Agent, FinishReason, Op, OpError, OpOutcome, Sink, Target, TurnCommand, TurnEvent, TurnRequest,
};
use neocode::session::{Message, Role};
use neocode::testkit::scripted::{Reply, ScriptedServer};

const KEY: &str = "sk-agent-port-KEY-81c2";

fn turn(prompt: &str) -> Op {
    Op::Turn(TurnRequest {
        prompt: Some(prompt.into()),
        ..TurnRequest::default()
    })
}

fn write_then_text() -> ScriptedServer {
    ScriptedServer::start(vec![
        Reply::tool_calls(&[(
            "c1",
            "write_file",
            r#"{"path":"port.txt","content":"from the port\n"}"#,
        )]),
        Reply::text("Done."),
    ])
    .unwrap()
}

/// A workspace whose agent's server writes `port.txt`, then answers.
fn writing_agent() -> (Env, ScriptedServer, Agent) {
    let env = Env::new(KEY, "");
    let srv = write_then_text();
    let agent = env.agent(&srv);
    (env, srv, agent)
}

fn until_finished(rx: &Receiver<TurnEvent>) -> FinishReason {
    loop {
        if let TurnEvent::Finished { reason, .. } =
            rx.recv_timeout(Duration::from_secs(30)).unwrap()
        {
            return reason;
        }
    }
}

#[test]
fn a_sink_built_with_the_turns_commands_answers_its_approval() {
    let (env, _srv, agent) = writing_agent();
    let (tx, rx) = channel();
    // As `neocode run` answers on the terminal: from the turn's own thread, with the
    // commands the sink was built with (nothing patched in after the turn started).
    let sink = Sink::new(move |commands| {
        let commands = commands.clone();
        move |ev: TurnEvent| {
            if let TurnEvent::ApprovalNeeded { call, .. } = &ev {
                let approve = TurnCommand::Approve {
                    call_id: call.id.clone(),
                    always: false,
                };
                commands.send(approve).unwrap();
            }
            let _ = tx.send(ev);
        }
    });
    let Ok(OpOutcome::Started(started)) = agent.submit(Target::New, turn("write it"), sink) else {
        panic!("no turn started");
    };
    assert_eq!(until_finished(&rx), FinishReason::Completed);
    started.handle.join();
    assert_eq!(
        std::fs::read_to_string(env.workdir.join("port.txt")).unwrap(),
        "from the port\n"
    );
}

#[test]
fn commands_reach_the_turn_this_process_runs_and_not_an_ended_one() {
    let (env, _srv, agent) = writing_agent();
    let (tx, rx) = channel();
    let Ok(OpOutcome::Started(started)) = agent.submit(Target::New, turn("write it"), Sink::to(tx))
    else {
        panic!("no turn started");
    };
    let id = started.handle.session_id.clone();
    let call = loop {
        if let TurnEvent::ApprovalNeeded { call, .. } =
            rx.recv_timeout(Duration::from_secs(30)).unwrap()
        {
            break call;
        }
    };
    // An agent made from this one (`/model` switches so) reaches the same turn.
    let deny = TurnCommand::Deny {
        call_id: call.id,
        reason: Some("not now".into()),
    };
    let sent = agent.with_model("another-model").submit(
        Target::Resume(id.clone()),
        Op::Command(deny),
        Sink::none(),
    );
    assert!(matches!(sent, Ok(OpOutcome::Sent)));
    assert_eq!(until_finished(&rx), FinishReason::Completed);
    started.handle.join();
    assert!(!env.workdir.join("port.txt").exists());
    let denied = env.sessions().load(&id).unwrap();
    let result = denied
        .messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    assert!(result.text().contains("not now"), "{}", result.text());
    // The turn ended: a command finds nothing to reach.
    let late = agent.submit(
        Target::Resume(id),
        Op::Command(TurnCommand::Cancel),
        Sink::none(),
    );
    assert!(matches!(late, Err(OpError::NoTurn)), "{:?}", late.err());
}

#[test]
fn one_call_ops_answer_with_typed_outcomes() {
    let env = Env::new(KEY, "");
    let srv = ScriptedServer::start(vec![Reply::text("Hello.")]).unwrap();
    let agent = env.agent(&srv);
    let (tx, rx) = channel();
    let Ok(OpOutcome::Started(started)) = agent.submit(Target::New, turn("hi"), Sink::to(tx))
    else {
        panic!("no turn started");
    };
    assert_eq!(until_finished(&rx), FinishReason::Completed);
    let id = started.handle.session_id.clone();
    started.handle.join();
    let to = || Target::Resume(id.clone());

    match agent.submit(to(), Op::SetModel("other-model".into()), Sink::none()) {
        Ok(OpOutcome::ModelSet { session_id }) => assert_eq!(session_id, id),
        other => panic!("{:?}", other.err()),
    }
    assert_eq!(env.sessions().header(&id).unwrap().model, "other-model");

    match agent.submit(to(), Op::AllowNetwork, Sink::none()) {
        Ok(OpOutcome::NetworkAllowed { session_id }) => assert_eq!(session_id, id),
        other => panic!("{:?}", other.err()),
    }
    let approved = env
        .sessions()
        .header(&id)
        .unwrap()
        .ledger
        .unwrap()
        .approved_tools;
    assert!(
        approved.iter().any(|g| g.contains("network")),
        "{approved:?}"
    );

    let queued = agent.submit(
        to(),
        Op::Queue {
            text: "then add a test".into(),
            steer: true,
        },
        Sink::none(),
    );
    match queued {
        Ok(OpOutcome::Queued {
            session_id,
            running,
            ..
        }) => {
            assert_eq!(session_id, id);
            assert!(!running, "no process runs the session now");
        }
        other => panic!("{:?}", other.err()),
    }

    // Ops that need a session say so, typed.
    let no_session = agent.submit(Target::New, Op::Compact, Sink::none());
    assert!(matches!(no_session, Err(OpError::NoSession)));
    match agent.submit(Target::New, Op::Skill(None), Sink::none()) {
        Ok(OpOutcome::Skills(s)) => assert!(s.skills.is_empty()),
        other => panic!("{:?}", other.err()),
    }
}

/// A caller's history that parts from the stored session continues in a fork, adopted under
/// the turn's own lease: while the turn runs, the fork is held and the session it came from
/// is free again and unchanged.
#[test]
fn a_parted_history_runs_in_a_fork_held_by_the_turn() {
    use neocode::runtime::agent::Lease;
    use neocode::runtime::agent::adopt::{Adopt, Incoming};

    let env = Env::new(KEY, "");
    let srv = ScriptedServer::start(vec![
        Reply::text("first"),
        Reply::tool_calls(&[("c1", "write_file", r#"{"path":"port.txt","content":"x\n"}"#)]),
        Reply::text("Left it."),
    ])
    .unwrap();
    let agent = env.agent(&srv);
    let (tx, rx) = channel();
    let Ok(OpOutcome::Started(s)) = agent.submit(Target::New, turn("one"), Sink::to(tx)) else {
        panic!("no turn started");
    };
    assert_eq!(until_finished(&rx), FinishReason::Completed);
    let id = s.handle.session_id.clone();
    s.handle.join();

    let said = |role, text: &str| Incoming {
        role,
        text: text.into(),
        tool_calls: Vec::new(),
        tool_call_id: None,
        placeholder: false,
    };
    let req = TurnRequest {
        adopt: Some(Adopt {
            messages: vec![
                said(Role::User, "one"),
                said(Role::Assistant, "an answer from elsewhere"),
                said(Role::User, "write it"),
            ],
            conversation_key: None,
        }),
        ..TurnRequest::default()
    };
    let (tx, rx) = channel();
    let Ok(OpOutcome::Started(s)) =
        agent.submit(Target::Resume(id.clone()), Op::Turn(req), Sink::to(tx))
    else {
        panic!("no turn started");
    };
    let fork = s.adopted.as_ref().and_then(|a| a.fork.clone()).unwrap();
    assert_eq!((fork.from.as_str(), fork.at), (id.as_str(), 1));
    assert_eq!(s.handle.session_id, fork.id);
    let call = loop {
        if let TurnEvent::ApprovalNeeded { call, .. } =
            rx.recv_timeout(Duration::from_secs(30)).unwrap()
        {
            break call;
        }
    };
    let data = env.sessions().data_dir().to_path_buf();
    assert!(Lease::acquire(&data, &fork.id).is_err(), "the fork is held");
    drop(Lease::acquire(&data, &id).expect("the session it came from is free"));
    let deny = TurnCommand::Deny {
        call_id: call.id,
        reason: None,
    };
    let sent = agent.submit(
        Target::Resume(fork.id.clone()),
        Op::Command(deny),
        Sink::none(),
    );
    assert!(matches!(sent, Ok(OpOutcome::Sent)));
    assert_eq!(until_finished(&rx), FinishReason::Completed);
    s.handle.join();
    let texts = |id: &str| -> Vec<String> {
        env.sessions()
            .load(id)
            .unwrap()
            .messages
            .iter()
            .map(Message::text)
            .collect()
    };
    assert_eq!(texts(&id), ["one", "first"]);
    let forked = texts(&fork.id);
    assert_eq!(forked[..3], ["one", "an answer from elsewhere", "write it"]);
}
