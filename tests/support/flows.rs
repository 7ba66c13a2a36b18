//! Sequences several test files repeat: a background run killed once the scripted model was
//! asked, and a plan run driven to its end.

use std::process::Child;
use std::time::{Duration, Instant};

use neocode::runtime::agent::{Agent, PlanRequest, Target, TurnEvent};
use neocode::testkit::scripted::{RecordedRequest, Reply, ScriptedServer, Stream};
use neocode::testkit::scripted_wire::{Messages, ResponsesStream};
use serde_json::Value;

use super::agent::drive;

/// Waits until `srv` has recorded `n` requests (panicking with "`what`" after 30 s), then
/// SIGKILLs `child` and reaps it.
pub(crate) fn kill_once_asked(srv: &ScriptedServer, n: usize, child: &mut Child, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while srv.request_count() < n {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: signalling our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
}

/// A model that calls `tool` with `args` (call `ids[0]`), answers `answers[0]` when that was
/// refused, then calls it again (`ids[1]`) and answers `answers[1]`.
pub(crate) fn called_twice(
    ids: [&str; 2],
    tool: &str,
    args: &str,
    answers: [&str; 2],
) -> Vec<Reply> {
    vec![
        Reply::tool_calls(&[(ids[0], tool, args)]),
        Reply::text(answers[0]),
        Reply::tool_calls(&[(ids[1], tool, args)]),
        Reply::text(answers[1]),
    ]
}

/// A reply whose first byte comes only after `delay` (longer than the test waits): the turn
/// waits on its model until it is killed or cancelled.
pub(crate) fn stalled(delay: Duration) -> Reply {
    Stream::text("never seen")
        .delays(delay, Duration::ZERO)
        .reply()
}

/// The text of the `text_delta`s among JSON `events` (bridge events, `run --json` lines).
pub(crate) fn deltas_text(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "text_delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect()
}

/// The JSON bodies of the requests `srv` recorded, in order.
pub(crate) fn bodies(srv: &ScriptedServer) -> Vec<Value> {
    srv.requests().iter().map(RecordedRequest::json).collect()
}

/// A Messages API reply saying `text` (one chunk, one output token) to a prompt of `input`
/// tokens.
pub(crate) fn messages_text(input: u64, text: &str) -> Reply {
    Messages::start(input, 0, 0)
        .text(text, 1)
        .stop("end_turn", 1)
        .reply()
}

/// A Responses API reply saying `text` (one output token) to a prompt of `input` tokens.
pub(crate) fn responses_text(input: u64, text: &str) -> Reply {
    ResponsesStream::start()
        .text(text, 1)
        .completed(input, 0, 1, 0)
        .reply()
}

/// Runs plan `req` on `target` to its end with no command sent; its session and events.
pub(crate) fn plan_run(
    agent: &Agent,
    target: Target,
    req: PlanRequest,
) -> (String, Vec<TurnEvent>) {
    let h = agent.watch_plan(target, req).unwrap();
    let evs = drive(&h, |_| None);
    let id = h.session_id.clone();
    h.join();
    (id, evs)
}
