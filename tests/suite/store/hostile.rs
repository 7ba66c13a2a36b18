//! Hostile and broken input, through the real binary: each case gets a clear one-line error,
//! a non-zero exit where it is a command, and leaves existing data byte-for-byte unchanged.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::process::Output;

use crate::support::stderr;
use crate::support::{Env, integrity_ok};
use neocode::session::{AppendMeta, NewMessage, NewSession, Role};

/// One line on stderr, starting `neocode:`.
fn assert_one_line_error(o: &Output, code: i32, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "stderr: {err}");
    let lines: Vec<&str> = err.lines().collect();
    assert!(!lines.is_empty(), "no error message");
    assert!(lines[0].starts_with("neocode: "), "{err}");
    assert!(
        err.to_lowercase().contains(&needle.to_lowercase()),
        "expected {needle:?} in: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

/// A workspace with one session holding a few messages; returns its id.
fn seeded(env: &Env) -> String {
    let rt = env.sessions();
    let h = crate::support::titled(&rt, "keep me");
    rt.append(
        &h.id,
        &[
            NewMessage::text(Role::User, "hello"),
            NewMessage::text(Role::Assistant, "hi there"),
        ],
        &AppendMeta::default(),
    )
    .unwrap();
    h.id
}

#[test]
fn corrupt_database_is_reported_and_untouched() {
    let env = Env::new();
    let db = env.db();
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    let garbage: Vec<u8> = (0..8192u32).map(|i| (i * 7 + 13) as u8).collect();
    std::fs::write(&db, &garbage).unwrap();
    let commands: [&[&str]; 3] = [&["--list"], &["--list", "--json"], &["show", "last"]];
    assert_refused_untouched(&env, &commands, "corrupt");
}

/// What `neocode --list --json` prints.
fn listed(env: &Env) -> Vec<u8> {
    env.neocode()
        .args(["--list", "--json"])
        .output()
        .unwrap()
        .stdout
}

/// Asserts each of `commands` fails with one line saying `says` and leaves the database as
/// it was.
#[track_caller]
fn assert_refused_untouched(env: &Env, commands: &[&[&str]], says: &str) {
    let before = std::fs::read(env.db()).unwrap();
    for args in commands {
        let o = env.neocode().args(*args).output().unwrap();
        assert_one_line_error(&o, 1, says);
        assert_eq!(
            std::fs::read(env.db()).unwrap(),
            before,
            "{args:?} changed the file"
        );
    }
}

#[test]
fn database_from_a_newer_neocode_is_refused_untouched() {
    let env = Env::new();
    seeded(&env);
    {
        let c = rusqlite::Connection::open(env.db()).unwrap();
        c.pragma_update(None, "user_version", 99).unwrap();
    }
    let commands: [&[&str]; 3] = [&["--list"], &["show", "last"], &["search", "hello"]];
    assert_refused_untouched(&env, &commands, "newer");
}

#[test]
fn ids_with_path_characters_are_unknown_ids() {
    let env = Env::new();
    seeded(&env);
    for id in [
        "../../etc/passwd",
        "/etc/passwd",
        "..",
        "a/b",
        "%",
        "\u{1b}[2J",
    ] {
        for cmd in ["show", "export", "delete"] {
            let mut c = env.neocode();
            c.args([cmd, id]);
            if cmd == "delete" {
                c.arg("--yes");
            }
            let o = c.output().unwrap();
            assert_one_line_error(&o, 2, "no session matches");
            assert!(!stderr(&o).contains('\u{1b}'), "raw escape echoed back");
        }
    }
}

#[test]
fn asset_whose_stored_path_points_outside_is_refused() {
    let env = Env::new();
    let id = seeded(&env);
    let secret_dir = env.tmp.path().join("outside");
    std::fs::create_dir_all(&secret_dir).unwrap();
    std::fs::write(secret_dir.join("secret.bin"), b"TOP-SECRET").unwrap();
    let rt = env.sessions();
    let meta = rt.save_asset(&id, "image/png", b"\x89PNG fake").unwrap();
    drop(rt);
    let outside = secret_dir.join("secret.bin");
    for path in [
        "../../../outside/secret.bin".to_string(),
        outside.display().to_string(),
    ] {
        {
            let c = rusqlite::Connection::open(env.db()).unwrap();
            c.execute(
                "UPDATE session_assets SET relative_path = ?1 WHERE id = ?2",
                [&path, &meta.id],
            )
            .unwrap();
        }
        let o = env.neocode().args(["export", &id]).output().unwrap();
        assert_ne!(
            o.status.code(),
            Some(0),
            "export read an escaped asset path"
        );
        assert!(!String::from_utf8_lossy(&o.stdout).contains("VE9QLVNFQ1JFVA"));
        assert!(stderr(&o).contains("outside"), "{}", stderr(&o));
    }
    // A symlink in place of the asset file, pointing outside.
    {
        let c = rusqlite::Connection::open(env.db()).unwrap();
        c.execute(
            "UPDATE session_assets SET relative_path = ?1 WHERE id = ?2",
            [format!("assets/{id}/{}.bin", meta.id), meta.id.clone()],
        )
        .unwrap();
    }
    let file = env
        .location()
        .paths
        .assets()
        .join(&id)
        .join(format!("{}.bin", meta.id));
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink(&outside, &file).unwrap();
    let o = env.neocode().args(["export", &id]).output().unwrap();
    assert_ne!(o.status.code(), Some(0));
    assert!(!String::from_utf8_lossy(&o.stdout).contains("VE9QLVNFQ1JFVA"));
}

#[test]
fn ten_megabyte_messages_round_trip() {
    let env = Env::new();
    let rt = env.sessions();
    let h = rt.new_session(NewSession::default()).unwrap();
    let big: String = "0123456789abcdef".repeat(10 * 1024 * 1024 / 16);
    rt.append(
        &h.id,
        &[NewMessage::text(Role::User, big.clone())],
        &AppendMeta::default(),
    )
    .unwrap();
    let o = env.neocode().args(["show", &h.id]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let o = env.neocode().args(["export", &h.id]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let other = Env::new();
    let file = other.tmp.path().join("big.json");
    std::fs::write(&file, &o.stdout).unwrap();
    let o = other.neocode().arg("import").arg(&file).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let rt2 = other.sessions();
    let id2 = rt2.resolve("last").unwrap();
    let msgs = rt2.messages(&id2, 1, i64::MAX).unwrap();
    assert_eq!(msgs.last().unwrap().text(), big);
}

#[test]
fn import_of_invalid_utf8_is_one_clear_line() {
    let env = Env::new();
    seeded(&env);
    let before = std::fs::read(env.db()).unwrap();
    let file = env.tmp.path().join("bad.json");
    std::fs::write(
        &file,
        b"{\"format\": \"neocode-session\", \"x\": \"\xff\xfe\"}",
    )
    .unwrap();
    let o = env.neocode().arg("import").arg(&file).output().unwrap();
    assert_one_line_error(&o, 2, "utf-8");
    assert_eq!(std::fs::read(env.db()).unwrap(), before);
}

#[test]
fn full_disk_fails_cleanly_and_keeps_existing_data() {
    let env = Env::new();
    let id = seeded(&env);
    let rt = env.sessions();
    let doc = rt.export(&id).unwrap();
    drop(rt);
    // A session file far larger than the file-size limit below.
    let mut big = doc;
    big.session.id = "big-import".into();
    for m in &mut big.messages {
        if let Some(neocode::session::Part::Text { text }) = m.parts.first_mut() {
            *text = "x".repeat(4 * 1024 * 1024);
        }
    }
    let file = env.tmp.path().join("big.json");
    std::fs::write(&file, serde_json::to_vec(&big).unwrap()).unwrap();
    let listed_before = listed(&env);
    let db_len = std::fs::metadata(env.db()).unwrap().len();

    let mut cmd = env.neocode();
    cmd.arg("import").arg(&file);
    let limit = db_len + 256 * 1024;
    // SAFETY: only async-signal-safe libc calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let rl = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &rl);
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    let o = cmd.output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.starts_with("neocode: "), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(!err.contains("panicked"));

    assert_eq!(integrity_ok(&env.db()), "ok");
    let listed_after = listed(&env);
    assert_eq!(
        listed_before, listed_after,
        "the failed import changed the list"
    );
    let rt = env.sessions();
    assert!(rt.resolve("big-import").is_err());
    assert_eq!(rt.header(&id).unwrap().message_count, 2);
}

#[test]
fn read_only_home_lists_and_refuses_writes_clearly() {
    let env = Env::new();
    std::fs::create_dir_all(&env.home).unwrap();
    let doc_src = Env::new();
    let id = seeded(&doc_src);
    let file = env.tmp.path().join("s.json");
    let o = doc_src
        .neocode()
        .args(["export", &id, "-o"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));

    // SAFETY: geteuid has no preconditions and cannot fail.
    let as_root = unsafe { libc::geteuid() } == 0;
    for p in [env.tmp.path(), env.workdir.as_path(), file.as_path()] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::set_permissions(&env.home, std::fs::Permissions::from_mode(0o555)).unwrap();
    // Root ignores permissions: run the binary as `nobody` then.
    let run = |args: &[&std::ffi::OsStr]| -> Output {
        let mut c = env.neocode();
        c.args(args);
        if as_root {
            c.uid(65534).gid(65534);
        }
        c.output().unwrap()
    };
    let o = run(&["--list".as_ref()]);
    assert!(
        o.status.success(),
        "listing a read-only home failed: {}",
        stderr(&o)
    );
    let o = run(&["import".as_ref(), file.as_os_str()]);
    assert_one_line_error(&o, 1, "permission denied");
    assert!(!env.home.join("projects").exists());
}
