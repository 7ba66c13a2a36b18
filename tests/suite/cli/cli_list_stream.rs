//! `neocode --list` without `--limit` streams its rows from the store in one pass (the table's
//! column widths come from indexes before the first row) instead of collecting them: its
//! output must be byte for byte what the collected list (`--limit` larger than the workspace)
//! prints, and its columns must hold whatever the last row brings.

use std::sync::Arc;

use crate::support::cli::*;
use neocode::session::{
    AppendMeta, NewMessage, NewSession, Plan, Role, StateUpdate, Step, Store, now_ms,
};

/// The column (in characters) where `title` starts on the line that holds it.
fn title_column(table: &str, title: &str) -> usize {
    let line = table
        .lines()
        .find(|l| l.contains(title))
        .unwrap_or_else(|| panic!("no line with {title:?} in:\n{table}"));
    line[..line.find(title).unwrap()].chars().count()
}

#[test]
fn columns_fit_the_widest_cells_even_when_only_the_oldest_row_has_them() {
    let ws = Ws::new();
    // The oldest session, ten days back, holds every widest cell: a date for ACTIVE, four
    // digits of messages, a twelve-step plan and a long model name. A streamed table lays
    // out its columns before reading it, last.
    let then = now_ms() - 10 * 24 * 3600 * 1000;
    let store = Store::open(ws.location().paths)
        .unwrap()
        .with_clock(Arc::new(move || then));
    let old = store
        .create_session(NewSession {
            title: "the oldest one".into(),
            model: "an-unusually-long-model-name-2025".into(),
            ..NewSession::default()
        })
        .unwrap();
    let batch: Vec<NewMessage> = (0..1200)
        .map(|i| NewMessage::text(Role::User, format!("message {i}")))
        .collect();
    store
        .append_messages(&old.id, &batch, &AppendMeta::default())
        .unwrap();
    let steps = (0..12)
        .map(|i| Step {
            id: format!("s{i}"),
            title: format!("step {i}"),
            depends_on: Vec::new(),
        })
        .collect();
    store
        .update_state(
            &old.id,
            &StateUpdate {
                plan: neocode::session::Change::Set(Plan { steps }),
                ..StateUpdate::default()
            },
        )
        .unwrap();
    drop(store);
    ws.session("a newer one", 2);
    ws.rich_session("the newest one");

    let streamed = ok_stdout(ws.cmd().arg("--list"));
    assert_eq!(
        streamed,
        ok_stdout(ws.cmd().args(["--list", "--limit", "10"]))
    );
    let lines: Vec<&str> = streamed.lines().collect();
    assert!(lines[0].starts_with("ID"), "{streamed}");
    assert!(
        lines[3].contains("an-unusually-long-model-name-2025") && lines[3].contains(" 1200 "),
        "the oldest row is last, in full:\n{streamed}"
    );
    let heading = title_column(&streamed, "TITLE");
    for title in ["the newest one", "a newer one", "the oldest one"] {
        assert_eq!(
            title_column(&streamed, title),
            heading,
            "{title:?} out of its column:\n{streamed}"
        );
    }
}

#[test]
fn the_streamed_list_prints_exactly_what_the_collected_list_prints() {
    let ws = Ws::new();
    assert_eq!(
        ok_stdout(ws.cmd().arg("--list")),
        ok_stdout(ws.cmd().args(["--list", "--limit", "5"])),
        "empty workspace"
    );
    assert_eq!(ok_stdout(ws.cmd().args(["--list", "--json"])), "[]\n");

    let rich = ws.rich_session("Fix the flaky login test");
    ws.session("Plain one", 3);
    ws.session("Долгий заголовок 長いタイトル with wide characters", 120);
    let rt = ws.sessions();
    // Ids sharing a long prefix widen the ID column beyond 8 characters.
    for id in ["0123456789ab-one", "0123456789ab-two"] {
        rt.new_session(NewSession {
            id: Some(id.into()),
            title: "prefix twin".into(),
            ..NewSession::default()
        })
        .unwrap();
    }
    rt.update_state(
        "0123456789ab-one",
        &StateUpdate {
            title: Some("evil \u{1b}]0;pwned\u{7} title".into()),
            ..StateUpdate::default()
        },
    )
    .unwrap();
    rt.fork(&rich, None).unwrap();

    let streamed = ok_stdout(ws.cmd().arg("--list"));
    let collected = ok_stdout(ws.cmd().args(["--list", "--limit", "1000"]));
    assert_eq!(streamed, collected);
    let lines: Vec<&str> = streamed.lines().collect();
    assert_eq!(lines.len(), 1 + 6, "{streamed}");
    assert!(
        lines.iter().any(|l| l.starts_with("0123456789ab-o "))
            && lines.iter().any(|l| l.starts_with("0123456789ab-t ")),
        "id column wide enough to tell the twins apart:\n{streamed}"
    );
    assert!(streamed.contains("↳ Fork of Fix the flaky"), "{streamed}");
    assert_harmless(streamed.as_bytes());

    let streamed = ok_stdout(ws.cmd().args(["--list", "--json"]));
    let collected = ok_stdout(ws.cmd().args(["--list", "--json", "--limit", "1000"]));
    assert_eq!(streamed, collected);
    let v: serde_json::Value = serde_json::from_str(&streamed).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 6);
}

#[test]
fn all_workspaces_streamed_prints_what_the_collected_lists_print() {
    let ws = Ws::new();
    let all = |extra: &[&str]| {
        let mut c = ws.cmd();
        c.args(["--list", "--all-workspaces"]).args(extra);
        ok_stdout(&mut c)
    };
    assert_eq!(all(&[]), all(&["--limit", "1000"]), "no workspace yet");
    ws.session("First workspace session", 2);
    let loc = ws.sibling("other");
    let rt = neocode::runtime::Sessions::open(&loc).unwrap();
    for t in ["Other one", "Other two"] {
        rt.new_session(NewSession {
            title: t.into(),
            ..NewSession::default()
        })
        .unwrap();
    }
    let streamed = all(&[]);
    assert_eq!(streamed, all(&["--limit", "1000"]));
    assert!(streamed.contains("(2 sessions)") && streamed.contains("(1 session)"));
    let json = all(&["--json"]);
    assert_eq!(json, all(&["--json", "--limit", "1000"]));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 3);
    assert!(v[0]["workspace"].is_string());
}

#[test]
fn sessions_active_in_the_same_millisecond_list_in_the_same_order_everywhere() {
    let ws = Ws::new();
    let then = now_ms() - 60_000;
    let store = Store::open(ws.location().paths)
        .unwrap()
        .with_clock(Arc::new(move || then));
    let mut ids = Vec::new();
    for i in 0..6 {
        let h = store
            .create_session(NewSession {
                title: format!("tied {i}"),
                ..NewSession::default()
            })
            .unwrap();
        ids.push(h.id);
    }
    // A fork made in the same millisecond is inserted last: it is the newest of the tie.
    let fork = store.fork(&ids[0], None).unwrap();
    drop(store);
    let streamed = ok_stdout(ws.cmd().args(["--list", "--json"]));
    assert_eq!(
        streamed,
        ok_stdout(ws.cmd().args(["--list", "--json", "--limit", "100"]))
    );
    let v: serde_json::Value = serde_json::from_str(&streamed).unwrap();
    let order = list_ids(&v);
    let mut expected: Vec<&str> = ids.iter().map(String::as_str).rev().collect();
    expected.insert(0, &fork.id);
    assert_eq!(order, expected, "ties go to the later-created session");
    assert_eq!(
        ok_stdout(ws.cmd().arg("--list")),
        ok_stdout(ws.cmd().args(["--list", "--limit", "100"]))
    );
}

/// A session's dollars as its runs leave them: the ledger, written with the turn's state.
fn spend(ws: &Ws, id: &str, cost: Option<f64>) {
    let mut ledger = neocode::session::RuntimeLedger::default();
    ledger.usage.input_tokens = 1000;
    ledger.usage.output_tokens = 100;
    ledger.usage.cost_usd = cost;
    ws.sessions()
        .update_state(
            id,
            &StateUpdate {
                ledger: neocode::session::Change::Set(ledger),
                ..StateUpdate::default()
            },
        )
        .unwrap();
}

#[test]
fn the_list_shows_dollars_per_session_and_leaves_unpriced_ones_blank() {
    let ws = Ws::new();
    let unpriced = ws.session("a local model", 1);
    spend(&ws, &unpriced, None);
    // No session has a price yet: no COST column at all.
    let table = ok_stdout(ws.cmd().arg("--list"));
    assert!(!table.contains("COST"), "{table}");
    let priced = ws.session("a priced one", 1);
    spend(&ws, &priced, Some(1.2534));
    let big = ws.session("a costly one", 1);
    spend(&ws, &big, Some(12_345.0));

    let table = ok_stdout(ws.cmd().arg("--list"));
    assert_eq!(
        table,
        ok_stdout(ws.cmd().args(["--list", "--limit", "10"])),
        "streamed and collected tables agree"
    );
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].contains("TOKENS IN/OUT     COST  PLAN"), "{table}");
    let row = |title: &str| *lines.iter().find(|l| l.contains(title)).unwrap();
    assert!(row("a priced one").contains("1k/100    $1.25  "), "{table}");
    assert!(row("a costly one").contains("1k/100   $12.3k  "), "{table}");
    // Tokens only: the cell is blank, never $0.00.
    assert!(
        row("a local model").contains("1k/100           "),
        "{table}"
    );
    assert!(!row("a local model").contains('$'), "{table}");
    let heading = title_column(&table, "TITLE");
    for title in ["a priced one", "a costly one", "a local model"] {
        assert_eq!(title_column(&table, title), heading, "{table}");
    }

    let json = ok_stdout(ws.cmd().args(["--list", "--json"]));
    assert_eq!(
        json,
        ok_stdout(ws.cmd().args(["--list", "--json", "--limit", "10"]))
    );
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let cost = |id: &str| {
        v.as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .unwrap()["cost_usd"]
            .clone()
    };
    assert_eq!(cost(&priced), 1.2534);
    assert_eq!(cost(&big), 12_345.0);
    assert_eq!(cost(&unpriced), serde_json::Value::Null);
}
