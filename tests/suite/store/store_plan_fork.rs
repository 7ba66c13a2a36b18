//! Plans and step progress through the store (the seed's merge rules, same-millisecond
//! writes), and forks (exact prefix copied, source untouched).

use crate::support::Env;
use std::collections::BTreeSet;

use neocode::session::{
    AppendMeta, NewMessage, NewSession, Part, Plan, PlanError, Role, StateUpdate, Step,
    StepFailure, StepStatus, StepUpdate, Store, StoreError, ToolCall, Usage,
};
use serde_json::json;

fn named(id: &str) -> NewSession {
    NewSession {
        id: Some(id.to_string()),
        title: format!("title of {id}"),
        ..NewSession::default()
    }
}

fn step(id: &str, deps: &[&str]) -> Step {
    Step {
        id: id.into(),
        title: format!("do {id}"),
        depends_on: deps.iter().map(ToString::to_string).collect(),
    }
}

fn set_plan(s: &Store, id: &str, steps: Vec<Step>) -> neocode::session::Result<()> {
    s.update_state(
        id,
        &StateUpdate {
            plan: neocode::session::Change::Set(Plan { steps }),
            ..StateUpdate::default()
        },
    )
}

fn status(st: StepStatus) -> StepUpdate {
    StepUpdate::Status { status: st }
}

fn result(v: serde_json::Value) -> StepUpdate {
    StepUpdate::Result { result: v }
}

fn error(msg: &str) -> StepUpdate {
    StepUpdate::Error {
        error: StepFailure {
            error_type: "ToolError".into(),
            message: msg.into(),
            traceback: None,
        },
    }
}

#[test]
fn step_updates_merge_by_the_three_rules_through_the_store() {
    let t = Env::new();
    let s = t.store();
    s.create_session(named("p")).unwrap();
    set_plan(
        &s,
        "p",
        vec![
            step("a", &[]),
            step("b", &[]),
            step("c", &["a", "b"]),
            step("d", &["c"]),
            step("e", &[]),
        ],
    )
    .unwrap();
    let up = |step: &str, u: StepUpdate| s.record_step_update("p", step, &u).unwrap();

    // a: running then result → completed; a later "running" never reopens it (rule 1).
    up("a", status(StepStatus::Running));
    up("a", result(json!({"files": 3})));
    up("a", status(StepStatus::Running));
    // b: failed then a successful retry clears the failure (rule 2).
    up("b", error("first try"));
    up("b", status(StepStatus::Running));
    up("b", result(json!("second try ok")));
    // c: succeeded then judged failed clears the result (rule 3).
    up("c", result(json!("looked fine")));
    up("c", error("was not fine"));
    // d: a terminal *status* is not overwritten by a later non-terminal status (rule 1).
    up("d", status(StepStatus::Completed));
    up("d", status(StepStatus::Running));
    // e: only non-terminal statuses: the last one wins.
    up("e", status(StepStatus::Running));
    up("e", status(StepStatus::Pending));

    let check = |s: &Store| {
        let p = s.load_plan_progress("p").unwrap();
        assert_eq!(p.status("a"), StepStatus::Completed);
        assert_eq!(p.results.get("a"), Some(&json!({"files": 3})));
        assert_eq!(p.status("b"), StepStatus::Completed);
        assert!(!p.failures.contains_key("b"), "rule 2: old failure kept");
        assert_eq!(p.results.get("b"), Some(&json!("second try ok")));
        assert_eq!(p.status("c"), StepStatus::Failed);
        assert!(!p.results.contains_key("c"), "rule 3: old result kept");
        assert_eq!(p.failures["c"].message, "was not fine");
        assert_eq!(
            p.status("d"),
            StepStatus::Completed,
            "rule 1 on status rows"
        );
        assert_eq!(p.status("e"), StepStatus::Pending);
        let sum = s.summary("p").unwrap();
        assert_eq!(
            (sum.plan.done, sum.plan.failed, sum.plan.total),
            (3, 1, 5),
            "list counts"
        );
        assert_eq!(s.load_session("p").unwrap().plan_progress, p);
    };
    check(&s);
    // The same from a fresh process-like open of the file.
    drop(s);
    check(&t.store());
}

#[test]
fn many_updates_in_the_same_millisecond_merge_in_write_order() {
    let t = Env::new();
    let s = t.store();
    s.create_session(named("fast")).unwrap();
    let steps: Vec<Step> = (0..10).map(|i| step(&format!("s{i}"), &[])).collect();
    set_plan(&s, "fast", steps).unwrap();
    // Hundreds of updates: many share a millisecond; only write order may decide.
    let mut expect_failed = BTreeSet::new();
    for round in 0..40 {
        for i in 0..10 {
            let id = format!("s{i}");
            let fail = (round + i) % 3 == 0;
            if fail {
                s.record_step_update("fast", &id, &error(&format!("round {round}")))
                    .unwrap();
                expect_failed.insert(id.clone());
            } else {
                s.record_step_update("fast", &id, &result(json!(round)))
                    .unwrap();
                expect_failed.remove(&id);
            }
            // A trailing non-terminal status never changes the outcome.
            s.record_step_update("fast", &id, &status(StepStatus::Running))
                .unwrap();
        }
    }
    let p = s.load_plan_progress("fast").unwrap();
    for i in 0..10 {
        let id = format!("s{i}");
        let last_round = 39;
        if expect_failed.contains(&id) {
            assert_eq!(p.status(&id), StepStatus::Failed, "{id}");
            assert_eq!(p.failures[&id].message, format!("round {last_round}"));
            assert!(!p.results.contains_key(&id));
        } else {
            assert_eq!(p.status(&id), StepStatus::Completed, "{id}");
            assert_eq!(p.results[&id], json!(last_round));
            assert!(!p.failures.contains_key(&id));
        }
    }
    let sum = s.summary("fast").unwrap();
    assert_eq!(sum.plan.failed as usize, expect_failed.len());
    assert_eq!(sum.plan.done as usize, 10 - expect_failed.len());
}

#[test]
fn a_plan_with_a_cycle_or_unknown_dependency_is_refused() {
    let t = Env::new();
    let s = t.store();
    s.create_session(named("bad")).unwrap();
    set_plan(&s, "bad", vec![step("x", &[])]).unwrap();
    match set_plan(
        &s,
        "bad",
        vec![step("a", &["c"]), step("b", &["a"]), step("c", &["b"])],
    ) {
        Err(StoreError::Plan(PlanError::Cycle(ids))) => assert_eq!(ids.len(), 4),
        other => panic!("expected a cycle error, got {other:?}"),
    }
    match set_plan(&s, "bad", vec![step("a", &["ghost"])]) {
        Err(e @ StoreError::Plan(PlanError::UnknownDependency { .. })) => {
            assert!(e.to_string().contains("ghost"), "{e}")
        }
        other => panic!("expected an unknown dependency error, got {other:?}"),
    }
    // The stored plan is unchanged.
    let h = s.load_header("bad").unwrap();
    assert_eq!(h.plan.unwrap().steps, vec![step("x", &[])]);
    assert_eq!(s.summary("bad").unwrap().plan.total, 1);
}

#[test]
fn replacing_the_plan_drops_progress_of_removed_steps() {
    let t = Env::new();
    let s = t.store();
    s.create_session(named("r")).unwrap();
    set_plan(&s, "r", vec![step("keep", &[]), step("drop", &[])]).unwrap();
    s.record_step_update("r", "keep", &result(json!(1)))
        .unwrap();
    s.record_step_update("r", "drop", &error("x")).unwrap();
    set_plan(&s, "r", vec![step("keep", &[]), step("new", &["keep"])]).unwrap();
    let p = s.load_plan_progress("r").unwrap();
    assert_eq!(p.status("keep"), StepStatus::Completed);
    assert!(!p.statuses.contains_key("drop") && p.failures.is_empty());
    let sum = s.summary("r").unwrap();
    assert_eq!((sum.plan.done, sum.plan.failed, sum.plan.total), (1, 0, 2));
    s.update_state(
        "r",
        &StateUpdate {
            plan: neocode::session::Change::Clear,
            ..StateUpdate::default()
        },
    )
    .unwrap();
    assert_eq!(s.load_plan_progress("r").unwrap(), Default::default());
    assert_eq!(s.summary("r").unwrap().plan.total, 0);
}

fn image(asset: &str) -> NewMessage {
    NewMessage {
        role: Some(Role::User),
        parts: vec![
            Part::text(format!("see {asset}")),
            Part::Image {
                asset_id: asset.into(),
                mime_type: Some("image/png".into()),
            },
        ],
        ..NewMessage::default()
    }
}

/// A 20-message session with tool calls, usage, two image assets (at seqs 5 and 15), one
/// unreferenced asset, and plan progress.
fn rich_source(s: &Store) {
    s.create_session(named("src")).unwrap();
    s.save_asset("src", Some("early"), "image/png", b"early bytes")
        .unwrap();
    s.save_asset("src", Some("late"), "image/png", b"late bytes")
        .unwrap();
    s.save_asset("src", Some("loose"), "text/plain", b"not referenced")
        .unwrap();
    for i in 1..=20 {
        let m = match i {
            5 => image("early"),
            15 => image("late"),
            7 => NewMessage {
                role: Some(Role::Assistant),
                tool_calls: vec![ToolCall {
                    id: "call7".into(),
                    name: "shell".into(),
                    arguments: r#"{"cmd":"ls"}"#.into(),
                }],
                usage: Usage {
                    input_tokens: 70,
                    output_tokens: 7,
                },
                ..NewMessage::default()
            },
            8 => NewMessage {
                tool_metadata: Some(json!({"exit": 0})),
                ..NewMessage::tool_result("call7", "a b c", false)
            },
            _ => NewMessage {
                usage: Usage {
                    input_tokens: i,
                    output_tokens: 1,
                },
                ..NewMessage::text(
                    if i % 2 == 1 {
                        Role::User
                    } else {
                        Role::Assistant
                    },
                    format!("message number {i} mentions pangolin"),
                )
            },
        };
        s.append_messages("src", &[m], &AppendMeta::default())
            .unwrap();
    }
    set_plan(s, "src", vec![step("a", &[]), step("b", &["a"])]).unwrap();
    s.record_step_update("src", "a", &result(json!("done")))
        .unwrap();
    s.record_step_update("src", "b", &status(StepStatus::Running))
        .unwrap();
}

#[test]
fn fork_copies_exactly_the_prefix_and_leaves_the_source_untouched() {
    let t = Env::new();
    let s = t.store();
    rich_source(&s);
    let before = s.load_session("src").unwrap();
    let before_assets = s.list_assets("src").unwrap();
    let before_summary = s.summary("src").unwrap();

    let f = s.fork("src", Some(10)).unwrap();
    assert_ne!(f.id, "src");
    assert_eq!(f.parent_id.as_deref(), Some("src"));
    assert_eq!(f.fork_seq, Some(10));
    assert_eq!((f.message_count, f.last_seq), (10, 10));
    let fork = s.load_session(&f.id).unwrap();
    assert_eq!(
        fork.messages,
        before.messages[..10].to_vec(),
        "prefix differs"
    );
    // The copied messages keep their per-turn usage; the fork's lifetime usage starts at 0.
    assert!(fork.messages.iter().any(|m| m.usage.input_tokens > 0));
    assert_eq!((f.token_input_total, f.token_output_total), (0, 0));
    if let Some(l) = &fork.header.ledger {
        assert_eq!(l.usage, neocode::session::RuntimeUsage::default());
    }
    assert_eq!(
        fork.plan_progress, before.plan_progress,
        "plan progress carried"
    );
    assert_eq!(fork.header.plan, before.header.plan);
    let sum = s.summary(&f.id).unwrap();
    assert_eq!((sum.plan.done, sum.plan.total), (1, 2));

    // Only the assets the prefix references are copied, and they read back.
    let assets = s.list_assets(&f.id).unwrap();
    assert_eq!(
        assets.iter().map(|a| a.id.as_str()).collect::<Vec<_>>(),
        ["early"]
    );
    assert_eq!(s.open_asset(&f.id, "early").unwrap().1, b"early bytes");
    assert_eq!(sum.asset_count, 1);
    assert!(matches!(
        s.open_asset(&f.id, "late"),
        Err(StoreError::NotFound { .. })
    ));

    // The fork's messages are searchable as its own.
    let hits = s.search("pangolin", 100).unwrap();
    let in_fork: BTreeSet<i64> = hits
        .iter()
        .filter(|h| h.session_id == f.id)
        .map(|h| h.seq)
        .collect();
    let in_src: BTreeSet<i64> = hits
        .iter()
        .filter(|h| h.session_id == "src")
        .map(|h| h.seq)
        .collect();
    assert!(in_fork.iter().all(|&q| q <= 10) && !in_fork.is_empty());
    assert_eq!(in_src.len(), 16, "source hits unchanged: {in_src:?}");

    // The source is untouched.
    assert_eq!(s.load_session("src").unwrap(), before);
    assert_eq!(s.list_assets("src").unwrap(), before_assets);
    assert_eq!(s.summary("src").unwrap(), before_summary);

    // The fork continues on its own.
    assert_eq!(
        s.append_messages(
            &f.id,
            &[NewMessage::text(Role::User, "branch")],
            &AppendMeta::default()
        )
        .unwrap(),
        [11]
    );
    assert_eq!(s.load_session("src").unwrap(), before);

    // A fork of the whole session and at 0.
    let whole = s.fork("src", None).unwrap();
    assert_eq!(s.load_session(&whole.id).unwrap().messages, before.messages);
    assert_eq!(s.list_assets(&whole.id).unwrap().len(), 2);
    let empty = s.fork("src", Some(0)).unwrap();
    assert_eq!(empty.message_count, 0);
}

#[test]
fn fork_out_of_range_is_refused_and_deleting_the_parent_keeps_the_fork() {
    let t = Env::new();
    let s = t.store();
    rich_source(&s);
    for bad in [21, 1000, -1] {
        match s.fork("src", Some(bad)) {
            Err(StoreError::NoSuchSeq { seq, last, .. }) => assert_eq!((seq, last), (bad, 20)),
            other => panic!("fork at {bad}: expected NoSuchSeq, got {other:?}"),
        }
    }
    assert!(matches!(
        s.fork("nope", None),
        Err(StoreError::NotFound { .. })
    ));
    assert_eq!(s.count().unwrap(), 1);

    let f = s.fork("src", Some(6)).unwrap();
    let fork_before = s.load_session(&f.id).unwrap();
    s.delete("src").unwrap();
    let after = s.load_session(&f.id).unwrap();
    // The link is history: it stays, naming a session no longer in the workspace.
    assert_eq!(after.header.parent_id.as_deref(), Some("src"));
    assert_eq!(after.messages, fork_before.messages);
    assert_eq!(s.open_asset(&f.id, "early").unwrap().1, b"early bytes");
    let hits = s.search("pangolin", 100).unwrap();
    assert!(!hits.is_empty() && hits.iter().all(|h| h.session_id == f.id));
    // A fork of the fork shares the text; compacting the middle one keeps it searchable in
    // the last, deleting that one removes it from the index.
    let g = s.fork(&f.id, None).unwrap();
    s.replace_transcript(
        &f.id,
        &neocode::session::Replacement {
            messages: vec![NewMessage::text(Role::System, "summary only")],
            ..Default::default()
        },
    )
    .unwrap();
    let hits = s.search("pangolin", 100).unwrap();
    assert!(
        !hits.is_empty() && hits.iter().all(|h| h.session_id == g.id),
        "{hits:?}"
    );
    s.delete(&g.id).unwrap();
    assert!(s.search("pangolin", 100).unwrap().is_empty());
    assert_eq!(s.search("summary", 100).unwrap().len(), 1);
}

#[test]
fn text_shared_by_a_source_and_its_fork_is_found_in_both_until_each_drops_it() {
    let t = Env::new();
    let s = t.store();
    rich_source(&s);
    let f = s.fork("src", Some(4)).unwrap();
    let sessions = |q: &str| -> BTreeSet<(String, i64)> {
        s.search(q, 100)
            .unwrap()
            .into_iter()
            .map(|h| (h.session_id, h.seq))
            .collect()
    };
    let number3 = sessions("number 3");
    assert!(number3.contains(&("src".to_string(), 3)) && number3.contains(&(f.id.clone(), 3)));
    // Compacting the source keeps the fork's copy searchable.
    s.replace_transcript(
        "src",
        &neocode::session::Replacement {
            messages: vec![NewMessage::text(Role::System, "compacted")],
            ..Default::default()
        },
    )
    .unwrap();
    assert!(sessions("pangolin").iter().all(|(id, _)| id == &f.id));
    assert_eq!(sessions("pangolin").len(), 4, "fork seqs 1 to 4 mention it");
    s.append_messages(
        &f.id,
        &[NewMessage::text(Role::User, "new pangolin")],
        &AppendMeta::default(),
    )
    .unwrap();
    assert!(sessions("pangolin").contains(&(f.id.clone(), 5)));
    s.delete(&f.id).unwrap();
    assert!(sessions("pangolin").is_empty());
    // Nothing is left in the index that no message points at.
    let c = rusqlite::Connection::open(s.paths().db()).unwrap();
    let orphans: i64 = c
        .query_row(
            "SELECT count(*) FROM message_fts
             WHERE rowid NOT IN (SELECT fts_id FROM messages WHERE fts_id IS NOT NULL)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(orphans, 0);
}
