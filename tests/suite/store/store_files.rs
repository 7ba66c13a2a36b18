//! The store's files: PRAGMAs and permissions read back, atomic appends, corrupt and too-new
//! databases left untouched, migrations, and asset paths that try to leave the workspace.

use crate::support::Env;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use neocode::session::testing::MIGRATIONS;
use neocode::session::{
    AppendMeta, NewMessage, NewSession, Role, SCHEMA_VERSION, Store, StoreError, Usage,
};
use rusqlite::Connection;

fn named(id: &str) -> NewSession {
    NewSession {
        id: Some(id.to_string()),
        title: format!("title of {id}"),
        ..NewSession::default()
    }
}

fn msg(role: Role, text: &str, tokens: u64) -> NewMessage {
    NewMessage {
        usage: Usage {
            input_tokens: tokens,
            output_tokens: tokens,
        },
        ..NewMessage::text(role, text)
    }
}

/// Creates session `id` holding one user message `text`.
fn one_user_message(s: &Store, id: &str, text: &str) {
    s.create_session(named(id)).unwrap();
    s.append_messages(id, &[msg(Role::User, text, 0)], &AppendMeta::default())
        .unwrap();
}

fn mode(p: &Path) -> u32 {
    fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o777
}

fn plain(p: &Path) -> Connection {
    Connection::open(p).unwrap()
}

fn schema_of(c: &Connection) -> Vec<(String, String, String, Option<String>)> {
    let mut st = c
        .prepare("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name")
        .unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

#[test]
fn pragmas_read_back_from_store_and_plain_connections() {
    let t = Env::new();
    let s = t.store();
    let p: std::collections::HashMap<String, String> = s.pragmas().unwrap().into_iter().collect();
    assert_eq!(p["journal_mode"], "wal");
    assert_eq!(p["synchronous"], "1", "NORMAL");
    assert_eq!(p["foreign_keys"], "1");
    assert_eq!(p["busy_timeout"], "5000");
    assert_eq!(p["user_version"], SCHEMA_VERSION.to_string());

    // Persistent settings, seen by any connection to the file.
    let c = plain(&s.paths().db());
    let jm: String = c
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(jm, "wal");
    let uv: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(uv, SCHEMA_VERSION);

    // Connections opened later by the pool (threads force extra ones) carry the same PRAGMAs.
    let handles: Vec<_> = (0..6)
        .map(|_| {
            let s = s.clone();
            std::thread::spawn(move || {
                for _ in 0..20 {
                    let p: std::collections::HashMap<String, String> =
                        s.pragmas().unwrap().into_iter().collect();
                    assert_eq!(
                        (
                            p["journal_mode"].as_str(),
                            p["synchronous"].as_str(),
                            p["foreign_keys"].as_str(),
                            p["busy_timeout"].as_str()
                        ),
                        ("wal", "1", "1", "5000")
                    );
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn folders_are_0700_and_files_0600_including_wal_and_shm() {
    let t = Env::new();
    // A permissive umask would make the default 0644/0755; the store must not depend on it.
    let s = t.store();
    one_user_message(&s, "p", "hi");
    s.save_asset("p", Some("img"), "image/png", b"png bytes")
        .unwrap();
    let dir = s.paths().dir.clone();
    assert_eq!(mode(&t.tmp.path().join("home")), 0o700);
    assert_eq!(mode(&t.tmp.path().join("home/projects")), 0o700);
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&dir.join("assets")), 0o700);
    assert_eq!(mode(&dir.join("assets/p")), 0o700);
    for f in [
        "session.db",
        "session.db-wal",
        "session.db-shm",
        "assets/p/img.bin",
    ] {
        assert_eq!(mode(&dir.join(f)), 0o600, "{f}");
    }
    // No temp file left next to the asset.
    let names: Vec<String> = fs::read_dir(dir.join("assets/p"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["img.bin"]);
}

#[test]
fn an_append_that_fails_half_way_leaves_nothing() {
    let t = Env::new();
    let s = t.store();
    s.create_session(named("a")).unwrap();
    s.append_messages(
        "a",
        &[msg(Role::User, "first message", 5)],
        &AppendMeta {
            model: Some("m1".into()),
            ..AppendMeta::default()
        },
    )
    .unwrap();
    let before = s.load_session("a").unwrap();
    let before_summary = s.summary("a").unwrap();

    // Make the insert of seq 3 fail: the batch writes 2 and 3 and 4.
    plain(&s.paths().db())
        .execute_batch(
            "CREATE TRIGGER fail_seq_3 BEFORE INSERT ON messages WHEN NEW.seq = 3
             BEGIN SELECT RAISE(ABORT, 'injected failure'); END;",
        )
        .unwrap();
    let err = s
        .append_messages(
            "a",
            &[
                msg(Role::Assistant, "quetzalcoatl reply", 7),
                msg(Role::User, "quetzalcoatl again", 7),
                msg(Role::Assistant, "quetzalcoatl third", 7),
            ],
            &AppendMeta {
                model: Some("m2".into()),
                ..AppendMeta::default()
            },
        )
        .unwrap_err();
    assert!(err.to_string().contains("injected failure"), "{err}");

    let after = s.load_session("a").unwrap();
    assert_eq!(after, before, "session changed by a failed append");
    assert_eq!(s.summary("a").unwrap(), before_summary);
    assert!(s.search("quetzalcoatl", 10).unwrap().is_empty());
    let rows: i64 = plain(&s.paths().db())
        .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 1);

    // After the cause is gone the same batch gets the seqs the failed one would have had.
    plain(&s.paths().db())
        .execute_batch("DROP TRIGGER fail_seq_3")
        .unwrap();
    let seqs = s
        .append_messages(
            "a",
            &[msg(Role::Assistant, "ok", 1)],
            &AppendMeta::default(),
        )
        .unwrap();
    assert_eq!(seqs, [2]);
}

#[test]
fn corrupt_json_in_a_column_names_the_column() {
    let t = Env::new();
    let s = t.store();
    one_user_message(&s, "j", "hello");
    let db = s.paths().db();
    plain(&db)
        .execute("UPDATE sessions SET plan_json = '{bad' WHERE id = 'j'", [])
        .unwrap();
    for r in [
        s.load_header("j").map(|_| ()),
        s.load_session("j").map(|_| ()),
    ] {
        match r {
            Err(e @ StoreError::BadColumn { column, .. }) => {
                assert_eq!(column, "plan_json");
                let text = e.to_string();
                assert!(text.contains("plan_json") && text.contains("j"), "{text}");
            }
            other => panic!("expected BadColumn, got {other:?}"),
        }
    }
    // The list reads the header table only and still works.
    assert_eq!(s.count().unwrap(), 1);
    assert_eq!(s.summary("j").unwrap().message_count, 1);

    plain(&db)
        .execute_batch(
            "UPDATE sessions SET plan_json = NULL WHERE id = 'j';
             UPDATE messages SET parts_json = 'not json' WHERE session_id = 'j';",
        )
        .unwrap();
    match s.load_session("j") {
        Err(StoreError::BadColumn { column, .. }) => assert_eq!(column, "parts_json"),
        other => panic!("expected BadColumn, got {other:?}"),
    }
    plain(&db)
        .execute_batch(
            "UPDATE messages SET parts_json = '[]' WHERE session_id = 'j';
             UPDATE sessions SET status = 'exploded' WHERE id = 'j';",
        )
        .unwrap();
    match s.load_header("j") {
        Err(StoreError::BadColumn { column, .. }) => assert_eq!(column, "status"),
        other => panic!("expected BadColumn, got {other:?}"),
    }
}

#[test]
fn a_garbage_file_is_reported_corrupt_and_left_byte_identical() {
    let t = Env::new();
    let paths = t.paths();
    paths.create_dirs().unwrap();
    let garbage: Vec<u8> = (0..8192u32).map(|i| (i * 7 + 13) as u8).collect();
    fs::write(paths.db(), &garbage).unwrap();
    for r in [
        Store::open(paths.clone()).map(|_| ()),
        Store::open_existing(paths.clone()).map(|_| ()),
    ] {
        match r {
            Err(e @ StoreError::Damaged { .. }) => {
                assert!(e.to_string().contains("session.db"), "{e}");
                assert!(e.to_string().contains("neocode doctor"), "{e}");
            }
            other => panic!("expected Damaged, got {other:?}"),
        }
    }
    assert_eq!(fs::read(paths.db()).unwrap(), garbage);
}

#[test]
fn a_database_from_the_future_is_refused_and_untouched() {
    let t = Env::new();
    let paths = t.paths();
    {
        let s = Store::open(paths.clone()).unwrap();
        s.create_session(named("old")).unwrap();
    }
    {
        let c = plain(&paths.db());
        c.pragma_update(None, "user_version", SCHEMA_VERSION + 7)
            .unwrap();
    }
    let bytes = fs::read(paths.db()).unwrap();
    for r in [
        Store::open(paths.clone()).map(|_| ()),
        Store::open_existing(paths.clone()).map(|_| ()),
    ] {
        match r {
            Err(
                e @ StoreError::TooNew {
                    found, supported, ..
                },
            ) => {
                assert_eq!((found, supported), (SCHEMA_VERSION + 7, SCHEMA_VERSION));
                assert!(e.to_string().contains("upgrade neocode"), "{e}");
            }
            other => panic!("expected TooNew, got {other:?}"),
        }
    }
    assert!(fs::read(paths.db()).unwrap() == bytes, "session.db changed");
}

#[test]
fn an_empty_file_at_version_0_migrates_to_the_current_schema() {
    let t = Env::new();
    let paths = t.paths();
    paths.create_dirs().unwrap();
    fs::write(paths.db(), b"").unwrap();
    let s = Store::open(paths.clone()).unwrap();
    s.create_session(named("m")).unwrap();
    let c = plain(&paths.db());
    let uv: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(uv, SCHEMA_VERSION);
    let names: Vec<String> = schema_of(&c)
        .into_iter()
        .filter(|r| r.0 == "table")
        .map(|r| r.1)
        .collect();
    for t in [
        "workspace",
        "sessions",
        "messages",
        "message_fts",
        "session_assets",
        "step_updates",
    ] {
        assert!(names.iter().any(|n| n == t), "table {t} missing: {names:?}");
    }
    assert_eq!(MIGRATIONS.len() as i64, SCHEMA_VERSION);
}

#[test]
fn migrations_step_by_step_give_the_same_schema_as_a_fresh_open() {
    let t = Env::new();
    let fresh = t.store();
    let fresh_schema = schema_of(&plain(&fresh.paths().db()));

    let stepwise = t.tmp.path().join("stepwise.db");
    let c = plain(&stepwise);
    neocode::session::testing::register_functions(&c).unwrap();
    for (v, sql) in MIGRATIONS.iter().enumerate() {
        let tx = c.unchecked_transaction().unwrap();
        tx.execute_batch(sql).unwrap();
        tx.pragma_update(None, "user_version", v as i64 + 1)
            .unwrap();
        tx.commit().unwrap();
        let uv: i64 = c
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(uv, v as i64 + 1);
    }
    assert_eq!(schema_of(&c), fresh_schema);
}

#[test]
fn asset_ids_that_are_paths_are_refused() {
    let t = Env::new();
    let s = t.store();
    s.create_session(named("s")).unwrap();
    for bad in [
        "../x",
        "../../etc/passwd",
        "a/b",
        "/etc/passwd",
        "",
        ".",
        "..",
        "a.b",
    ] {
        assert!(
            matches!(
                s.save_asset("s", Some(bad), "text/plain", b"x"),
                Err(StoreError::InvalidId { .. })
            ),
            "save accepted asset id {bad:?}"
        );
        assert!(
            matches!(s.open_asset("s", bad), Err(StoreError::InvalidId { .. })),
            "open accepted asset id {bad:?}"
        );
        assert!(matches!(
            s.save_asset(bad, Some("ok"), "text/plain", b"x"),
            Err(StoreError::InvalidId { .. })
        ));
    }
    assert!(s.list_assets("s").unwrap().is_empty());
    assert!(!s.paths().dir.join("x.bin").exists());
    // An unknown session gets no file either.
    assert!(matches!(
        s.save_asset("nobody", Some("a"), "text/plain", b"x"),
        Err(StoreError::NotFound { .. })
    ));
    assert!(!s.paths().assets().join("nobody").exists());
}

#[test]
fn stored_paths_leaving_the_workspace_folder_are_refused() {
    let t = Env::new();
    let s = t.store();
    s.create_session(named("s")).unwrap();
    let outside = t.tmp.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    let secret_path = outside.join("secret.txt");
    fs::write(&secret_path, b"TOP SECRET").unwrap();
    let db = s.paths().db();

    let rewrites = [
        // From <home>/projects/<hash>: up three levels is the temp dir.
        "../../../outside/secret.txt".to_string(),
        "assets/../../../../outside/secret.txt".to_string(),
        secret_path.to_string_lossy().into_owned(),
        "../../etc/passwd".to_string(),
        "/etc/passwd".to_string(),
    ];
    for (i, rel) in rewrites.iter().enumerate() {
        let id = format!("a{i}");
        s.save_asset("s", Some(&id), "text/plain", b"inside")
            .unwrap();
        plain(&db)
            .execute(
                "UPDATE session_assets SET relative_path = ?1 WHERE id = ?2",
                [rel.as_str(), id.as_str()],
            )
            .unwrap();
        match s.open_asset("s", &id) {
            Err(StoreError::PathEscape(a)) => assert_eq!(a, id),
            Ok((_, bytes)) => panic!("{rel}: read {:?}", String::from_utf8_lossy(&bytes)),
            Err(e) => panic!("{rel}: expected PathEscape, got {e}"),
        }
        // Deleting it must not touch the outside file.
        s.delete_asset("s", &id).unwrap();
        assert_eq!(fs::read(&secret_path).unwrap(), b"TOP SECRET");
    }

    // An asset file replaced by a symlink pointing outside.
    s.save_asset("s", Some("link"), "text/plain", b"inside")
        .unwrap();
    let file = s.paths().assets().join("s/link.bin");
    fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink(&secret_path, &file).unwrap();
    match s.open_asset("s", "link") {
        Err(StoreError::PathEscape(_)) => {}
        Ok((_, bytes)) => panic!(
            "read through symlink: {:?}",
            String::from_utf8_lossy(&bytes)
        ),
        Err(e) => panic!("expected PathEscape, got {e}"),
    }
    // Forking a session whose asset escapes is refused too (a message references it).
    s.append_messages(
        "s",
        &[NewMessage {
            role: Some(Role::User),
            parts: vec![neocode::session::Part::Image {
                asset_id: "link".into(),
                mime_type: None,
            }],
            ..NewMessage::default()
        }],
        &AppendMeta::default(),
    )
    .unwrap();
    assert!(matches!(s.fork("s", None), Err(StoreError::PathEscape(_))));
    assert_eq!(s.count().unwrap(), 1, "no half-made fork");

    // The session's asset folder replaced by a symlink to an outside folder.
    s.create_session(named("d")).unwrap();
    s.save_asset("d", Some("x"), "text/plain", b"inside")
        .unwrap();
    let ddir = s.paths().assets().join("d");
    fs::remove_dir_all(&ddir).unwrap();
    fs::write(outside.join("x.bin"), b"OUTSIDE X").unwrap();
    std::os::unix::fs::symlink(&outside, &ddir).unwrap();
    assert!(matches!(
        s.open_asset("d", "x"),
        Err(StoreError::PathEscape(_))
    ));
    // Deleting the session removes the link, never what it points to.
    s.delete("d").unwrap();
    assert_eq!(fs::read(outside.join("x.bin")).unwrap(), b"OUTSIDE X");
    assert_eq!(fs::read(&secret_path).unwrap(), b"TOP SECRET");
    assert!(fs::symlink_metadata(&ddir).is_err());
}

#[test]
fn an_asset_over_the_limit_is_refused_and_leaves_no_file() {
    let t = Env::new();
    let s = t.store();
    s.create_session(named("big")).unwrap();
    let limit = s.asset_limit();
    let data = vec![0u8; limit as usize + 1];
    match s.save_asset("big", Some("huge"), "application/octet-stream", &data) {
        Err(StoreError::TooLarge { size, limit: l, .. }) => {
            assert_eq!((size, l), (limit + 1, limit))
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    let dir = s.paths().assets().join("big");
    let left: Vec<_> = fs::read_dir(&dir)
        .map(|rd| rd.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "files left behind: {left:?}");
    assert!(s.list_assets("big").unwrap().is_empty());
    assert_eq!(s.summary("big").unwrap().asset_count, 0);
    // Exactly at the limit is fine.
    let data = vec![1u8; limit as usize];
    assert_eq!(
        s.save_asset("big", Some("edge"), "application/octet-stream", &data)
            .unwrap()
            .size_bytes,
        limit
    );
    // Saving the same id twice is refused and keeps the first file.
    assert!(matches!(
        s.save_asset("big", Some("edge"), "text/plain", b"small"),
        Err(StoreError::AlreadyExists(_))
    ));
    assert_eq!(s.open_asset("big", "edge").unwrap().1.len() as u64, limit);
}

#[test]
fn a_version_1_database_with_data_migrates_and_stays_searchable() {
    let t = Env::new();
    let paths = t.paths();
    {
        // What the first release wrote: the search row's rowid is the message id.
        t.database_of_version(
            1,
            r#"
            INSERT INTO sessions (id, title, created_at_ms, updated_at_ms, last_seq, message_count)
                VALUES ('old', 'from v1', 1, 2, 3, 3);
            INSERT INTO messages (id, session_id, seq, role, parts_json, created_at_ms)
                VALUES (1, 'old', 1, 'user', '[{"kind":"text","text":"armadillo one"}]', 1),
                       (2, 'old', 2, 'user', '[{"kind":"image","asset_id":"a"}]', 1),
                       (3, 'old', 3, 'assistant', '[{"kind":"text","text":"armadillo three"}]', 2);
            INSERT INTO message_fts (rowid, body) VALUES (1, 'armadillo one'), (3, 'armadillo three');
            "#,
        );
    }
    let s = Store::open(paths.clone()).unwrap();
    let uv: i64 = plain(&paths.db())
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(uv, SCHEMA_VERSION);
    let seqs = |q: &str| -> Vec<(String, i64)> {
        let mut v: Vec<_> = s
            .search(q, 10)
            .unwrap()
            .into_iter()
            .map(|h| (h.session_id, h.seq))
            .collect();
        v.sort();
        v
    };
    assert_eq!(seqs("armadillo"), [("old".into(), 1), ("old".into(), 3)]);
    assert_eq!(s.load_session("old").unwrap().messages.len(), 3);
    // New writes after the migration: append, fork, search, delete.
    s.append_messages(
        "old",
        &[NewMessage::text(Role::User, "armadillo four")],
        &AppendMeta::default(),
    )
    .unwrap();
    let f = s.fork("old", Some(3)).unwrap();
    assert_eq!(seqs("armadillo").len(), 3 + 2);
    s.delete("old").unwrap();
    assert_eq!(
        seqs("armadillo"),
        [(f.id.clone(), 1), (f.id.clone(), 3)],
        "the fork keeps its text"
    );
    s.delete(&f.id).unwrap();
    let left: i64 = plain(&paths.db())
        .query_row("SELECT count(*) FROM message_fts", [], |r| r.get(0))
        .unwrap();
    assert_eq!(left, 0, "index rows left without messages");
}
