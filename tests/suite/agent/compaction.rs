//! Compaction keeps the whole transcript (issue 35): only what the model is sent shrinks. One
//! prompt compacted several times on a 2,048-token server (llama-cpp-python's behaviour, on
//! 127.0.0.1) loses nothing: every message stays stored, searchable, exported, shown and
//! rewindable, through the real binary.

use crate::support::agent::Env;
use crate::support::{stderr, stdout};
use neocode::session::Role;
use neocode::testkit::scripted::{LlamaLike, Reply, ScriptedServer};
use serde_json::Value;

const KEY: &str = "sk-compaction-KEY-3e1c";

/// `neocode <args>` against `srv`, which must succeed; its standard output.
fn neocode(env: &Env, srv: &ScriptedServer, args: &[&str]) -> String {
    let o = env.cmd(Some(srv), args).output().unwrap();
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    stdout(&o)
}

/// A summary request (compaction asks without tools) or a turn's.
fn kinds(srv: &ScriptedServer) -> Vec<&'static str> {
    srv.requests()
        .iter()
        .map(|r| {
            if r.json().get("tools").is_some() {
                "turn"
            } else {
                "summary"
            }
        })
        .collect()
}

#[test]
fn one_prompt_compacted_several_times_on_a_2048_token_server_loses_nothing() {
    let env = Env::new(KEY, "context_window = 2048\n");
    // Four notes, each with a word found nowhere else.
    for i in 0..4 {
        let body = format!("marker{i}kiwi\n{}", "filler words of a note. ".repeat(100));
        std::fs::write(env.workdir.join(format!("note{i}.txt")), body).unwrap();
    }
    let read = |i: usize| {
        Reply::tool_calls(&[(
            &format!("r{i}"),
            "read_file",
            &format!(r#"{{"path":"note{i}.txt"}}"#),
        )])
    };
    let mut replies = vec![read(0), read(1)];
    for i in 2..4 {
        replies.push(Reply::text(&format!("summary {i}: notes read so far")));
        replies.push(read(i));
    }
    replies.push(Reply::text("summary 4: all notes read"));
    replies.push(Reply::text("All four notes are read."));
    replies.push(Reply::text("All four notes are read."));
    replies.push(Reply::text("Nothing else."));
    let srv = ScriptedServer::start_llama_like(replies, LlamaLike { window: 2048 }).unwrap();
    neocode(
        &env,
        &srv,
        &["run", "--approve", "never-ask", "read the four notes"],
    );
    // Each read after the first overflowed the window: three compactions in one prompt.
    let summaries = kinds(&srv).iter().filter(|k| **k == "summary").count();
    assert_eq!(summaries, 3, "{:?}", kinds(&srv));
    let s = env.sessions();
    let id = s.list(&Default::default()).unwrap().items[0].id.clone();
    let stored = s.load(&id).unwrap().messages;
    let roles: Vec<Role> = stored.iter().map(|m| m.role).collect();
    use Role::{Assistant as A, System as S, Tool as T, User as U};
    assert_eq!(
        roles,
        [U, A, T, A, T, S, A, T, S, A, T, S, A],
        "nothing removed"
    );
    // What the model was last sent: the latest summary and its tail, not the first notes.
    let last = srv.requests().last().unwrap().body.clone();
    assert!(!last.contains("marker0kiwi") && last.contains("marker3kiwi"));
    assert!(last.contains("summary 4: all notes read"));

    // Searchable: every note's word is found in its tool result.
    for i in 0..4 {
        let hits = neocode(&env, &srv, &["search", &format!("marker{i}kiwi"), "--json"]);
        let hits: Value = serde_json::from_str(&hits).unwrap();
        assert_eq!(hits.as_array().map(Vec::len), Some(1), "marker{i}: {hits}");
        assert_eq!(hits[0]["seq"], [3, 5, 8, 11][i]);
    }
    // Exported whole, and shown.
    let doc: Value = serde_json::from_str(&neocode(&env, &srv, &["export", "last"])).unwrap();
    let exported = doc["messages"].as_array().unwrap();
    assert_eq!(exported.len(), 13);
    let md = neocode(&env, &srv, &["export", "last", "--format", "markdown"]);
    for i in 0..4 {
        assert!(
            md.contains(&format!("marker{i}kiwi")),
            "marker{i} in the markdown"
        );
    }
    let show: Value =
        serde_json::from_str(&neocode(&env, &srv, &["show", "last", "--json"])).unwrap();
    assert_eq!(show["message_count"], 13);

    // Rewindable across the compactions: back to a second prompt, the fork has it all.
    neocode(&env, &srv, &["run", "--continue", "anything else?"]);
    let fork = neocode(
        &env,
        &srv,
        &["rewind", &id, "--to", "14", "--conversation-only", "--yes"],
    );
    let fork_id = fork.split_whitespace().last().unwrap().to_string();
    let forked = s.load(&fork_id).unwrap();
    assert_eq!(forked.messages.len(), 13, "{fork}");
    assert!(forked.messages[2].text().contains("marker0kiwi"));
    // A fork taken before the first summary is the conversation as it was then: all of it
    // is what its model is sent, with no summary of what it never had.
    let early = s.fork(&id, Some(5)).unwrap();
    let ctx = s.load_context(&early.id).unwrap();
    assert_eq!(ctx.messages.len(), 5);
    assert_eq!(ctx.header.task_state, None);
}
