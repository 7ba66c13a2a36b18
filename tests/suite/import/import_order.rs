//! Links between sessions survive any import order (#8): a fork or sub-agent imported before
//! its parent keeps the parent id as written, and importing the parent later changes nothing
//! about it. Also: the schema 3 migration keeps every row and link of an older database.

use crate::support::Env;
use std::path::Path;

use neocode::runtime::Sessions;
use neocode::session::file::SessionFile;
use neocode::session::{AppendMeta, NewMessage, Role, SCHEMA_VERSION, Store};
use rusqlite::Connection;

/// Sessions on workspace `tmp/<name>` under the env's one home.
fn sessions(t: &Env, name: &str) -> Sessions {
    Sessions::open(&t.sibling(name)).unwrap()
}

/// A parent, its fork, the fork's fork, and a sub-agent of the parent, as session files.
fn family(t: &Env) -> Vec<SessionFile> {
    let rt = sessions(t, "origin");
    let p = crate::support::titled(&rt, "parent");
    let msgs: Vec<NewMessage> = (0..4)
        .map(|i| {
            NewMessage::text(
                if i % 2 == 0 {
                    Role::User
                } else {
                    Role::Assistant
                },
                format!("m{i}"),
            )
        })
        .collect();
    rt.append(&p.id, &msgs, &AppendMeta::default()).unwrap();
    let f = rt.fork(&p.id, Some(2)).unwrap();
    rt.append(
        &f.id,
        &[NewMessage::text(Role::User, "in the fork")],
        &AppendMeta::default(),
    )
    .unwrap();
    let g = rt.fork(&f.id, None).unwrap();
    let mut docs: Vec<SessionFile> = [&p.id, &f.id, &g.id]
        .iter()
        .map(|id| rt.export(id).unwrap())
        .collect();
    let mut sub = rt.export(&p.id).unwrap();
    sub.session.id = "subagent-of-parent".into();
    sub.session.subagent_of = Some(p.id);
    docs.push(sub);
    docs
}

fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![vec![]];
    }
    let mut out = Vec::new();
    for p in permutations(n - 1) {
        for i in 0..=p.len() {
            let mut q = p.clone();
            q.insert(i, n - 1);
            out.push(q);
        }
    }
    out
}

#[test]
fn every_import_order_round_trips_parent_and_subagent_links() {
    let t = Env::new();
    let docs = family(&t);
    assert_eq!(
        docs[1].session.parent_id.as_deref(),
        Some(docs[0].session.id.as_str())
    );
    assert_eq!(
        docs[2].session.parent_id.as_deref(),
        Some(docs[1].session.id.as_str())
    );
    let orders = permutations(docs.len());
    assert_eq!(orders.len(), 24);
    for (n, order) in orders.iter().enumerate() {
        let rt = sessions(&t, &format!("ws{n}"));
        for &i in order {
            rt.import(&docs[i], false).unwrap();
            // Already here: the link is kept even while its parent is missing.
            let h = rt.header(&docs[i].session.id).unwrap();
            assert_eq!(h.parent_id, docs[i].session.parent_id, "order {order:?}");
            assert_eq!(
                h.subagent_of, docs[i].session.subagent_of,
                "order {order:?}"
            );
        }
        for d in &docs {
            assert_eq!(&rt.export(&d.session.id).unwrap(), d, "order {order:?}");
        }
    }
}

#[test]
fn deleting_a_parent_keeps_the_childs_link() {
    let t = Env::new();
    let docs = family(&t);
    let rt = sessions(&t, "ws");
    for d in &docs {
        rt.import(d, false).unwrap();
    }
    rt.delete(&docs[0].session.id).unwrap();
    assert_eq!(
        rt.header(&docs[1].session.id).unwrap().parent_id,
        docs[1].session.parent_id
    );
    assert_eq!(rt.export(&docs[1].session.id).unwrap(), docs[1]);
    // And the file still imports elsewhere with its parent id as written.
    let other = sessions(&t, "other");
    other.import(&docs[1], false).unwrap();
    assert_eq!(other.export(&docs[1].session.id).unwrap(), docs[1]);
}

#[test]
fn a_version_2_database_migrates_keeping_rows_order_and_links() {
    let t = Env::new();
    let paths = t.paths();
    {
        t.database_of_version(
            2,
            r#"
            INSERT INTO sessions (id, title, created_at_ms, updated_at_ms, last_seq, message_count)
                VALUES ('p', 'parent', 1, 5, 2, 2);
            INSERT INTO sessions (id, title, created_at_ms, updated_at_ms, parent_id, fork_seq, last_seq, message_count)
                VALUES ('f', 'fork', 2, 5, 'p', 1, 1, 1);
            INSERT INTO messages (id, session_id, seq, role, parts_json, created_at_ms, input_tokens, fts_id)
                VALUES (1, 'p', 1, 'user', '[{"kind":"text","text":"okapi"}]', 1, 7, 1),
                       (2, 'p', 2, 'assistant', '[{"kind":"text","text":"zebu"}]', 1, 0, 2),
                       (3, 'f', 1, 'user', '[{"kind":"text","text":"okapi"}]', 1, 7, 1);
            INSERT INTO message_fts (rowid, body) VALUES (1, 'okapi'), (2, 'zebu');
            "#,
        );
    }
    let s = Store::open(paths.clone()).unwrap();
    let c = Connection::open(paths.db()).unwrap();
    let uv: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(uv, SCHEMA_VERSION);
    // Rowids (the list's tie-break order) are kept.
    let rows: Vec<(i64, String)> = c
        .prepare("SELECT rowid, id FROM sessions ORDER BY rowid")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(rows, [(1, "p".to_string()), (2, "f".to_string())]);
    let idx: Vec<String> = c
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'sessions' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    for want in [
        "sessions_by_activity",
        "sessions_by_key",
        "sessions_by_parent",
    ] {
        assert!(idx.iter().any(|i| i == want), "{want} missing: {idx:?}");
    }
    assert_eq!(s.load_session("p").unwrap().messages.len(), 2);
    let f = s.load_session("f").unwrap();
    assert_eq!(f.header.parent_id.as_deref(), Some("p"));
    assert_eq!(f.messages[0].usage.input_tokens, 7);
    assert_eq!(s.search("okapi", 10).unwrap().len(), 2);
    // Messages still cascade with their session; the fork keeps its parent id.
    s.delete("p").unwrap();
    let left: i64 = c
        .query_row(
            "SELECT count(*) FROM messages WHERE session_id = 'p'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(left, 0);
    assert_eq!(s.load_header("f").unwrap().parent_id.as_deref(), Some("p"));
    assert_eq!(s.search("okapi", 10).unwrap().len(), 1);
    assert!(Path::new(&paths.db()).exists());
}
