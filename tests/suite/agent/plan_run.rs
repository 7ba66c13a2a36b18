//! Plan runs end to end: the real provider against the scripted server on 127.0.0.1, the real
//! store, the real binary for the crash case. What ran is read from the recorded requests (the
//! step a request was for is named in its prompt) and from the store.

use crate::support::Succeeds;
use crate::support::agent::{Env, drive};
use crate::support::flows::{kill_once_asked, plan_run, stalled};
use crate::support::process::assert_usage_error;
use crate::support::text::has;
use crate::support::{finish, steps_requested};

use std::path::PathBuf;
use std::time::{Duration, Instant};

use neocode::runtime::agent::{
    Agent, FinishReason, PlanRequest, Target, TurnCommand, TurnEvent, Watched,
};
use neocode::runtime::config::{Overrides, Settings};
use neocode::session::{Role, RuntimeLimits, Status, StepFailure, StepStatus, StepUpdate};
use neocode::testkit::scripted::{Reply, ScriptedServer, Stream};
use serde_json::{Value, json};

const KEY: &str = "sk-plan-test-KEY-31c7e0";

/// The diamond: a; then b, c, d (each after a); then e (after b, c and d).
fn diamond() -> Value {
    json!({"steps": [
        {"id": "a", "title": "Survey the code"},
        {"id": "b", "title": "Write the parser", "depends_on": ["a"]},
        {"id": "c", "title": "Write the printer", "depends_on": ["a"]},
        {"id": "d", "title": "Write the docs", "depends_on": ["a"]},
        {"id": "e", "title": "Check it all", "depends_on": ["b", "c", "d"]},
    ]})
}

/// The drafting replies: `update_plan` with `plan`, then a one-line answer.
/// The model's reply calling tool `name` as `id` with `args`.
fn call(id: &str, name: &str, args: &Value) -> Reply {
    Reply::tool_calls(&[(id, name, &args.to_string())])
}

/// A plan run for `goal` that waits for the user to approve the plan it proposes.
fn proposed(agent: &Agent, goal: &str) -> Watched {
    agent
        .watch_plan(
            Target::New,
            PlanRequest {
                goal: Some(goal.into()),
                ..PlanRequest::default()
            },
        )
        .unwrap()
}

/// Asserts that the run stopped at the limit whose reason starts with `limit`.
#[track_caller]
fn limit_reached(evs: &[TurnEvent], limit: &str) {
    match finish(evs) {
        FinishReason::LimitReached(why) => assert!(why.starts_with(limit), "{why}"),
        other => panic!("{other:?}"),
    }
}

/// A server that answers with `texts` in order.
fn texts_server(texts: &[&str]) -> ScriptedServer {
    ScriptedServer::start(texts.iter().map(|t| Reply::text(t)).collect()).unwrap()
}

/// The diamond drafted, then its steps answered with `texts` in order.
fn diamond_answering(texts: &[&str]) -> (Env, ScriptedServer) {
    let (env, srv) = Env::new(KEY, "").with_server(draft(&diamond()));
    srv.push(texts.iter().map(|t| Reply::text(t)));
    (env, srv)
}

fn draft(plan: &Value) -> Vec<Reply> {
    vec![call("p1", "update_plan", plan), Reply::text("Plan stored.")]
}

fn goal(g: &str) -> PlanRequest {
    PlanRequest {
        goal: Some(g.into()),
        approved: true,
        ..PlanRequest::default()
    }
}

/// How many conversations (attempts) a plan run kept for one step.
fn attempts(sessions: &neocode::runtime::Sessions, plan_session: &str, step: &str) -> usize {
    sessions
        .step_conversations(plan_session)
        .unwrap()
        .into_iter()
        .filter(|c| c.step_id == step)
        .count()
}

fn started(evs: &[TurnEvent]) -> Vec<String> {
    evs.iter()
        .filter_map(|e| match e {
            TurnEvent::StepStarted { step_id, .. } => Some(step_id.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_diamond_runs_layer_by_layer_and_each_step_sees_what_it_depends_on() {
    let env = Env::new(KEY, "");
    let mut script = draft(&diamond());
    for s in ["a", "b", "c", "d", "e"] {
        script.push(Reply::text(&format!("RESULT-{s}: done")));
    }
    let srv = ScriptedServer::start(script).unwrap();
    let agent = env.agent(&srv);
    let (id, evs) = plan_run(&agent, Target::New, goal("make a pretty printer"));
    assert_eq!(finish(&evs), FinishReason::Completed, "{evs:#?}");
    assert_eq!(started(&evs), ["a", "b", "c", "d", "e"]);
    // Two drafting requests, then one per step, in layer order.
    assert_eq!(srv.request_count(), 7);
    assert_eq!(steps_requested(&srv), ["a", "b", "c", "d", "e"]);
    let reqs = srv.requests();
    let prompt_of = |i: usize| {
        reqs[i].json()["messages"][1]["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(prompt_of(2).contains("Goal of the plan: make a pretty printer"));
    // e sees the results of b, c and d (and not of a, which it does not depend on directly).
    let e = prompt_of(6);
    for dep in ["b", "c", "d"] {
        assert!(e.contains(&format!("### {dep}\nRESULT-{dep}: done")), "{e}");
    }
    assert!(!e.contains("### a\n"), "{e}");

    let sessions = env.sessions();
    let s = sessions.load(&id).unwrap();
    assert_eq!(s.header.status, Status::Completed);
    // Lists and filters show the goal, not the drafting instructions.
    assert_eq!(s.header.title, "make a pretty printer");
    assert_eq!(
        sessions.summary(&id).unwrap().first_prompt,
        "make a pretty printer"
    );
    for st in ["a", "b", "c", "d", "e"] {
        assert_eq!(s.plan_progress.status(st), StepStatus::Completed, "{st}");
        assert_eq!(
            s.plan_progress.results[st]["answer"],
            format!("RESULT-{st}: done")
        );
    }
    // Each step's conversation is a child session linked to the plan run.
    let convs = sessions.step_conversations(&id).unwrap();
    let ids: Vec<&str> = convs.iter().map(|c| c.step_id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c", "d", "e"]);
    for c in &convs {
        assert_eq!(c.session.parent_id.as_deref(), Some(id.as_str()));
        assert_eq!(c.session.fork_seq, None);
        let child = sessions.load(&c.session.id).unwrap();
        assert_eq!(child.messages.len(), 3, "context, prompt and answer");
        assert_eq!(child.messages[0].role, Role::System);
        assert!(child.messages[0].text().contains("Goal of the plan"));
        assert!(
            child.messages[1]
                .text()
                .starts_with(&format!("Your step: {}", c.step_id))
        );
        assert_eq!(
            s.plan_progress.results[&c.step_id]["session_id"],
            c.session.id.as_str()
        );
    }
    // The run's ledger counts every model call, the summary closes the transcript.
    assert_eq!(s.header.ledger.as_ref().unwrap().usage.turns, 7);
    let last = s.messages.last().unwrap();
    assert_eq!(last.role, Role::Assistant);
    assert!(
        last.text().starts_with("Plan run completed."),
        "{}",
        last.text()
    );
    assert!(last.text().contains("5 of 5 steps completed"));
}

#[test]
fn a_failing_step_skips_its_dependants_and_a_retry_on_request_clears_the_failure() {
    let (env, srv) = diamond_answering(&[
        "RESULT-a",
        "FAILED: the grammar is ambiguous",
        "RESULT-c",
        "RESULT-d",
    ]);
    let agent = env.agent(&srv);
    let (id, evs) = plan_run(&agent, Target::New, goal("parser"));
    match finish(&evs) {
        FinishReason::Failed { code, message } => {
            assert_eq!(code, "plan_failed");
            has(&message, "b (step_failed: the grammar is ambiguous)");
            assert!(message.contains("skipped: e"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // e never reached the model.
    assert_eq!(steps_requested(&srv), ["a", "b", "c", "d"]);
    let sessions = env.sessions();
    let p = sessions.plan_progress(&id).unwrap();
    assert_eq!(p.status("b"), StepStatus::Failed);
    assert_eq!(p.failures["b"].error_type, "step_failed");
    assert_eq!(p.status("e"), StepStatus::Failed);
    assert_eq!(p.failures["e"].error_type, "skipped");
    assert_eq!(p.failures["e"].message, "skipped: step b failed");
    assert_eq!(sessions.header(&id).unwrap().status, Status::Failed);
    // Each step's session carries its step's outcome (the list shows ✗ for b, ✔ for a).
    let step_session = |step: &str| {
        evs.iter()
            .find_map(|e| match e {
                TurnEvent::StepStarted {
                    step_id,
                    session_id,
                    ..
                } if step_id == step => Some(session_id.clone()),
                _ => None,
            })
            .unwrap()
    };
    assert_eq!(
        sessions.header(&step_session("b")).unwrap().status,
        Status::Failed
    );
    assert_eq!(
        sessions.header(&step_session("a")).unwrap().status,
        Status::Completed
    );
    // A step's session records what the step spent (one model call), not the run so far;
    // the run's own ledger counts every call (the drafting and the four steps').
    for step in ["a", "b", "c", "d"] {
        let l = sessions
            .header(&step_session(step))
            .unwrap()
            .ledger
            .unwrap();
        assert_eq!(l.usage.turns, 1, "step {step}");
    }
    assert!(sessions.header(&id).unwrap().ledger.unwrap().usage.turns > 4);
    let skipped: Vec<&TurnEvent> = evs
        .iter()
        .filter(|e| matches!(e, TurnEvent::StepFinished { outcome: Err(f), .. } if f.error_type == "skipped"))
        .collect();
    assert_eq!(skipped.len(), 1);

    // Resuming without asking for it does not retry the failure (nothing runs).
    let (_, evs) = plan_run(&agent, Target::Resume(id.clone()), PlanRequest::default());
    assert!(matches!(finish(&evs), FinishReason::Failed { .. }));
    assert_eq!(srv.request_count(), 6);

    // On request b runs again; its result clears the failure and e runs after it.
    srv.push([Reply::text("RESULT-b"), Reply::text("RESULT-e")]);
    let (_, evs) = plan_run(
        &agent,
        Target::Resume(id.clone()),
        PlanRequest {
            retry_failed: true,
            ..PlanRequest::default()
        },
    );
    assert_eq!(finish(&evs), FinishReason::Completed, "{evs:#?}");
    assert_eq!(started(&evs), ["b", "e"]);
    assert_eq!(srv.request_count(), 8);
    let p = sessions.plan_progress(&id).unwrap();
    assert!(p.failures.is_empty(), "{:?}", p.failures);
    assert_eq!(p.results["b"]["answer"], "RESULT-b");
    // Both attempts at b are kept as conversations.
    assert_eq!(attempts(&sessions, &id, "b"), 2);
}

#[test]
fn an_invalid_plan_is_bounced_back_to_the_model_with_the_reason() {
    let env = Env::new(KEY, "");
    let cycle = json!({"steps": [
        {"id": "a", "title": "A", "depends_on": ["b"]},
        {"id": "b", "title": "B", "depends_on": ["a"]},
    ]});
    let unknown = json!({"steps": [{"id": "a", "title": "A", "depends_on": ["ghost"]}]});
    let dup = json!({"steps": [{"id": "a", "title": "A"}, {"id": "a", "title": "again"}]});
    let good = json!({"steps": [{"id": "a", "title": "A"}, {"id": "b", "title": "B", "depends_on": ["a"]}]});
    let srv = ScriptedServer::start(vec![
        call("p1", "update_plan", &cycle),
        call("p2", "update_plan", &unknown),
        call("p3", "update_plan", &dup),
        call("p4", "update_plan", &good),
        Reply::text("Plan stored."),
        Reply::text("RESULT-a"),
        Reply::text("RESULT-b"),
    ])
    .unwrap();
    let agent = env.agent(&srv);
    let (id, evs) = plan_run(&agent, Target::New, goal("two steps"));
    assert_eq!(finish(&evs), FinishReason::Completed, "{evs:#?}");
    let reqs = srv.requests();
    let last_tool = |i: usize| -> String {
        let msgs = reqs[i].json()["messages"].as_array().unwrap().clone();
        let m = msgs.iter().rev().find(|m| m["role"] == "tool").unwrap();
        m["content"].as_str().unwrap().to_string()
    };
    has(&last_tool(1), "plan rejected: plan has a dependency cycle");
    has(&last_tool(2), "depends on unknown step 'ghost'");
    has(&last_tool(3), "two steps with id 'a'");
    assert!(last_tool(4).starts_with("Plan updated: 2 steps"));
    let proposed: Vec<&TurnEvent> = evs
        .iter()
        .filter(|e| matches!(e, TurnEvent::PlanProposed { .. }))
        .collect();
    assert_eq!(proposed.len(), 1, "only the valid plan is proposed");
    assert_eq!(steps_requested(&srv), ["a", "b"]);
    assert_eq!(
        env.sessions()
            .header(&id)
            .unwrap()
            .plan
            .unwrap()
            .steps
            .len(),
        2
    );
}

#[test]
fn the_user_drops_a_step_or_rejects_the_plan_before_anything_runs() {
    let (env, srv) = diamond_answering(&["RESULT-a", "RESULT-b", "RESULT-c", "RESULT-e"]);
    let agent = env.agent(&srv);
    let h = proposed(&agent, "printer");
    let mut proposals = Vec::new();
    let evs = drive(&h, |e| match e {
        TurnEvent::PlanProposed {
            plan,
            layers,
            approved,
        } => {
            assert!(!approved);
            proposals.push(layers.clone());
            if plan.steps.iter().any(|s| s.id == "d") {
                Some(TurnCommand::EditPlan {
                    drop: vec!["d".into()],
                })
            } else {
                Some(TurnCommand::ApprovePlan)
            }
        }
        _ => None,
    });
    let id = h.session_id.clone();
    h.join();
    assert_eq!(finish(&evs), FinishReason::Completed, "{evs:#?}");
    assert_eq!(
        proposals,
        vec![
            vec![vec!["a"], vec!["b", "c", "d"], vec!["e"]],
            vec![vec!["a"], vec!["b", "c"], vec!["e"]],
        ]
    );
    assert_eq!(steps_requested(&srv), ["a", "b", "c", "e"]);
    let plan = env.sessions().header(&id).unwrap().plan.unwrap();
    assert!(plan.steps.iter().all(|s| s.id != "d"));

    // Rejected: nothing runs, the run says so.
    let srv = ScriptedServer::start(draft(&diamond())).unwrap();
    let agent = env.agent(&srv);
    let h = proposed(&agent, "printer");
    let evs = drive(&h, |e| {
        matches!(e, TurnEvent::PlanProposed { .. }).then_some(TurnCommand::RejectPlan)
    });
    h.join();
    assert!(
        matches!(finish(&evs), FinishReason::Failed { code, .. } if code == "plan_rejected"),
        "{evs:#?}"
    );
    assert_eq!(srv.request_count(), 2, "only the drafting requests");
}

#[test]
fn steps_of_a_layer_run_together_up_to_the_width() {
    let (env, srv) = Env::new(KEY, "").with_server(draft(&diamond()));
    srv.push([Reply::text("RESULT-first")]);
    // b, c and d each take a while: with width 3 they overlap.
    for _ in 0..3 {
        srv.push([Stream::text("RESULT-middle")
            .delays(Duration::from_millis(400), Duration::ZERO)
            .reply()]);
    }
    srv.push([Reply::text("RESULT-last")]);
    let agent = env.agent(&srv);
    let t0 = Instant::now();
    let (id, evs) = plan_run(
        &agent,
        Target::New,
        PlanRequest {
            width: 3,
            ..goal("in parallel")
        },
    );
    assert_eq!(finish(&evs), FinishReason::Completed, "{evs:#?}");
    let order = steps_requested(&srv);
    assert_eq!(order[0], "a");
    assert_eq!(order[4], "e");
    let mut mid = order[1..4].to_vec();
    mid.sort();
    assert_eq!(mid, ["b", "c", "d"]);
    // All three middle steps started before any of them finished.
    let pos = |pred: &dyn Fn(&TurnEvent) -> bool| evs.iter().position(pred).unwrap();
    let last_mid_start = ["b", "c", "d"]
        .iter()
        .map(|s| pos(&|e| matches!(e, TurnEvent::StepStarted { step_id, .. } if step_id == s)))
        .max()
        .unwrap();
    let first_mid_end = ["b", "c", "d"]
        .iter()
        .map(|s| pos(&|e| matches!(e, TurnEvent::StepFinished { step_id, .. } if step_id == s)))
        .min()
        .unwrap();
    assert!(last_mid_start < first_mid_end, "{evs:#?}");
    assert!(t0.elapsed() < Duration::from_secs(20));
    let p = env.sessions().plan_progress(&id).unwrap();
    assert!(
        ["a", "b", "c", "d", "e"]
            .iter()
            .all(|s| p.status(s) == StepStatus::Completed)
    );
}

#[test]
fn a_budget_stops_the_run_inside_a_step_and_a_raised_limit_resumes_it() {
    let (env, srv) = Env::new(KEY, "").with_server(draft(&diamond()));
    srv.push([Reply::text("RESULT-a")]);
    // b reads a file and would need a second model call: the budget of 4 stops it there.
    srv.push([Reply::tool_calls(&[("r1", "list_dir", r#"{"path":"."}"#)])]);
    let agent = env.agent(&srv);
    let (id, evs) = plan_run(
        &agent,
        Target::New,
        PlanRequest {
            limits: RuntimeLimits {
                max_turns: Some(4),
                ..RuntimeLimits::default()
            },
            ..goal("budgeted")
        },
    );
    limit_reached(&evs, "max_turns");
    assert_eq!(started(&evs), ["a", "b"], "no step starts after the limit");
    let sessions = env.sessions();
    let p = sessions.plan_progress(&id).unwrap();
    assert_eq!(p.failures["b"].error_type, "limit_reached");
    assert_eq!(sessions.header(&id).unwrap().status, Status::Paused);
    let ledger = sessions.header(&id).unwrap().ledger.unwrap();
    assert_eq!(ledger.usage.turns, 4);
    // update_plan while drafting, list_dir in b.
    assert_eq!(ledger.usage.tool_calls, 2);

    // A raised limit: b runs again (it was stopped, not failed), then the rest.
    srv.push([
        Reply::text("RESULT-b"),
        Reply::text("RESULT-c"),
        Reply::text("RESULT-d"),
        Reply::text("RESULT-e"),
    ]);
    let (_, evs) = plan_run(
        &agent,
        Target::Resume(id.clone()),
        PlanRequest {
            limits: RuntimeLimits {
                max_turns: Some(20),
                ..RuntimeLimits::default()
            },
            ..PlanRequest::default()
        },
    );
    assert_eq!(finish(&evs), FinishReason::Completed, "{evs:#?}");
    assert_eq!(started(&evs), ["b", "c", "d", "e"]);
    assert_eq!(sessions.header(&id).unwrap().ledger.unwrap().usage.turns, 8);
}

/// Three steps that do not depend on each other: one layer, all in flight with width 3.
fn three_at_once() -> Value {
    json!({"steps": [
        {"id": "x", "title": "Look at x"},
        {"id": "y", "title": "Look at y"},
        {"id": "z", "title": "Look at z"},
    ]})
}

/// The plan session of the newest run (the newest session may be one of its steps).
fn newest_plan_run(env: &Env) -> String {
    let sessions = env.sessions();
    let id = sessions.resolve("last").unwrap();
    sessions.header(&id).unwrap().parent_id.unwrap_or(id)
}

/// Makes the `n` steps of a layer all start before any of them asks the model: each step's
/// `UserPromptSubmit` hook (which runs before the turn reserves its first model call) marks
/// that it started, then waits until `n` have. Without it, how many steps start before the
/// shared budget runs out depends on scheduling (a step is not started once the budget is
/// spent; one already started ends `limit_reached`). The wait gives up after a minute so a
/// regression fails the assertions instead of hanging.
fn steps_start_together(env: &Env, n: usize) -> PathBuf {
    let marks = env.home.join("steps-started");
    std::fs::create_dir_all(&marks).unwrap();
    let m = marks.display();
    let command = format!(
        "grep -q 'Your step:' || exit 0; mktemp '{m}/s.XXXXXX' >/dev/null; i=0; \
         while [ \"$(ls '{m}' | wc -l)\" -lt {n} ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; exit 0"
    );
    let hooks = json!({"hooks": {"UserPromptSubmit": [{"hooks": [
        {"type": "command", "command": command}]}]}});
    std::fs::create_dir_all(env.workdir.join(".neocode")).unwrap();
    std::fs::write(env.workdir.join(".neocode/hooks.json"), hooks.to_string()).unwrap();
    env.trust_workspace();
    marks
}

/// How many steps marked their start (see [`steps_start_together`]).
fn started_marks(marks: &std::path::Path) -> usize {
    std::fs::read_dir(marks).unwrap().count()
}

/// [`three_at_once`] drafted, its steps started together ([`steps_start_together`]), each
/// step's first answer a slow `list_dir` call: each step would read the directory, then
/// answer (two model calls a step), and the slow replies keep all three in flight together.
fn three_slow_readers() -> (Env, ScriptedServer, PathBuf) {
    let (env, srv) = Env::new(KEY, "").with_server(draft(&three_at_once()));
    let marks = steps_start_together(&env, 3);
    for _ in 0..3 {
        srv.push(
            [Stream::tool_calls(&[("r1", "list_dir", r#"{"path":"."}"#)])
                .delays(Duration::from_millis(300), Duration::ZERO)
                .reply()],
        );
    }
    (env, srv, marks)
}

#[test]
fn parallel_steps_share_the_turn_budget_and_a_larger_budget_finishes_the_run() {
    let (env, srv, marks) = three_slow_readers();
    // Two drafting calls, then room for two more: the third step's first call, and every
    // step's second call, must not be made.
    let out = env.run_plan(&srv, &["--width", "3", "--max-turns", "4", "three looks"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "paused by the budget: {stderr}");
    assert!(stderr.contains("max_turns"), "{stderr}");
    assert_eq!(
        srv.request_count(),
        4,
        "the server saw more model calls than the budget allows"
    );
    let id = newest_plan_run(&env);
    let sessions = env.sessions();
    let h = sessions.header(&id).unwrap();
    assert_eq!(h.status, Status::Paused);
    assert_eq!(h.ledger.as_ref().unwrap().usage.turns, 4);
    let p = sessions.plan_progress(&id).unwrap();
    for s in ["x", "y", "z"] {
        assert_eq!(p.status(s), StepStatus::Failed, "{s}");
        assert_eq!(p.failures[s].error_type, "limit_reached", "{s}");
    }
    // Every step's conversation ended cleanly: none is left running, each is paused.
    let convs = sessions.step_conversations(&id).unwrap();
    assert_eq!(convs.len(), 3);
    assert_eq!(
        started_marks(&marks),
        3,
        "each step's hook marked its start"
    );
    for c in &convs {
        let st = sessions.header(&c.session.id).unwrap().status;
        assert_eq!(st, Status::Paused, "step {}", c.step_id);
    }

    // A larger budget: the three stopped steps run again (answers straight away) and finish.
    let srv2 = texts_server(&["RESULT-1", "RESULT-2", "RESULT-3"]);
    let out = env
        .cmd(
            Some(&srv2),
            &["run", "--resume", &id, "--width", "3", "--max-turns", "20"],
        )
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        srv2.request_count(),
        3,
        "each stopped step runs again, once"
    );
    let mut again = steps_requested(&srv2);
    again.sort();
    assert_eq!(again, ["x", "y", "z"]);
    let p = sessions.plan_progress(&id).unwrap();
    for s in ["x", "y", "z"] {
        assert_eq!(p.status(s), StepStatus::Completed, "{s}");
    }
    let h = sessions.header(&id).unwrap();
    assert_eq!(h.status, Status::Completed);
    assert_eq!(h.ledger.unwrap().usage.turns, 7);
}

#[test]
fn parallel_steps_share_the_tool_call_budget() {
    let (env, srv, marks) = three_slow_readers();
    srv.push([Reply::text("RESULT-read"), Reply::text("spare")]);
    let agent = env.agent(&srv);
    // update_plan while drafting is one call: one is left for the three steps.
    let (id, evs) = plan_run(
        &agent,
        Target::New,
        PlanRequest {
            width: 3,
            limits: RuntimeLimits {
                max_tool_calls: Some(2),
                ..RuntimeLimits::default()
            },
            ..goal("three reads")
        },
    );
    limit_reached(&evs, "max_tool_calls");
    assert_eq!(
        started_marks(&marks),
        3,
        "each step's hook marked its start"
    );
    let sessions = env.sessions();
    assert_eq!(
        sessions
            .header(&id)
            .unwrap()
            .ledger
            .unwrap()
            .usage
            .tool_calls,
        2
    );
    // Exactly one list_dir ran; the others were answered "not run" in their step.
    let mut ran = 0;
    let mut not_run = 0;
    for c in sessions.step_conversations(&id).unwrap() {
        for m in sessions.load(&c.session.id).unwrap().messages {
            if m.role == Role::Tool {
                if m.text().starts_with("Not run: a budget was reached") {
                    not_run += 1;
                } else {
                    ran += 1;
                }
            }
        }
    }
    assert_eq!(ran, 1);
    assert!(not_run >= 2, "{not_run}");
    let p = sessions.plan_progress(&id).unwrap();
    let stopped = ["x", "y", "z"]
        .iter()
        .filter(|s| {
            p.failures
                .get(**s)
                .is_some_and(|f| f.error_type == "limit_reached")
        })
        .count();
    assert!(stopped >= 2, "{p:?}");
}

#[test]
fn step_updates_racing_from_many_writers_keep_the_merge_rules() {
    let env = Env::new(KEY, "");
    let sessions = env.sessions();
    let h = sessions
        .new_session(neocode::session::NewSession::default())
        .unwrap();
    let plan = neocode::session::Plan {
        steps: (0..4)
            .map(|i| neocode::session::Step {
                id: format!("s{i}"),
                title: format!("step {i}"),
                depends_on: vec![],
            })
            .collect(),
    };
    sessions
        .update_state(
            &h.id,
            &neocode::session::StateUpdate {
                plan: neocode::session::Change::Set(plan),
                ..Default::default()
            },
        )
        .unwrap();
    // Every writer has its own connection (as separate processes would). For each step one
    // writer stores the outcome while others keep writing `running`: rule 1 says the outcome
    // stands, whatever the interleaving.
    let mut threads = Vec::new();
    for w in 0..4 {
        let s = env.sessions();
        let id = h.id.clone();
        threads.push(std::thread::spawn(move || {
            for round in 0..30 {
                for i in 0..4 {
                    let step = format!("s{i}");
                    let u = if round == 10 && w == i {
                        if i % 2 == 0 {
                            StepUpdate::Result {
                                result: json!({"answer": format!("done by {w}")}),
                            }
                        } else {
                            StepUpdate::Error {
                                error: StepFailure {
                                    error_type: "tool_error".into(),
                                    message: format!("failed in {w}"),
                                    traceback: None,
                                },
                            }
                        }
                    } else {
                        StepUpdate::Status {
                            status: StepStatus::Running,
                        }
                    };
                    s.step_update(&id, &step, &u).unwrap();
                }
            }
        }));
    }
    for t in threads {
        t.join().unwrap();
    }
    let p = sessions.plan_progress(&h.id).unwrap();
    for i in 0..4 {
        let step = format!("s{i}");
        if i % 2 == 0 {
            assert_eq!(p.status(&step), StepStatus::Completed, "{step}");
            assert!(!p.failures.contains_key(&step));
        } else {
            assert_eq!(p.status(&step), StepStatus::Failed, "{step}");
            assert!(!p.results.contains_key(&step));
        }
    }
    let summary = sessions.summary(&h.id).unwrap();
    assert_eq!((summary.plan.done, summary.plan.failed), (2, 2));
    // Rules 2 and 3 under the same writers: a retry's result replaces the failure, a later
    // failure replaces the result.
    sessions
        .step_update(
            &h.id,
            "s1",
            &StepUpdate::Result {
                result: json!({"answer": "retried"}),
            },
        )
        .unwrap();
    sessions
        .step_update(
            &h.id,
            "s0",
            &StepUpdate::Error {
                error: StepFailure {
                    error_type: "tool_error".into(),
                    message: "broke on re-check".into(),
                    traceback: None,
                },
            },
        )
        .unwrap();
    let p = sessions.plan_progress(&h.id).unwrap();
    assert_eq!(p.status("s1"), StepStatus::Completed);
    assert!(!p.failures.contains_key("s1"));
    assert_eq!(p.status("s0"), StepStatus::Failed);
    assert!(!p.results.contains_key("s0"));
}

/// Seed 000 §5.3 with a real crash: `neocode run --plan` SIGKILLed while layer 2 runs, then
/// resumed: only the unfinished steps reach the model (counted at the server).
#[test]
fn sigkill_in_layer_two_then_resume_runs_only_the_unfinished_steps() {
    let (env, srv) = Env::new(KEY, "").with_server(draft(&diamond()));
    srv.push([
        Reply::text("RESULT-a"),
        Reply::text("RESULT-b"),
        // c hangs: the process is killed while it waits.
        stalled(Duration::from_secs(30)),
    ]);
    let mut child = env.spawn(
        &srv,
        &["run", "--plan", "--yes", "--json", "make a printer"],
    );
    kill_once_asked(&srv, 5, &mut child, "step c was never requested");
    assert_eq!(steps_requested(&srv), ["a", "b", "c"]);

    let sessions = env.sessions();
    let id = sessions.resolve("last").unwrap();
    let id = match sessions.header(&id).unwrap().parent_id {
        Some(parent) => parent,
        None => id,
    };
    let p = sessions.plan_progress(&id).unwrap();
    assert_eq!(p.status("a"), StepStatus::Completed);
    assert_eq!(p.status("b"), StepStatus::Completed);
    assert_eq!(
        p.status("c"),
        StepStatus::Running,
        "c was running when the process died"
    );
    assert_eq!(p.status("d"), StepStatus::Pending);

    let srv2 = texts_server(&["RESULT-c", "RESULT-d", "RESULT-e"]);
    let out = env
        .cmd(Some(&srv2), &["run", "--resume", &id])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("at least once"), "{stderr}");
    assert_eq!(srv2.request_count(), 3, "only c, d and e run again");
    assert_eq!(steps_requested(&srv2), ["c", "d", "e"]);
    // e still sees a's and b's stored results through its dependencies' prompts.
    let e_prompt = srv2.requests()[2].json()["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(e_prompt.contains("### b\nRESULT-b"), "{e_prompt}");
    let p = sessions.plan_progress(&id).unwrap();
    for s in ["a", "b", "c", "d", "e"] {
        assert_eq!(p.status(s), StepStatus::Completed, "{s}");
    }
    assert_eq!(sessions.header(&id).unwrap().status, Status::Completed);
    // The killed attempt at c is kept beside the one that finished.
    assert_eq!(attempts(&sessions, &id, "c"), 2);
}

#[test]
fn run_plan_without_a_terminal_asks_for_yes_and_runs_nothing() {
    let (env, srv) = Env::new(KEY, "").with_server(draft(&diamond()));
    let out = env
        .cmd(Some(&srv), &["run", "--plan", "a goal"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("Plan: 5 steps in 3 layers"), "{stderr}");
    assert!(stderr.contains("rerun with --yes"), "{stderr}");
    assert_eq!(srv.request_count(), 2);
}

/// Writes `assets/demo/08-plan-run*.json` from a real plan run against the scripted server:
/// the plan session and one file per step conversation (child sessions). Run with
/// `cargo test --test all -- --ignored generate_plan_demo`.
#[test]
#[ignore = "generator: rewrites assets/demo/08-plan-run*.json"]
#[expect(clippy::too_many_lines)]
fn generate_plan_demo() {
    let env = Env::new(KEY, "");
    std::fs::create_dir_all(env.workdir.join("src")).unwrap();
    std::fs::write(
        env.workdir.join("src/report.rs"),
        "pub fn print_report(totals: &Totals) {\n    println!(\"{} files, {} lines\", totals.files, totals.lines);\n}\n",
    )
    .unwrap();
    std::fs::write(
        env.workdir.join("README.md"),
        "# linecount\n\n## Usage\n\n    linecount report\n",
    )
    .unwrap();
    let plan = json!({"steps": [
        {"id": "survey", "title": "Find how `report` prints today"},
        {"id": "flag", "title": "Add a --json flag to `report`", "depends_on": ["survey"]},
        {"id": "docs", "title": "Document --json in the README", "depends_on": ["survey"]},
        {"id": "test", "title": "Test the JSON output", "depends_on": ["flag"]},
        {"id": "review", "title": "Review the change as a whole", "depends_on": ["flag", "docs", "test"]},
    ]});
    let read = |id: &str, p: &str| call(id, "read_file", &json!({"path": p}));
    // One line a reply, as the demo reads them (long texts and edits stay on their line).
    #[rustfmt::skip]
    let script = vec![
        read("c0", "src/report.rs"),
        call("c1", "update_plan", &plan),
        Reply::text("Plan stored: 5 steps in 4 layers; the flag and the docs can go side by side."),
        // survey
        read("c2", "src/report.rs"),
        Reply::text("`print_report` in src/report.rs prints one line with `println!`: `{files} files, {lines} lines`. `Totals` has `files` and `lines`. The flag needs a second printer; nothing else calls `print_report`."),
        // flag
        call("c3", "edit_file", &json!({
            "path": "src/report.rs",
            "old_string": "pub fn print_report(totals: &Totals) {\n",
            "new_string": "pub fn print_report(totals: &Totals, json: bool) {\n    if json {\n        println!(\"{{\\\"files\\\":{},\\\"lines\\\":{}}}\", totals.files, totals.lines);\n        return;\n    }\n",
        })),
        Reply::text("`print_report` takes `json: bool`; with it, it prints `{\"files\":N,\"lines\":M}` on one line. The CLI passes `--json` through."),
        // docs
        call("c4", "edit_file", &json!({
            "path": "README.md",
            "old_string": "    linecount report\n",
            "new_string": "    linecount report\n    linecount report --json   # {\"files\":N,\"lines\":M}\n",
        })),
        Reply::text("README's Usage shows `linecount report --json` and its output shape."),
        // test
        call("c5", "write_file", &json!({
            "path": "tests/report_json.rs",
            "content": "#[test]\nfn json_report_is_one_object() {\n    let out = linecount::render_json(&linecount::Totals { files: 2, lines: 10 });\n    assert_eq!(out, r#\"{\"files\":2,\"lines\":10}\"#);\n}\n",
        })),
        Reply::text("tests/report_json.rs checks the JSON shape for 2 files / 10 lines."),
        // review
        read("c6", "src/report.rs"),
        Reply::text("The change holds together: flag, printer, test and docs agree on `{\"files\":N,\"lines\":M}`. One follow-up: the test calls `render_json`, which `flag` did not add as a separate function; split the printer before merging."),
    ];
    // A model takes its time: each reply waits a little, so the steps' times are plausible.
    let script = script
        .into_iter()
        .enumerate()
        .map(|(i, r)| match r {
            Reply::Stream(s) => Reply::Stream(s.delays(
                Duration::from_millis(300 + 170 * (i as u64 % 5)),
                Duration::from_millis(40),
            )),
            other => other,
        })
        .collect();
    let srv = ScriptedServer::start(script).unwrap();
    let url = srv.base_url();
    let envf = move |k: &str| match k {
        "NEOCODE_BASE_URL" => Some(url.clone()),
        "NEOCODE_MODEL" => Some("gpt-4.1".to_string()),
        "NEOCODE_API_KEY" => Some(KEY.to_string()),
        _ => None,
    };
    let settings = Settings::load_with(&env.home, &Overrides::default(), &envf).unwrap();
    let agent = Agent::new(env.sessions(), settings);
    let (id, evs) = plan_run(
        &agent,
        Target::New,
        PlanRequest {
            goal: Some("Add a --json flag to `linecount report`, with a test and docs".into()),
            approved: true,
            approval: Some(neocode::runtime::config::ApprovalPolicy::NeverAsk),
            ..PlanRequest::default()
        },
    );
    assert_eq!(finish(&evs), FinishReason::Completed, "{evs:#?}");
    let sessions = env.sessions();
    let out = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets/demo");
    let ws = env.workdir.display().to_string();
    // Times move as a block between the other demo sessions (after the two oldest), so the demo's newest
    // activity (and the list's order) stays as it was; the scratch workspace's path becomes a
    // plausible one.
    let ms = |v: &Value| {
        chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap())
            .unwrap()
            .timestamp_millis()
    };
    let end =
        ms(&serde_json::to_value(sessions.export(&id).unwrap()).unwrap()["session"]["updated_at"]);
    let delta = chrono::DateTime::parse_from_rfc3339("2025-03-10T11:30:00Z")
        .unwrap()
        .timestamp_millis()
        - end;
    let shift = |v: &mut Value| {
        let t = chrono::DateTime::from_timestamp_millis(ms(v) + delta).unwrap();
        *v = Value::String(t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
    };
    let write = |name: &str, sid: &str| {
        let mut doc = serde_json::to_value(sessions.export(sid).unwrap()).unwrap();
        shift(&mut doc["session"]["created_at"]);
        shift(&mut doc["session"]["updated_at"]);
        for m in doc["messages"].as_array_mut().unwrap() {
            shift(&mut m["created_at"]);
        }
        if let Some(l) = doc["session"].get_mut("ledger") {
            for k in ["started_at_ms", "deadline_at_ms", "cancelled_at_ms"] {
                if let Some(t) = l.get(k).and_then(Value::as_i64) {
                    l[k] = json!(t + delta);
                }
            }
        }
        let text = serde_json::to_string_pretty(&doc)
            .unwrap()
            .replace(&ws, "/home/dev/linecount");
        std::fs::write(out.join(name), text + "\n").unwrap();
    };
    write("08-plan-run.json", &id);
    for c in sessions.step_conversations(&id).unwrap() {
        write(&format!("08-plan-run-{}.json", c.step_id), &c.session.id);
    }
}

#[test]
fn run_plan_json_reports_the_plan_and_every_step() {
    let env = Env::new(KEY, "");
    let two = json!({"steps": [{"id": "a", "title": "A"}, {"id": "b", "title": "B", "depends_on": ["a"]}]});
    let srv = ScriptedServer::start(draft(&two)).unwrap();
    srv.push([Reply::text("RESULT-a"), Reply::text("FAILED: no way")]);
    let out = env.run_plan(&srv, &["--json", "two steps"]);
    assert_eq!(out.status.code(), Some(1));
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |t: &str| lines.iter().filter(|v| v["type"] == t).collect::<Vec<_>>();
    let proposed = of("plan_proposed");
    assert_eq!(proposed.len(), 1);
    assert_eq!(proposed[0]["layers"], json!([["a"], ["b"]]));
    assert_eq!(proposed[0]["approved"], true);
    assert_eq!(of("step_started").len(), 2);
    let fin = of("step_finished");
    assert_eq!(fin[0]["step_id"], "a");
    assert_eq!(fin[0]["status"], "completed");
    assert_eq!(fin[0]["result"], "RESULT-a");
    assert_eq!(fin[1]["status"], "failed");
    assert_eq!(fin[1]["error_type"], "step_failed");
    // The step's own text arrives tagged with its step.
    assert!(of("text_delta").iter().any(|v| v["step_id"] == "a"));
    assert_eq!(of("finish").last().unwrap()["reason"], "failed");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--retry-failed"), "{stderr}");

    // Plan-run flags without a plan run are refused with one line.
    let out = env
        .cmd(Some(&srv), &["run", "--width", "2", "hello"])
        .output()
        .unwrap();
    assert_usage_error(&out, "apply to plan runs");
}

/// A plan step records its file changes like any turn: they are the step conversation's, shown
/// with it, and a rewind of that conversation (to its user message, #2 after the step's system
/// text) puts the files back.
#[test]
fn a_steps_file_changes_are_recorded_with_its_conversation_and_rewound() {
    let env = Env::new(KEY, "");
    std::fs::write(env.workdir.join("kept.txt"), "before\n").unwrap();
    let plan = json!({"steps": [{"id": "w", "title": "Write the files"}]});
    let mut script = draft(&plan);
    script.push(Reply::tool_calls(&[
        (
            "s1",
            "write_file",
            &json!({"path": "made.txt", "content": "new\n"}).to_string(),
        ),
        (
            "s2",
            "write_file",
            &json!({"path": "kept.txt", "content": "after\n"}).to_string(),
        ),
    ]));
    script.push(Reply::text("RESULT-w: written"));
    let srv = ScriptedServer::start(script).unwrap();
    let agent = env.agent(&srv);
    let h = agent
        .watch_plan(Target::New, goal("write two files"))
        .unwrap();
    // The step's edits wait for approval (inside its `Step` events), answered as the TUI does.
    let evs = drive(&h, |e| match e {
        TurnEvent::Step { event, .. } => match event.as_ref() {
            TurnEvent::ApprovalNeeded { call, .. } => Some(TurnCommand::Approve {
                call_id: call.id.clone(),
                always: false,
            }),
            _ => None,
        },
        _ => None,
    });
    let id = h.session_id.clone();
    h.join();
    assert_eq!(finish(&evs), FinishReason::Completed, "{evs:#?}");
    assert_eq!(
        std::fs::read_to_string(env.workdir.join("kept.txt")).unwrap(),
        "after\n"
    );
    let steps = env.sessions().step_conversations(&id).unwrap();
    let step = &steps[0].session.id;
    let out = env.cmd(None, &["show", step, "--json"]).output().unwrap();
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    let files: Vec<&str> = shown["file_changes"][0]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["made.txt", "kept.txt"], "{shown:#}");
    env.cmd(
        None,
        &["rewind", step, "--to", "2", "--files-only", "--yes"],
    )
    .succeeds();
    assert_eq!(
        std::fs::read_to_string(env.workdir.join("kept.txt")).unwrap(),
        "before\n"
    );
    assert!(!env.workdir.join("made.txt").exists());
}
