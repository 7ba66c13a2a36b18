//! A SIGKILL while a sub-agent runs, end to end: `neocode run` against the scripted server,
//! the parent process killed while its child waits for the model. The child stays a listed,
//! resumable session of its own; resuming the parent offers its interrupted `task` call again
//! (asked under `ask`), and the replay takes the child that call started (its answer, or the
//! child resumed) rather than starting the work over in a new one.

use std::process::Output;
use std::time::Duration;

use super::subagents::{calls, child_of, listed_children, results};
use crate::support::agent::Env;
use crate::support::flows::{kill_once_asked, stalled};
use crate::support::{stderr, stdout};

use neocode::session::{Message, Role, Status};
use neocode::testkit::scripted::{Reply, ScriptedServer};
use serde_json::json;

const KEY: &str = "sk-subagent-kill-KEY-3e9f";

/// Runs `neocode run ARGS "Count the fruit"` whose one `task` call's child waits for a model
/// that never answers, SIGKILLs it once the child asked, and returns the parent's and the
/// child's session ids.
fn killed_while_the_child_runs(env: &Env, srv: &ScriptedServer) -> (String, String) {
    let mut run = env.spawn(srv, &["run", "--approve", "never-ask", "Count the fruit"]);
    kill_once_asked(srv, 2, &mut run, "the child never asked its model");
    let sessions = env.sessions();
    let child = sessions.resolve("last").unwrap();
    let parent = sessions
        .header(&child)
        .unwrap()
        .subagent_of
        .expect("the last session written is the child");
    (parent, child)
}

/// The parent's first reply calls `task`; its child's model never answers in time.
fn server() -> ScriptedServer {
    ScriptedServer::start(vec![
        calls(&[("t1", "task", json!({"prompt": "Count the plums"}))]),
        stalled(Duration::from_secs(60)),
    ])
    .unwrap()
}

/// The last assistant answer of session `id`.
fn answer(env: &Env, id: &str) -> String {
    let s = env.sessions().load(id).unwrap();
    s.messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)
        .map(Message::text)
        .unwrap_or_default()
}

fn ok(o: &Output) {
    assert!(o.status.success(), "{}\n{}", stderr(o), stdout(o));
}

/// `neocode run --resume PARENT --approve POLICY` after the scripted model got `replies`:
/// its output (asserted successful) and how many requests the model had before.
fn resume_parent(
    env: &Env,
    srv: &ScriptedServer,
    parent: &str,
    policy: &str,
    replies: Vec<Reply>,
) -> (Output, usize) {
    srv.push(replies);
    let before = srv.request_count();
    let o = env
        .cmd(Some(srv), &["run", "--resume", parent, "--approve", policy])
        .output()
        .unwrap();
    ok(&o);
    (o, before)
}

#[test]
fn a_killed_parents_child_is_listed_resumable_alone_and_its_answer_ends_the_replayed_call() {
    let env = Env::new(KEY, "");
    let srv = server();
    let (parent, child) = killed_while_the_child_runs(&env, &srv);

    // The child is listed as the parent's sub-agent, in JSON and in the table (under it).
    let listed = listed_children(&env, &parent);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["id"], child.as_str());
    let table = stdout(&env.cmd(None, &["--list"]).output().unwrap());
    let row = table.lines().find(|l| l.starts_with(&child[..8])).unwrap();
    assert!(row.contains("↳ Count the plums"), "{table}");

    // Resumed alone, the child answers its own prompt and is completed.
    srv.push([Reply::text("There are 7 plums.")]);
    ok(&env
        .cmd(Some(&srv), &["run", "--resume", &child])
        .output()
        .unwrap());
    assert_eq!(answer(&env, &child), "There are 7 plums.");
    assert_eq!(
        env.sessions().header(&child).unwrap().status,
        Status::Completed
    );
    let asked = srv.requests().last().unwrap().body.clone();
    assert!(asked.contains("Count the plums") && !asked.contains("Count the fruit"));

    // The parent's interrupted call is offered again; its child already answered, so the
    // replay returns that answer and the model is asked only for the parent's last reply.
    let (o, before) = resume_parent(
        &env,
        &srv,
        &parent,
        "never-ask",
        vec![Reply::text("Seven plums, counted.")],
    );
    assert!(stderr(&o).contains("offered again"), "{}", stderr(&o));
    assert_eq!(srv.request_count(), before + 1);
    let res = results(&env, &parent);
    assert_eq!(res.len(), 1, "{res:?}");
    let (call, text, is_error) = &res[0];
    assert_eq!(call, "t1");
    assert!(!is_error, "{text}");
    assert_eq!(child_of(text), child);
    assert!(text.ends_with("There are 7 plums."), "{text}");
    assert_eq!(answer(&env, &parent), "Seven plums, counted.");
    assert_eq!(
        env.sessions().header(&parent).unwrap().status,
        Status::Completed
    );
    assert_eq!(listed_children(&env, &parent).len(), 1, "no second child");
}

#[test]
fn continuing_a_killed_parent_resumes_its_unfinished_child_instead_of_starting_another() {
    let env = Env::new(KEY, "");
    let srv = server();
    let (parent, child) = killed_while_the_child_runs(&env, &srv);

    resume_parent(
        &env,
        &srv,
        &parent,
        "never-ask",
        vec![
            Reply::text("There are 7 plums."),
            Reply::text("Seven plums, counted."),
        ],
    );
    let children = listed_children(&env, &parent);
    assert_eq!(children.len(), 1, "{children:?}");
    assert_eq!(children[0]["id"], child.as_str());
    assert_eq!(answer(&env, &child), "There are 7 plums.");
    assert_eq!(
        env.sessions().header(&child).unwrap().status,
        Status::Completed
    );
    // The resumed child asked with its own conversation, its prompt once.
    let reqs = srv.requests();
    let resumed = reqs[reqs.len() - 2].body.clone();
    assert_eq!(resumed.matches("Count the plums").count(), 1, "{resumed}");
    let res = results(&env, &parent);
    assert_eq!(res.len(), 1, "{res:?}");
    assert_eq!(child_of(&res[0].1), child);
    assert!(res[0].1.ends_with("There are 7 plums."), "{}", res[0].1);
    assert_eq!(answer(&env, &parent), "Seven plums, counted.");
}

#[test]
fn under_ask_the_replayed_task_call_is_asked_again_and_without_a_terminal_denied() {
    let env = Env::new(KEY, "");
    let srv = server();
    let (parent, child) = killed_while_the_child_runs(&env, &srv);

    let (o, before) = resume_parent(
        &env,
        &srv,
        &parent,
        "ask",
        vec![Reply::text("I will not count them, then.")],
    );
    let err = stderr(&o);
    assert!(
        err.contains("replay of a call interrupted by a crash")
            && err.contains("rerun with --approve never-ask"),
        "{err}"
    );
    // Denied: no child ran (the one request is the parent's reply to the denial).
    assert_eq!(srv.request_count(), before + 1);
    let res = results(&env, &parent);
    assert!(res[0].2 && res[0].1.contains("denied"), "{:?}", res[0]);
    assert_ne!(
        env.sessions().header(&child).unwrap().status,
        Status::Completed
    );
}
