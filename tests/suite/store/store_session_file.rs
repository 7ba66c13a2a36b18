//! The session file: lossless export → parse → import → export, `--new-id` imports, and
//! malformed documents rejected with the JSON path of the problem and nothing written.

use crate::support::Env;
use neocode::session::file::{self, SessionFile};
use neocode::session::{
    AppendMeta, MessageExtra, NewMessage, NewSession, Part, Plan, Role, RuntimeLedger, StateUpdate,
    Step, StepFailure, StepStatus, StepUpdate, Store, StoreError, TokenDetail, ToolCall, Usage,
};
use serde_json::{Value, json};

/// A session using every part of the format.
#[expect(clippy::too_many_lines)]
fn rich(s: &Store) -> String {
    let h = s
        .create_session(NewSession {
            id: Some("rich-1".into()),
            title: "Everything \u{1F680}".into(),
            provider: "anthropic".into(),
            model: "claude-x".into(),
            workdir: "/src/app".into(),
            conversation_key: None,
            parent_id: None,
            subagent_of: None,
            branch: Some("feature/everything".into()),
        })
        .unwrap();
    s.save_asset(&h.id, Some("shot"), "image/png", &[0, 159, 146, 150, 255])
        .unwrap();
    s.append_messages(
        &h.id,
        &[
            NewMessage::text(Role::System, "be brief"),
            NewMessage {
                role: Some(Role::User),
                parts: vec![
                    Part::text("look at this"),
                    Part::Image {
                        asset_id: "shot".into(),
                        mime_type: Some("image/png".into()),
                    },
                ],
                ..NewMessage::default()
            },
            NewMessage {
                role: Some(Role::Assistant),
                parts: vec![Part::reasoning("need to list files"), Part::text("listing")],
                tool_calls: vec![ToolCall {
                    id: "call-1".into(),
                    name: "shell".into(),
                    arguments: r#"{"cmd":"ls -la"}"#.into(),
                }],
                usage: Usage {
                    input_tokens: 1200,
                    output_tokens: 80,
                },
                extra: MessageExtra {
                    tokens: TokenDetail {
                        cached_input_tokens: 900,
                        cache_write_tokens: 100,
                        reasoning_tokens: 30,
                    },
                    ..MessageExtra::default()
                },
                ..NewMessage::default()
            },
            NewMessage {
                tool_metadata: Some(json!({"exit_code": 1, "ms": 12})),
                ..NewMessage::tool_result("call-1", "permission denied", true)
            },
        ],
        &AppendMeta::default(),
    )
    .unwrap();
    s.update_state(
        &h.id,
        &StateUpdate {
            status: Some(neocode::session::Status::Paused),
            todos: neocode::session::Change::Set(json!([{"text": "fix perms", "done": false}])),
            skills: neocode::session::Change::Set(json!(["rust"])),
            task_state: neocode::session::Change::Set(json!({"goal": "list files"})),
            ledger: neocode::session::Change::Set(RuntimeLedger {
                started_at_ms: Some(1_700_000_000_000),
                ..RuntimeLedger::default()
            }),
            plan: neocode::session::Change::Set(Plan {
                steps: vec![
                    Step {
                        id: "a".into(),
                        title: "list".into(),
                        depends_on: vec![],
                    },
                    Step {
                        id: "b".into(),
                        title: "fix".into(),
                        depends_on: vec!["a".into()],
                    },
                    Step {
                        id: "c".into(),
                        title: "verify".into(),
                        depends_on: vec!["b".into()],
                    },
                ],
            }),
            ..StateUpdate::default()
        },
    )
    .unwrap();
    s.record_step_update(
        &h.id,
        "a",
        &StepUpdate::Result {
            result: json!(["x"]),
        },
    )
    .unwrap();
    s.record_step_update(
        &h.id,
        "b",
        &StepUpdate::Error {
            error: StepFailure {
                error_type: "ToolError".into(),
                message: "denied".into(),
                traceback: Some("at line 1".into()),
            },
        },
    )
    .unwrap();
    s.record_step_update(
        &h.id,
        "c",
        &StepUpdate::Status {
            status: StepStatus::Running,
        },
    )
    .unwrap();
    h.id
}

/// A store on workspace `tmp/<name>` under the env's one home.
fn open_at(t: &Env, name: &str) -> Store {
    Store::open(t.sibling(name).paths).unwrap()
}

/// A store on workspace `tmp/<name>` holding the [`rich`] session; the store, the session's id
/// and its export.
fn exported_rich(t: &Env, name: &str) -> (Store, String, SessionFile) {
    let a = open_at(t, name);
    let id = rich(&a);
    let doc = file::export(&a, &id).unwrap();
    (a, id, doc)
}

#[test]
fn export_parse_import_export_is_identical() {
    let t = Env::new();
    let (a, id, first) = exported_rich(&t, "one");
    let text = serde_json::to_string_pretty(&first).unwrap();
    let parsed = file::parse(&text).unwrap();
    assert_eq!(parsed, first);

    let b = open_at(&t, "two");
    assert_ne!(a.paths().dir, b.paths().dir);
    let h = file::import(&b, &parsed, false).unwrap();
    assert_eq!(h.id, id);
    let second = file::export(&b, &id).unwrap();
    assert_eq!(
        serde_json::to_value(&second).unwrap(),
        serde_json::to_value(&first).unwrap()
    );
    // What a user sees is the same too.
    let (sa, sb) = (a.load_session(&id).unwrap(), b.load_session(&id).unwrap());
    assert_eq!(sa, sb);
    assert_eq!(a.summary(&id).unwrap(), b.summary(&id).unwrap());
    assert_eq!(
        b.open_asset(&id, "shot").unwrap().1,
        [0, 159, 146, 150, 255]
    );
    assert_eq!(b.search("denied", 5).unwrap()[0].seq, 4);
    // The document has the shape of the contract.
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["format"], "neocode-session");
    assert_eq!(v["version"], 2);
    // A version 1 file (no v2 fields) still reads.
    let mut v1 = v.clone();
    v1["version"] = 1.into();
    assert!(file::parse(&v1.to_string()).is_ok());
    v1["version"] = 3.into();
    assert!(file::parse(&v1.to_string()).is_err());
    assert_eq!(v["session"]["plan"]["steps"][1]["status"], "failed");
    assert_eq!(v["messages"][2]["tool_calls"][0]["name"], "shell");
    // The finer token counts: on the message, and summed in the session's totals.
    assert_eq!(
        v["messages"][2]["usage"],
        json!({"input_tokens": 1200, "output_tokens": 80, "cached_input_tokens": 900,
            "cache_write_tokens": 100, "reasoning_tokens": 30})
    );
    let totals = &v["session"]["tokens"];
    assert_eq!(
        [
            &totals["cached_input"],
            &totals["cache_write"],
            &totals["reasoning"]
        ],
        [900, 100, 30]
    );
    assert_eq!(v["assets"][0]["data_base64"], "AJ+Slv8=");
}

#[test]
fn an_existing_id_is_refused_unless_a_new_id_is_asked_for() {
    let t = Env::new();
    let (a, id, doc) = exported_rich(&t, "one");
    match file::import(&a, &doc, false) {
        Err(StoreError::AlreadyExists(x)) => assert_eq!(x, id),
        other => panic!("expected AlreadyExists, got {other:?}"),
    }
    assert_eq!(a.count().unwrap(), 1);
    let copy = file::import(&a, &doc, true).unwrap();
    assert_ne!(copy.id, id);
    assert_eq!(copy.parent_id, None);
    let (orig, new) = (
        a.load_session(&id).unwrap(),
        a.load_session(&copy.id).unwrap(),
    );
    assert_eq!(new.messages, orig.messages);
    assert_eq!(new.plan_progress, orig.plan_progress);
    assert_eq!(
        a.open_asset(&copy.id, "shot").unwrap().1,
        [0, 159, 146, 150, 255]
    );
    assert_eq!(a.count().unwrap(), 2);
}

/// A valid export as a JSON value, to break in one place.
fn valid_doc() -> Value {
    let (_, _, doc) = exported_rich(&Env::new(), "src");
    serde_json::to_value(doc).unwrap()
}

fn rejected(doc: &Value) -> file::FileError {
    file::parse(&doc.to_string()).expect_err("malformed document accepted")
}

#[test]
fn malformed_documents_name_the_json_path_and_write_nothing() {
    let good = valid_doc();
    assert!(file::parse(&good.to_string()).is_ok());

    // Each case sets one place (a JSON pointer) of a valid export; the error must name the
    // path and say the words given.
    #[rustfmt::skip]
    let sets = [
        ("bad enum", "/messages/1/role", json!("robot"), "$.messages[1].role", "robot"),
        ("bad status", "/session/status", json!("sleeping"), "$.session.status", "sleeping"),
        ("duplicate seq", "/messages/1/seq", json!(1), "$.messages[1].seq", "duplicate"),
        ("out of seq order", "/messages/1/seq", json!(50), "$.messages[2].seq", "seq order"),
        ("orphan tool result", "/messages/3/tool_call_id", json!("call-ghost"),
            "$.messages[3].tool_call_id", "call-ghost"),
        ("bad base64", "/assets/0/data_base64", json!("!!not base64!!"),
            "$.assets[0].data_base64", "base64"),
        ("unknown asset", "/messages/1/parts/1/asset_id", json!("ghost"),
            "$.messages[1].parts[1].asset_id", "ghost"),
        ("wrong format", "/format", json!("something-else"), "$.format", "neocode-session"),
        ("bad time", "/messages/0/created_at", json!("yesterday"),
            "$.messages[0].created_at", "RFC 3339"),
        ("bad id", "/session/id", json!("../escape"), "$.session.id", "invalid"),
        ("plan cycle", "/session/plan/steps/0/depends_on", json!(["c"]),
            "$.session.plan.steps", "cycle"),
        ("bad token count", "/messages/1/usage", json!({"input_tokens": 1, "reasoning_tokens": "many"}),
            "$.messages[1].usage.reasoning_tokens", "many"),
    ];
    let mut missing = good.clone();
    missing["session"].as_object_mut().unwrap().remove("title");
    let mut cases = vec![("missing field", missing, "$.session", "title")];
    for (what, at, value, path, needle) in sets {
        let mut d = good.clone();
        *d.pointer_mut(at)
            .unwrap_or_else(|| panic!("{what}: no {at}")) = value;
        cases.push((what, d, path, needle));
    }

    let t = Env::new();
    let target = open_at(&t, "target");
    for (what, doc, path, needle) in &cases {
        let e = rejected(doc);
        assert_eq!(&e.path, path, "{what}: {e}");
        assert!(
            e.message.contains(needle),
            "{what}: message {:?}",
            e.message
        );
        // Bypassing parse, import itself validates and writes nothing.
        if let Ok(raw) = serde_json::from_value::<SessionFile>(doc.clone()) {
            assert!(
                file::import(&target, &raw, false).is_err(),
                "{what}: imported"
            );
            assert!(
                file::import(&target, &raw, true).is_err(),
                "{what}: imported"
            );
        }
        assert_eq!(target.count().unwrap(), 0, "{what}: something was written");
        let leftovers: Vec<_> = std::fs::read_dir(target.paths().assets())
            .unwrap()
            .collect();
        assert!(leftovers.is_empty(), "{what}: asset files written");
    }
    // Not JSON at all, and unknown fields (ignored).
    assert_eq!(file::parse("{not json").unwrap_err().path, "$");
    let mut d = good;
    d["session"]["future_field"] = json!({"x": 1});
    d["extra"] = json!(true);
    assert!(file::parse(&d.to_string()).is_ok());
}

#[test]
fn step_progress_with_records_behind_a_later_status_round_trips() {
    let t = Env::new();
    let a = open_at(&t, "one");
    let h = a.create_session(NewSession::default()).unwrap();
    let steps = ["a", "b", "c", "d", "e", "f"]
        .iter()
        .map(|id| Step {
            id: id.to_string(),
            title: id.to_uppercase(),
            depends_on: Vec::new(),
        })
        .collect();
    a.update_state(
        &h.id,
        &StateUpdate {
            plan: neocode::session::Change::Set(Plan { steps }),
            ..StateUpdate::default()
        },
    )
    .unwrap();
    let fail = StepUpdate::Error {
        error: StepFailure {
            error_type: "ToolError".into(),
            message: "exit 1".into(),
            traceback: None,
        },
    };
    let ok = StepUpdate::Result {
        result: json!({"lines": 42}),
    };
    let status = |status| StepUpdate::Status { status };
    for (step, u) in [
        ("a", &ok),
        ("a", &status(StepStatus::Failed)), // failed after its result: the result stays
        ("b", &fail),
        ("b", &status(StepStatus::Completed)), // completed after a failure: the record stays
        ("c", &status(StepStatus::Running)),
        ("d", &ok),
        ("e", &fail),
    ] {
        a.record_step_update(&h.id, step, u).unwrap();
    }
    let before = a.load_plan_progress(&h.id).unwrap();
    assert_eq!(before.status("a"), StepStatus::Failed);
    assert!(before.results.contains_key("a"));
    assert_eq!(before.status("b"), StepStatus::Completed);
    assert!(before.failures.contains_key("b"));

    let doc = file::export(&a, &h.id).unwrap();
    let b = open_at(&t, "two");
    let copy = file::import(
        &b,
        &file::parse(&serde_json::to_string(&doc).unwrap()).unwrap(),
        false,
    )
    .unwrap();
    assert_eq!(b.load_plan_progress(&copy.id).unwrap(), before);
    assert_eq!(
        b.summary(&copy.id).unwrap().plan,
        a.summary(&h.id).unwrap().plan
    );
    assert_eq!(file::export(&b, &copy.id).unwrap(), doc);
}
