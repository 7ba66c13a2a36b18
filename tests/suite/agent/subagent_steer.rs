//! Sub-agents seen and steered from outside their parent's loop: a background child's
//! question reaches the front end while its parent does something else (and after the
//! parent's answer is in: the turn waits for it), answered through the parent's own commands;
//! one child cancelled by its own id while its sibling goes on.

use std::time::Duration;

use crate::support::agent::Env;
use crate::support::finish;

use neocode::runtime::agent::{
    FinishReason, Op, Sink, Target, TurnCommand, TurnEvent, TurnRequest, Watched,
};
use neocode::runtime::config::ApprovalPolicy;
use neocode::session::Status;
use neocode::testkit::scripted::{Reply, Stream};
use serde_json::json;

use super::subagents::{calls, child_of, results, two_children};

const KEY: &str = "sk-subagent-steer-KEY-77e0";

/// A turn under `ask`.
fn asking(env_agent: &neocode::runtime::agent::Agent, prompt: &str) -> Watched {
    env_agent
        .watch(
            Target::New,
            TurnRequest {
                prompt: Some(prompt.into()),
                approval: Some(ApprovalPolicy::Ask),
                ..Default::default()
            },
        )
        .unwrap()
}

fn next(h: &Watched) -> TurnEvent {
    h.events
        .recv_timeout(Duration::from_secs(30))
        .expect("the turn produced no event for 30 s")
}

/// Reads the turn's events until its `Finished`, each shown to `on` first.
fn run_to_end(h: &Watched, mut on: impl FnMut(&TurnEvent)) -> Vec<TurnEvent> {
    let mut evs = Vec::new();
    loop {
        let e = next(h);
        on(&e);
        let done = matches!(e, TurnEvent::Finished { .. });
        evs.push(e);
        if done {
            return evs;
        }
    }
}

fn approve(h: &Watched, call_id: &str) {
    h.commands
        .send(TurnCommand::Approve {
            call_id: call_id.to_string(),
            always: false,
        })
        .unwrap();
}

#[test]
fn a_background_childs_question_reaches_the_user_while_the_parent_works_and_the_turn_waits_for_it()
{
    let (env, srv) = Env::new(KEY, "").with_server(vec![
        // The parent: a child in the background, then a command of its own.
        calls(&[
            (
                "t1",
                "task",
                json!({"prompt": "Write the file", "background": true}),
            ),
            ("r1", "run_command", json!({"command": "echo parent"})),
        ]),
        // The child (the parent is waiting for its own answer meanwhile).
        calls(&[(
            "c1",
            "write_file",
            json!({"path": "out.txt", "content": "from the child\n"}),
        )]),
        // The parent's answer: given while the child still waits for its answer.
        Reply::text("The parent is done."),
        // The child's answer, once its write ran.
        Reply::text("Wrote out.txt."),
    ]);
    let agent = env.agent(&srv);
    let h = asking(&agent, "Work in the background");
    let parent = h.handle.session_id.clone();
    let (mut parents_question, mut childs_question) = (None, None);
    let mut warned_before_answer = false;
    let mut parent_answered = false;
    let evs = run_to_end(&h, |e| {
        match e {
            TurnEvent::ApprovalNeeded { call, .. } => parents_question = Some(call.id.clone()),
            TurnEvent::Subagent { event, .. } => {
                if let TurnEvent::ApprovalNeeded { call, summary, .. } = event.as_ref() {
                    assert!(summary.starts_with("sub-agent "), "{summary}");
                    childs_question = Some(call.id.clone());
                }
            }
            TurnEvent::Warning { code, message } if code.as_str() == "subagents_running" => {
                assert!(message.contains("1 sub-agent "), "{message}");
                // The parent's answer is in; the child still waits: answered now, through
                // the parent's commands (routed to the child that asked).
                warned_before_answer = childs_question.is_some();
                approve(&h, childs_question.as_deref().unwrap());
            }
            _ => {}
        }
        // Both questions are out at once: the parent's is answered once the child's is
        // seen (so the child's request came before the parent's next one).
        if let (Some(p), Some(_), false) = (&parents_question, &childs_question, parent_answered) {
            approve(&h, p);
            parent_answered = true;
        }
    });
    assert_eq!(finish(&evs), FinishReason::Completed);
    assert!(
        warned_before_answer,
        "no subagents_running warning: {evs:?}"
    );
    assert_eq!(
        std::fs::read_to_string(env.workdir.join("out.txt")).unwrap(),
        "from the child\n"
    );
    // The child ended before its parent did: its end is the last event before the turn's.
    let child_end = evs.iter().rposition(|e| {
        matches!(e, TurnEvent::Subagent { event, .. } if matches!(event.as_ref(), TurnEvent::Finished { .. }))
    });
    assert_eq!(child_end, Some(evs.len() - 2), "{evs:?}");
    let res = results(&env, &parent);
    assert!(res[0].1.contains("in the background"), "{res:?}");
    let child = child_of(&res[0].1);
    assert_eq!(
        env.sessions().header(&child).unwrap().status,
        Status::Completed
    );
}

#[test]
fn one_child_is_cancelled_by_its_own_id_and_its_sibling_goes_on() {
    let (env, srv) = Env::new(KEY, "").with_server(two_children(
        ["First", "Second"],
        ["An answer.", "An answer."],
        1_500,
        &["One was cancelled."],
    ));
    let agent = env.agent(&srv);
    let h = asking(&agent, "Two children");
    let parent = h.handle.session_id.clone();
    let mut cancelled = None;
    let evs = run_to_end(&h, |e| {
        if let TurnEvent::Subagent {
            session_id, event, ..
        } = e
            && matches!(event.as_ref(), TurnEvent::Started { .. })
            && cancelled.is_none()
        {
            // The first child to start is cancelled alone, by its id, as the TUI does.
            let to = Target::Resume(session_id.clone());
            agent
                .submit(to, Op::Command(TurnCommand::Cancel), Sink::none())
                .unwrap();
            cancelled = Some(session_id.clone());
        }
    });
    assert_eq!(finish(&evs), FinishReason::Completed);
    let cancelled = cancelled.unwrap();
    let res = results(&env, &parent);
    assert_eq!(res.len(), 2, "{res:?}");
    let (gone, kept): (Vec<_>, Vec<_>) = res.iter().partition(|r| r.1.contains(&cancelled));
    assert!(gone[0].2 && gone[0].1.contains("was cancelled"), "{res:?}");
    assert!(!kept[0].2 && kept[0].1.contains("An answer."), "{res:?}");
    assert_eq!(
        env.sessions().header(&cancelled).unwrap().status,
        Status::Cancelled
    );
    // A command to a child that has ended finds no turn.
    let late = agent.submit(
        Target::Resume(cancelled),
        Op::Command(TurnCommand::Cancel),
        Sink::none(),
    );
    assert!(late.is_err());
}

#[test]
fn a_child_steered_while_it_writes_its_answer_answers_the_steering_too() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![
        calls(&[("t1", "task", json!({"prompt": "Find the loader"}))]),
        // The child's first answer streams slowly: the steering message comes meanwhile.
        Stream::text("In src/config.rs.")
            .delays(Duration::from_millis(800), Duration::ZERO)
            .reply(),
        Reply::text("In src/config.rs; docs/config.md describes it."),
        Reply::text("The child found it."),
    ]);
    let agent = env.agent(&srv);
    let h = asking(&agent, "Find it with a helper");
    let parent = h.handle.session_id.clone();
    let evs = run_to_end(&h, |e| {
        if let TurnEvent::Subagent {
            session_id, event, ..
        } = e
            && matches!(event.as_ref(), TurnEvent::Started { .. })
        {
            // As the TUI's Alt-Enter in the child's view does: queued to steer the child.
            let queued = agent.submit(
                Target::Resume(session_id.clone()),
                Op::Queue {
                    text: "Also look in docs/".into(),
                    steer: true,
                },
                Sink::none(),
            );
            assert!(queued.is_ok());
        }
    });
    assert_eq!(finish(&evs), FinishReason::Completed);
    let res = results(&env, &parent);
    let child = child_of(&res[0].1);
    // The child's turn went on with the steering message: its last answer is the second.
    assert!(
        res[0]
            .1
            .ends_with("In src/config.rs; docs/config.md describes it."),
        "{res:?}"
    );
    assert!(env.sessions().queued(&child).unwrap().is_empty());
    let asked = srv.requests()[2].body.clone();
    assert!(asked.contains("Also look in docs/"), "{asked}");
    assert_eq!(srv.request_count(), 4);
}

#[test]
fn a_grandchilds_question_is_answered_through_the_parent_it_reached() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![
        calls(&[("t1", "task", json!({"prompt": "Delegate the write"}))]),
        // The child hands the work on.
        calls(&[("t2", "task", json!({"prompt": "Write the file"}))]),
        // The grandchild writes (it asks: the policy is `ask` all the way down).
        calls(&[(
            "c1",
            "write_file",
            json!({"path": "deep.txt", "content": "from the grandchild\n"}),
        )]),
        Reply::text("Grandchild wrote it."),
        Reply::text("Child: it was written."),
        Reply::text("Parent: done."),
    ]);
    let agent = env.agent(&srv);
    let h = asking(&agent, "Go deep");
    let mut asked = Vec::new();
    let evs = run_to_end(&h, |e| {
        if let TurnEvent::Subagent { event, .. } = e
            && let TurnEvent::ApprovalNeeded { call, summary, .. } = event.as_ref()
        {
            asked.push(summary.clone());
            // Answered to the parent's turn, as every front end does.
            approve(&h, &call.id);
        }
    });
    assert_eq!(finish(&evs), FinishReason::Completed);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("deep.txt"), "{asked:?}");
    assert_eq!(
        std::fs::read_to_string(env.workdir.join("deep.txt")).unwrap(),
        "from the grandchild\n"
    );
    assert_eq!(srv.request_count(), 6);
}
