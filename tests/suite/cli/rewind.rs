//! `neocode rewind` (issue 26): the real binary runs turns against the scripted model (the
//! tools change real files), then goes back; what a user checks is the bytes and modes of the
//! files, the sessions `show` lists, and the blobs under the home.

use crate::support::text::has;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use crate::support::agent::Env;
use crate::support::git::git;
use crate::support::{Rng, integrity_ok};
use crate::support::{stderr, stdout};
use neocode::testkit::scripted::{Reply, ScriptedServer};
use serde_json::{Value, json};

const KEY: &str = "sk-rewind-test-KEY-26";

fn ok(o: Output) -> String {
    assert!(o.status.success(), "exit {:?}: {}", o.status, stderr(&o));
    stdout(&o)
}

/// A call's JSON arguments.
fn args(v: Value) -> String {
    v.to_string()
}

/// The arguments of an `edit_file` of `path` replacing `old` by `new`.
fn edit(path: &str, old: &str, new: &str) -> String {
    args(json!({"path": path, "old_string": old, "new_string": new}))
}

/// The arguments of a `write_file` of `content` into `path`.
fn write(path: &str, content: &str) -> String {
    args(json!({"path": path, "content": content}))
}

/// The binary's commands as a user types them.
trait Rewinding {
    fn nc(&self, a: &[&str]) -> Output;
    /// `neocode ARGS` against the scripted model `srv`, which must succeed; its stdout.
    fn run(&self, srv: &ScriptedServer, a: &[&str]) -> String;
    fn shown(&self, id: &str) -> Value;
    fn file(&self, rel: &str) -> Option<(Vec<u8>, u32)>;
    fn put(&self, rel: &str, data: &str, mode: u32);
    fn turns(&self, id: &str) -> Vec<i64>;
}

impl Rewinding for Env {
    fn nc(&self, a: &[&str]) -> Output {
        self.cmd(None, a).output().unwrap()
    }

    fn run(&self, srv: &ScriptedServer, a: &[&str]) -> String {
        ok(self.cmd(Some(srv), a).output().unwrap())
    }

    fn shown(&self, id: &str) -> Value {
        serde_json::from_str(&ok(self.nc(&["show", id, "--json"]))).unwrap()
    }

    fn file(&self, rel: &str) -> Option<(Vec<u8>, u32)> {
        let p = self.workdir.join(rel);
        let data = std::fs::read(&p).ok()?;
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o7777;
        Some((data, mode))
    }

    fn put(&self, rel: &str, data: &str, mode: u32) {
        let p = self.workdir.join(rel);
        std::fs::write(&p, data).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// The user messages' seqs of a session, from its turns' file changes.
    fn turns(&self, id: &str) -> Vec<i64> {
        self.shown(id)["file_changes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["turn"].as_i64().unwrap())
            .collect()
    }
}

/// One turn through `neocode run` asked as `prompt`, in which the model runs `command` (never
/// asking) and then says "done"; the server, to read what the model was sent.
fn command_turn(env: &Env, command: &str, prompt: &str) -> ScriptedServer {
    let srv = ScriptedServer::start(vec![
        Reply::tool_calls(&[("c1", "run_command", &args(json!({ "command": command })))]),
        Reply::text("done"),
    ])
    .unwrap();
    env.run(&srv, &["run", "--approve", "never-ask", prompt]);
    srv
}

/// Two turns through `neocode run`: the first edits a.txt and creates new1.txt, the second
/// rewrites b.sh, edits a.txt again and creates created2/nested.txt. Returns the session id.
fn two_turns(env: &Env) -> String {
    env.put("a.txt", "alpha\n", 0o640);
    env.put("b.sh", "#!/bin/sh\necho b\n", 0o755);
    let srv = ScriptedServer::start(vec![
        Reply::tool_calls(&[
            ("e1", "edit_file", &edit("a.txt", "alpha", "ALPHA")),
            ("w1", "write_file", &write("new1.txt", "one\n")),
        ]),
        Reply::text("turn one done"),
        Reply::tool_calls(&[
            ("w2", "write_file", &write("b.sh", "#!/bin/sh\necho B2\n")),
            ("e2", "edit_file", &edit("a.txt", "ALPHA", "beta")),
            (
                "w3",
                "write_file",
                &write("created2/nested.txt", "nested\n"),
            ),
        ]),
        Reply::text("turn two done"),
    ])
    .unwrap();
    env.run(&srv, &["run", "--approve", "auto-edit", "first"]);
    env.run(
        &srv,
        &["run", "--continue", "--approve", "auto-edit", "second"],
    );
    let id = env.shown("last")["id"].as_str().unwrap().to_string();
    assert_eq!(env.file("a.txt").unwrap().0, b"beta\n");
    id
}

/// Another home whose workspace holds the files [`two_turns`] touched, as they are in `env`'s
/// now (bytes and modes).
fn copy_of_two_turns_files(env: &Env) -> Env {
    let other = Env::new(KEY, "");
    for rel in ["a.txt", "b.sh", "new1.txt", "created2/nested.txt"] {
        let (data, mode) = env.file(rel).unwrap();
        let p = other.workdir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, data).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    other
}

/// The files of [`two_turns`] as the first turn left them: a.txt and b.sh with their bytes
/// and modes, the second turn's created file gone.
#[track_caller]
fn assert_as_before_the_second_turn(env: &Env) {
    assert_eq!(env.file("a.txt"), Some((b"ALPHA\n".to_vec(), 0o640)));
    assert_eq!(
        env.file("b.sh"),
        Some((b"#!/bin/sh\necho b\n".to_vec(), 0o755))
    );
    assert_eq!(
        env.file("created2/nested.txt"),
        None,
        "the created file is gone"
    );
}

#[test]
fn rewinding_to_the_second_turn_restores_bytes_and_modes_and_keeps_the_original() {
    let env = Env::new(KEY, "");
    let id = two_turns(&env);
    let turns = env.turns(&id);
    assert_eq!(turns.len(), 2, "{turns:?}");
    let before = env.shown(&id);

    let o = env.nc(&["rewind", &id, "--to", &turns[1].to_string(), "--yes"]);
    let new_id = ok(o).trim().to_string();
    assert_ne!(new_id, id);

    assert_as_before_the_second_turn(&env);
    assert_eq!(
        env.file("new1.txt"),
        Some((b"one\n".to_vec(), 0o666 & !umask()))
    );

    // The original session still has everything after the message.
    let after = env.shown(&id);
    assert_eq!(after["message_count"], before["message_count"]);
    assert_eq!(after["file_changes"], before["file_changes"]);
    // The fork continues from just before it.
    let fork = env.shown(&new_id);
    assert_eq!(fork["parent_id"], id.as_str());
    assert_eq!(
        fork["title"],
        format!("↺ before #{} · first", turns[1]),
        "the list marks it and says where it went back to"
    );
    assert_eq!(fork["message_count"], turns[1] - 1);

    // Back to the first turn, from the original: the first turn's changes go too, and the
    // second fork's title tells it from the first.
    let o = env.nc(&["rewind", &id, "--to", &turns[0].to_string(), "--yes"]);
    let second = ok(o).trim().to_string();
    assert_eq!(
        env.shown(&second)["title"],
        format!("↺ before #{} · first", turns[0])
    );
    assert_eq!(env.file("a.txt"), Some((b"alpha\n".to_vec(), 0o640)));
    assert_eq!(env.file("new1.txt"), None);
}

fn umask() -> u32 {
    // SAFETY: umask only swaps the process's mask; it is put back at once.
    unsafe {
        let m = libc::umask(0o022);
        libc::umask(m);
        m
    }
}

#[test]
fn a_file_the_user_edited_is_skipped_without_force() {
    let env = Env::new(KEY, "");
    let id = two_turns(&env);
    let to = env.turns(&id)[1].to_string();
    env.put("a.txt", "mine\n", 0o600);

    let dry = ok(env.nc(&["rewind", &id, "--to", &to, "--dry-run"]));
    let line = dry.lines().find(|l| l.contains("a.txt")).unwrap();
    assert!(line.trim_start().starts_with("skipped"), "{dry}");
    assert!(line.contains("--force"), "{dry}");
    assert!(
        dry.lines()
            .any(|l| l.trim_start().starts_with("deleted") && l.contains("created2/nested.txt")),
        "{dry}"
    );
    assert!(
        dry.lines()
            .any(|l| l.trim_start().starts_with("restored") && l.contains("b.sh")),
        "{dry}"
    );
    // The hunks: b.sh goes back to its first content.
    assert!(dry.contains("-echo B2") && dry.contains("+echo b"), "{dry}");
    // A dry run changes nothing.
    assert!(env.file("created2/nested.txt").is_some());

    let o = env.nc(&["rewind", &id, "--to", &to, "--yes"]);
    assert!(stderr(&o).contains("skipped"), "{}", stderr(&o));
    ok(o);
    assert_eq!(env.file("a.txt"), Some((b"mine\n".to_vec(), 0o600)));
    assert_eq!(env.file("created2/nested.txt"), None);

    ok(env.nc(&[
        "rewind",
        &id,
        "--to",
        &to,
        "--files-only",
        "--force",
        "--yes",
    ]));
    assert_eq!(env.file("a.txt"), Some((b"ALPHA\n".to_vec(), 0o640)));
}

#[test]
fn a_rewind_is_undone() {
    let env = Env::new(KEY, "");
    let id = two_turns(&env);
    let to = env.turns(&id)[1].to_string();
    let fork = ok(env.nc(&["rewind", &id, "--to", &to, "--yes"]))
        .trim()
        .to_string();
    assert_eq!(env.file("a.txt").unwrap().0, b"ALPHA\n");

    let back = ok(env.nc(&["rewind", &fork, "--undo", "--yes"]));
    assert_eq!(
        back.trim(),
        id,
        "the undo continues in the original session"
    );
    assert_eq!(env.file("a.txt"), Some((b"beta\n".to_vec(), 0o640)));
    assert_eq!(
        env.file("b.sh"),
        Some((b"#!/bin/sh\necho B2\n".to_vec(), 0o755))
    );
    assert_eq!(env.file("created2/nested.txt").unwrap().0, b"nested\n");
    // Nothing is left to undo.
    let o = env.nc(&["rewind", &fork, "--undo", "--yes"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no rewind to undo"), "{}", stderr(&o));
}

#[test]
fn a_rewind_to_a_message_that_is_not_the_users_is_refused() {
    let env = Env::new(KEY, "");
    let id = two_turns(&env);
    let to = (env.turns(&id)[1] + 1).to_string();
    let o = env.nc(&["rewind", &id, "--to", &to, "--yes"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not a user message"), "{}", stderr(&o));
    let o = env.nc(&["rewind", &id, "--to", "1"]);
    assert_eq!(o.status.code(), Some(2), "no --yes without a terminal");
}

#[test]
fn a_commands_changes_outside_git_are_reported_not_restorable() {
    let env = Env::new(KEY, "[sandbox]\nmode = \"off\"\n");
    env.put("gone.txt", "g\n", 0o644);
    let srv = command_turn(&env, "echo made > made.txt; rm gone.txt", "make");
    let tool = crate::support::agent::tool_message(&srv.requests()[1].json()).clone();
    let text = tool["content"].as_str().unwrap();
    assert!(
        text.contains("changed by a command, not restorable")
            && text.contains("made.txt (created)")
            && text.contains("gone.txt (deleted)"),
        "{text}"
    );
    let shown = env.shown("last");
    let files = &shown["file_changes"][0]["files"];
    assert_eq!(files[0]["path"], "gone.txt");
    assert_eq!(files[0]["by"], "command");
    assert_eq!(files[0]["restorable"], false);
    let id = shown["id"].as_str().unwrap();
    let dry = ok(env.nc(&["rewind", id, "--to", "1", "--dry-run"]));
    assert!(
        dry.lines()
            .any(|l| l.trim_start().starts_with("not restorable") && l.contains("made.txt")),
        "{dry}"
    );
}

#[test]
fn a_commands_changes_inside_git_are_rewound_without_touching_the_index() {
    let env = Env::new(KEY, "[sandbox]\nmode = \"off\"\n");
    git(&env.workdir, &["init", "-q"]);
    env.put("tracked.txt", "t1\n", 0o644);
    env.put("gone.txt", "g\n", 0o755);
    env.put("untracked.txt", "u1\n", 0o644);
    git(&env.workdir, &["add", "tracked.txt", "gone.txt"]);
    let status = git(&env.workdir, &["status", "--porcelain"]);
    let index = std::fs::read(env.workdir.join(".git/index")).unwrap();
    let srv = command_turn(
        &env,
        "echo t2 > tracked.txt; echo u2 > untracked.txt; echo new > made.txt; rm gone.txt",
        "change",
    );
    let tool = crate::support::agent::tool_message(&srv.requests()[1].json()).clone();
    let text = tool["content"].as_str().unwrap();
    assert!(text.contains("restorable by a rewind (git"), "{text}");
    assert_eq!(
        std::fs::read(env.workdir.join(".git/index")).unwrap(),
        index,
        "the user's index is untouched"
    );
    let id = env.shown("last")["id"].as_str().unwrap().to_string();
    ok(env.nc(&["rewind", &id, "--to", "1", "--yes"]));
    assert_eq!(env.file("tracked.txt"), Some((b"t1\n".to_vec(), 0o644)));
    assert_eq!(env.file("untracked.txt"), Some((b"u1\n".to_vec(), 0o644)));
    assert_eq!(env.file("gone.txt"), Some((b"g\n".to_vec(), 0o755)));
    assert_eq!(env.file("made.txt"), None);
    assert_eq!(git(&env.workdir, &["status", "--porcelain"]), status);
}

/// A command may write the repository's config (outside the namespace box, or before the
/// protected paths): the snapshot runs no git program, so a filter named there never runs
/// outside the sandbox, and the snapshot holds the file's own bytes, which a rewind puts back.
#[test]
fn a_repository_whose_config_names_a_filter_never_runs_it_and_is_still_rewound() {
    let env = Env::new(KEY, "[sandbox]\nmode = \"off\"\n");
    git(&env.workdir, &["init", "-q"]);
    let marker = env.tmp.path().join("filter-ran");
    git(
        &env.workdir,
        &[
            "config",
            "filter.evil.clean",
            &format!("touch {}; tr a-z A-Z", marker.display()),
        ],
    );
    env.put(".gitattributes", "* filter=evil\n", 0o644);
    env.put("a.txt", "a\n", 0o644);
    let srv = command_turn(&env, "echo b > a.txt", "change");
    assert!(!marker.exists(), "neocode ran the repository's filter");
    let tool = crate::support::agent::tool_message(&srv.requests()[1].json()).clone();
    let text = tool["content"].as_str().unwrap();
    assert!(text.contains("restorable by a rewind (git"), "{text}");
    let id = env.shown("last")["id"].as_str().unwrap().to_string();
    ok(env.nc(&["rewind", &id, "--to", "1", "--yes"]));
    assert_eq!(env.file("a.txt"), Some((b"a\n".to_vec(), 0o644)));
    assert!(!marker.exists(), "the rewind ran the repository's filter");
}

#[test]
fn blobs_are_shared_and_deleted_with_their_last_session() {
    let env = Env::new(KEY, "");
    env.put("same.txt", "the same before-image\n", 0o644);
    let write =
        |content: &str| Reply::tool_calls(&[("w", "write_file", &write("same.txt", content))]);
    let srv = ScriptedServer::start(vec![
        write("x\n"),
        Reply::text("a"),
        write("y\n"),
        Reply::text("b"),
    ])
    .unwrap();
    let run = |prompt: &str| {
        env.run(&srv, &["run", "--approve", "auto-edit", prompt]);
        env.shown("last")["id"].as_str().unwrap().to_string()
    };
    let a = run("one");
    env.put("same.txt", "the same before-image\n", 0o644);
    let b = run("two");
    assert_ne!(a, b);
    let store = env.store();
    assert_eq!(store.blob_count(), 1, "one blob for the two sessions");
    let fork = ok(env.nc(&["fork", &a])).trim().to_string();
    assert_eq!(store.blob_count(), 1, "a fork shares it");
    for (id, left) in [(&a, 1), (&b, 1), (&fork, 0)] {
        ok(env.nc(&["delete", id, "--yes"]));
        assert_eq!(store.blob_count(), left, "after deleting {id}");
    }
}

/// The rewind that is killed: 200 files changed in one turn, then rewound (files only) with a
/// pause after each file, killed at a random moment; the next start finishes it. Every file is
/// at every moment either its old or its new content, and after the next start all are old
/// (journal finished) or all new (the kill came before the journal).
#[test]
fn a_rewind_killed_at_random_points_is_finished_by_the_next_start() {
    const N: usize = 200;
    let env = Env::new(KEY, "[limits]\nmax_tool_calls_per_prompt = 1000\n");
    let old = |i: usize| format!("old content of file {i}\n");
    let new = |i: usize| format!("new content of file {i}, longer than the old one\n");
    for i in 0..N {
        env.put(&format!("f{i:03}.txt"), &old(i), 0o644);
    }
    let calls: Vec<(String, String, String)> = (0..N)
        .map(|i| {
            (
                format!("w{i}"),
                "write_file".to_string(),
                write(&format!("f{i:03}.txt"), &new(i)),
            )
        })
        .collect();
    let refs: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
        .collect();
    let srv =
        ScriptedServer::start(vec![Reply::tool_calls(&refs), Reply::text("all written")]).unwrap();
    env.run(&srv, &["run", "--approve", "auto-edit", "write them"]);
    let id = env.shown("last")["id"].as_str().unwrap().to_string();
    let state = |env: &Env| -> (usize, usize) {
        let (mut olds, mut news) = (0, 0);
        for i in 0..N {
            let got = std::fs::read_to_string(env.workdir.join(format!("f{i:03}.txt"))).unwrap();
            if got == old(i) {
                olds += 1;
            } else if got == new(i) {
                news += 1;
            } else {
                panic!("f{i:03}.txt is neither old nor new: {got:?}");
            }
        }
        (olds, news)
    };
    let stray = |dir: &Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    };
    assert_eq!(state(&env), (0, N));
    let mut rng = Rng::from_time();
    let mut finished_by_start = 0;
    for round in 0..8 {
        let mut child = env
            .cmd(None, &["rewind", &id, "--to", "1", "--files-only", "--yes"])
            .env("NEOCODE_TEST_REWIND_PAUSE_MS", "2")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(20 + rng.below(500)));
        let _ = child.kill();
        child.wait().unwrap();
        let mid = state(&env);
        // Any start finishes what the kill interrupted.
        ok(env.nc(&["show", &id]));
        assert_eq!(integrity_ok(&env.db()), "ok");
        let after = state(&env);
        assert!(
            after == (N, 0) || after == (0, N),
            "round {round}: half applied after the next start: {after:?} (mid {mid:?})"
        );
        assert_eq!(stray(&env.workdir), Vec::<String>::new());
        if mid.0 > 0 && mid.1 > 0 {
            finished_by_start += 1;
        }
        if after == (N, 0) {
            ok(env.nc(&["rewind", &id, "--undo", "--yes"]));
            assert_eq!(state(&env), (0, N), "round {round}: the undo");
        }
    }
    eprintln!("{finished_by_start} of 8 kills landed mid-rewind");
    // A rewind of more files than the process may hold open at once still completes.
    if state(&env) == (N, 0) {
        ok(env.nc(&["rewind", &id, "--undo", "--yes"]));
    }
    rewind_under_a_descriptor_limit(&env, &id, 120);
    assert_eq!(
        state(&env),
        (N, 0),
        "all rewound under a 120-descriptor limit"
    );
}

/// `neocode rewind ID --to 1 --files-only --yes` run with at most `limit` open descriptors.
fn rewind_under_a_descriptor_limit(env: &Env, id: &str, limit: u64) {
    let mut low = env.cmd(None, &["rewind", id, "--to", "1", "--files-only", "--yes"]);
    // SAFETY: only setrlimit between fork and exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut low, move || {
            let lim = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    ok(low.output().unwrap());
}

/// The TUI's `/undo` (through its worker, as the conversation sends it): the last turn's
/// files go back, the conversation stays, and the rewind it made is undone in turn.
#[test]
fn slash_undo_puts_back_the_last_turns_files() {
    use neocode::tui::worker::{Reply, Request, handle};
    let env = Env::new(KEY, "");
    let id = two_turns(&env);
    let before = env.shown(&id)["message_count"].clone();
    let reply = handle(&env.sessions(), Request::UndoTurn { id: id.clone() }).unwrap();
    let Reply::Undone(text) = reply else {
        panic!("{reply:?}")
    };
    has(&text, "Undid the last turn's changes to 3 files");
    assert_eq!(env.file("a.txt").unwrap().0, b"ALPHA\n");
    assert_eq!(env.file("b.sh").unwrap().0, b"#!/bin/sh\necho b\n");
    assert_eq!(env.file("created2/nested.txt"), None);
    assert_eq!(env.shown(&id)["message_count"], before);
    ok(env.nc(&["rewind", &id, "--undo", "--yes"]));
    assert_eq!(env.file("a.txt").unwrap().0, b"beta\n");
}

/// `export --with-files` carries the file changes and their snapshots: imported into another
/// home (the workspace's files copied there as they are now), a rewind puts back the exact
/// bytes and modes. Without the flag the file carries neither.
#[test]
fn export_with_files_lets_a_rewind_work_after_import_into_another_home() {
    let env = Env::new(KEY, "");
    let id = two_turns(&env);
    let turns = env.turns(&id);
    let plain = ok(env.nc(&["export", &id]));
    assert!(
        !plain.contains("\"blobs\"") && !plain.contains("\"file_changes\""),
        "{plain}"
    );
    let out = env.tmp.path().join("with-files.json");
    let out_s = out.to_string_lossy().into_owned();
    ok(env.nc(&["export", &id, "--with-files", "-o", &out_s]));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(doc["file_changes"].as_array().unwrap().len(), 5, "{doc:#}");
    assert!(!doc["blobs"].as_array().unwrap().is_empty());
    // A markdown export has no place for them.
    let o = env.nc(&["export", &id, "--with-files", "--format", "markdown"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));

    // Another home, the workspace's files as they are now.
    let other = copy_of_two_turns_files(&env);
    let imported = ok(other.nc(&["import", &out_s])).trim().to_string();
    assert_eq!(imported, id);
    assert_eq!(other.turns(&id), turns, "show lists the same turns");
    ok(other.nc(&["rewind", &id, "--to", &turns[1].to_string(), "--yes"]));
    assert_as_before_the_second_turn(&other);

    // A blob whose bytes do not match its hash is refused, and nothing is imported.
    let mut bad = doc;
    bad["blobs"][0]["data_base64"] = json!("AAAA");
    let third = Env::new(KEY, "");
    let bad_path = third.tmp.path().join("bad.json");
    std::fs::write(&bad_path, bad.to_string()).unwrap();
    let o = third.nc(&["import", &bad_path.to_string_lossy()]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("does not match"), "{}", stderr(&o));
    assert!(third.nc(&["show", &id]).status.code() != Some(0));
}

/// Issue 35: a rewind put the files back but left what the model had `git add`ed staged,
/// without a word. The preview (and the report after) names the staged files and the
/// command that unstages them; the index itself is the user's and is left alone.
#[test]
fn a_rewind_names_the_files_left_staged_in_gits_index() {
    let env = Env::new(KEY, "[sandbox]\nmode = \"off\"\n");
    git(&env.workdir, &["init", "-q"]);
    env.put("tracked.txt", "t1\n", 0o644);
    git(&env.workdir, &["add", "tracked.txt"]);
    git(
        &env.workdir,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-q",
            "-m",
            "one",
        ],
    );
    command_turn(
        &env,
        "echo t2 > tracked.txt && git add tracked.txt",
        "change and stage",
    );
    let id = env.shown("last")["id"].as_str().unwrap().to_string();
    let dry = ok(env.nc(&["rewind", &id, "--to", "1", "--dry-run"]));
    assert!(
        dry.contains(
            "git: tracked.txt is staged (git add): a rewind puts the files back, not git's index; `git restore --staged -- tracked.txt` unstages it"
        ),
        "{dry}"
    );
    let o = env.nc(&["rewind", &id, "--to", "1", "--yes"]);
    assert!(o.status.success(), "{}", stderr(&o));
    has(&stderr(&o), "tracked.txt is staged");
    assert_eq!(env.file("tracked.txt"), Some((b"t1\n".to_vec(), 0o644)));
    // The index is still the model's: what the note says to run unstages it.
    assert_eq!(
        git(&env.workdir, &["diff", "--cached", "--name-only"]),
        "tracked.txt\n"
    );
    git(&env.workdir, &["restore", "--staged", "--", "tracked.txt"]);
    assert!(git(&env.workdir, &["status", "--porcelain"]).is_empty());
}

/// Issue 34, break 7: a crafted `export --with-files` recreated `.neocode/hooks.json`,
/// `.git/hooks/pre-commit` (0755), `.git/config` and a set-user-id file on the rewind after
/// `import`. The import leaves the control files' changes out and says so; the rewind writes
/// none of them and masks every mode to 0644/0755.
#[test]
fn a_crafted_session_file_can_make_a_rewind_write_no_control_file_nor_a_setuid_one() {
    use base64::Engine;
    let env = Env::new(KEY, "");
    let id = two_turns(&env);
    let turns = env.turns(&id);
    let out = env.tmp.path().join("with-files.json");
    let out_s = out.to_string_lossy().into_owned();
    ok(env.nc(&["export", &id, "--with-files", "-o", &out_s]));
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let seq = turns[1];
    let mut plant = |path: &str, data: &str, mode: u32| {
        let hash = neocode::session::snapshot::blob_hash(data.as_bytes());
        doc["blobs"].as_array_mut().unwrap().push(json!({
            "hash": hash,
            "data_base64": base64::engine::general_purpose::STANDARD.encode(data),
        }));
        doc["file_changes"].as_array_mut().unwrap().push(json!({
            "seq": seq, "path": path, "by_command": null, "before_tree": null,
            "before": {"state": "stored", "hash": hash, "mode": mode, "size": data.len()},
            "after": {"state": "absent"},
        }));
    };
    let hooks =
        r#"{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch pwned"}]}]}}"#;
    plant(".neocode/hooks.json", hooks, 0o644);
    plant(".neocode/permissions.toml", "allow = [\"*\"]\n", 0o644);
    plant(".git/hooks/pre-commit", "#!/bin/sh\ntouch pwned\n", 0o755);
    plant(".git/config", "[core]\n\tfsmonitor = touch pwned\n", 0o644);
    plant("bin/tool", "#!/bin/sh\nid\n", 0o4755);
    plant("shared.txt", "anyone may write me\n", 0o2777);
    let crafted = env.tmp.path().join("crafted.json");
    std::fs::write(&crafted, doc.to_string()).unwrap();

    let other = copy_of_two_turns_files(&env);
    let o = other.nc(&["import", &crafted.to_string_lossy()]);
    let said = stderr(&o);
    assert_eq!(ok(o).trim(), id);
    has(
        &said,
        "left out 4 recorded file change(s) a rewind must never write",
    );
    for p in [
        ".neocode/hooks.json",
        ".neocode/permissions.toml",
        ".git/hooks/pre-commit",
        ".git/config",
    ] {
        assert!(said.contains(&format!("{p}: ")), "{p}: {said}");
    }
    let o = other.nc(&["rewind", &id, "--to", &turns[0].to_string(), "--yes"]);
    let listed = stderr(&o);
    ok(o);
    // Listed before it was written.
    assert!(listed.contains("bin/tool"), "{listed}");
    for p in [
        ".neocode/hooks.json",
        ".neocode/permissions.toml",
        ".git/hooks/pre-commit",
        ".git/config",
    ] {
        assert_eq!(other.file(p), None, "{p} was written");
    }
    assert!(!other.workdir.join(".neocode").exists() && !other.workdir.join(".git").exists());
    assert_eq!(
        other.file("bin/tool"),
        Some((b"#!/bin/sh\nid\n".to_vec(), 0o755)),
        "no set-user-id bit"
    );
    assert_eq!(
        other.file("shared.txt"),
        Some((b"anyone may write me\n".to_vec(), 0o755)),
        "no set-group-id bit, not world-writable"
    );
    assert!(!other.workdir.join("pwned").exists());
}
