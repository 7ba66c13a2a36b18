//! End-to-end tests of the real binary: `--list`, id resolution, help, version, completions.

use crate::support::cli::*;
use crate::support::integrity_ok;
use crate::support::text::{has, starts};
use assert_cmd::Command;
use neocode::session::NewSession;
use std::path::Path;

/// Whether the folder `dir` holds nothing.
fn is_empty(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().next().is_none()
}

#[test]
fn list_prints_a_table_newest_activity_first() {
    let ws = Ws::new();
    let old = ws.session("Older session", 1);
    let rich = ws.rich_session("Fix the flaky login test");
    let out = ok_stdout(ws.cmd().arg("--list"));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    for h in [
        "ID",
        "ACTIVE",
        "MSGS",
        "TOKENS IN/OUT",
        "PLAN",
        "MODEL",
        "TITLE",
    ] {
        assert!(lines[0].contains(h), "header lacks {h}: {}", lines[0]);
    }
    let first: Vec<&str> = lines[1].split_whitespace().collect();
    // Short ids: at least 8 characters, longer when needed to stay unique in the list.
    assert!(
        first[0].len() >= 8 && rich.starts_with(first[0]),
        "{}",
        first[0]
    );
    assert!(!old.starts_with(first[0]));
    assert_eq!(&first[1..3], ["just", "now"]);
    assert_eq!(first[3], "4", "messages");
    assert_eq!(first[4], "12.3k/678", "tokens");
    assert_eq!(&first[5..7], ["1/3", "✗1"], "plan");
    assert_eq!(first[7], "gpt-rich");
    assert!(
        lines[1].ends_with("Fix the flaky login test"),
        "{}",
        lines[1]
    );
    let second: Vec<&str> = lines[2].split_whitespace().collect();
    assert!(old.starts_with(second[0]) && !rich.starts_with(second[0]));
    assert_eq!(second[0].len(), first[0].len());
    assert_eq!(second[3], "2");
    assert_eq!(second[4], "100/10");
    assert_eq!(second[5], "-");
    assert!(lines[2].ends_with("Older session"));
    assert!(!out.contains('\x1b'), "no colour on a pipe");
}

#[test]
fn list_json_has_the_stable_keys_and_values() {
    let ws = Ws::new();
    let id = ws.rich_session("Rich one");
    let v = ok_json(ws.cmd().args(["--list", "--json"]));
    let arr = v.as_array().unwrap();
    assert_eq!(arr.len(), 1);
    let row = arr[0].as_object().unwrap();
    let mut keys: Vec<&str> = row.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "asset_count",
            "branch",
            "cost_usd",
            "created_at",
            "id",
            "message_count",
            "model",
            "parent_id",
            "plan",
            "profile",
            "provider",
            "source",
            "status",
            "subagent_of",
            "title",
            "tokens",
            "updated_at",
            "workdir"
        ]
    );
    assert_eq!(row["id"], id.as_str());
    assert_eq!(row["title"], "Rich one");
    assert_eq!(row["message_count"], 4);
    assert_eq!(
        row["tokens"],
        serde_json::json!({"input": 12345, "output": 678})
    );
    assert_eq!(row["model"], "gpt-rich");
    assert_eq!(row["provider"], "openai");
    // No model call with a price, no profile: null, never a made-up dollar.
    assert_eq!(row["cost_usd"], serde_json::Value::Null);
    assert_eq!(row["profile"], serde_json::Value::Null);
    assert_eq!(row["status"], "created");
    assert!(row["parent_id"].is_null());
    assert_eq!(
        row["plan"],
        serde_json::json!({"done": 1, "failed": 1, "total": 3})
    );
    assert_eq!(row["asset_count"], 1);
    assert_eq!(row["workdir"], ws.workdir.to_string_lossy().as_ref());
    for k in ["created_at", "updated_at"] {
        let t = row[k].as_str().unwrap();
        chrono::DateTime::parse_from_rfc3339(t).unwrap_or_else(|e| panic!("{k} {t}: {e}"));
    }
}

#[test]
fn list_limit_keeps_the_newest() {
    let ws = Ws::new();
    ws.session("one", 0);
    ws.session("two", 0);
    let newest = ws.session("three", 0);
    let v = ok_json(ws.cmd().args(["--list", "--json", "--limit", "1"]));
    assert_eq!(v.as_array().unwrap().len(), 1);
    assert_eq!(v[0]["id"], newest.as_str());
    let out = ok_stdout(ws.cmd().args(["--list", "--limit", "2"]));
    assert_eq!(out.lines().count(), 3, "{out}");
}

#[test]
fn empty_workspace_says_so_and_creates_nothing() {
    let ws = Ws::new();
    let out = ok_stdout(ws.cmd().arg("--list"));
    assert_eq!(out.lines().count(), 1);
    assert!(out.starts_with("no sessions yet in "), "{out}");
    assert!(out.contains(&*ws.workdir.to_string_lossy()));
    assert!(out.contains("neocode"));
    let v = ok_json(ws.cmd().args(["--list", "--json"]));
    assert_eq!(v, serde_json::json!([]));
    assert!(is_empty(ws.home.as_path()), "the home must stay empty");
    // Reading commands on a fresh workspace do not create it either.
    let (code, _, err) = fail(ws.cmd().args(["show", "last"]));
    assert_eq!(code, 2, "{err}");
    let (code, _, _) = fail(ws.cmd().args(["--resume", "abc"]));
    assert_eq!(code, 2);
    ok_stdout(ws.cmd().args(["search", "anything"]));
    assert!(is_empty(ws.home.as_path()));
}

#[test]
fn all_workspaces_lists_each_root() {
    let ws = Ws::new();
    let a = ws.session("in workspace A", 1);
    let loc_b = ws.sibling("b");
    let rt_b = neocode::runtime::Sessions::open(&loc_b).unwrap();
    let b = crate::support::titled(&rt_b, "in workspace B").id;
    let v = ok_json(ws.cmd().args(["--list", "--json", "--all-workspaces"]));
    let arr = v.as_array().unwrap();
    assert_eq!(arr.len(), 2);
    let find = |id: &str| arr.iter().find(|r| r["id"] == id).unwrap().clone();
    assert_eq!(find(&a)["workspace"], ws.workdir.to_string_lossy().as_ref());
    assert_eq!(
        find(&b)["workspace"],
        loc_b.root().to_string_lossy().as_ref()
    );
    let out = ok_stdout(ws.cmd().args(["--list", "--all-workspaces"]));
    has(&out, &format!("{}  (1 session)", ws.workdir.display()));
    has(&out, &format!("{}  (1 session)", loc_b.root().display()));
    assert!(out.contains("in workspace A") && out.contains("in workspace B"));
}

#[test]
fn ids_resolve_by_full_id_prefix_and_last() {
    let ws = Ws::new();
    let first = ws.session("first", 1);
    let last = ws.session("second", 1);
    let title_of = |key: &str| ok_json(ws.cmd().args(["show", key, "--json"]))["title"].clone();
    assert_eq!(title_of(&first), "first");
    assert_eq!(title_of("last"), "second");
    // The shortest unique prefix of `last` against `first`.
    let n = first
        .bytes()
        .zip(last.bytes())
        .take_while(|(a, b)| a == b)
        .count()
        + 1;
    assert_eq!(title_of(&last[..n]), "second");
}

#[test]
fn unknown_id_exits_2_naming_the_workspace() {
    let ws = Ws::new();
    ws.session("only", 0);
    for args in [
        vec!["show", "nope"],
        vec!["export", "nope"],
        vec!["fork", "nope"],
        vec!["rename", "nope", "x"],
        vec!["delete", "nope", "--yes"],
        vec!["--resume", "nope"],
    ] {
        let (code, out, err) = fail(ws.cmd().args(&args));
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty());
        assert_eq!(
            err.trim_end(),
            format!(
                "neocode: no session matches 'nope' in {}",
                ws.workdir.display()
            ),
            "{args:?}"
        );
    }
}

#[test]
fn ambiguous_prefix_lists_the_candidates() {
    let ws = Ws::new();
    let rt = ws.sessions();
    for (id, title) in [
        ("abc-one", "First candidate"),
        ("abc-two", "Second candidate"),
    ] {
        rt.new_session(NewSession {
            id: Some(id.into()),
            title: title.into(),
            ..NewSession::default()
        })
        .unwrap();
    }
    for args in [
        vec!["show", "abc"],
        vec!["--resume", "abc"],
        vec!["delete", "abc", "--yes"],
    ] {
        let (code, _, err) = fail(ws.cmd().args(&args));
        assert_eq!(code, 2, "{err}");
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 3, "{err}");
        assert!(lines[0].starts_with("neocode: 'abc' is ambiguous"), "{err}");
        assert!(
            lines[1..]
                .iter()
                .any(|l| l.contains("abc-one") && l.contains("First candidate"))
        );
        assert!(
            lines[1..]
                .iter()
                .any(|l| l.contains("abc-two") && l.contains("Second candidate"))
        );
    }
    // Both still exist after the refused delete.
    assert_eq!(rt.count().unwrap(), 2);
}

#[test]
fn bad_usage_exits_2() {
    let ws = Ws::new();
    let (code, _, err) = fail(ws.cmd().arg("--frobnicate"));
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = fail(ws.cmd().args(["--json"]));
    assert_eq!(code, 2, "--json needs --list");
    assert!(err.starts_with("neocode: "), "{err}");
    assert!(
        err.contains("--list"),
        "the message names what is missing: {err}"
    );
    // A missing argument is named, an unknown subcommand gets a suggestion.
    let (code, _, err) = fail(ws.cmd().args(["show"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("<ID>"), "{err}");
    assert!(err.contains("Usage: neocode show <ID>"), "{err}");
    let (code, _, err) = fail(ws.cmd().args(["shwo", "last"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("'shwo'") && err.contains("'show'"), "{err}");
    // --limit 0 is refused the same way everywhere.
    for args in [
        &["--list", "--limit", "0"][..],
        &["search", "x", "--limit", "0"],
    ] {
        let (code, _, err) = fail(ws.cmd().args(args));
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("at least 1"), "{args:?}: {err}");
    }
    let (code, _, err) = fail(ws.cmd().args(["--list", "show", "last"]));
    assert_eq!(code, 2, "{err}");
    let (code, _, _) = fail(ws.cmd().args(["--list", "--limit", "many"]));
    assert_eq!(code, 2);
    let (code, _, err) = fail(ws.cmd().args(["export", "x", "--format", "pdf"]));
    assert_eq!(code, 2, "{err}");
    let missing = ws.workdir.as_path().join("does-not-exist");
    let (code, _, err) = fail(ws.cmd_in(&missing).arg("--list"));
    assert_eq!(code, 2, "{err}");
    assert!(err.starts_with("neocode: "), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn help_has_an_example_for_every_command() {
    let ws = Ws::new();
    let top = ok_stdout(ws.cmd().arg("--help"));
    assert!(top.contains("Examples:"));
    for flag in [
        "--list",
        "--resume",
        "--continue",
        "--workdir",
        "--json",
        "--all-workspaces",
    ] {
        assert!(top.contains(flag), "{flag} missing from --help");
    }
    for cmd in [
        "show",
        "export",
        "import",
        "fork",
        "rename",
        "delete",
        "search",
        "completions",
        "demo",
    ] {
        assert!(top.contains(cmd), "{cmd} missing from --help");
        let help = ok_stdout(ws.cmd().args([cmd, "--help"]));
        assert!(help.contains("Example"), "{cmd} --help has no example");
        assert!(
            help.contains(&format!("neocode {cmd}")),
            "{cmd} example does not run {cmd}"
        );
    }
}

#[test]
fn version_prints_the_crate_version() {
    let ws = Ws::new();
    let out = ok_stdout(ws.cmd().arg("--version"));
    assert_eq!(out.trim(), format!("neocode {}", env!("CARGO_PKG_VERSION")));
}

#[test]
fn completions_produce_shell_scripts() {
    let ws = Ws::new();
    let bash = ok_stdout(ws.cmd().args(["completions", "bash"]));
    assert!(bash.contains("complete -F"), "{bash}");
    assert!(
        bash.contains("neocode") && bash.contains("export") && bash.contains("--all-workspaces")
    );
    let zsh = ok_stdout(ws.cmd().args(["completions", "zsh"]));
    assert!(zsh.starts_with("#compdef neocode"));
    let (code, _, _) = fail(ws.cmd().args(["completions", "tcsh"]));
    assert_eq!(code, 2);
}

#[test]
fn a_corrupt_database_is_a_runtime_failure_and_left_alone() {
    let ws = Ws::new();
    ws.session("will be clobbered", 0);
    let db = ws.db();
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(db.with_file_name(format!("session.db{suffix}")));
    }
    let garbage = b"this is not a SQLite database, not even close....".repeat(100);
    std::fs::write(&db, &garbage).unwrap();
    for args in [vec!["--list"], vec!["show", "last"], vec!["search", "x"]] {
        let (code, out, err) = fail(ws.cmd().args(&args));
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(out.is_empty());
        assert!(
            err.starts_with("neocode: ") && err.lines().count() == 1,
            "{err}"
        );
        assert!(err.contains("session.db"), "{err}");
    }
    assert_eq!(std::fs::read(&db).unwrap(), garbage);
}

#[test]
fn the_tui_without_a_terminal_says_what_to_use_and_writes_nothing() {
    let ws = Ws::new();
    for args in [vec![], vec!["--continue"]] {
        let out = ws.cmd().args(&args).write_stdin("").output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        if args.is_empty() {
            assert_eq!(out.status.code(), Some(1), "{err}");
            starts(&err, "neocode: the full-screen TUI needs a terminal");
            assert!(err.contains("neocode --list"), "{err}");
        } else {
            // Nothing to continue in an empty workspace: said plainly, before the terminal.
            assert_eq!(out.status.code(), Some(2), "{err}");
            assert!(err.contains("there are no sessions in"), "{err}");
            assert!(err.contains("run `neocode` to start one"), "{err}");
        }
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    assert!(is_empty(ws.home.as_path()), "the home was written to");
}

#[test]
fn demo_keep_says_where_and_how_to_reopen_and_workdir_is_refused() {
    let ws = Ws::new();
    let (code, _, err) = fail(ws.cmd().arg("demo"));
    assert_eq!(
        code, 2,
        "--workdir (always passed by the harness) does not apply: {err}"
    );
    assert!(err.contains("--workdir does not apply"), "{err}");
    let out = Command::cargo_bin("neocode")
        .unwrap()
        .env("NEOCODE_HOME", ws.home.as_path())
        .args(["demo", "--keep"])
        .write_stdin("")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // No terminal here, so the TUI itself fails; the kept folder is reported all the same.
    assert_eq!(out.status.code(), Some(1));
    let dir = stdout
        .lines()
        .find_map(|l| l.strip_prefix("The demo is kept in "))
        .unwrap_or_else(|| panic!("{stdout}"))
        .to_string();
    has(
        &stdout,
        &format!("NEOCODE_HOME={dir}/home neocode --workdir {dir}/workspace"),
    );
    let listed = Command::cargo_bin("neocode")
        .unwrap()
        .env("NEOCODE_HOME", format!("{dir}/home"))
        .args(["--workdir", &format!("{dir}/workspace"), "--list"])
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(String::from_utf8_lossy(&listed.stdout).contains("Walk me through"));
}

/// Overwrites the root page of index `index` in `db` (after a checkpoint, so the page is in
/// the main file) with garbage: SQLite then answers SQLITE_CORRUPT on what touches it.
fn damage_index(db: &std::path::Path, index: &str) {
    use std::io::{Seek, SeekFrom, Write};
    let (page, size) = {
        let c = rusqlite::Connection::open(db).unwrap();
        c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        let page: i64 = c
            .query_row(
                "SELECT rootpage FROM sqlite_master WHERE name = ?1",
                [index],
                |r| r.get(0),
            )
            .unwrap();
        let size: i64 = c.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
        (page, size)
    };
    let mut f = std::fs::OpenOptions::new().write(true).open(db).unwrap();
    f.seek(SeekFrom::Start(((page - 1) * size) as u64)).unwrap();
    f.write_all(&vec![0xA5u8; size as usize]).unwrap();
    f.sync_all().unwrap();
}

/// issue 22: a damaged index page is noticed on the first statement that meets it; from
/// then on nothing more is written (in this process or the next), `neocode doctor` says so
/// with exit 1, and `doctor --recover` puts back a sound database with every session, the
/// damaged file kept beside it.
#[test]
fn a_damaged_database_stops_writes_and_doctor_recovers_it() {
    let ws = Ws::new();
    let ids: Vec<String> = (0..30)
        .map(|i| ws.session(&format!("session {i}"), 2))
        .collect();
    let db = ws.db();
    // A process that has the store open already (a TUI) is stopped too, once another finds it.
    let live = ws.sessions();
    damage_index(&db, "sessions_by_parent");

    // A write that meets the damaged page fails with the message, and is not retried.
    let (code, _, err) = fail(ws.cmd().args(["fork", &ids[3]]));
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("damaged") && err.contains("neocode doctor"),
        "{err}"
    );
    // A later write, in another process, that does not even meet the page, is refused too.
    let (code, _, err) = fail(ws.cmd().args(["rename", &ids[4], "renamed"]));
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("damaged") && err.contains("neocode doctor"),
        "{err}"
    );
    // (Without the marker this rename succeeds: it never touches the damaged index, which
    // only forks are in.)
    let e = live.rename(&ids[5], "renamed too").unwrap_err();
    assert!(e.to_string().contains("neocode doctor"), "{e}");
    drop(live);

    let out = ws.cmd().arg("doctor").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("DAMAGED"), "{stdout}");
    assert!(stdout.contains("neocode doctor --recover"), "{stdout}");
    assert!(
        stdout.contains("Provider") && stdout.contains("api key"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Sandbox") && stdout.contains("sandbox"),
        "{stdout}"
    );

    // Not while a live process runs a turn there (it would go on writing the damaged file).
    let lease = neocode::runtime::lease::Lease::acquire(&ws.location().paths.dir, &ids[0]).unwrap();
    let out = ws.cmd().args(["doctor", "--recover"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("NOT RECOVERED") && stdout.contains("stop it first"),
        "{stdout}"
    );
    drop(lease);

    let stdout = ok_stdout(ws.cmd().args(["doctor", "--recover"]));
    assert!(
        stdout.contains("RECOVERED") && stdout.contains("30 sessions"),
        "{stdout}"
    );
    assert_eq!(integrity_ok(&db), "ok");
    let kept: Vec<String> = std::fs::read_dir(db.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("session.db.damaged-"))
        .collect();
    assert!(!kept.is_empty(), "the damaged file is kept beside");
    let listed = ok_json(ws.cmd().args(["--list", "--json"]));
    assert_eq!(listed.as_array().unwrap().len(), 30, "{listed}");
    // Writing works again, and the doctor is content.
    ok_stdout(ws.cmd().args(["rename", &ids[4], "renamed"]));
    let out = ws.cmd().arg("doctor").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// A damaged table page (not only an index): VACUUM INTO cannot read it, so `doctor
/// --recover` salvages row by row: every session and every readable message is kept, the
/// copy passes integrity_check, the damaged file stays beside it.
#[test]
fn doctor_salvages_row_by_row_when_a_table_page_is_damaged() {
    use std::io::{Seek, SeekFrom, Write};
    let ws = Ws::new();
    for i in 0..20 {
        ws.session(&format!("session {i} {}", "x".repeat(200)), 15);
    }
    let db = ws.db();
    let (page, size, before) = {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        // A leaf page of the messages table in the middle (dbstat is compiled in).
        let page: i64 = c
            .query_row(
                "SELECT pageno FROM dbstat WHERE name = 'messages' AND pagetype = 'leaf' ORDER BY pageno LIMIT 1 OFFSET 3",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let size: i64 = c.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
        let before: i64 = c
            .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
            .unwrap();
        (page, size, before)
    };
    let mut f = std::fs::OpenOptions::new().write(true).open(&db).unwrap();
    f.seek(SeekFrom::Start(((page - 1) * size) as u64)).unwrap();
    f.write_all(&vec![0x5Au8; size as usize]).unwrap();
    drop(f);

    let out = ws.cmd().arg("doctor").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = ok_stdout(ws.cmd().args(["doctor", "--recover"]));
    assert!(
        stdout.contains("salvaged row by row") && stdout.contains("20 sessions"),
        "{stdout}"
    );
    assert_eq!(integrity_ok(&db), "ok");
    let c = rusqlite::Connection::open(&db).unwrap();
    let after: i64 = c
        .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
        .unwrap();
    assert!(
        after < before && after > before / 2,
        "{after} of {before} messages kept"
    );
    drop(c);
    let listed = ok_json(ws.cmd().args(["--list", "--json"]));
    assert_eq!(listed.as_array().unwrap().len(), 20, "{listed}");
    // The search index was carried over too.
    let found = ok_stdout(ws.cmd().args(["search", "question"]));
    assert!(!found.trim().is_empty());
}

/// Runs `neocode ARGS` for `ws` with its home mounted read-only (a private mount namespace:
/// even root cannot write there). `None` when mount namespaces are not available here.
fn run_with_read_only_home(ws: &Ws, args: &[&str]) -> Option<std::process::Output> {
    let home = ws.home.as_path().to_str().unwrap().to_string();
    let bin = assert_cmd::cargo::cargo_bin("neocode");
    let script = format!(
        "mount --bind -o ro \"$H\" \"$H\" || exit 97; exec \"{}\" \"$@\"",
        bin.display()
    );
    let mut c = std::process::Command::new("unshare");
    c.args(["-m", "sh", "-c", &script, "sh"])
        .args(args)
        .current_dir(ws.workdir.as_path())
        .env("H", &home)
        .env("NEOCODE_HOME", &home)
        .env_remove("NEOCODE_BASE_URL")
        .env_remove("NEOCODE_MODEL")
        .env_remove("NEOCODE_API_KEY")
        .env_remove("OPENAI_API_KEY");
    let out = c.output().ok()?;
    if out.status.code() == Some(97) {
        return None;
    }
    Some(out)
}

/// issue 22: a read-only home (a read-only mount, a home owned by someone else) still lists,
/// shows and searches; nothing is written there (not even the default config).
#[test]
fn a_read_only_home_still_lists_and_shows() {
    let ws = Ws::new();
    let id = ws.session("read me without writing", 2);
    let before = file_tree(ws.home.as_path());
    let Some(out) = run_with_read_only_home(&ws, &["--list", "--json"]) else {
        eprintln!("skipped: no mount namespace here (unshare -m / mount --bind failed)");
        return;
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["id"], id.as_str(), "{v}");
    for args in [
        vec!["--list"],
        vec!["show", "last"],
        vec!["show", "last", "--json"],
        vec!["search", "read"],
        vec!["doctor"],
    ] {
        let out = run_with_read_only_home(&ws, &args).unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{args:?}: {}{text}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.contains("read me") || args[0] == "doctor",
            "{args:?}: {text}"
        );
    }
    assert_eq!(file_tree(ws.home.as_path()), before, "nothing was written");
}

/// Every file under `dir` with its size, sorted.
fn file_tree(dir: &std::path::Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let len = e.metadata().map(|m| m.len()).unwrap_or(0);
                out.push((p.to_string_lossy().into_owned(), len));
            }
        }
    }
    out.sort();
    out
}

/// Sessions record the git branch their workdir was on when they started (read from
/// `.git/HEAD`); `--list --json` has it as `branch`, `--branch NAME` keeps only those.
#[test]
fn list_shows_and_filters_the_branch_a_session_started_on() {
    let ws = Ws::new();
    std::fs::create_dir_all(ws.workdir.join(".git")).unwrap();
    std::fs::write(
        ws.workdir.join(".git/HEAD"),
        "ref: refs/heads/feature/login\n",
    )
    .unwrap();
    let on_feature = ws.session("On the feature branch", 1);
    std::fs::write(ws.workdir.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    let on_main = ws.session("On main", 1);
    std::fs::write(ws.workdir.join(".git/HEAD"), "9f1c2e0\n").unwrap();
    let detached = ws.session("Detached", 1);
    let v = ok_json(ws.cmd().args(["--list", "--json"]));
    let branch_of = |id: &str| {
        v.as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .map(|r| r["branch"].clone())
            .unwrap()
    };
    assert_eq!(branch_of(&on_feature), "feature/login");
    assert_eq!(branch_of(&on_main), "main");
    assert!(branch_of(&detached).is_null());
    // The filter, as JSON and as the table.
    let v = ok_json(
        ws.cmd()
            .args(["--list", "--json", "--branch", "feature/login"]),
    );
    let ids = crate::support::cli::list_ids(&v);
    assert_eq!(ids, [on_feature.as_str()]);
    let out = ok_stdout(ws.cmd().args(["--list", "--branch", "main"]));
    assert!(
        out.contains("On main") && !out.contains("On the feature"),
        "{out}"
    );
    let out = ok_stdout(ws.cmd().args(["--list", "--branch", "nope"]));
    starts(&out, "no session started on branch nope");
    // --branch belongs to --list.
    ws.cmd()
        .args(["--branch", "main"])
        .assert()
        .failure()
        .code(2);
}
