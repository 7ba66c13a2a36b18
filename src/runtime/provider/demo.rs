//! The demo model of `neocode demo`: an in-process provider with scripted replies, so a
//! newcomer watches a real turn without configuring anything. It never opens a socket: each
//! reply is chosen from the request (what the user typed, which tool results came back) and
//! streamed in small pieces. The tools it asks for are the real ones, run by the turn on the
//! demo workspace's files (`greet.sh`, `test.sh`, `README.md`, written by `tui::demo`), with the
//! real approvals and sandbox.
//!
//! What is scripted: the words and the choice of calls. What is real: everything the turn
//! does with them (the tool runs, the diffs, the approvals, the sandbox, the plan run, the
//! store). Stateless: the next move is read from the request alone, so a resumed session goes
//! on where it stopped.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{Value, json};

use super::contract::Provider;
use super::error::ErrorKind;
use super::error::ProviderError;
use super::request::{ChatMessage, ChatRequest, UserPart};
use super::sse::Completion;
use super::sse::StreamEvent;
use crate::runtime::cancel::CancelFlag;
use crate::session::{ToolCall, Usage};

/// The model name the demo's sessions record and the status line shows.
pub(crate) const DEMO_MODEL: &str = "demo model — scripted, no network";

/// The provider name the demo's sessions record.
pub(crate) const DEMO_PROVIDER: &str = "demo";

/// The demo model's context window in tokens (what it tells, as a server would): small, so
/// the status line's gauge visibly fills as a demo session grows.
pub(crate) const DEMO_WINDOW: u64 = 32_000;

/// Milliseconds between two streamed pieces; `NEOCODE_DEMO_PACE_MS` changes it (tests make
/// the stream slow enough to type during it, or instant).
const PACE_MS: u64 = 18;

/// The scripted demo model.
#[derive(Debug, Clone)]
pub(crate) struct DemoModel {
    pace: Duration,
}

impl Default for DemoModel {
    fn default() -> Self {
        DemoModel::new()
    }
}

impl DemoModel {
    /// The demo model at its pace (`NEOCODE_DEMO_PACE_MS`, else 18 ms a piece).
    pub(crate) fn new() -> DemoModel {
        let ms = std::env::var("NEOCODE_DEMO_PACE_MS")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(PACE_MS);
        DemoModel {
            pace: Duration::from_millis(ms),
        }
    }
}

/// One scripted answer: text, and at most one call.
#[derive(Debug, Clone, PartialEq)]
struct Move {
    text: String,
    call: Option<(&'static str, Value)>,
}

fn say(text: impl Into<String>) -> Move {
    Move {
        text: text.into(),
        call: None,
    }
}

fn call(text: impl Into<String>, name: &'static str, args: Value) -> Move {
    Move {
        text: text.into(),
        call: Some((name, args)),
    }
}

/// What the user asked for, read from their words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Intent {
    Hello,
    Plan,
    Test,
    Read(&'static str),
    Fix,
}

/// The demo workspace's files the model knows by name.
const FILES: &[&str] = &["greet.sh", "test.sh", "README.md"];

fn intent(prompt: &str) -> Intent {
    let p = prompt.to_lowercase();
    let has = |w: &str| p.split(|c: char| !c.is_alphanumeric()).any(|x| x == w);
    let file = FILES
        .iter()
        .copied()
        .find(|f| p.contains(&f.to_lowercase()));
    if has("fix") || has("bug") || has("typo") || has("repair") {
        Intent::Fix
    } else if has("plan") {
        Intent::Plan
    } else if let Some(f) = file.filter(|_| !has("run")) {
        Intent::Read(f)
    } else if has("test") || has("tests") || has("run") {
        Intent::Test
    } else if p.trim().len() < 24 && (has("hi") || has("hello") || has("hey") || has("help")) {
        Intent::Hello
    } else {
        Intent::Fix
    }
}

/// A tool result of this prompt's turn, with the call it answers.
struct Done<'a> {
    name: &'a str,
    text: &'a str,
    is_error: bool,
}

/// The last user message's text and the results that came after it, in order. With no user
/// message (a compaction summarised a prompt too big for the window), the results of all the
/// messages sent: the turn goes on from them rather than starting over.
fn since_prompt(messages: &[ChatMessage]) -> (String, Vec<Done<'_>>, Option<&str>) {
    let start = messages
        .iter()
        .rposition(|m| matches!(m, ChatMessage::User(_)))
        .unwrap_or(0);
    let prompt = match messages.get(start) {
        // Files attached with `@path` follow the typed words; only those choose the reply.
        Some(ChatMessage::User(parts)) => parts
            .iter()
            .filter_map(|p| match p {
                UserPart::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
            .split("\n\n[@")
            .next()
            .unwrap_or("")
            .to_string(),
        _ => String::new(),
    };
    // The system message just before the prompt says a plan is being drafted or a step runs.
    let context = messages[..start].iter().rev().find_map(|m| match m {
        ChatMessage::System(s) => Some(s.as_str()),
        _ => None,
    });
    let mut calls: HashMap<&str, &str> = HashMap::new();
    let mut done = Vec::new();
    for m in &messages[start..] {
        match m {
            ChatMessage::Assistant { tool_calls, .. } => {
                for c in tool_calls {
                    calls.insert(c.id.as_str(), c.name.as_str());
                }
            }
            ChatMessage::ToolResult {
                call_id,
                text,
                is_error,
            } => {
                let name = calls.get(call_id.as_str()).copied().unwrap_or("");
                done.push(Done {
                    name,
                    text,
                    is_error: *is_error,
                });
            }
            _ => {}
        }
    }
    (prompt, done, context)
}

/// The next move for this request.
fn next_move(req: &ChatRequest) -> Move {
    let (prompt, done, context) = since_prompt(&req.messages);
    let context = context.unwrap_or("");
    if context.starts_with("The user's next message is a goal to plan") {
        return draft(&prompt, &done);
    }
    if context.starts_with("You carry out one step of a plan.") {
        return step(&prompt, &done);
    }
    let Some(last) = done.last() else {
        return first(&prompt);
    };
    match intent(&prompt) {
        Intent::Read(f) => read_answer(f, last),
        Intent::Test => test_answer(last),
        Intent::Fix | Intent::Hello | Intent::Plan => fix_next(last),
    }
}

/// The first move of a prompt.
fn first(prompt: &str) -> Move {
    match intent(prompt) {
        Intent::Hello => say(HELLO),
        Intent::Plan => say(PLAN_HINT),
        Intent::Test => call(
            "I'll run the workspace's tests with `run_command` (in the sandbox: it may write only \
             inside the workspace, and has no network).",
            "run_command",
            json!({"command": "sh test.sh"}),
        ),
        Intent::Read(f) => call(format!("Reading `{f}`."), "read_file", json!({ "path": f })),
        Intent::Fix => call(
            "*(demo model: scripted replies, real tools.)*\n\nLet me look at `greet.sh` first.",
            "read_file",
            json!({"path": "greet.sh"}),
        ),
    }
}

/// The fix: read `greet.sh`, edit the typo (the diff waits for approval), run the tests.
fn fix_next(last: &Done<'_>) -> Move {
    match (last.name, last.is_error) {
        ("read_file", false) if last.text.contains("Helo,") => call(
            "Found it: the greeting says **`Helo`**. I'll change it to `Hello` with `edit_file`; \
             the diff waits for your approval (**y** to apply, **n** to decline).",
            "edit_file",
            json!({
                "path": "greet.sh",
                "old_string": "echo \"Helo, $name!\"",
                "new_string": "echo \"Hello, $name!\""
            }),
        ),
        ("read_file", false) => call(
            "`greet.sh` already says `Hello`. Running the tests to be sure.",
            "run_command",
            json!({"command": "sh test.sh"}),
        ),
        ("edit_file", false) => call(
            "Edited. Now the tests, through the sandbox:",
            "run_command",
            json!({"command": "sh test.sh"}),
        ),
        ("edit_file", true) if last.text.contains("denied") => say(
            "Understood — `greet.sh` is left as it was. Type `fix the typo` to see the edit \
             again, or `run the tests` to watch them fail.",
        ),
        ("run_command", _) => test_answer(last),
        _ => say(format!(
            "That did not go as scripted: {}\n\nType `hello` to see what the demo model can do.",
            first_line(last.text)
        )),
    }
}

/// The answer after the tests ran.
fn test_answer(last: &Done<'_>) -> Move {
    if last.name != "run_command" {
        return say(first_line(last.text));
    }
    let passed = last.text.contains("[exit code 0") && !last.text.contains("FAIL");
    if passed {
        say(format!(
            "## All tests pass\n\n```text\n{}\n```\n\n- `sh test.sh` ran in the sandbox: it may \
             write only inside the workspace and has no network\n- try `/plan make greet.sh greet politely` for a plan \
             run with two layers of steps",
            test_lines(last.text)
        ))
    } else if last.is_error || !last.text.contains("[exit code") {
        say(format!(
            "The command did not finish: {}",
            first_line(last.text)
        ))
    } else {
        say(format!(
            "## The tests fail\n\n```text\n{}\n```\n\n`greet.sh` prints `Helo` where the tests want \
             `Hello`. Type `fix the bug` and I'll edit it.",
            test_lines(last.text)
        ))
    }
}

/// The answer after reading a file the user named.
fn read_answer(file: &str, last: &Done<'_>) -> Move {
    if last.is_error {
        return say(format!(
            "I could not read `{file}`: {}",
            first_line(last.text)
        ));
    }
    let lines = last.text.lines().count();
    let what = match file {
        "greet.sh" => "the program: it prints a greeting for the name it is given",
        "test.sh" => "the tests: it runs `greet.sh` and compares what it prints",
        _ => "what the demo project is",
    };
    say(format!(
        "`{file}` ({lines} lines) is {what}.\n\nNext: `run the tests`, or `fix the bug`."
    ))
}

/// The drafting turn of `/plan`: one `update_plan` with two layers, then one line.
fn draft(goal: &str, done: &[Done<'_>]) -> Move {
    match done.last() {
        None => call(
            format!(
                "Planning: *{}*. Two steps that can run side by side, then one that needs both.",
                first_line(goal)
            ),
            "update_plan",
            json!({"steps": [
                {"id": "survey", "title": "Read greet.sh", "depends_on": []},
                {"id": "tests", "title": "Read test.sh", "depends_on": []},
                {"id": "report", "title": "Say what to change", "depends_on": ["survey", "tests"]}
            ]}),
        ),
        Some(d) if d.is_error => say(format!("The plan was refused: {}", first_line(d.text))),
        Some(_) => say("Plan stored: survey and tests first (in parallel), then report."),
    }
}

/// A step of the plan run: the two first ones read a file, the last one answers.
fn step(prompt: &str, done: &[Done<'_>]) -> Move {
    let id = prompt
        .strip_prefix("Your step: ")
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or("");
    let file = match id {
        "survey" => Some("greet.sh"),
        "tests" => Some("test.sh"),
        _ => None,
    };
    match (file, done.last()) {
        (Some(f), None) => call(format!("Reading `{f}`."), "read_file", json!({ "path": f })),
        (Some(f), Some(d)) => say(format!(
            "`{f}`: {} lines read{}.",
            d.text.lines().count(),
            if d.text.contains("Helo,") {
                "; it greets with `Helo`"
            } else {
                ""
            }
        )),
        (None, _) => say(
            "Change `Helo` to `Hello` in `greet.sh`; `sh test.sh` then passes. (A plan step's \
             answer is what the steps after it read.)",
        ),
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").chars().take(200).collect()
}

/// The test output lines of a `run_command` result (its `[...]` notes left out).
fn test_lines(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("ok") || l.starts_with("FAIL") || l.contains("passed"))
        .take(12)
        .collect();
    if lines.is_empty() {
        first_line(text)
    } else {
        lines.join("\n")
    }
}

const HELLO: &str = "# Hello from the demo model\n\nI am **scripted** and run **in process**: \
    no network, no key. The tools I call are real and act on this throwaway workspace \
    (`greet.sh`, `test.sh`, `README.md`).\n\nTry:\n\n1. `fix the bug` — `read_file`, an \
    `edit_file` whose diff waits for your approval, then `run_command` of the tests in the \
    sandbox\n2. `run the tests`\n3. `show me test.sh`\n4. `/plan make greet.sh greet politely` \
    — a plan run with two layers of steps\n\nFor a real model, quit and run `neocode` in your \
    project with `NEOCODE_BASE_URL` and `NEOCODE_MODEL` set.";

const PLAN_HINT: &str = "A plan run drafts steps first, then runs them in layers: type \
    `/plan make greet.sh greet politely` and approve the plan to watch it.";

/// Pieces of a few characters, split at spaces where possible, so the text streams like a
/// model's.
fn pieces(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in text.chars() {
        cur.push(c);
        if (c == ' ' || c == '\n') && cur.chars().count() >= 6 {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn cancelled(partial: Completion) -> ProviderError {
    ProviderError {
        kind: ErrorKind::Cancelled,
        message: "cancelled".into(),
        partial: Some(Box::new(partial)),
    }
}

fn request_chars(req: &ChatRequest) -> usize {
    let msgs: usize = req
        .messages
        .iter()
        .map(|m| match m {
            ChatMessage::System(s) => s.len(),
            ChatMessage::User(p) => p
                .iter()
                .map(|p| match p {
                    UserPart::Text(t) => t.len(),
                    _ => 1000,
                })
                .sum(),
            ChatMessage::Assistant { text, .. } => text.len(),
            ChatMessage::ToolResult { text, .. } => text.len(),
        })
        .sum();
    req.system.len() + msgs
}

impl Provider for DemoModel {
    fn name(&self) -> &str {
        DEMO_PROVIDER
    }

    fn model(&self) -> &str {
        DEMO_MODEL
    }

    fn context_window(&mut self) -> Option<u64> {
        Some(DEMO_WINDOW)
    }

    fn stream(
        &mut self,
        req: &ChatRequest,
        cancel: &CancelFlag,
        on_event: &mut dyn FnMut(StreamEvent),
    ) -> Result<Completion, ProviderError> {
        let mv = next_move(req);
        let mut out = Completion::default();
        for p in pieces(&mv.text) {
            if cancel.is_cancelled() {
                out.incomplete = true;
                return Err(cancelled(out));
            }
            std::thread::sleep(self.pace);
            out.text.push_str(&p);
            on_event(StreamEvent::Text(p));
        }
        if let Some((name, args)) = mv.call {
            out.tool_calls.push(ToolCall {
                id: format!("demo_{}_{name}", req.messages.len()),
                name: name.to_string(),
                arguments: args.to_string(),
            });
        }
        out.finish_reason = Some(if out.tool_calls.is_empty() {
            "stop".into()
        } else {
            "tool_calls".into()
        });
        out.usage = Usage {
            input_tokens: (request_chars(req) / 4) as u64,
            output_tokens: (mv.text.len() / 4 + 8) as u64,
        };
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(t: &str) -> ChatMessage {
        ChatMessage::user_text(t)
    }

    fn asked(req: &ChatRequest) -> Move {
        next_move(req)
    }

    fn with_result(mut req: ChatRequest, name: &str, args: Value, text: &str) -> ChatRequest {
        let id = format!("c{}", req.messages.len());
        req.messages.push(ChatMessage::Assistant {
            text: String::new(),
            reasoning: Vec::new(),
            tool_calls: vec![ToolCall {
                id: id.clone(),
                name: name.into(),
                arguments: args.to_string(),
            }],
        });
        req.messages.push(ChatMessage::ToolResult {
            call_id: id,
            text: text.into(),
            is_error: false,
        });
        req
    }

    /// A compaction summarised a prompt too big for the window: the turn goes on from the
    /// results it has (it never starts over, reading greet.sh again and again).
    #[test]
    fn without_its_prompt_the_turn_goes_on_from_its_results() {
        let req = with_result(
            ChatRequest::default(),
            "read_file",
            json!({"path": "greet.sh"}),
            "echo \"Helo, $name!\"",
        );
        let m = asked(&req);
        assert_eq!(m.call.as_ref().map(|c| c.0), Some("edit_file"), "{m:?}");
    }

    #[test]
    fn a_fix_reads_then_edits_then_runs_the_tests() {
        let req = ChatRequest {
            messages: vec![user("please fix the greeting")],
            ..ChatRequest::default()
        };
        let m = asked(&req);
        assert_eq!(m.call.as_ref().map(|c| c.0), Some("read_file"));
        let req = with_result(
            req,
            "read_file",
            json!({"path": "greet.sh"}),
            "echo \"Helo, $name!\"",
        );
        let m = asked(&req);
        assert_eq!(m.call.as_ref().map(|c| c.0), Some("edit_file"));
        let req = with_result(req, "edit_file", json!({}), "Edited greet.sh");
        let m = asked(&req);
        assert_eq!(m.call.as_ref().map(|c| c.0), Some("run_command"));
        let req = with_result(
            req,
            "run_command",
            json!({}),
            "ok   greet Ada\n[exit code 0, 0.1 s]\n",
        );
        let m = asked(&req);
        assert!(
            m.call.is_none() && m.text.contains("All tests pass"),
            "{m:?}"
        );
    }

    #[test]
    fn words_choose_the_reply() {
        assert_eq!(intent("hi"), Intent::Hello);
        assert_eq!(intent("run the tests"), Intent::Test);
        assert_eq!(intent("what is in README.md?"), Intent::Read("README.md"));
        assert_eq!(intent("show me test.sh"), Intent::Read("test.sh"));
        assert_eq!(intent("run test.sh"), Intent::Test);
        assert_eq!(intent("how would you plan this"), Intent::Plan);
        assert_eq!(intent("make it better"), Intent::Fix);
    }

    #[test]
    fn a_plan_has_two_layers_and_steps_read_their_file() {
        let req = ChatRequest {
            messages: vec![
                ChatMessage::System("The user's next message is a goal to plan before".into()),
                user("make it polite"),
            ],
            ..ChatRequest::default()
        };
        let m = asked(&req);
        let (name, args) = m.call.unwrap_or(("", Value::Null));
        assert_eq!(name, "update_plan");
        assert_eq!(args["steps"][2]["depends_on"], json!(["survey", "tests"]));
        let step = ChatRequest {
            messages: vec![
                ChatMessage::System("You carry out one step of a plan.\n\nGoal".into()),
                user("Your step: tests — Read test.sh"),
            ],
            ..ChatRequest::default()
        };
        assert_eq!(
            asked(&step).call.map(|c| c.1),
            Some(json!({"path": "test.sh"}))
        );
    }
}
