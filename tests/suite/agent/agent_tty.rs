//! `neocode run` asking on a real terminal (pseudo-terminal): yes / no / always, and
//! "always" surviving a restart of the process.

use crate::support::text::has;
use crate::support::{Env, pty};

use neocode::testkit::scripted::{Reply, ScriptedServer};
use portable_pty::CommandBuilder;

/// Runs `neocode run` on a pty with `input` already typed; returns (exit code, output).
fn on_tty(env: &Env, srv: &ScriptedServer, args: &[&str], input: &str) -> (u32, String) {
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_neocode"));
    cmd.env("NEOCODE_HOME", &env.home);
    cmd.env("NEOCODE_BASE_URL", srv.base_url());
    cmd.env("NEOCODE_MODEL", "m");
    cmd.env_remove("NEOCODE_API_KEY");
    cmd.env_remove("OPENAI_API_KEY");
    cmd.cwd(&env.workdir);
    cmd.arg("run");
    cmd.args(args);
    let (status, out) = pty::run_typed(cmd, input, 40, 120);
    (status.exit_code(), out)
}

#[test]
fn yes_no_and_always_on_a_terminal_and_always_survives_a_restart() {
    let env = Env::new();
    let srv = ScriptedServer::start(vec![
        Reply::tool_calls(&[
            ("t1", "write_file", r#"{"path":"one.txt","content":"1"}"#),
            ("t2", "run_command", r#"{"command":"touch ran.txt"}"#),
        ]),
        Reply::text("first done"),
        Reply::tool_calls(&[("t3", "write_file", r#"{"path":"two.txt","content":"2"}"#)]),
        Reply::text("second done"),
    ])
    .unwrap();
    // "always" for the write (the proposed rule edited to the whole tool, kept for this
    // session), "no" for the command.
    let (code, out) = on_tty(&env, &srv, &["two things"], "a\nwrite_file\n\nn\n");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("Allow write_file one.txt?"), "{out}");
    assert!(out.contains("Allow run_command touch ran.txt?"), "{out}");
    assert_eq!(
        std::fs::read_to_string(env.workdir.join("one.txt")).unwrap(),
        "1"
    );
    assert!(
        !env.workdir.join("ran.txt").exists(),
        "the denied command did not run"
    );
    assert!(out.contains("first done"));

    // A new process: the write is allowed without asking. Had it asked, the typed "n" would
    // deny it and two.txt would be missing.
    let (code, out) = on_tty(&env, &srv, &["--continue", "one more"], "n\n");
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("Allow write_file"), "{out}");
    assert_eq!(
        std::fs::read_to_string(env.workdir.join("two.txt")).unwrap(),
        "2"
    );
}

#[test]
fn run_plan_asks_on_a_terminal_and_a_dropped_step_never_runs() {
    let env = Env::new();
    let plan = r#"{"steps":[{"id":"a","title":"First"},{"id":"b","title":"Second","depends_on":["a"]},{"id":"c","title":"Third","depends_on":["b"]}]}"#;
    let srv = ScriptedServer::start(vec![
        Reply::tool_calls(&[("p1", "update_plan", plan)]),
        Reply::text("Plan stored."),
        Reply::text("did a"),
        Reply::text("did c"),
    ])
    .unwrap();
    // Drop b, then run what is left.
    let (code, out) = on_tty(&env, &srv, &["--plan", "three steps"], "d b\ny\n");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("Plan: 3 steps in 3 layers"), "{out}");
    // c no longer waits for the dropped b.
    assert!(out.contains("Plan: 2 steps in 1 layer\r\n"), "{out}");
    has(&out, "Run this plan? [y]es / [n]o / [d]rop");
    assert!(out.contains("✔ step a done"), "{out}");
    assert!(out.contains("✔ step c done"), "{out}");
    assert!(!out.contains("step b:"), "{out}");
    assert_eq!(srv.request_count(), 4);
}

/// `neocode run` on a terminal: "always" proposes a prefix rule, and each scope keeps it
/// where it says: the session (survives `--continue`, in no file), the workspace's
/// `.neocode/permissions.toml`, the home's `config.toml`.
#[test]
fn always_proposes_a_prefix_rule_and_keeps_it_at_each_scope() {
    let env = Env::new();
    let cmd = |id: &'static str, c: &str| (id, "run_command", format!(r#"{{"command":"{c}"}}"#));
    let calls = |v: Vec<(&'static str, &'static str, String)>| {
        let v: Vec<(&str, &str, &str)> = v.iter().map(|(a, b, c)| (*a, *b, c.as_str())).collect();
        Reply::tool_calls(&v)
    };
    let srv = ScriptedServer::start(vec![
        calls(vec![
            cmd("t1", "echo alpha 1"),
            cmd("t2", "echo beta 2"),
            cmd("t3", "echo gamma 3"),
        ]),
        Reply::text("first done"),
        calls(vec![
            cmd("t4", "echo alpha 9"),
            cmd("t5", "echo beta 9"),
            cmd("t6", "echo gamma 9"),
        ]),
        Reply::text("second done"),
        calls(vec![cmd("t7", "echo alpha 7")]),
        Reply::text("third done"),
    ])
    .unwrap();
    // Each: always, Enter keeps the proposed rule, then the scope (Enter = this session).
    let (code, out) = on_tty(&env, &srv, &["three"], "a\n\n\na\n\nw\na\n\ne\n");
    assert_eq!(code, 0, "{out}");
    for line in [
        "Rule: run_command(echo alpha *)",
        "Kept for this session.",
        "Kept for this workspace.",
        "Kept for everywhere.",
    ] {
        has(&out, line);
    }
    let ws_rules = std::fs::read_to_string(env.workdir.join(".neocode/permissions.toml")).unwrap();
    has(&ws_rules, "\"run_command(echo beta *)\"");
    assert!(
        !ws_rules.contains("alpha") && !ws_rules.contains("gamma"),
        "{ws_rules}"
    );
    let home_cfg = std::fs::read_to_string(env.home.join("config.toml")).unwrap();
    assert!(home_cfg.contains("[permissions]"), "{home_cfg}");
    has(&home_cfg, "\"run_command(echo gamma *)\"");
    assert!(!home_cfg.contains("alpha"), "{home_cfg}");

    // The same session in a new process: all three run without asking (a "n" typed would
    // deny the first that asked), each saying which rule let it.
    let (code, out) = on_tty(&env, &srv, &["--continue", "again"], "n\nn\nn\n");
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("Allow run_command"), "{out}");
    has(
        &out,
        "allowed by rule run_command(echo alpha *) (this session)",
    );
    has(&out, "allowed by rule run_command(echo beta *) (");
    assert!(out.contains("permissions.toml:"), "{out}");
    has(&out, "allowed by rule run_command(echo gamma *) (");

    // A new session: the session's grant is not there, so it asks.
    let (code, out) = on_tty(&env, &srv, &["fresh"], "n\n");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("Allow run_command echo alpha 7?"), "{out}");
}

/// Issue 35: "always" on a compound command proposed one rule (`run_command(sed *)`, wider
/// than the `sed` approved) and the other parts asked again. Now every part gets its own
/// narrow rule, listed together (each can be changed), and the same line then runs without
/// asking; a command no rule can allow (a redirect to a file) offers no "always".
#[test]
fn always_on_a_compound_command_keeps_one_rule_per_part_and_none_where_no_rule_can() {
    let env = Env::new();
    std::fs::write(env.workdir.join("a.txt"), "old text\n").unwrap();
    std::fs::write(env.workdir.join("stale.txt"), "x").unwrap();
    let line =
        r#"{"command":"sed -i 's/old text/new text/' a.txt && rm -f stale.txt && cat a.txt"}"#;
    let srv = ScriptedServer::start(vec![
        Reply::tool_calls(&[
            ("t1", "run_command", line),
            ("t2", "run_command", line),
            ("t3", "run_command", r#"{"command":"echo hi > out.txt"}"#),
        ]),
        Reply::text("done"),
    ])
    .unwrap();
    // t1: always, Enter keeps the three rules, Enter: this session. t2 runs without asking.
    // t3: `a` is not an answer there (no rule can allow it), then no. (The spare "n"s keep a
    // regression that asks more often from waiting for input forever.)
    let (code, out) = on_tty(&env, &srv, &["fix it"], "a\n\n\na\nn\nn\nn\nn\n");
    assert_eq!(code, 0, "{out}");
    has(&out, "[a]lways (proposes a rule for each part)");
    has(&out, "Rules, one for each part of the command:");
    has(&out, "1. run_command(sed -i s/old*text/new*text/ a.txt)");
    assert!(out.contains("2. run_command(rm -f stale.txt)"), "{out}");
    assert!(out.contains("3. run_command(cat a.txt)"), "{out}");
    assert!(!out.contains("run_command(sed *)"), "{out}");
    has(&out, "Keep these 3 rules for [s]this session");
    assert!(out.contains("Kept for this session."), "{out}");
    // The second identical line ran without asking: one question for the sed line.
    assert_eq!(out.matches("Allow run_command sed -i").count(), 1, "{out}");
    assert!(
        out.contains(
            "allowed by rule run_command(sed -i s/old*text/new*text/ a.txt) (this session)"
        ) || out.contains("allowed by rule run_command(cat a.txt) (this session)"),
        "{out}"
    );
    has(
        &out,
        "[y]es / [n]o (no rule can allow this call, so there is no \"always\")",
    );
    assert!(out.contains("No rule can allow this call"), "{out}");
    assert!(!env.workdir.join("out.txt").exists(), "{out}");
    assert_eq!(
        std::fs::read_to_string(env.workdir.join("a.txt")).unwrap(),
        "new text\n"
    );
}
