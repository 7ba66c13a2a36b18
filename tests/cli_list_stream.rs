//! `neocode --list` without `--limit` streams its rows from the store (two passes for the
//! table, one for JSON) instead of collecting them: its output must be byte for byte what the
//! collected list (`--limit` larger than the workspace) prints.

mod cli_support;

use cli_support::*;
use neocode::session::{NewSession, StateUpdate};

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
    let rt = ws.rt();
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
    let (_other, loc) = ws.sibling();
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
