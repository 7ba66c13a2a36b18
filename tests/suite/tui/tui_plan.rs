//! `/plan GOAL` in the TUI end to end: the real app on `TestBackend`, its turn effects carried
//! out by the real `TurnLink` on a real agent against the scripted server on 127.0.0.1, the
//! storage jobs run inline on the real store. The plan dialog is answered with keys; what ran is
//! read back from the store.

use crate::support::text::has;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use crate::support::agent::Env;
use crate::support::steps_requested;
use crate::support::tui::{Keys, agent_info, resumed};
use crate::support::tui_flows::user_says;
use crossterm::event::KeyCode;
use neocode::runtime::Sessions;
use neocode::runtime::agent::{FinishReason, TurnCommand, TurnEvent};
use neocode::runtime::config::ApprovalPolicy;
use neocode::session::StepStatus;
use neocode::testkit::scripted::{Reply, ScriptedServer};
use neocode::tui::app::{App, Overlay, run_inline};
use neocode::tui::effect::{Effect, TurnEffect};
use neocode::tui::views;
use neocode::tui::{Msg, TurnLink};
use serde_json::json;

const NOW: i64 = 1_748_779_200_000;

struct H {
    app: App,
    rt: Sessions,
    id: String,
    root: String,
    link: TurnLink,
    rx: Receiver<Msg>,
    /// Every turn effect the app asked for, in order.
    asked: Vec<TurnEffect>,
    /// Every turn event the app was fed, in order.
    seen: Vec<TurnEvent>,
    env: Env,
    _srv: ScriptedServer,
}

impl H {
    /// The summary of the question the live turn shows now.
    fn asking_now(&self) -> String {
        self.app
            .conv
            .live()
            .unwrap()
            .asking_now()
            .unwrap()
            .summary
            .clone()
    }

    /// Asserts that the last event seen is the run's completed `Finished`.
    #[track_caller]
    fn assert_completed(&self) {
        assert!(
            matches!(
                self.seen.last(),
                Some(TurnEvent::Finished {
                    reason: FinishReason::Completed,
                    ..
                })
            ),
            "{:#?}",
            self.seen.last()
        );
    }

    /// Asserts each step's stored status.
    #[track_caller]
    fn assert_steps(&self, want: &[(&str, StepStatus)]) {
        let p = self.rt.plan_progress(&self.id).unwrap();
        for (step, status) in want {
            assert_eq!(p.status(step), *status, "{step}: {p:?}");
        }
    }

    fn new(script: Vec<Reply>) -> H {
        let env = Env::new("sk-tui-plan-KEY", "");
        let rt = env.sessions();
        let s = crate::support::titled(&rt, "Printer work");
        user_says(&rt, &s.id, "Earlier question");
        let srv = ScriptedServer::start(script).unwrap();
        let agent = env.agent(&srv);
        let (tx, rx) = channel();
        let link = TurnLink::with_agent(tx, agent);
        let root = env.workdir.display().to_string();
        let (mut app, jobs) = resumed(&root, &env.workdir, &s.id, (100, 34), NOW);
        app.conv.set_agent(agent_info("test-model"));
        let mut h = H {
            app,
            rt,
            id: s.id,
            root,
            link,
            rx,
            asked: Vec::new(),
            seen: Vec::new(),
            env,
            _srv: srv,
        };
        h.run(jobs);
        h
    }

    /// Feeds the agent's events to the app until `done` holds after one of them.
    fn pump(&mut self, what: &str, done: impl Fn(&App, &TurnEvent) -> bool) {
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let msg = self
                .rx
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no {what} within 30 s; events: {:#?}", self.seen));
            let Msg::Turn(ev) = msg else { continue };
            self.seen.push(ev.clone());
            let effects = self.app.on_turn(ev.clone());
            self.run(effects);
            if done(&self.app, &ev) {
                return;
            }
        }
    }

    fn screen(&self) -> String {
        views::draw_to_text(&self.app).replace(&self.root, "[WORKSPACE]")
    }
}

impl Drop for H {
    fn drop(&mut self) {
        self.link.shutdown();
    }
}

/// a; then b and c (each after a).
fn replies_for_plan() -> Vec<Reply> {
    let plan = json!({"steps": [
        {"id": "a", "title": "Survey the code"},
        {"id": "b", "title": "Write the printer", "depends_on": ["a"]},
        {"id": "c", "title": "Write the docs", "depends_on": ["a"]},
    ]});
    vec![
        Reply::tool_calls(&[("p1", "update_plan", &plan.to_string())]),
        Reply::text("Plan stored."),
        Reply::text("RESULT-a: surveyed"),
        Reply::text("RESULT-b: printed"),
        Reply::text("RESULT-c: documented"),
    ]
}

fn proposed(_: &App, e: &TurnEvent) -> bool {
    matches!(e, TurnEvent::PlanProposed { .. })
}

fn step_asks(_: &App, e: &TurnEvent) -> bool {
    matches!(e, TurnEvent::Step { event, .. }
        if matches!(**event, TurnEvent::ApprovalNeeded { .. }))
}

fn finished(_: &App, e: &TurnEvent) -> bool {
    matches!(e, TurnEvent::Finished { .. })
}

/// The plan run the TUI should ask for (approvals asked, as in these tests).
fn plan_run(
    session: Option<&str>,
    goal: Option<&str>,
    width: usize,
    retry_failed: bool,
) -> TurnEffect {
    TurnEffect::Plan {
        session_id: session.map(str::to_string),
        goal: goal.map(str::to_string),
        approval: ApprovalPolicy::Ask,
        width,
        retry_failed,
    }
}

impl Keys for H {
    fn app(&mut self) -> &mut App {
        &mut self.app
    }

    /// Storage jobs inline; turn effects to the real link.
    fn run(&mut self, effects: Vec<Effect>) {
        for t in run_inline(&mut self.app, &self.rt, effects) {
            self.asked.push(t.clone());
            if let Err(why) = self.link.dispatch(&t) {
                self.app.turn_refused(&t, &why);
            }
        }
    }
}

#[test]
fn plan_goal_proposes_the_plan_in_a_dialog_and_y_runs_every_step() {
    let mut h = H::new(replies_for_plan());
    h.submit("/plan make a pretty printer");
    assert_eq!(
        h.asked.first(),
        Some(&plan_run(
            Some(&h.id),
            Some("make a pretty printer"),
            1,
            false
        ))
    );
    h.pump("plan proposal", proposed);
    assert!(matches!(h.app.overlay, Overlay::Plan(_)));
    let s = h.screen();
    assert!(s.contains("Plan · 3 steps"), "{s}");
    assert!(s.contains("Layer 1"), "{s}");
    assert!(s.contains("a  Survey the code"), "{s}");
    assert!(s.contains("Layer 2"), "{s}");
    assert!(s.contains("b  Write the printer"), "{s}");
    assert!(s.contains("c  Write the docs"), "{s}");
    assert!(
        s.contains("y run it"),
        "the keys come from the key table:\n{s}"
    );
    insta::assert_snapshot!("plan_dialog", s);

    // Other keys leave the question open: the run waits for an answer.
    h.key(KeyCode::Char('x'));
    assert!(matches!(h.app.overlay, Overlay::Plan(_)));

    h.answer('y');
    assert_eq!(
        h.asked.last(),
        Some(&TurnEffect::Command(TurnCommand::ApprovePlan))
    );
    assert!(matches!(h.app.overlay, Overlay::None));
    // The step's answer shows in the live cell like a turn's own text.
    h.pump("the first step's answer", |_, e| {
        matches!(e, TurnEvent::Step { step_id, event }
            if step_id == "a" && matches!(**event, TurnEvent::AssistantStored { .. }))
    });
    let s = h.screen();
    assert!(s.contains("▸ a · Survey the code"), "{s}");
    assert!(s.contains("RESULT-a: surveyed"), "{s}");
    h.pump(
        "first step's end",
        |_, e| matches!(e, TurnEvent::StepFinished { step_id, .. } if step_id == "a"),
    );
    let s = h.screen();
    assert!(s.contains("✓ a done"), "{s}");
    h.pump("the end of the run", finished);
    h.assert_completed();
    let s = h.screen();
    assert!(s.contains("3 of 3 steps completed."), "{s}");
    assert!(s.contains("Done in"), "{s}");

    let progress = h.rt.plan_progress(&h.id).unwrap();
    for s in ["a", "b", "c"] {
        assert_eq!(
            progress.statuses.get(s),
            Some(&StepStatus::Completed),
            "{progress:?}"
        );
    }
    assert_eq!(progress.results.len(), 3, "{progress:?}");
}

#[test]
fn d_drops_steps_and_the_plan_is_proposed_again_n_rejects_it() {
    let mut h = H::new(replies_for_plan());
    h.submit("/plan make a pretty printer");
    h.pump("plan proposal", proposed);
    h.answer('d');
    has(&h.screen(), "Drop steps (ids):");
    h.submit("c");
    assert_eq!(
        h.asked.last(),
        Some(&TurnEffect::Command(TurnCommand::EditPlan {
            drop: vec!["c".into()]
        }))
    );
    h.pump("the edited plan", proposed);
    let s = h.screen();
    assert!(s.contains("Plan · 2 steps"), "{s}");
    assert!(!s.contains("Write the docs"), "{s}");
    h.answer('n');
    assert_eq!(
        h.asked.last(),
        Some(&TurnEffect::Command(TurnCommand::RejectPlan))
    );
    h.pump("the end of the run", finished);
    assert!(
        !h.seen
            .iter()
            .any(|e| matches!(e, TurnEvent::StepStarted { .. })),
        "nothing runs after a reject: {:#?}",
        h.seen
    );
    let progress = h.rt.plan_progress(&h.id).unwrap();
    assert!(
        progress
            .statuses
            .values()
            .all(|s| *s == StepStatus::Pending),
        "{progress:?}"
    );
}

#[test]
fn a_steps_tool_call_asks_in_the_live_cell_and_y_approves_it_on_the_plan_run() {
    let plan = json!({"steps": [{"id": "a", "title": "Write the note"}]});
    let mut h = H::new(vec![
        Reply::tool_calls(&[("p1", "update_plan", &plan.to_string())]),
        Reply::text("Plan stored."),
        Reply::tool_calls(&[(
            "w1",
            "write_file",
            r#"{"path":"note.txt","content":"from step a\n"}"#,
        )]),
        Reply::text("RESULT-a: wrote note.txt"),
    ]);
    h.submit("/plan write a note");
    h.pump("plan proposal", proposed);
    h.answer('y');
    h.pump("the step's approval question", step_asks);
    let s = h.screen();
    assert!(s.contains("write_file"), "{s}");
    assert!(s.contains("Allow? y yes"), "{s}");
    assert!(
        !h.env.workdir.join("note.txt").exists(),
        "nothing is written before the answer"
    );
    h.answer('y');
    assert_eq!(
        h.asked.last(),
        Some(&TurnEffect::Command(TurnCommand::Approve {
            call_id: "w1".into(),
            always: false,
        }))
    );
    h.pump("the end of the run", finished);
    h.assert_completed();
    assert_eq!(
        std::fs::read_to_string(h.env.workdir.join("note.txt")).unwrap(),
        "from step a\n"
    );
    let progress = h.rt.plan_progress(&h.id).unwrap();
    assert_eq!(progress.statuses.get("a"), Some(&StepStatus::Completed));
}

#[test]
fn plan_in_a_new_session_being_written_starts_it_there() {
    let mut h = H::new(replies_for_plan());
    h.submit("/new");
    h.submit("/plan make a pretty printer");
    assert_eq!(
        h.asked.last(),
        Some(&plan_run(None, Some("make a pretty printer"), 1, false))
    );
    h.pump("plan proposal", proposed);
    let new_id = h.app.browse.detail.as_ref().map(|d| d.id.clone()).unwrap();
    assert_ne!(new_id, h.id);
    has(&h.screen(), "Plan · 3 steps");
    h.answer('y');
    h.pump("the end of the run", finished);
    let progress = h.rt.plan_progress(&new_id).unwrap();
    assert_eq!(
        progress
            .statuses
            .values()
            .filter(|s| **s == StepStatus::Completed)
            .count(),
        3,
        "{progress:?}"
    );
    assert!(h.rt.plan_progress(&h.id).unwrap().statuses.is_empty());
}

#[test]
fn plan_without_a_goal_and_no_plan_to_resume_says_what_it_needs() {
    let mut h = H::new(Vec::new());
    h.submit("/plan");
    assert!(h.asked.is_empty(), "{:?}", h.asked);
    let s = h.screen();
    assert!(s.contains("/plan needs a goal"), "{s}");
}

#[test]
fn plan_alone_resumes_a_cancelled_plan_run_without_asking_again() {
    let plan = json!({"steps": [
        {"id": "a", "title": "Write the note"},
        {"id": "b", "title": "Check the note", "depends_on": ["a"]},
    ]});
    let mut h = H::new(vec![
        Reply::tool_calls(&[("p1", "update_plan", &plan.to_string())]),
        Reply::text("Plan stored."),
        Reply::tool_calls(&[("w1", "write_file", r#"{"path":"note.txt","content":"x"}"#)]),
        Reply::text("RESULT-a: done"),
        Reply::text("RESULT-b: checked"),
    ]);
    h.submit("/plan write a note");
    h.pump("plan proposal", proposed);
    h.answer('y');
    h.pump("the step's approval question", step_asks);
    h.key(KeyCode::Esc);
    assert_eq!(
        h.asked.last(),
        Some(&TurnEffect::Command(TurnCommand::Cancel))
    );
    h.pump("the end of the cancelled run", finished);
    let p = h.rt.plan_progress(&h.id).unwrap();
    assert_eq!(p.status("a"), StepStatus::Failed, "{p:?}");
    assert_eq!(p.failures["a"].error_type, "cancelled");
    // The cancelled run lets go of the session once its relay ends (a person types slower).
    let until = Instant::now() + Duration::from_secs(10);
    while h.link.busy() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }

    h.submit("/plan");
    assert_eq!(h.asked.last(), Some(&plan_run(Some(&h.id), None, 1, false)));
    h.pump("the end of the resumed run", finished);
    assert!(
        matches!(h.app.overlay, Overlay::None),
        "a started run is not asked about again"
    );
    h.assert_completed();
    h.assert_steps(&[("a", StepStatus::Completed), ("b", StepStatus::Completed)]);
}

#[test]
fn plan_width_two_runs_two_independent_steps_at_once() {
    let plan = json!({"steps": [
        {"id": "a", "title": "Write the printer"},
        {"id": "b", "title": "Write the docs"},
    ]});
    // Each step's answer takes a while: with width 2 both are asked before either answers.
    let slow = |t: &str| {
        neocode::testkit::scripted::Stream::text(t)
            .delays(Duration::from_millis(800), Duration::ZERO)
            .reply()
    };
    let mut h = H::new(vec![
        Reply::tool_calls(&[("p1", "update_plan", &plan.to_string())]),
        Reply::text("Plan stored."),
        slow("RESULT-one"),
        slow("RESULT-two"),
    ]);
    h.submit("/plan --width 2 print and document");
    assert_eq!(
        h.asked.first(),
        Some(&plan_run(Some(&h.id), Some("print and document"), 2, false))
    );
    h.pump("plan proposal", proposed);
    h.answer('y');
    h.pump("the first step's end", |_, e| {
        matches!(e, TurnEvent::StepFinished { .. })
    });
    // Two drafting requests, then both steps' requests, before any step answered.
    let mut both = steps_requested(&h._srv);
    both.sort();
    assert_eq!(both, ["a", "b"], "{:#?}", h.seen);
    let s = h.screen();
    assert!(s.contains("▸ a · Write the printer"), "{s}");
    assert!(s.contains("▸ b · Write the docs"), "{s}");
    h.pump("the end of the run", finished);
    h.assert_completed();
    h.assert_steps(&[("a", StepStatus::Completed), ("b", StepStatus::Completed)]);
    assert_eq!(h._srv.request_count(), 4);
}

#[test]
fn plan_retry_failed_reruns_only_the_failed_step() {
    let mut script = replies_for_plan();
    // a, then b fails while c completes.
    script[3] = Reply::text("FAILED: no printer in sight");
    let mut h = H::new(script);
    h.submit("/plan make a pretty printer");
    h.pump("plan proposal", proposed);
    h.answer('y');
    h.pump("the end of the first run", finished);
    assert!(
        matches!(h.seen.last(), Some(TurnEvent::Finished { reason: FinishReason::Failed { code, .. }, .. }) if code == "plan_failed"),
        "{:#?}",
        h.seen
    );
    let p = h.rt.plan_progress(&h.id).unwrap();
    assert_eq!(p.status("b"), StepStatus::Failed, "{p:?}");
    assert_eq!(p.status("c"), StepStatus::Completed, "{p:?}");
    let until = Instant::now() + Duration::from_secs(10);
    while h.link.busy() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    let before = h._srv.request_count();

    h._srv.push([Reply::text("RESULT-b: printed after all")]);
    h.submit("/plan --retry-failed");
    assert_eq!(h.asked.last(), Some(&plan_run(Some(&h.id), None, 1, true)));
    h.pump("the end of the retry", finished);
    h.assert_completed();
    // Only b reached the model again.
    assert_eq!(h._srv.request_count(), before + 1);
    assert_eq!(
        steps_requested(&h._srv).last().map(String::as_str),
        Some("b")
    );
    let p = h.rt.plan_progress(&h.id).unwrap();
    for s in ["a", "b", "c"] {
        assert_eq!(p.status(s), StepStatus::Completed, "{s}: {p:?}");
    }
    assert_eq!(p.results["b"]["answer"], "RESULT-b: printed after all");
}

#[test]
fn plan_options_with_bad_values_say_why_in_one_line_and_start_nothing() {
    let mut h = H::new(Vec::new());
    for (typed, says) in [
        (
            "/plan --width 0 a goal",
            "--width must be a whole number of steps at once, at least 1 (not `0`)",
        ),
        (
            "/plan --width x a goal",
            "--width must be a whole number of steps at once, at least 1 (not `x`)",
        ),
        ("/plan --width", "/plan: --width needs a number"),
        ("/plan --fast a goal", "unknown option `--fast`"),
        ("/plan --retry-failed a goal", "leave out the goal"),
        ("/plan --retry-failed", "no unfinished plan run"),
    ] {
        h.submit(typed);
        let s = h.screen();
        assert!(s.contains(says), "{typed}: {s}");
    }
    assert!(h.asked.is_empty(), "{:?}", h.asked);
    // Tab completes an option; the command list names them.
    h.chars("/plan --w");
    h.key(KeyCode::Tab);
    assert_eq!(h.app.conv.composer().text(), "/plan --width ");
    let plan = neocode::tui::app::SLASH_COMMANDS
        .iter()
        .find(|c| c.0 == "/plan")
        .unwrap();
    assert!(plan.1.contains("--width N") && plan.1.contains("--retry-failed"));
}

#[test]
fn steps_side_by_side_asking_about_calls_with_the_same_id_get_their_own_answers() {
    let plan = json!({"steps": [
        {"id": "a", "title": "Write one"},
        {"id": "b", "title": "Write two"},
    ]});
    // Both steps' models name their call w1. The first reply is slow, so the step that gets
    // it asks second: the questions come in the other order than the steps started.
    let mut h = H::new(vec![
        Reply::tool_calls(&[("p1", "update_plan", &plan.to_string())]),
        Reply::text("Plan stored."),
        neocode::testkit::scripted::Stream::tool_calls(&[(
            "w1",
            "write_file",
            r#"{"path":"one.txt","content":"1\n"}"#,
        )])
        .delays(Duration::from_millis(500), Duration::ZERO)
        .reply(),
        Reply::tool_calls(&[("w1", "write_file", r#"{"path":"two.txt","content":"2\n"}"#)]),
        Reply::text("RESULT: done"),
        Reply::text("RESULT: done"),
    ]);
    h.submit("/plan --width 2 write two files");
    h.pump("plan proposal", proposed);
    h.answer('y');
    let asks = |app: &App, _: &TurnEvent| app.conv.live().is_some_and(|l| l.asking.len() == 2);
    h.pump("both steps' questions", asks);
    let first = h.asking_now();
    let (denied, allowed) = if first.contains("one.txt") {
        ("one.txt", "two.txt")
    } else {
        assert!(first.contains("two.txt"), "{first}");
        ("two.txt", "one.txt")
    };
    let s = h.screen();
    assert_eq!(
        s.matches("Allow? y yes").count(),
        1,
        "one question at a time:\n{s}"
    );
    // No to the question shown first, yes to the other.
    h.answer('n');
    let second = h.asking_now();
    assert!(second.contains(allowed), "{second}");
    h.answer('y');
    h.pump("the end of the run", finished);
    assert!(
        !h.env.workdir.join(denied).exists(),
        "{denied} was denied but written"
    );
    assert!(
        h.env.workdir.join(allowed).exists(),
        "{allowed} was allowed"
    );
}
