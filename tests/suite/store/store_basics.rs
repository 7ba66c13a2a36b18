//! The session store's intents against real SQLite files in temp dirs: lifecycle, list order
//! and paging, filters, transcript replacement, search, conversation keys and the runtime's
//! new-or-continue decision chain.

use crate::support::Env;
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use neocode::runtime::{Decision, SessionRequest, Sessions, dangling_tool_calls};
use neocode::session::{
    AppendMeta, ListQuery, Message, NewMessage, NewSession, Part, Replacement, Role, SNIPPET_CLOSE,
    SNIPPET_OPEN, StateUpdate, Status, Store, StoreError, ToolCall, Usage, conversation_key,
};

/// A store whose clock moves only when the test moves it (timestamps differ without sleeps).
fn open_with_clock(t: &Env) -> (Store, Clock) {
    let clock = Clock::default();
    let store = t.store().with_clock(clock.source());
    (store, clock)
}

#[derive(Clone, Default)]
struct Clock(Arc<AtomicI64>);

impl Clock {
    fn source(&self) -> neocode::session::Clock {
        let c = self.0.clone();
        Arc::new(move || 1_700_000_000_000 + c.load(Ordering::SeqCst))
    }

    fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

fn named(id: &str, title: &str) -> NewSession {
    NewSession {
        id: Some(id.to_string()),
        title: title.to_string(),
        ..NewSession::default()
    }
}

/// A transcript replaced by the one system message `text`, with `token_totals` given.
fn summary(text: &str, token_totals: (u64, u64)) -> Replacement {
    Replacement {
        messages: vec![msg(Role::System, text, 0, 0)],
        token_totals,
        ..Replacement::default()
    }
}

fn msg(role: Role, text: &str, input: u64, output: u64) -> NewMessage {
    NewMessage {
        usage: Usage {
            input_tokens: input,
            output_tokens: output,
        },
        ..NewMessage::text(role, text)
    }
}

fn meta() -> AppendMeta {
    AppendMeta {
        provider: Some("anthropic".into()),
        model: Some("claude-x".into()),
        workdir: Some("/src/app".into()),
        ..AppendMeta::default()
    }
}

fn all_ids(s: &Store, q: ListQuery) -> Vec<String> {
    s.list(&q)
        .unwrap()
        .items
        .into_iter()
        .map(|x| x.id)
        .collect()
}

#[test]
#[expect(clippy::too_many_lines)]
fn lifecycle_round_trip() {
    let t = Env::new();
    let s = t.store();

    // Create: header only.
    let h = s.create_session(named("s1", "Fix the parser")).unwrap();
    assert_eq!(h.title, "Fix the parser");
    assert_eq!((h.message_count, h.last_seq), (0, 0));
    assert_eq!(h.status, Status::Created);
    assert!(s.load_session("s1").unwrap().messages.is_empty());

    // Append: seqs, counts, tokens, provider/model/workdir, first prompt and conversation key.
    let seqs = s
        .append_messages(
            "s1",
            &[
                msg(Role::User, "why does the parser loop?", 0, 0),
                msg(Role::Assistant, "because of the lookahead", 120, 30),
            ],
            &meta(),
        )
        .unwrap();
    assert_eq!(seqs, vec![1, 2]);
    let seqs = s
        .append_messages(
            "s1",
            &[msg(Role::User, "fix it", 0, 0)],
            &AppendMeta::default(),
        )
        .unwrap();
    assert_eq!(seqs, vec![3]);
    let h = s.load_header("s1").unwrap();
    assert_eq!((h.message_count, h.last_seq), (3, 3));
    assert_eq!((h.token_input_total, h.token_output_total), (120, 30));
    assert_eq!(
        (h.provider.as_str(), h.model.as_str(), h.workdir.as_str()),
        ("anthropic", "claude-x", "/src/app"),
        "an append without meta keeps the previous provider/model/workdir"
    );
    assert_eq!(
        h.conversation_key.as_deref(),
        Some(conversation_key("why does the parser loop?").as_str())
    );
    let sum = s.summary("s1").unwrap();
    assert_eq!(sum.first_prompt, "why does the parser loop?");
    assert_eq!(sum.message_count, 3);

    // Update state: status, todos, ledger-free fields.
    s.update_state(
        "s1",
        &StateUpdate {
            status: Some(Status::Paused),
            todos: neocode::session::Change::Set(serde_json::json!(["write test"])),
            task_state: neocode::session::Change::Set(serde_json::json!({"goal": "fix parser"})),
            ..StateUpdate::default()
        },
    )
    .unwrap();
    let h = s.load_header("s1").unwrap();
    assert_eq!(h.status, Status::Paused);
    assert_eq!(h.todos, Some(serde_json::json!(["write test"])));
    assert_eq!(
        h.task_state,
        Some(serde_json::json!({"goal": "fix parser"}))
    );

    // Assets.
    let a = s
        .save_asset("s1", Some("shot1"), "image/png", b"\x89PNG fake")
        .unwrap();
    assert_eq!(a.size_bytes, 9);
    let (m, bytes) = s.open_asset("s1", "shot1").unwrap();
    assert_eq!(
        (m.mime_type.as_str(), bytes.as_slice()),
        ("image/png", &b"\x89PNG fake"[..])
    );
    assert_eq!(s.summary("s1").unwrap().asset_count, 1);

    // List and load.
    s.create_session(named("s2", "Other")).unwrap();
    assert_eq!(s.count().unwrap(), 2);
    let loaded = s.load_session("s1").unwrap();
    let texts: Vec<String> = loaded.messages.iter().map(Message::text).collect();
    assert_eq!(
        texts,
        [
            "why does the parser loop?",
            "because of the lookahead",
            "fix it"
        ]
    );
    assert_eq!(
        loaded.messages.iter().map(|m| m.seq).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    let window = s.load_messages("s1", 2, 3).unwrap();
    assert_eq!(window.iter().map(|m| m.seq).collect::<Vec<_>>(), [2, 3]);

    // Fork.
    let f = s.fork("s1", Some(2)).unwrap();
    assert_eq!(f.parent_id.as_deref(), Some("s1"));
    assert_eq!(f.fork_seq, Some(2));
    assert_eq!(s.load_session(&f.id).unwrap().messages.len(), 2);

    // Rename (not activity).
    let before = s.load_header("s1").unwrap().updated_at_ms;
    s.rename("s1", "Parser loop fixed").unwrap();
    let h = s.load_header("s1").unwrap();
    assert_eq!(h.title, "Parser loop fixed");
    assert_eq!(h.updated_at_ms, before);

    // Replace transcript.
    s.replace_transcript("s1", &summary("summary: parser fixed", (0, 0)))
        .unwrap();
    assert_eq!(s.load_session("s1").unwrap().messages.len(), 1);

    // Delete: rows and the asset folder.
    let asset_dir = s.paths().assets().join("s1");
    assert!(asset_dir.is_dir());
    s.delete("s1").unwrap();
    assert!(matches!(
        s.load_header("s1"),
        Err(StoreError::NotFound { .. })
    ));
    assert!(!asset_dir.exists());
    assert!(matches!(
        s.open_asset("s1", "shot1"),
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(s.delete("s1"), Err(StoreError::NotFound { .. })));
    assert_eq!(s.count().unwrap(), 2, "s2 and the fork remain");
    assert!(
        s.search("lookahead", 10)
            .unwrap()
            .iter()
            .all(|h| h.session_id != "s1")
    );
}

#[test]
fn reopening_the_workspace_sees_the_same_data_and_root() {
    let t = Env::new();
    let s = t.store();
    s.create_session(named("keep", "kept")).unwrap();
    s.append_messages("keep", &[msg(Role::User, "hello", 0, 0)], &meta())
        .unwrap();
    drop(s);
    let s = t.store();
    assert_eq!(s.load_session("keep").unwrap().messages.len(), 1);
    let root = std::fs::canonicalize(t.tmp.path().join("ws")).unwrap();
    assert_eq!(s.recorded_root().unwrap(), root.to_string_lossy());
}

#[test]
fn duplicate_id_is_refused_and_bad_ids_are_invalid() {
    let t = Env::new();
    let s = t.store();
    s.create_session(named("dup", "first")).unwrap();
    match s.create_session(named("dup", "second")) {
        Err(StoreError::AlreadyExists(id)) => assert_eq!(id, "dup"),
        other => panic!("expected AlreadyExists, got {other:?}"),
    }
    assert_eq!(s.load_header("dup").unwrap().title, "first");
    for bad in ["", "a/b", "../x", "has space", "ü"] {
        assert!(
            matches!(
                s.create_session(named(bad, "x")),
                Err(StoreError::InvalidId { .. })
            ),
            "id {bad:?} accepted"
        );
    }
    assert_eq!(s.count().unwrap(), 1);
}

#[test]
fn list_is_newest_activity_first_and_pages_return_every_row_once() {
    let t = Env::new();
    let (s, clock) = open_with_clock(&t);
    // 23 sessions created in the same millisecond (ties go to the later-created); activity
    // order is made explicit by appending in a known order.
    for i in 0..23 {
        s.create_session(named(&format!("s{i:02}"), &format!("title {i}")))
            .unwrap();
    }
    let order = [5, 17, 3, 22, 0];
    for i in order {
        clock.advance(3);
        s.append_messages(
            &format!("s{i:02}"),
            &[msg(Role::User, &format!("prompt {i}"), 0, 0)],
            &AppendMeta::default(),
        )
        .unwrap();
    }
    let all = s.list(&ListQuery::default()).unwrap();
    assert!(all.next.is_none());
    let ids: Vec<&str> = all.items.iter().map(|x| x.id.as_str()).collect();
    assert_eq!(&ids[..5], ["s00", "s22", "s03", "s17", "s05"]);
    for w in all.items.windows(2) {
        assert!(
            (w[0].updated_at_ms, &w[0].id) > (w[1].updated_at_ms, &w[1].id),
            "not ordered by (updated_at desc, id desc): {:?} then {:?}",
            (w[0].updated_at_ms, &w[0].id),
            (w[1].updated_at_ms, &w[1].id)
        );
    }

    for limit in [1, 4, 7, 23, 50] {
        let mut seen = Vec::new();
        let mut after = None;
        let mut pages = 0;
        loop {
            let page = s
                .list(&ListQuery {
                    limit,
                    after: after.clone(),
                    ..ListQuery::default()
                })
                .unwrap();
            assert!(page.items.len() <= limit);
            pages += 1;
            seen.extend(page.items.into_iter().map(|x| x.id));
            match page.next {
                Some(k) => after = Some(k),
                None => break,
            }
        }
        let expected: Vec<String> = ids.iter().map(ToString::to_string).collect();
        assert_eq!(seen, expected, "limit {limit}");
        assert_eq!(pages, 23usize.div_ceil(limit), "limit {limit}: pages");
    }
}

#[test]
fn list_filters_by_text_and_status() {
    let t = Env::new();
    let s = t.store();
    s.create_session(named("a1", "Refactor the Parser"))
        .unwrap();
    s.create_session(named("b2", "Write docs")).unwrap();
    s.create_session(named("c3", "")).unwrap();
    s.append_messages(
        "c3",
        &[msg(Role::User, "the parser is slow 100%_sure", 0, 0)],
        &AppendMeta::default(),
    )
    .unwrap();
    s.update_state(
        "b2",
        &StateUpdate {
            status: Some(Status::Completed),
            ..StateUpdate::default()
        },
    )
    .unwrap();
    s.update_state(
        "c3",
        &StateUpdate {
            status: Some(Status::Failed),
            ..StateUpdate::default()
        },
    )
    .unwrap();

    let text = |t: &str| {
        let mut v = all_ids(
            &s,
            ListQuery {
                text: Some(t.into()),
                ..ListQuery::default()
            },
        );
        v.sort();
        v
    };
    assert_eq!(
        text("parser"),
        ["a1", "c3"],
        "title or first prompt, any case"
    );
    assert_eq!(text("DOCS"), ["b2"]);
    assert_eq!(text("b"), ["b2"], "id prefix");
    assert_eq!(text("100%_"), ["c3"], "LIKE wildcards are literal");
    assert_eq!(text("%"), ["c3"], "only the row holding a literal %");
    assert_eq!(text("_"), ["c3"], "only the row holding a literal _");
    assert!(text("nothing like this").is_empty());

    let status = |st: &[Status]| {
        let mut v = all_ids(
            &s,
            ListQuery {
                statuses: st.to_vec(),
                ..ListQuery::default()
            },
        );
        v.sort();
        v
    };
    assert_eq!(status(&[Status::Completed]), ["b2"]);
    assert_eq!(status(&[Status::Completed, Status::Failed]), ["b2", "c3"]);
    assert_eq!(status(&[Status::Created]), ["a1"]);
    assert!(status(&[Status::Running]).is_empty());
    let both = all_ids(
        &s,
        ListQuery {
            text: Some("parser".into()),
            statuses: vec![Status::Failed],
            ..ListQuery::default()
        },
    );
    assert_eq!(both, ["c3"]);
}

#[test]
fn replace_transcript_keeps_title_restarts_seqs_resets_tokens_and_reindexes() {
    let t = Env::new();
    let s = t.store();
    s.create_session(named("c", "Keep this title")).unwrap();
    let old: Vec<NewMessage> = (0..10)
        .map(|i| msg(Role::Assistant, &format!("zebracorn number {i}"), 100, 10))
        .collect();
    s.append_messages("c", &old, &meta()).unwrap();
    assert_eq!(s.load_header("c").unwrap().token_input_total, 1000);
    assert_eq!(s.search("zebracorn", 50).unwrap().len(), 10);

    s.replace_transcript(
        "c",
        &Replacement {
            messages: vec![
                msg(Role::System, "compacted: unicornfish summary", 0, 0),
                msg(Role::User, "continue please", 0, 0),
            ],
            task_state: Some(serde_json::json!({"summary": "ten zebras"})),
            token_totals: (0, 0),
            meta: AppendMeta {
                model: Some("smaller-model".into()),
                ..AppendMeta::default()
            },
        },
    )
    .unwrap();
    let loaded = s.load_session("c").unwrap();
    let h = &loaded.header;
    assert_eq!(h.title, "Keep this title");
    assert_eq!(
        loaded.messages.iter().map(|m| m.seq).collect::<Vec<_>>(),
        [1, 2]
    );
    assert_eq!(loaded.messages[0].text(), "compacted: unicornfish summary");
    assert_eq!((h.token_input_total, h.token_output_total), (0, 0));
    assert_eq!((h.message_count, h.last_seq), (2, 2));
    assert_eq!(h.model, "smaller-model");
    assert_eq!(h.provider, "anthropic", "unset meta keeps the provider");
    assert_eq!(
        h.task_state,
        Some(serde_json::json!({"summary": "ten zebras"}))
    );
    assert!(
        s.search("zebracorn", 50).unwrap().is_empty(),
        "old text still found"
    );
    let hits = s.search("unicornfish", 50).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!((hits[0].session_id.as_str(), hits[0].seq), ("c", 1));

    // Given non-zero totals are written as given; appends continue from the new seqs.
    s.replace_transcript("c", &summary("again", (7, 3)))
        .unwrap();
    let h = s.load_header("c").unwrap();
    assert_eq!((h.token_input_total, h.token_output_total), (7, 3));
    assert_eq!(
        s.append_messages("c", &[msg(Role::User, "next", 1, 1)], &meta())
            .unwrap(),
        [2]
    );
    assert!(matches!(
        s.replace_transcript("nope", &Replacement::default()),
        Err(StoreError::NotFound { .. })
    ));
}

#[test]
#[expect(clippy::too_many_lines)]
fn search_ranks_best_match_first_with_a_snippet_and_survives_hostile_queries() {
    let t = Env::new();
    let s = t.store();
    s.create_session(named("x", "Search me")).unwrap();
    s.append_messages(
        "x",
        &[
            msg(Role::User, "a long message that mentions walrus once among many other words about parsing tokens and lexers and grammars", 0, 0),
            msg(Role::Assistant, "walrus walrus walrus", 0, 0),
            msg(Role::User, "nothing relevant here", 0, 0),
            NewMessage {
                role: Some(Role::Assistant),
                parts: vec![Part::reasoning("thinking about the kraken")],
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "grep_files".into(),
                    arguments: r#"{"pattern":"octopus"}"#.into(),
                }],
                ..NewMessage::default()
            },
        ],
        &meta(),
    )
    .unwrap();
    let hits = s.search("walrus", 10).unwrap();
    assert_eq!(hits.iter().map(|h| h.seq).collect::<Vec<_>>(), [2, 1]);
    assert_eq!(hits[0].session_title, "Search me");
    assert!(hits[0].snippet.contains("walrus"));
    assert!(
        hits[1]
            .snippet
            .contains(&format!("{SNIPPET_OPEN}walrus{SNIPPET_CLOSE}")),
        "{:?}",
        hits[1].snippet
    );
    assert_eq!(s.search("walrus", 1).unwrap().len(), 1, "limit");
    // A snippet is one line, whatever the message's layout.
    s.append_messages(
        "x",
        &[msg(
            Role::User,
            "first line\n\n\tsecond narwhal line\r\nthird",
            0,
            0,
        )],
        &meta(),
    )
    .unwrap();
    let nar = &s.search("narwhal", 10).unwrap()[0].snippet;
    assert_eq!(
        nar,
        &format!("first line second {SNIPPET_OPEN}narwhal{SNIPPET_CLOSE} line third")
    );
    assert_eq!(
        s.search("kraken", 10).unwrap()[0].seq,
        4,
        "reasoning indexed"
    );
    assert_eq!(
        s.search("octopus", 10).unwrap()[0].seq,
        4,
        "tool args indexed"
    );
    assert_eq!(
        s.search("walr", 10).unwrap().len(),
        2,
        "last word is a prefix"
    );
    assert!(s.search("   ", 10).unwrap().is_empty());

    for hostile in [
        "\"",
        "\"\"",
        "walrus\"",
        "*",
        "walrus*",
        "NEAR(",
        "NEAR(walrus",
        "-",
        "-walrus",
        ":",
        "body:walrus",
        "AND",
        "walrus OR",
        "NOT walrus",
        "(",
        ")",
        "^",
        "{body}: x",
        "'; DROP TABLE sessions; --",
        "\u{0}",
    ] {
        if let Err(e) = s.search(hostile, 10) {
            panic!("query {hostile:?} errored: {e}");
        }
    }
    // Punctuation is not part of a token: a stray quote or operator still finds the word.
    assert_eq!(s.search("walrus\"", 10).unwrap().len(), 2);
    assert_eq!(
        s.search("NEAR(walrus", 10).unwrap().len(),
        0,
        "NEAR is a word, not syntax"
    );
    assert_eq!(s.search("-walrus", 10).unwrap().len(), 2);
    assert_eq!(s.count().unwrap(), 1);
}

#[test]
fn conversation_key_finds_the_most_recent_session() {
    let t = Env::new();
    let (s, clock) = open_with_clock(&t);
    for id in ["k1", "k2", "other"] {
        s.create_session(named(id, id)).unwrap();
    }
    let first = "please refactor module x";
    s.append_messages("k1", &[msg(Role::User, first, 0, 0)], &meta())
        .unwrap();
    clock.advance(3);
    s.append_messages("k2", &[msg(Role::User, first, 0, 0)], &meta())
        .unwrap();
    s.append_messages("other", &[msg(Role::User, "unrelated", 0, 0)], &meta())
        .unwrap();
    let key = conversation_key(first);
    assert_eq!(s.find_by_conversation_key(&key).unwrap().unwrap().id, "k2");
    clock.advance(3);
    s.append_messages("k1", &[msg(Role::Assistant, "ok", 0, 0)], &meta())
        .unwrap();
    assert_eq!(s.find_by_conversation_key(&key).unwrap().unwrap().id, "k1");
    assert!(
        s.find_by_conversation_key(&conversation_key("never said"))
            .unwrap()
            .is_none()
    );
}

fn decide(rt: &Sessions, req: SessionRequest) -> Decision {
    rt.decide(&req, NewSession::default()).unwrap()
}

#[test]
fn runtime_decision_chain_follows_the_seed() {
    let t = Env::new();
    let rt = t.sessions();
    let known = rt.new_session(named("known", "Known")).unwrap().id;
    rt.append(&known, &[msg(Role::User, "first words", 0, 0)], &meta())
        .unwrap();
    let key = conversation_key("first words");
    let count = |rt: &Sessions| rt.count().unwrap();

    // new_session forced, even with a known id and key.
    let d = decide(
        &rt,
        SessionRequest {
            new_session: true,
            session_id: Some(known.clone()),
            conversation_key: Some(key.clone()),
            has_continuation: true,
        },
    );
    let Decision::New(id) = d else {
        panic!("expected New, got {d:?}")
    };
    assert_ne!(id, known);
    assert_eq!(count(&rt), 2);

    // Known id continues.
    let d = decide(
        &rt,
        SessionRequest {
            session_id: Some(known.clone()),
            ..SessionRequest::default()
        },
    );
    assert_eq!(d, Decision::Continue(known.clone()));

    // Unknown id + key → recovered.
    let d = decide(
        &rt,
        SessionRequest {
            session_id: Some("gone".into()),
            conversation_key: Some(key.clone()),
            has_continuation: true,
            ..SessionRequest::default()
        },
    );
    assert_eq!(
        d,
        Decision::Recovered {
            session_id: known.clone(),
            reason: "session_not_found"
        }
    );
    assert_eq!(count(&rt), 2);

    // Unknown id, no match → new with warning naming recent sessions.
    let d = decide(
        &rt,
        SessionRequest {
            session_id: Some("gone".into()),
            conversation_key: Some(conversation_key("other words")),
            ..SessionRequest::default()
        },
    );
    match d {
        Decision::NewWithWarning {
            session_id,
            warning,
            recent,
        } => {
            assert_eq!(warning, "session_not_found_starting_new");
            assert!(rt.header(&session_id).is_ok());
            assert!(recent.iter().any(|(id, _)| id == &known));
        }
        other => panic!("expected NewWithWarning, got {other:?}"),
    }
    assert_eq!(count(&rt), 3);

    // Missing id + key → recovered.
    let d = decide(
        &rt,
        SessionRequest {
            conversation_key: Some(key),
            has_continuation: true,
            ..SessionRequest::default()
        },
    );
    assert_eq!(
        d,
        Decision::Recovered {
            session_id: known,
            reason: "session_id_missing"
        }
    );

    // Missing id + continuation, no key match → new with warning.
    let d = decide(
        &rt,
        SessionRequest {
            has_continuation: true,
            ..SessionRequest::default()
        },
    );
    match d {
        Decision::NewWithWarning { warning, .. } => {
            assert_eq!(warning, "session_id_missing_starting_fresh")
        }
        other => panic!("expected NewWithWarning, got {other:?}"),
    }

    // Missing id, no continuation → plain new.
    let d = decide(&rt, SessionRequest::default());
    assert!(matches!(d, Decision::New(_)), "{d:?}");
    assert_eq!(count(&rt), 5);
}

#[test]
fn dangling_tool_calls_are_the_unanswered_calls_of_the_last_asking_message() {
    let t = Env::new();
    let rt = t.sessions();
    let id = rt.new_session(NewSession::default()).unwrap().id;
    let call = |id: &str| ToolCall {
        id: id.into(),
        name: "shell".into(),
        arguments: "{}".into(),
    };
    rt.append(
        &id,
        &[
            msg(Role::User, "run things", 0, 0),
            // Calls this store received from the model, as a turn marks them.
            NewMessage {
                role: Some(Role::Assistant),
                tool_calls: vec![call("old")],
                tool_metadata: Some(serde_json::json!({ "calls_from": "model" })),
                ..NewMessage::default()
            },
            NewMessage::tool_result("old", "done", false),
            NewMessage {
                role: Some(Role::Assistant),
                tool_calls: vec![call("a"), call("b"), call("c")],
                tool_metadata: Some(serde_json::json!({ "calls_from": "model" })),
                ..NewMessage::default()
            },
            NewMessage::tool_result("b", "done", false),
        ],
        &meta(),
    )
    .unwrap();
    let msgs = rt.load(&id).unwrap().messages;
    let ids: Vec<String> = dangling_tool_calls(&msgs)
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(ids, ["a", "c"]);
    assert!(neocode::runtime::dangling::unrecorded_tool_calls(&msgs).is_empty());
    // Unmarked (a caller's history, an imported file): never replayed, answered instead.
    let mut unmarked = msgs;
    for m in &mut unmarked {
        m.tool_metadata = None;
    }
    assert!(dangling_tool_calls(&unmarked).is_empty());
    let ids: Vec<String> = neocode::runtime::dangling::unrecorded_tool_calls(&unmarked)
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(ids, ["a", "c"]);
    rt.append(
        &id,
        &[
            NewMessage::tool_result("a", "done", false),
            NewMessage::tool_result("c", "failed", true),
        ],
        &meta(),
    )
    .unwrap();
    assert!(dangling_tool_calls(&rt.load(&id).unwrap().messages).is_empty());
    assert!(dangling_tool_calls(&[]).is_empty());
}

#[test]
fn unknown_session_and_prefix_resolution() {
    let t = Env::new();
    let (s, clock) = open_with_clock(&t);
    assert!(matches!(
        s.append_messages("ghost", &[msg(Role::User, "x", 0, 0)], &meta()),
        Err(StoreError::NotFound { .. })
    ));
    s.create_session(named("abc123", "one")).unwrap();
    s.create_session(named("abd456", "two")).unwrap();
    assert_eq!(s.resolve("abc").unwrap(), "abc123");
    assert_eq!(s.resolve("abd456").unwrap(), "abd456");
    match s.resolve("ab") {
        Err(StoreError::Ambiguous { candidates, .. }) => {
            let ids: HashSet<&str> = candidates.iter().map(|c| c.0.as_str()).collect();
            assert_eq!(ids, HashSet::from(["abc123", "abd456"]));
        }
        other => panic!("expected Ambiguous, got {other:?}"),
    }
    assert!(matches!(s.resolve("zz"), Err(StoreError::NotFound { .. })));
    assert!(matches!(s.resolve("a%"), Err(StoreError::NotFound { .. })));
    // Prefixes are case-insensitive, and `_` is not a wildcard.
    assert_eq!(s.resolve("ABC").unwrap(), "abc123");
    assert_eq!(s.resolve("ABD456").unwrap(), "abd456");
    s.create_session(named("Up_Case", "three")).unwrap();
    assert_eq!(s.resolve("up_c").unwrap(), "Up_Case");
    assert!(matches!(
        s.resolve("upxc"),
        Err(StoreError::NotFound { .. })
    ));
    clock.advance(3);
    s.append_messages("abc123", &[msg(Role::User, "x", 0, 0)], &meta())
        .unwrap();
    assert_eq!(s.resolve("last").unwrap(), "abc123");
}

#[test]
fn data_version_moves_only_when_another_process_commits() {
    let t = Env::new();
    let watcher = t.store();
    let v0 = watcher.data_version().unwrap();
    assert_eq!(watcher.data_version().unwrap(), v0, "no write, no change");
    // Another process's store (its own connections) writes.
    let other = t.store();
    other
        .create_session(named("w", "written elsewhere"))
        .unwrap();
    let v1 = watcher.data_version().unwrap();
    assert_ne!(v1, v0);
    assert_eq!(watcher.data_version().unwrap(), v1);
    // Reads change nothing; neither do this handle's own writes, through any clone: a view
    // polling it reloads only for news from another process.
    other.list(&ListQuery::default()).unwrap();
    assert_eq!(watcher.data_version().unwrap(), v1);
    watcher.rename("w", "renamed").unwrap();
    watcher.rename("w", "renamed again").unwrap();
    assert_eq!(watcher.data_version().unwrap(), v1);
    other.rename("w", "renamed elsewhere").unwrap();
    assert_ne!(watcher.data_version().unwrap(), v1);
}

#[test]
fn opening_a_session_reads_header_progress_assets_and_tail_together() {
    let t = Env::new();
    let rt = t.sessions();
    let id = rt.new_session(NewSession::default()).unwrap().id;
    let many: Vec<NewMessage> = (0..300)
        .map(|i| msg(Role::User, &format!("m{i}"), 0, 0))
        .collect();
    rt.append(&id, &many, &meta()).unwrap();
    rt.append(
        &id,
        &[NewMessage {
            role: Some(Role::Assistant),
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "grep".into(),
                arguments: "{}".into(),
            }],
            tool_metadata: Some(serde_json::json!({ "calls_from": "model" })),
            ..NewMessage::default()
        }],
        &meta(),
    )
    .unwrap();
    rt.save_asset(&id, "image/png", b"png").unwrap();
    let store = t.store();
    let o = store.load_overview(&id, 10).unwrap();
    assert_eq!(o.header.last_seq, 301);
    assert_eq!(o.assets.len(), 1);
    let seqs: Vec<i64> = o.tail.iter().map(|m| m.seq).collect();
    assert_eq!(
        seqs,
        (292..=301).collect::<Vec<_>>(),
        "the last ten, in order"
    );
    let opened = rt.open_session(&id).unwrap();
    assert_eq!(opened.header, rt.header(&id).unwrap());
    assert_eq!(
        opened.interrupted.len(),
        1,
        "the grep call never got a result"
    );
    assert!(matches!(
        store.load_overview("ghost", 10),
        Err(StoreError::NotFound { .. })
    ));
}
