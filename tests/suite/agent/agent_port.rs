//! The one port into the agent (`Agent::submit`): a turn's sink is built with the turn's own
//! commands, turn commands reach the turn this process runs in the session, and the one-call
//! ops answer with typed outcomes. The real provider against the scripted server on
//! 127.0.0.1, real tools, the real store.

use crate::support::agent::Env;

use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use neocode::runtime::agent::{
    FinishReason, Op, OpError, OpOutcome, Sink, Target, TurnCommand, TurnEvent, TurnRequest,
};
use neocode::runtime::scripted::{Reply, ScriptedServer};
use neocode::session::Role;

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
    let env = Env::new(KEY, "");
    let srv = write_then_text();
    let agent = env.agent(&srv);
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
    let env = Env::new(KEY, "");
    let srv = write_then_text();
    let agent = env.agent(&srv);
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
