//! Sub-agents the model starts with the `task` tool, end to end: the real provider against
//! the scripted server on 127.0.0.1, the real store, the real binary for `--list`, `agents
//! list` and resuming a child alone. Which child a scripted reply went to is read from the
//! store (each child session keeps its prompt and its answer), since children ask at once.

use std::time::Duration;

use crate::support::agent::{Env, drive, watch};
use crate::support::finish;

use neocode::runtime::agent::{FinishReason, Target, TurnCommand};
use neocode::session::{Message, Role, Status};
use neocode::testkit::scripted::{Reply, Stream};
use serde_json::{Value, json};

const KEY: &str = "sk-subagent-test-KEY-5d1a";

/// The model's reply making the calls `(id, name, args)`.
pub(super) fn calls(list: &[(&str, &str, Value)]) -> Reply {
    let owned: Vec<(String, String, String)> = list
        .iter()
        .map(|(i, n, a)| (i.to_string(), n.to_string(), a.to_string()))
        .collect();
    let refs: Vec<(&str, &str, &str)> = owned
        .iter()
        .map(|(i, n, a)| (i.as_str(), n.as_str(), a.as_str()))
        .collect();
    Reply::tool_calls(&refs)
}

/// A text reply streamed after `ms` milliseconds.
fn slow(text: &str, ms: u64) -> Reply {
    Stream::text(text)
        .delays(Duration::from_millis(ms), Duration::ZERO)
        .reply()
}

/// A parent calling `task` twice in one reply (`t1` asking `prompts[0]`, `t2` asking
/// `prompts[1]`), its children answering `answers` after `ms` each, then the replies `then`.
pub(super) fn two_children(
    prompts: [&str; 2],
    answers: [&str; 2],
    ms: u64,
    then: &[&str],
) -> Vec<Reply> {
    let mut replies = vec![
        calls(&[
            ("t1", "task", json!({ "prompt": prompts[0] })),
            ("t2", "task", json!({ "prompt": prompts[1] })),
        ]),
        slow(answers[0], ms),
        slow(answers[1], ms),
    ];
    replies.extend(then.iter().map(|t| Reply::text(t)));
    replies
}

/// The tool results the parent stored, by call id, in stored order.
/// The replies of a parent whose one child, started with `task` arguments `task`, writes
/// `out.txt`.
pub(super) fn child_writes(task: Value) -> Vec<Reply> {
    vec![
        calls(&[("t1", "task", task)]),
        calls(&[(
            "c1",
            "write_file",
            json!({"path": "out.txt", "content": "from the child\n"}),
        )]),
        Reply::text("Wrote out.txt."),
        Reply::text("The child wrote it."),
    ]
}

pub(super) fn results(env: &Env, id: &str) -> Vec<(String, String, bool)> {
    env.sessions()
        .load(id)
        .unwrap()
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| {
            (
                m.tool_call_id.clone().unwrap_or_default(),
                m.text(),
                m.is_error,
            )
        })
        .collect()
}

/// The children of `parent`, as `--list --json` shows them.
pub(super) fn listed_children(env: &Env, parent: &str) -> Vec<Value> {
    let o = env.cmd(None, &["--list", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .filter(|r| r["subagent_of"] == parent)
        .cloned()
        .collect()
}

/// The user prompt and the final answer of session `id`.
fn prompt_and_answer(env: &Env, id: &str) -> (String, String) {
    let s = env.sessions().load(id).unwrap();
    let text = |role: Role| {
        s.messages
            .iter()
            .filter(|m| m.role == role)
            .map(Message::text)
            .next_back()
            .unwrap_or_default()
    };
    (text(Role::User), text(Role::Assistant))
}

/// The child id a result names (`Sub-agent <id> ...`).
pub(super) fn child_of(result: &str) -> String {
    result
        .strip_prefix("Sub-agent ")
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no child id in {result:?}"))
        .to_string()
}

#[test]
fn two_task_calls_run_side_by_side_and_answer_in_call_order() {
    let (env, srv) = Env::new(KEY, "").with_server(two_children(
        ["Count the apples", "Count the pears"],
        ["There are 3 of them.", "There are 5 of them."],
        600,
        &["Apples and pears counted."],
    ));
    let agent = env.agent(&srv);
    let h = watch(&agent, Target::New, "Count the fruit");
    let parent = h.handle.session_id.clone();
    let evs = drive(&h, |_| None);
    assert_eq!(finish(&evs), FinishReason::Completed);
    h.join();

    // Both children asked before either answer came: they overlapped.
    let reqs = srv.requests();
    assert_eq!(reqs.len(), 4);
    let (a, b) = (reqs[1].received, reqs[2].received);
    let gap = if a > b { a - b } else { b - a };
    println!(
        "children's requests {} ms apart (each answer took 600 ms)",
        gap.as_millis()
    );
    assert!(gap < Duration::from_millis(400), "{gap:?}");
    // From the parent's call (its reply is immediate) to the first child's request: the
    // reply streamed, the call decided, the child's session created and its turn started.
    println!(
        "first child asked {} ms after the parent's request",
        (a.min(b) - reqs[0].received).as_millis()
    );

    // Results in call order, each the answer of the child that ran that call's prompt.
    let res = results(&env, &parent);
    let ids: Vec<&str> = res.iter().map(|(c, _, _)| c.as_str()).collect();
    assert_eq!(ids, ["t1", "t2"]);
    for ((_, text, is_error), prompt) in res.iter().zip(["Count the apples", "Count the pears"]) {
        assert!(!is_error, "{text}");
        let child = child_of(text);
        let (asked, answer) = prompt_and_answer(&env, &child);
        assert_eq!(asked, prompt);
        assert!(text.ends_with(&answer), "{text:?} / {answer:?}");
        let h = env.sessions().header(&child).unwrap();
        assert_eq!(h.subagent_of.as_deref(), Some(parent.as_str()));
        assert_eq!(h.status, Status::Completed);
    }
    // The parent's model saw both answers in its last request.
    let last = reqs[3].body.clone();
    assert!(last.contains("There are 3 of them.") && last.contains("There are 5 of them."));

    // `--list` marks them as sub-agents of the parent.
    let kids = listed_children(&env, &parent);
    assert_eq!(kids.len(), 2, "{kids:?}");
    let table =
        String::from_utf8_lossy(&env.cmd(None, &["--list"]).output().unwrap().stdout).into_owned();
    assert_eq!(table.matches("↳ ").count(), 2, "{table}");
    let child = kids[0]["id"].as_str().unwrap();
    let shown = String::from_utf8_lossy(&env.cmd(None, &["show", child]).output().unwrap().stdout)
        .into_owned();
    assert!(
        shown.contains("sub-agent") && shown.contains(&parent),
        "{shown}"
    );

    // The children's spending is the parent's too.
    let p = env.sessions().header(&parent).unwrap();
    let l = p.ledger.unwrap();
    assert_eq!(l.usage.turns, 4, "{l:?}");
}

#[test]
fn max_parallel_one_runs_children_one_after_the_other() {
    let (env, srv) = Env::new(KEY, "[agents]\nmax_parallel = 1\n").with_server(two_children(
        ["one", "two"],
        ["first", "second"],
        300,
        &["ok"],
    ));
    let h = watch(&env.agent(&srv), Target::New, "go");
    let evs = drive(&h, |_| None);
    assert_eq!(finish(&evs), FinishReason::Completed);
    let reqs = srv.requests();
    assert!(reqs[2].received - reqs[1].received >= Duration::from_millis(300));
}

#[test]
fn a_background_task_returns_at_once_and_task_wait_brings_its_answer() {
    // The child and the parent's next call ask at once: either may get either text.
    let (env, srv) = Env::new(KEY, "").with_server(vec![
        calls(&[(
            "t1",
            "task",
            json!({"prompt": "Long job", "background": true}),
        )]),
        slow("Text A.", 200),
        slow("Text B.", 200),
    ]);
    let agent = env.agent(&srv);
    let h = watch(&agent, Target::New, "Start it");
    let parent = h.handle.session_id.clone();
    assert_eq!(finish(&drive(&h, |_| None)), FinishReason::Completed);
    h.join();
    let res = results(&env, &parent);
    assert!(res[0].1.contains("in the background"), "{res:?}");
    let child = child_of(&res[0].1);

    // The next prompt waits for it (it may have ended already: the answer is the same).
    srv.push([
        calls(&[("w1", "task_wait", json!({"id": child}))]),
        Reply::text("It is done."),
    ]);
    let h = watch(&agent, Target::Resume(parent.clone()), "Wait for it");
    assert_eq!(finish(&drive(&h, |_| None)), FinishReason::Completed);
    h.join();
    let res = results(&env, &parent);
    assert_eq!(res.len(), 2);
    let (asked, answer) = prompt_and_answer(&env, &child);
    assert_eq!(asked, "Long job");
    assert!(answer.starts_with("Text "), "{answer}");
    assert!(res[1].1.ends_with(&answer), "{res:?}");
    assert!(!res[1].2);
    assert_eq!(
        env.sessions().header(&child).unwrap().status,
        Status::Completed
    );
    // A wait on a session that is not a child of this one is refused.
    srv.push([
        calls(&[("w2", "task_wait", json!({"id": parent}))]),
        Reply::text("ok"),
    ]);
    let h = watch(&agent, Target::Resume(parent.clone()), "Wait for yourself");
    assert_eq!(finish(&drive(&h, |_| None)), FinishReason::Completed);
    let res = results(&env, &parent);
    assert!(res[2].2 && res[2].1.contains("not a sub-agent"), "{res:?}");
}

#[test]
fn cancel_of_the_parent_cancels_its_children_each_resumable_alone() {
    let (env, srv) = Env::new(KEY, "").with_server(two_children(
        ["Slow one", "Slow two"],
        ["never read", "never read"],
        4_000,
        &[],
    ));
    let agent = env.agent(&srv);
    let h = watch(&agent, Target::New, "Do both");
    let parent = h.handle.session_id.clone();
    let commands = h.handle.commands.clone();
    let evs = std::thread::scope(|s| {
        s.spawn(|| {
            // Both children are waiting for their model: cancel the parent.
            while srv.request_count() < 3 {
                std::thread::sleep(Duration::from_millis(10));
            }
            commands.send(TurnCommand::Cancel).unwrap();
        });
        drive(&h, |_| None)
    });
    assert_eq!(finish(&evs), FinishReason::Cancelled);
    let res = results(&env, &parent);
    assert_eq!(res.len(), 2, "{res:?}");
    for (_, text, is_error) in &res {
        assert!(*is_error && text.contains("was cancelled"), "{text}");
        let child = child_of(text);
        assert_eq!(
            env.sessions().header(&child).unwrap().status,
            Status::Cancelled
        );
    }
    // One child resumed alone, by the binary: it answers its own prompt.
    let child = child_of(&res[0].1);
    srv.push([Reply::text("Resumed and done.")]);
    let o = env
        .cmd(Some(&srv), &["run", "--resume", &child])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (_, answer) = prompt_and_answer(&env, &child);
    assert_eq!(answer, "Resumed and done.");
    assert_eq!(
        env.sessions().header(&child).unwrap().status,
        Status::Completed
    );
    // The resumed child asked the model its own prompt, not the parent's conversation.
    let last = srv.requests().last().unwrap().body.clone();
    assert!(
        last.contains("Slow one") && !last.contains("Do both"),
        "{last}"
    );
}

/// The tool names a recorded request offered.
fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|d| d["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn profiles_pick_the_childs_tools_model_and_instructions_and_untrusted_ones_are_not_used() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![
        calls(&[
            (
                "t1",
                "task",
                json!({"prompt": "Count lines", "agent": "counter"}),
            ),
            (
                "t2",
                "task",
                json!({"prompt": "Review it", "agent": "reviewer"}),
            ),
        ]),
        calls(&[("c1", "run_command", json!({"command": "wc -l *"}))]),
        Reply::text("12 lines."),
        Reply::text("Done."),
    ]);
    let home_agents = env.home.join("agents");
    std::fs::create_dir_all(&home_agents).unwrap();
    std::fs::write(
        home_agents.join("counter.md"),
        "---\nname: counter\ndescription: Counts things in files.\ntools: read_file, grep\nmodel: small-model\napproval: ask\n---\nCOUNTER-INSTRUCTIONS: count carefully.\n",
    )
    .unwrap();
    let claude = env.workdir.join(".claude/agents");
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::write(
        claude.join("reviewer.md"),
        "---\nname: reviewer\ndescription: Reviews code.\ntools: Read, Grep, Bash\n---\nReview.\n",
    )
    .unwrap();

    listed_untrusted(&env);

    let h = watch(&env.agent(&srv), Target::New, "Count and review");
    let parent = h.handle.session_id.clone();
    assert_eq!(finish(&drive(&h, |_| None)), FinishReason::Completed);
    let reqs = srv.requests();
    // The model saw the profile in use, not the untrusted one.
    let first = reqs[0].json();
    let task = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["function"]["name"] == "task")
        .unwrap()
        .clone();
    let desc = task["function"]["description"].as_str().unwrap();
    assert!(desc.contains("counter: Counts things"), "{desc}");
    assert!(!desc.contains("reviewer"), "{desc}");
    // The untrusted profile's call fails and says what is in use.
    let res = results(&env, &parent);
    assert!(
        res[1].2 && res[1].1.contains("no agent profile named `reviewer`"),
        "{res:?}"
    );
    // The child ran on the profile's model, with its tools only and its instructions.
    let child_req = reqs[1].json();
    assert_eq!(child_req["model"], "small-model");
    assert_eq!(offered(&child_req), ["read_file", "grep"]);
    assert!(reqs[1].body.contains("COUNTER-INSTRUCTIONS"));
    assert!(!offered(&first).is_empty() && offered(&first).contains(&"task".to_string()));
    let child = child_of(&res[0].1);
    // A call of a tool outside the profile's list is refused, not run.
    let refused = results(&env, &child);
    assert!(
        refused[0].2 && refused[0].1.contains("not among this sub-agent's tools"),
        "{refused:?}"
    );
    assert_eq!(env.sessions().header(&child).unwrap().model, "small-model");

    // Trusted, the workspace's profile is used.
    let o = env.cmd(None, &["trust", "--yes"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = env
        .cmd(None, &["agents", "list", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["agents"][1]["in_use"], true, "{v}");
}

#[test]
fn a_childs_question_reaches_the_parents_front_end_and_its_profile_cannot_widen_the_policy() {
    let (env, srv) = Env::new(KEY, "").with_server(child_writes(
        json!({"prompt": "Write the file", "agent": "writer"}),
    ));
    // The profile asks for never-ask; the parent runs under `ask`: the child asks.
    let home_agents = env.home.join("agents");
    std::fs::create_dir_all(&home_agents).unwrap();
    std::fs::write(
        home_agents.join("writer.md"),
        "---\nname: writer\ndescription: Writes files.\napproval: never-ask\n---\nWrite.\n",
    )
    .unwrap();
    let agent = env.agent(&srv);
    let h = agent
        .watch(
            Target::New,
            neocode::runtime::agent::TurnRequest {
                prompt: Some("Have it written".into()),
                approval: Some(neocode::runtime::config::ApprovalPolicy::Ask),
                ..Default::default()
            },
        )
        .unwrap();
    let parent = h.handle.session_id.clone();
    use neocode::runtime::agent::TurnEvent;
    let mut asked = Vec::new();
    let evs = drive(&h, |e| match e {
        // The child's question comes tagged with the child, its summary naming it.
        TurnEvent::Subagent { event, .. } => match event.as_ref() {
            TurnEvent::ApprovalNeeded { call, summary, .. } => {
                asked.push((call.name.clone(), summary.clone()));
                Some(TurnCommand::Approve {
                    call_id: call.id.clone(),
                    always: false,
                })
            }
            _ => None,
        },
        TurnEvent::ApprovalNeeded { .. } => panic!("the parent itself asked: {e:?}"),
        _ => None,
    });
    assert_eq!(finish(&evs), FinishReason::Completed);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].0, "write_file");
    assert!(asked[0].1.starts_with("sub-agent "), "{asked:?}");
    assert!(asked[0].1.contains("(writer): "), "{asked:?}");
    // What the child did is relayed in order, tagged with its session and the task call.
    let child: Vec<(String, String, &TurnEvent)> = evs
        .iter()
        .filter_map(|e| match e {
            TurnEvent::Subagent {
                session_id,
                call_id,
                event,
                ..
            } => Some((session_id.clone(), call_id.clone(), event.as_ref())),
            _ => None,
        })
        .collect();
    assert!(
        child
            .iter()
            .all(|(id, call, _)| *id == child[0].0 && call == "t1")
    );
    assert_ne!(child[0].0, parent);
    assert!(matches!(child[0].2, TurnEvent::Started { .. }), "{child:?}");
    assert!(
        child
            .iter()
            .any(|(_, _, e)| matches!(e, TurnEvent::ToolResult { .. })),
        "{child:?}"
    );
    assert!(
        matches!(
            child.last().unwrap().2,
            TurnEvent::Finished {
                reason: FinishReason::Completed,
                ..
            }
        ),
        "{child:?}"
    );
    assert_eq!(
        std::fs::read_to_string(env.workdir.join("out.txt")).unwrap(),
        "from the child\n"
    );
    let res = results(&env, &parent);
    assert!(res[0].1.ends_with("Wrote out.txt."), "{res:?}");
}

/// `agents list` with the home's `counter` and the untrusted workspace's `reviewer`: the
/// workspace's is there, not used, and says why.
fn listed_untrusted(env: &Env) {
    let o = env
        .cmd(None, &["agents", "list", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let agents = v["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 2, "{v}");
    assert_eq!(agents[0]["name"], "counter");
    assert_eq!(agents[0]["source"], "home");
    assert_eq!(agents[0]["in_use"], true);
    assert_eq!(agents[1]["name"], "reviewer");
    assert_eq!(agents[1]["source"], "claude");
    assert_eq!(agents[1]["in_use"], false);
    assert_eq!(
        agents[1]["tools"],
        json!(["read_file", "grep", "run_command"])
    );
    assert!(
        agents[1]["note"].as_str().unwrap().contains("not trusted"),
        "{v}"
    );
    let text =
        String::from_utf8_lossy(&env.cmd(None, &["agents", "list"]).output().unwrap().stdout)
            .into_owned();
    assert!(
        text.contains("counter") && text.contains("in use"),
        "{text}"
    );
    assert!(
        text.contains("not used: the workspace is not trusted"),
        "{text}"
    );
}

#[test]
fn a_childs_budget_is_what_its_parent_has_left_and_its_spending_counts_for_the_parent() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![
        calls(&[("t1", "task", json!({"prompt": "One call only"}))]),
        Reply::text("Done in one."),
        Reply::text("never sent"),
    ]);
    let h = env
        .agent(&srv)
        .watch(
            Target::New,
            neocode::runtime::agent::TurnRequest {
                prompt: Some("Delegate".into()),
                limits: neocode::session::RuntimeLimits {
                    max_turns: Some(2),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .unwrap();
    let parent = h.handle.session_id.clone();
    let evs = drive(&h, |_| None);
    // The parent's one call and the child's one make two: the parent cannot ask again.
    match finish(&evs) {
        FinishReason::LimitReached(why) => assert!(why.starts_with("max_turns"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(srv.request_count(), 2);
    let res = results(&env, &parent);
    let child = child_of(&res[0].1);
    let c = env.sessions().header(&child).unwrap().ledger.unwrap();
    assert_eq!(c.limits.max_turns, Some(1), "{c:?}");
    assert_eq!(c.usage.turns, 1);
    let p = env.sessions().header(&parent).unwrap().ledger.unwrap();
    assert_eq!(p.usage.turns, 2, "{p:?}");
}

#[test]
fn run_json_tags_a_childs_lines_with_its_id_and_says_when_it_starts_and_ends() {
    let (env, srv) = Env::new(KEY, "").with_server(vec![
        calls(&[("t1", "task", json!({"prompt": "List the folder"}))]),
        calls(&[("c1", "list_dir", json!({"path": "."}))]),
        Reply::text("Listed."),
        Reply::text("The child listed it."),
    ]);
    let o = env
        .cmd(Some(&srv), &["run", "--json", "have it listed"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let started = lines
        .iter()
        .position(|l| l["type"] == "subagent_started")
        .unwrap_or_else(|| panic!("{lines:#?}"));
    let child = lines[started]["session_id"].as_str().unwrap().to_string();
    assert_eq!(lines[started]["call_id"], "t1");
    let call = lines
        .iter()
        .position(|l| l["type"] == "tool_call" && l["name"] == "list_dir")
        .unwrap();
    assert_eq!(
        lines[call]["subagent_id"],
        child.as_str(),
        "{}",
        lines[call]
    );
    let ended = lines
        .iter()
        .position(|l| l["type"] == "subagent_finished")
        .unwrap();
    assert_eq!(lines[ended]["reason"], "completed");
    assert_eq!(lines[ended]["session_id"], child.as_str());
    assert!(started < call && call < ended);
    // The parent's own lines carry no tag; the task call's result comes after the child ended.
    let task = lines
        .iter()
        .position(|l| l["type"] == "tool_result" && l["call_id"] == "t1")
        .unwrap();
    assert!(lines[task].get("subagent_id").is_none());
    assert!(ended < task);
    assert_eq!(lines.last().unwrap()["type"], "finish");
    assert_eq!(lines.iter().filter(|l| l["type"] == "finish").count(), 1);
}
