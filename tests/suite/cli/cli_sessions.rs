//! End-to-end tests of the real binary: show, export/import, fork, rename, delete, search,
//! hostile text and closed pipes.

use crate::support::text::has;
use std::io::{BufRead, BufReader};
use std::process::Stdio;

use crate::support::cli::*;
use neocode::session::{AppendMeta, NewMessage, NewSession, Role};

#[test]
fn show_prints_header_plan_assets_and_last_messages() {
    let ws = Ws::new();
    let id = ws.rich_session("Fix the flaky login test");
    let out = ok_stdout(ws.cmd().args(["show", "last"]));
    assert_eq!(out.lines().next(), Some("Fix the flaky login test"));
    for want in [
        format!("id         {id}"),
        "status     created".to_string(),
        "model      openai / gpt-rich".to_string(),
        "tokens     12345 in / 678 out".to_string(),
        "messages   4".to_string(),
        "Plan  1/3 ✗1".to_string(),
        "✔ Read the code  (completed)".to_string(),
        "✗ Fix the bug  (failed) — ToolError: patch did not apply".to_string(),
        "□ Run the tests  (pending)".to_string(),
        "Assets  1".to_string(),
        "image/png".to_string(),
        "Last 4 of 4 messages".to_string(),
        "#2 assistant → read_file".to_string(),
        "#3 tool".to_string(),
        "The sleep makes it flaky; removed it.".to_string(),
    ] {
        assert!(out.contains(&want), "missing {want:?} in:\n{out}");
    }

    let v = ok_json(ws.cmd().args(["show", &id[..12], "--json"]));
    assert_eq!(v["id"], id.as_str());
    assert_eq!(v["message_count"], 4);
    assert_eq!(v["plan"]["failed"], 1);
    let steps = v["steps"].as_array().unwrap();
    let st: Vec<(&str, &str)> = steps
        .iter()
        .map(|s| (s["id"].as_str().unwrap(), s["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        st,
        [
            ("read", "completed"),
            ("fix", "failed"),
            ("test", "pending")
        ]
    );
    assert_eq!(steps[1]["depends_on"], serde_json::json!(["read"]));
    assert_eq!(v["assets"][0]["mime_type"], "image/png");
    assert_eq!(v["assets"][0]["size_bytes"], 21);
    let msgs = v["last_messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 4);
    assert_eq!(msgs[1]["tool_calls"], serde_json::json!(["read_file"]));
    assert_eq!(msgs[3]["text"], "The sleep makes it flaky; removed it.");
}

#[test]
fn export_import_round_trip_into_another_workspace() {
    let ws = Ws::new();
    let id = ws.rich_session("Round trip");
    let original = ok_stdout(ws.cmd().args(["export", &id]));
    let file = ws.workdir.as_path().join("s.json");
    ok_stdout(ws.cmd().args(["export", "last", "-o"]).arg(&file));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original);
    let doc: serde_json::Value = serde_json::from_str(&original).unwrap();
    assert_eq!(doc["format"], "neocode-session");
    assert_eq!(doc["messages"].as_array().unwrap().len(), 4);
    assert_eq!(doc["assets"].as_array().unwrap().len(), 1);

    let loc_b = ws.sibling("b");
    let printed = ok_stdout(ws.cmd_in(loc_b.root()).arg("import").arg(&file));
    assert_eq!(printed.trim(), id);
    let again = ok_stdout(ws.cmd_in(loc_b.root()).args(["export", &id]));
    assert_eq!(
        again, original,
        "export → import → export must be identical"
    );

    // Same workspace: refused without --new-id, a copy with it.
    let (code, _, err) = fail(ws.cmd().arg("import").arg(&file));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("already exists"), "{err}");
    let copy = ok_stdout(
        ws.cmd()
            .args(["import", "--new-id", "-"])
            .pipe_stdin(&file)
            .unwrap(),
    );
    let copy = copy.trim();
    assert_ne!(copy, id);
    let copied: serde_json::Value =
        serde_json::from_str(&ok_stdout(ws.cmd().args(["export", copy]))).unwrap();
    let mut expect = doc.clone();
    expect["session"]["id"] = copy.into();
    assert_eq!(copied["session"]["id"], copy);
    assert_eq!(copied["messages"], expect["messages"]);
    assert_eq!(copied["session"]["title"], expect["session"]["title"]);
    assert_eq!(copied["session"]["plan"], expect["session"]["plan"]);
    assert_eq!(copied["assets"].as_array().unwrap().len(), 1);
    assert_eq!(
        copied["assets"][0]["data_base64"],
        doc["assets"][0]["data_base64"]
    );
}

#[test]
fn malformed_import_names_the_json_path_and_writes_nothing() {
    let ws = Ws::new();
    let id = ws.rich_session("Source");
    let mut doc: serde_json::Value =
        serde_json::from_str(&ok_stdout(ws.cmd().args(["export", &id]))).unwrap();
    doc["session"]["id"] = "fresh-id".into();
    doc["messages"][2]["role"] = "wizard".into();
    let bad = ws.workdir.as_path().join("bad.json");
    std::fs::write(&bad, serde_json::to_string(&doc).unwrap()).unwrap();

    let snapshot = |ws: &Ws| -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(ws.location().paths.dir)
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.path().is_file())
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let before = snapshot(&ws);
    let (code, out, err) = fail(ws.cmd().arg("import").arg(&bad));
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("$.messages[2].role"), "{err}");
    assert!(err.starts_with("neocode: "), "{err}");
    assert_eq!(
        snapshot(&ws),
        before,
        "the database must be byte-for-byte unchanged"
    );

    // Not JSON at all, and a tool result without its call.
    std::fs::write(&bad, "{ not json").unwrap();
    let (code, _, err) = fail(ws.cmd().arg("import").arg(&bad));
    assert_eq!(code, 2, "{err}");
    doc["messages"][2]["role"] = "tool".into();
    doc["messages"][2]["tool_call_id"] = "call_missing".into();
    std::fs::write(&bad, serde_json::to_string(&doc).unwrap()).unwrap();
    let (code, _, err) = fail(ws.cmd().arg("import").arg(&bad));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("$.messages[2]"), "{err}");
    assert_eq!(snapshot(&ws), before);

    // A fresh workspace: a bad import does not even create the database.
    let loc_b = ws.sibling("b");
    fail(ws.cmd_in(loc_b.root()).arg("import").arg(&bad));
    assert!(!loc_b.paths.dir.exists());
    let (code, _, err) = fail(
        ws.cmd()
            .arg("import")
            .arg(ws.workdir.as_path().join("missing.json")),
    );
    assert_eq!(code, 2, "{err}");
}

#[test]
fn markdown_export_is_a_readable_transcript() {
    let ws = Ws::new();
    let id = ws.rich_session("Fix the flaky login test");
    let md = ok_stdout(ws.cmd().args(["export", &id, "--format", "markdown"]));
    for want in [
        "# Fix the flaky login test\n",
        &format!("- **id:** `{id}`"),
        "- **tokens:** 12345 in / 678 out",
        "## Plan",
        "- [x] Read the code (`read`) — completed",
        "- [!] Fix the bug (`fix`) — failed, after `read`: ToolError: patch did not apply",
        "- [ ] Run the tests (`test`) — pending",
        "## Transcript",
        "### 1 · user",
        "Please fix the flaky login test",
        "**Tool call** `read_file` (`call_1`)\n\n- `path`: `src/login.rs`\n",
        "### 3 · tool · result of `read_file` (`call_1`)",
        "```\nfn login() { sleep(1) }\n```",
    ] {
        assert!(md.contains(want), "missing {want:?} in:\n{md}");
    }
}

#[test]
fn hostile_text_is_printed_harmlessly_everywhere() {
    let ws = Ws::new();
    let rt = ws.sessions();
    let h = rt
        .new_session(NewSession {
            title: format!("title {HOSTILE}"),
            model: format!("model{HOSTILE}"),
            ..NewSession::default()
        })
        .unwrap();
    rt.append(
        &h.id,
        &[
            NewMessage::text(Role::User, format!("needle {HOSTILE}\nsecond line")),
            NewMessage::text(Role::Assistant, format!("needle reply {HOSTILE}")),
        ],
        &AppendMeta::default(),
    )
    .unwrap();
    for args in [
        vec!["--list"],
        vec!["--list", "--json"],
        vec!["show", "last"],
        vec!["show", "last", "--json"],
        vec!["export", "last"],
        vec!["export", "last", "--format", "markdown"],
        vec!["search", "needle"],
        vec!["search", "needle", "--json"],
        vec!["rename", "last", HOSTILE],
    ] {
        let out = ws.cmd().args(&args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.stdout.is_empty(), "{args:?}");
        assert_harmless(&out.stdout);
        assert_harmless(&out.stderr);
    }
    // The controls are shown, not dropped.
    let out = ok_stdout(ws.cmd().args(["show", "last"]));
    assert!(out.contains("^[]0;pwned^G"), "{out}");
    assert!(
        out.contains("<U+009B>31m") && out.contains("<U+202E>desrever"),
        "{out}"
    );
    // JSON stays lossless: the escapes decode to the original text.
    let v = ok_json(ws.cmd().args(["--list", "--json"]));
    assert_eq!(v[0]["title"], HOSTILE);
    // Errors that echo hostile input are harmless too.
    let out = ws.cmd().args(["show", HOSTILE]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_harmless(&out.stderr);
}

#[test]
fn closing_the_pipe_early_exits_0_quietly() {
    let ws = Ws::new();
    let rt = ws.sessions();
    let long = "x".repeat(600);
    for i in 0..300 {
        rt.new_session(NewSession {
            title: format!("{i} {long}"),
            ..NewSession::default()
        })
        .unwrap();
    }
    for args in [
        vec!["--list"],
        vec!["--list", "--json"],
        vec!["export", "last"],
    ] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_neocode"))
            .env("NEOCODE_HOME", ws.home.as_path())
            .arg("--workdir")
            .arg(ws.workdir.as_path())
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut reader = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        reader.read_line(&mut first).unwrap();
        assert!(!first.is_empty());
        drop(reader);
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }
}

#[test]
fn fork_prints_the_new_id_and_links_the_parent() {
    let ws = Ws::new();
    let id = ws.session("Parent", 3);
    let child = ok_stdout(ws.cmd().args(["fork", &id]));
    let child = child.trim();
    assert_ne!(child, id);
    let v = ok_json(ws.cmd().args(["show", child, "--json"]));
    assert_eq!(v["parent_id"], id.as_str());
    assert_eq!(v["message_count"], 6);
    let early = ok_stdout(ws.cmd().args(["fork", &id, "--at", "2"]));
    let v = ok_json(ws.cmd().args(["show", early.trim(), "--json"]));
    assert_eq!(v["message_count"], 2);
    assert_eq!(v["fork_seq"], 2);
    let list = ok_stdout(ws.cmd().arg("--list"));
    assert_eq!(list.matches("  ↳ ").count(), 2, "{list}");
    let (code, _, err) = fail(ws.cmd().args(["fork", &id, "--at", "99"]));
    assert_eq!(code, 2, "{err}");
}

#[test]
fn rename_changes_the_title() {
    let ws = Ws::new();
    let id = ws.session("Old title", 1);
    let out = ok_stdout(ws.cmd().args(["rename", "last", "New title"]));
    assert!(out.contains("New title"));
    let v = ok_json(ws.cmd().args(["show", &id, "--json"]));
    assert_eq!(v["title"], "New title");
    let (code, _, _) = fail(ws.cmd().args(["rename", "last", "  "]));
    assert_eq!(code, 2);
}

#[test]
fn delete_needs_yes_off_a_terminal() {
    let ws = Ws::new();
    let keep = ws.session("Keep me", 1);
    let doomed = ws.session("Delete me", 1);
    let (code, out, err) = fail(ws.cmd().args(["delete", &doomed]));
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(err.contains("--yes"), "{err}");
    assert_eq!(
        ws.sessions().count().unwrap(),
        2,
        "nothing deleted without --yes"
    );
    let out = ok_stdout(ws.cmd().args(["delete", &doomed, "--yes"]));
    assert_eq!(out.trim(), format!("deleted {doomed}"));
    let v = ok_json(ws.cmd().args(["--list", "--json"]));
    let ids = crate::support::cli::list_ids(&v);
    assert_eq!(ids, [keep.as_str()]);
}

#[test]
fn search_lists_matches_with_session_seq_and_snippet() {
    let ws = Ws::new();
    let a = ws.session("Alpha", 2);
    ws.session("Beta", 1);
    let v = ok_json(ws.cmd().args(["search", "Alpha"]).arg("--json"));
    let hits = v.as_array().unwrap();
    assert_eq!(hits.len(), 2, "{v}");
    for h in hits {
        assert_eq!(h["session_id"], a.as_str());
        assert_eq!(h["session_title"], "Alpha");
        assert_eq!(h["role"], "user");
        assert!(h["snippet"].as_str().unwrap().contains("Alpha"));
    }
    let mut seqs: Vec<i64> = hits.iter().map(|h| h["seq"].as_i64().unwrap()).collect();
    seqs.sort();
    assert_eq!(seqs, [1, 3]);
    let out = ok_stdout(ws.cmd().args(["search", "Alpha"]));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert!(lines[0].contains("SESSION") && lines[0].contains("SEQ"));
    assert_eq!(
        lines[3],
        "2 shown of 2 matching messages, ranked by how often the words occur"
    );
    assert!(
        lines[1].contains("user") && lines[1].contains("question"),
        "{out}"
    );
    assert_harmless(out.as_bytes());
    let v = ok_json(ws.cmd().args(["search", "Alpha", "--json", "--limit", "1"]));
    assert_eq!(v.as_array().unwrap().len(), 1);
    let none = ok_stdout(ws.cmd().args(["search", "zebra"]));
    assert!(none.starts_with("no messages match 'zebra'"), "{none}");
    assert_eq!(
        ok_json(ws.cmd().args(["search", "zebra", "--json"])),
        serde_json::json!([])
    );
}

#[test]
fn show_names_tool_calls_a_stopped_session_left_unanswered() {
    let ws = Ws::new();
    let rt = ws.sessions();
    let id = rt.new_session(NewSession::default()).unwrap().id;
    let call = |id: &str, name: &str| neocode::session::ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: r#"{"cmd":"cargo test"}"#.into(),
    };
    rt.append(
        &id,
        &[
            NewMessage::text(Role::User, "run the tests and fix the lint"),
            // As a turn that crashed leaves it: the calls came from the model here.
            NewMessage {
                role: Some(Role::Assistant),
                tool_calls: vec![call("call-a", "bash"), call("call-b", "clippy_fix")],
                tool_metadata: Some(serde_json::json!({ "calls_from": "model" })),
                ..NewMessage::default()
            },
            NewMessage::tool_result("call-a", "ok", false),
            // The process died here: call-b never got its result.
        ],
        &AppendMeta::default(),
    )
    .unwrap();
    let out = ok_stdout(ws.cmd().args(["show", &id]));
    has(&out, "Interrupted  1 tool call never got a result");
    assert!(out.contains("call-b  clippy_fix"), "{out}");
    assert!(!out.contains("call-a  bash"), "{out}");
    let v = ok_json(ws.cmd().args(["show", &id, "--json"]));
    let calls = v["interrupted_tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["id"], "call-b");
    assert_eq!(calls[0]["name"], "clippy_fix");

    // Once answered, nothing is interrupted.
    rt.append(
        &id,
        &[NewMessage::tool_result("call-b", "fixed", false)],
        &AppendMeta::default(),
    )
    .unwrap();
    let out = ok_stdout(ws.cmd().args(["show", &id]));
    assert!(!out.contains("Interrupted"), "{out}");
    let v = ok_json(ws.cmd().args(["show", &id, "--json"]));
    assert_eq!(v["interrupted_tool_calls"], serde_json::json!([]));
}

/// A session with what real use produced: reasoning, HTML-like text, coloured tool output, a
/// large multi-line write, an image, and tool metadata with a float.
fn real_use_session(ws: &Ws) -> String {
    use neocode::session::{Part, ToolCall};
    let rt = ws.sessions();
    let h = crate::support::titled(&rt, "Real <use>");
    let content: String = (0..120).map(|i| format!("line {i}\n")).collect();
    let args = serde_json::json!({"path": "src/big.rs", "content": content, "mode": {"append": false, "tabs": 4}});
    let image = rt.save_asset(&h.id, "image/png", b"\x89PNG fake").unwrap();
    let messages = [
        NewMessage::text(
            Role::User,
            "Render <div onclick=x>this</div> and `<b>` in code",
        ),
        NewMessage {
            role: Some(Role::Assistant),
            parts: vec![
                Part::reasoning("Think **hard** about <script>"),
                Part::text("Writing it."),
                Part::Image {
                    asset_id: image.id,
                    mime_type: Some("image/png".into()),
                },
            ],
            tool_calls: vec![ToolCall {
                id: "call_w".into(),
                name: "write_file".into(),
                arguments: args.to_string(),
            }],
            ..NewMessage::default()
        },
        NewMessage {
            tool_metadata: Some(serde_json::json!({"duration_s": 18.446941166000034})),
            ..NewMessage::tool_result(
                "call_w",
                "\x1b[32mwrote\x1b[0m 120 lines \x1b]0;t\x07",
                false,
            )
        },
    ];
    rt.append(&h.id, &messages, &AppendMeta::default()).unwrap();
    h.id
}

#[test]
fn markdown_export_reads_like_the_session() {
    let ws = Ws::new();
    let id = real_use_session(&ws);
    let out = ws.workdir.as_path().join("t.md");
    ok_stdout(
        ws.cmd()
            .args(["export", &id, "--format", "markdown", "-o"])
            .arg(&out),
    );
    let md = std::fs::read_to_string(&out).unwrap();
    for want in [
        "# Real &lt;use>\n",
        // HTML outside code is text; inside a code span it stays as written.
        "Render &lt;div onclick=x>this&lt;/div> and `<b>` in code",
        "> **Reasoning**",
        "> _Think **hard** about &lt;script>_",
        "**Tool call** `write_file` (`call_w`)",
        "- `path`: `src/big.rs`",
        "- `content`:\n\n```text\nline 0\nline 1\n",
        "- `mode`:\n\n```json\n{\n  \"append\": false,",
        "### 3 · tool · result of `write_file` (`call_w`)",
        // Colour codes are gone; other escapes stay visible.
        "wrote 120 lines ^[]0;t^G",
    ] {
        assert!(md.contains(want), "missing {want:?} in:\n{md}");
    }
    assert!(!md.contains("\\n"), "no escaped newlines:\n{md}");
    assert!(!md.contains("[32m"), "{md}");
    // The image is written next to the file and linked.
    let link = md
        .lines()
        .find(|l| l.starts_with("![image"))
        .unwrap_or_else(|| panic!("no image link in:\n{md}"));
    let rel = link.split("](<").nth(1).unwrap().trim_end_matches(">)");
    assert!(rel.starts_with("t.images/"), "{link}");
    let bytes = std::fs::read(ws.workdir.as_path().join(rel)).unwrap();
    assert_eq!(bytes, b"\x89PNG fake");

    // Writing again is refused without --force, and --force replaces.
    let (code, _, err) = fail(
        ws.cmd()
            .args(["export", &id, "--format", "markdown", "-o"])
            .arg(&out),
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("already exists") && err.contains("--force"),
        "{err}"
    );
    ok_stdout(
        ws.cmd()
            .args(["export", &id, "--format", "markdown", "--force", "-o"])
            .arg(&out),
    );
    let json = ws.workdir.as_path().join("t.json");
    ok_stdout(ws.cmd().args(["export", &id, "-o"]).arg(&json));
    let (code, _, err) = fail(ws.cmd().args(["export", &id, "-o"]).arg(&json));
    assert_eq!(code, 2, "{err}");
}

#[test]
fn tool_metadata_floats_survive_export_and_import_exactly() {
    let ws = Ws::new();
    let id = real_use_session(&ws);
    let text = ok_stdout(ws.cmd().args(["export", &id]));
    assert!(text.contains("18.446941166000034"), "{text}");
    let file = ws.workdir.as_path().join("f.json");
    std::fs::write(&file, &text).unwrap();
    let loc_b = ws.sibling("b");
    ok_stdout(ws.cmd_in(loc_b.root()).arg("import").arg(&file));
    let rt = neocode::runtime::Sessions::open(&loc_b).unwrap();
    let msgs = rt.load(&id).unwrap().messages;
    let meta = msgs[2].tool_metadata.as_ref().unwrap();
    assert_eq!(meta["duration_s"].as_f64(), Some(18.446941166000034));
    let again = ok_stdout(ws.cmd_in(loc_b.root()).args(["export", &id]));
    assert_eq!(again, text);
}

#[test]
fn show_counts_lines_in_words_and_draws_steps_like_the_tui() {
    use neocode::session::{Plan, Step, StepStatus, StepUpdate};
    let ws = Ws::new();
    let rt = ws.sessions();
    let h = rt.new_session(NewSession::default()).unwrap();
    let step = |id: &str, deps: &[&str]| Step {
        id: id.into(),
        title: format!("Step {id}"),
        depends_on: deps.iter().map(ToString::to_string).collect(),
    };
    // Listed out of dependency order: `show` prints them layer by layer, as the TUI does.
    let plan = Plan {
        steps: vec![step("later", &["first"]), step("first", &[])],
    };
    crate::support::cli::set_plan(&rt, &h.id, plan);
    rt.step_update(
        &h.id,
        "first",
        &StepUpdate::Status {
            status: StepStatus::Running,
        },
    )
    .unwrap();
    rt.append(
        &h.id,
        &[NewMessage::text(Role::User, "1\n2\n3\n4\n5\n6\n7")],
        &AppendMeta::default(),
    )
    .unwrap();
    let out = ok_stdout(ws.cmd().args(["show", &h.id[..8].to_uppercase()]));
    assert!(out.contains("  … 1 more line\n"), "{out}");
    let first = out
        .find("◐ Step first  (running)")
        .unwrap_or_else(|| panic!("{out}"));
    let later = out
        .find("□ Step later  (pending)")
        .unwrap_or_else(|| panic!("{out}"));
    assert!(first < later, "{out}");
}

/// Runs `cmd` with its address space limited to `mib` MiB (`ulimit -v`): a process that
/// needs more fails to allocate and aborts. Returns its status and standard error.
fn under_memory_cap(
    mut cmd: std::process::Command,
    mib: u64,
) -> (std::process::ExitStatus, String) {
    use std::os::unix::process::CommandExt;
    let bytes = mib << 20;
    // SAFETY: setrlimit is async-signal-safe and touches only the child.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let o = cmd.stdout(Stdio::null()).output().unwrap();
    (o.status, String::from_utf8_lossy(&o.stderr).into_owned())
}

/// A session file of `mib` MiB, nearly all of it one user message (the red team's shape),
/// written as a stream.
fn big_session_file(path: &std::path::Path, mib: usize) {
    use std::io::Write;
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    write!(
        f,
        r#"{{"format":"neocode-session","version":2,"session":{{"id":"0192f3a1-0000-7000-8000-0000000000b1","title":"big","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:01Z","status":"completed"}},"messages":[{{"seq":1,"role":"user","created_at":"2026-01-01T00:00:00Z","parts":[{{"kind":"text","text":""#
    )
    .unwrap();
    let line = "all work and no play makes a big session file ".repeat(1024);
    let mut left = mib << 20;
    while left > 0 {
        let n = left.min(line.len());
        f.write_all(&line.as_bytes()[..n]).unwrap();
        left -= n;
    }
    write!(
        f,
        r#""}}]}},{{"seq":2,"role":"assistant","created_at":"2026-01-01T00:00:01Z","parts":[{{"kind":"text","text":"ok"}}]}}]}}"#
    )
    .unwrap();
    f.flush().unwrap();
}

/// The binary on `ws`'s home and workspace, as a plain `std` command.
fn std_cmd(ws: &Ws) -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_neocode"));
    c.env("NEOCODE_HOME", &ws.home)
        .arg("--workdir")
        .arg(ws.workdir.as_path());
    c
}

/// Issue 34, weakness 9: importing a 200 MB session file took 1.85 GB. The file is read as a
/// stream and held once; a file over the limit (256 MiB unless `--max-size`) is refused at
/// once with a line that names the flag.
#[test]
fn a_200_mb_session_file_imports_in_bounded_memory_and_the_limit_is_clear() {
    let ws = Ws::new();
    let big = ws.workdir.as_path().join("big.json");
    big_session_file(&big, 200);
    // Under a cap of 1.25 GiB of address space (it took 1.85 GB of memory before; about
    // 650 MB now, docs/PERFORMANCE.md).
    let mut cmd = std_cmd(&ws);
    cmd.arg("import").arg(&big);
    let (status, err) = under_memory_cap(cmd, 1280);
    assert!(status.success(), "{status}: {err}");
    // The imported message is searchable (by its first MiB), in bounded memory too.
    let mut cmd = std_cmd(&ws);
    cmd.args(["search", "play"]);
    let (status, err) = under_memory_cap(cmd, 512);
    assert!(status.success(), "{status}: {err}");

    // Over the limit: refused before it is read, with the flag to raise it.
    let mut cmd = std_cmd(&ws);
    cmd.args(["import", "--new-id", "--max-size", "100"])
        .arg(&big);
    let (status, err) = under_memory_cap(cmd, 256);
    assert_eq!(status.code(), Some(2), "{err}");
    has(
        &err,
        "larger than the import limit of 100 MiB; raise it with --max-size",
    );
    std::fs::remove_file(&big).unwrap();
    // From standard input the limit is counted as it reads.
    let small = ws.workdir.as_path().join("small.json");
    big_session_file(&small, 2);
    let o = std_cmd(&ws)
        .args(["import", "--new-id", "--max-size", "1", "-"])
        .stdin(std::fs::File::open(&small).unwrap())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("standard input: larger than the import limit of 1 MiB"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
