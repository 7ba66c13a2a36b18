//! `neocode import --from claude-code|codex`: real transcripts from public repositories
//! (tests/data/import/README.md) and made-up hostile ones.

use crate::support::text::{has, starts};
use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::support::cli::{Ws, assert_harmless, fail, ok_stdout};
use crate::support::files_under;
use base64::Engine;
use neocode::runtime::import::{self, SourceTool};
use neocode::session::file::SessionFile;
use neocode::session::{Part, Role, StepStatus};
use serde_json::{Value, json};

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/import")
        .join(rel)
}

const CLAUDE_DIR: &str = "claude-code/-home-USER-projects-spotter-worktrees-spotter-dov";
const CLAUDE_MAIN: &str = "4d5611e5-241a-462a-8d15-5122611a9569";
const CODEX_FILE: &str =
    "codex/2026/02/23/rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl";

fn claude_main() -> PathBuf {
    data(&format!("{CLAUDE_DIR}/{CLAUDE_MAIN}.jsonl"))
}

/// Every JSON line of a file that parses.
fn source_lines(path: &Path) -> Vec<Value> {
    let bytes = fs::read(path).unwrap();
    bytes
        .split(|b| *b == b'\n')
        .filter_map(|l| serde_json::from_slice(l).ok())
        .collect()
}

/// Tool call ids a Claude transcript makes and answers.
fn claude_call_ids(lines: &[Value]) -> (Vec<String>, Vec<String>) {
    let (mut calls, mut results) = (Vec::new(), Vec::new());
    for l in lines {
        if let Some(Value::Array(blocks)) = l.pointer("/message/content") {
            for b in blocks {
                match b["type"].as_str() {
                    Some("tool_use") => calls.push(b["id"].as_str().unwrap().to_string()),
                    Some("tool_result") => {
                        results.push(b["tool_use_id"].as_str().unwrap().to_string())
                    }
                    _ => {}
                }
            }
        }
    }
    calls.sort();
    calls.dedup();
    results.sort();
    results.dedup();
    (calls, results)
}

/// Each call id of a session once, with exactly one result after it.
fn calls_and_results(doc: &SessionFile) -> (Vec<String>, Vec<String>) {
    let mut calls: Vec<String> = Vec::new();
    let mut results: Vec<String> = Vec::new();
    for m in &doc.messages {
        for c in &m.tool_calls {
            calls.push(c.id.clone());
        }
        if m.role == Role::Tool {
            let id = m.tool_call_id.clone().unwrap();
            assert!(calls.contains(&id), "result {id} before its call");
            results.push(id);
        }
    }
    let n = calls.len();
    calls.sort();
    calls.dedup();
    assert_eq!(calls.len(), n, "a call id appears twice");
    let n = results.len();
    results.sort();
    results.dedup();
    assert_eq!(results.len(), n, "a result appears twice");
    (calls, results)
}

/// A converted session's tokens summed over its messages: all input (cached included), cached
/// input, output, reasoning.
fn usage_totals(doc: &SessionFile) -> [u64; 4] {
    let sum = |f: fn(&neocode::session::file::FileUsage) -> u64| -> u64 {
        doc.messages.iter().map(|m| f(&m.usage)).sum()
    };
    [
        sum(|u| u.input_tokens) + sum(|u| u.cached_input_tokens),
        sum(|u| u.cached_input_tokens),
        sum(|u| u.output_tokens),
        sum(|u| u.reasoning_tokens),
    ]
}

fn convert_one(tool: SourceTool, path: &Path) -> SessionFile {
    let c = import::convert(tool, path).unwrap();
    c.sessions.into_iter().next().unwrap()
}

fn import_cmd(ws: &Ws, tool: &str, paths: &[&Path]) -> String {
    let mut c = ws.cmd();
    c.arg("import").arg("--from").arg(tool);
    for p in paths {
        c.arg(p);
    }
    ok_stdout(&mut c)
}

/// Size, mtime and bytes of every file under a folder.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (u64, std::time::SystemTime, Vec<u8>)> {
    import::jsonl_files(dir)
        .into_iter()
        .chain(std::iter::once(dir.to_path_buf()))
        .filter(|p| p.is_file())
        .map(|p| {
            let m = fs::metadata(&p).unwrap();
            let bytes = fs::read(&p).unwrap();
            (p, (m.len(), m.modified().unwrap(), bytes))
        })
        .collect()
}

#[test]
fn claude_real_transcript_merges_streamed_lines_and_keeps_parallel_calls() {
    let path = claude_main();
    let doc = convert_one(SourceTool::ClaudeCode, &path);
    // Three streamed lines (text, thinking, two tool_use) of one response are one message,
    // whose usage counts once (each line repeats it).
    let assistants: Vec<_> = doc
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .collect();
    assert_eq!(assistants.len(), 1);
    let a = assistants[0];
    assert_eq!(
        a.tool_calls
            .iter()
            .map(|c| c.id.as_str())
            .collect::<Vec<_>>(),
        [
            "toolu_01UwLnYYWGBvukzh1QE6JpfM",
            "toolu_01EqSqHoE2fyTCuK5BJ3azkA"
        ]
    );
    assert_eq!(a.tool_calls[0].name, "Bash");
    let args: Value = serde_json::from_str(&a.tool_calls[0].arguments).unwrap();
    assert_eq!(args["command"], "bd show spotter-dov");
    assert!(
        a.parts
            .iter()
            .any(|p| matches!(p, Part::Reasoning { text, .. } if text.starts_with("Let me start")))
    );
    assert_eq!(
        (
            a.usage.input_tokens,
            a.usage.output_tokens,
            a.usage.cached_input_tokens,
            a.usage.cache_write_tokens
        ),
        (3, 9, 11442, 15005)
    );
    assert_eq!(
        (doc.session.tokens.input, doc.session.tokens.output),
        (3, 9)
    );
    // Every call in the source appears once, with its result, after it.
    let (src_calls, src_results) = claude_call_ids(&source_lines(&path));
    let (calls, results) = calls_and_results(&doc);
    assert_eq!(calls, src_calls);
    assert_eq!(results, src_results);
    let tool_texts: Vec<String> = doc
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| match &m.parts[0] {
            Part::Text { text } => text.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert!(tool_texts[0].starts_with("○ spotter-dov [EPIC]"));
    assert!(tool_texts[1].starts_with("📋 Ready work (8 issues"));
    let s = &doc.session;
    assert_eq!(s.id, CLAUDE_MAIN);
    assert_eq!(s.model, "claude-opus-4-6");
    assert_eq!(
        s.workdir,
        "/home/USER/projects/spotter-worktrees/spotter-dov"
    );
    let src = s.source.as_ref().unwrap();
    assert_eq!(
        (src.tool.as_str(), src.version.as_str()),
        ("claude-code", "2.1.39")
    );
    assert_eq!(doc.messages[0].role, Role::User);
    assert!(!doc.messages[0].injected);
}

#[test]
fn claude_subagents_link_to_their_parent_in_any_import_order() {
    let sub = data(&format!(
        "{CLAUDE_DIR}/{CLAUDE_MAIN}/subagents/agent-a2898e3.jsonl"
    ));
    let child_id = format!("{CLAUDE_MAIN}-agent-a2898e3");
    for parent_first in [true, false] {
        let ws = Ws::new();
        let main = claude_main();
        let order: Vec<&Path> = if parent_first {
            vec![&main, &sub]
        } else {
            vec![&sub, &main]
        };
        for p in order {
            import_cmd(&ws, "claude-code", &[p]);
        }
        let rt = ws.sessions();
        let child = rt.header(&child_id).unwrap();
        assert_eq!(
            child.subagent_of.as_deref(),
            Some(CLAUDE_MAIN),
            "parent_first={parent_first}"
        );
        assert_eq!(child.parent_id, None, "a sub-agent is not a fork");
        assert_eq!(child.model, "claude-sonnet-4-5-20250929");
        let m = rt.load(&child_id).unwrap().messages;
        assert_eq!(m[0].role, Role::User);
        assert!(m[0].text().starts_with("Very thorough exploration"));
        assert_eq!(m[1].extra.tokens.cache_write_tokens, 13522);
    }
}

#[test]
fn codex_real_rollout_usage_matches_the_final_token_count() {
    let path = data(CODEX_FILE);
    let doc = convert_one(SourceTool::Codex, &path);
    // The rollout's last token_count: 55014 input (39040 cached), 893 output (281 reasoning).
    // Repeated token_count events count once; cached input is kept apart from input.
    assert_eq!(usage_totals(&doc), [55014, 39040, 893, 281]);
    // Every function call once with its output.
    let lines = source_lines(&path);
    let mut src_calls: Vec<String> = lines
        .iter()
        .filter(|l| l["payload"]["type"] == "function_call")
        .map(|l| l["payload"]["call_id"].as_str().unwrap().to_string())
        .collect();
    src_calls.sort();
    let (calls, results) = calls_and_results(&doc);
    assert_eq!(calls, src_calls);
    assert_eq!(results, src_calls);
    // event_msg copies are not imported twice: one reasoning part per reasoning item.
    let reasoning = doc
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter(|p| matches!(p, Part::Reasoning { .. }))
        .count();
    assert_eq!(reasoning, 3);
    // Developer messages are harness text.
    assert!(
        doc.messages
            .iter()
            .filter(|m| m.role == Role::System)
            .all(|m| m.injected)
    );
    assert_eq!(
        doc.messages
            .iter()
            .filter(|m| m.role == Role::System)
            .count(),
        4
    );
    let s = &doc.session;
    assert_eq!(s.model, "gpt-5.3-codex");
    assert_eq!(s.workdir, "/redacted/path/da0ba47443");
    let src = s.source.as_ref().unwrap();
    assert_eq!(src.version, "0.104.0-alpha.1");
    let meta = src.metadata.as_ref().unwrap();
    assert_eq!(meta["turn_context"]["approval_policy"], "on-request");
    assert_eq!(
        meta["turn_context"]["sandbox_policy"]["type"],
        "workspace-write"
    );
    assert_eq!(meta["session_meta"]["originator"], "Codex Desktop");
    // Three turn contexts, the same policies each time: kept once.
    assert_eq!(meta["turn_contexts"], 3);
    assert_eq!(meta["turn_context_changes"].as_array().unwrap().len(), 1);
}

#[test]
fn reimport_changes_nothing_and_growth_updates() {
    let ws = Ws::new();
    let src = tempfile::tempdir().unwrap();
    let file = src.path().join(CODEX_FILE.rsplit('/').next().unwrap());
    fs::copy(data(CODEX_FILE), &file).unwrap();
    let claude = data("claude-code");
    let out = import_cmd(&ws, "claude-code", &[&claude]);
    starts(&out, "imported 2, updated 0, skipped 0 unchanged, failed 0");
    let out = import_cmd(&ws, "codex", &[&file]);
    assert!(out.starts_with("imported 1,"), "{out}");
    let rt = ws.sessions();
    let before: Vec<SessionFile> = [CLAUDE_MAIN, "019c8a4d-8f45-7010-8b5d-7fad920aa6f9"]
        .iter()
        .map(|id| rt.export(id).unwrap())
        .collect();
    let out = import_cmd(&ws, "claude-code", &[&claude]);
    starts(&out, "imported 0, updated 0, skipped 2 unchanged, failed 0");
    let out = import_cmd(&ws, "codex", &[&file]);
    starts(&out, "imported 0, updated 0, skipped 1 unchanged");
    let after: Vec<SessionFile> = [CLAUDE_MAIN, "019c8a4d-8f45-7010-8b5d-7fad920aa6f9"]
        .iter()
        .map(|id| rt.export(id).unwrap())
        .collect();
    assert_eq!(before, after);
    assert_eq!(rt.count().unwrap(), 3);

    // The rollout grows: the session is updated in place, never duplicated.
    let mut f = fs::OpenOptions::new().append(true).open(&file).unwrap();
    writeln!(
        f,
        "{}",
        json!({"timestamp":"2026-02-23T11:42:00.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"one more thing"}]}})
    )
    .unwrap();
    drop(f);
    let out = import_cmd(&ws, "codex", &[&file]);
    assert!(out.starts_with("imported 0, updated 1,"), "{out}");
    assert_eq!(rt.count().unwrap(), 3);
    let s = rt.load("019c8a4d-8f45-7010-8b5d-7fad920aa6f9").unwrap();
    assert_eq!(s.messages.last().unwrap().text(), "one more thing");
    assert_eq!(s.messages.len(), before[1].messages.len() + 1);

    // Continued in neocode: a later change of the source does not overwrite it.
    rt.append(
        "019c8a4d-8f45-7010-8b5d-7fad920aa6f9",
        &[neocode::session::NewMessage::text(
            Role::User,
            "continued here",
        )],
        &Default::default(),
    )
    .unwrap();
    let mut f = fs::OpenOptions::new().append(true).open(&file).unwrap();
    writeln!(f, "{}", json!({"timestamp":"2026-02-23T11:43:00.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"and another"}]}})).unwrap();
    drop(f);
    let mut c = ws.cmd();
    c.args(["import", "--from", "codex"]).arg(&file);
    let (code, out, _) = fail(&mut c);
    assert_eq!(code, 1);
    assert!(out.contains("continued in neocode"), "{out}");
    let s = rt.load("019c8a4d-8f45-7010-8b5d-7fad920aa6f9").unwrap();
    assert_eq!(s.messages.last().unwrap().text(), "continued here");
}

#[test]
fn source_files_are_never_written() {
    let ws = Ws::new();
    let before_c = snapshot(&data("claude-code"));
    let before_x = snapshot(&data("codex"));
    import_cmd(&ws, "claude-code", &[&data("claude-code")]);
    import_cmd(&ws, "codex", &[&data("codex")]);
    assert_eq!(snapshot(&data("claude-code")), before_c);
    assert_eq!(snapshot(&data("codex")), before_x);
    let names = |d: &Path| -> Vec<PathBuf> { files_under(d) };
    assert_eq!(names(&data("claude-code")).len(), 2);
    assert_eq!(names(&data("codex")).len(), 1);
}

#[test]
fn exported_imports_round_trip_losslessly() {
    let ws = Ws::new();
    import_cmd(&ws, "claude-code", &[&data("claude-code")]);
    import_cmd(&ws, "codex", &[&data("codex")]);
    let rt = ws.sessions();
    let other = Ws::new();
    let rt2 = other.sessions();
    for s in rt.list(&Default::default()).unwrap().items {
        let doc = rt.export(&s.id).unwrap();
        let text = serde_json::to_string(&doc).unwrap();
        let parsed = neocode::session::file::parse(&text).unwrap();
        rt2.import(&parsed, false).unwrap();
        assert_eq!(rt2.export(&s.id).unwrap(), doc, "{}", s.id);
    }
}

// ----- made-up hostile transcripts ------------------------------------------------------------

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR fake image bytes \xff\x00\x01";

fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(b)
}

fn cl(kind: &str, uuid: &str, parent: Option<&str>, extra: Value) -> Value {
    let mut v = json!({
        "type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "hostile-1",
        "cwd": "/work/x", "version": "1.0.99", "isSidechain": false,
        "timestamp": "2026-01-01T00:00:00.000Z",
    });
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

fn write_lines(path: &Path, lines: &[Vec<u8>]) {
    let mut f = fs::File::create(path).unwrap();
    for l in lines {
        f.write_all(l).unwrap();
    }
}

fn line(v: &Value) -> Vec<u8> {
    let mut s = serde_json::to_vec(v).unwrap();
    s.push(b'\n');
    s
}

#[test]
#[expect(clippy::too_many_lines)]
fn hostile_claude_transcript_imports_what_is_sound() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hostile-1.jsonl");
    let big = format!("\x1b]0;pwned\x07{}", "0123456789abcdef".repeat(10 << 16));
    let asst = |uuid: &str, parent: &str, content: Value, out: u64| {
        cl(
            "assistant",
            uuid,
            Some(parent),
            json!({"message": {
            "id": "msg_A", "model": "claude-x", "role": "assistant", "content": content,
            "usage": {"input_tokens": 10, "output_tokens": out, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 7}}}),
        )
    };
    let lines = vec![
        line(&json!({"type": "summary", "summary": "Hostile \u{1b}[2J title", "leafUuid": "u9"})),
        line(&cl("user", "u0", None, json!({"isMeta": true, "message": {"role": "user", "content": "<command-name>/clear</command-name>"}}))),
        line(&cl("user", "u1", Some("u0"), json!({"message": {"role": "user", "content": [
            {"type": "text", "text": "look at this \u{1b}[31mred\u{1b}[0m"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(PNG)}}]}}))),
        line(&asst("u2", "u1", json!([{"type": "thinking", "thinking": "hmm", "signature": "s"}]), 1)),
        line(&asst("u3", "u2", json!([{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "cat big"}}]), 2)),
        line(&asst("u4", "u3", json!([{"type": "tool_use", "id": "t2", "name": "TodoWrite", "input": {"todos": [
            {"content": "first", "status": "completed", "activeForm": "x"},
            {"content": "second", "status": "in_progress", "activeForm": "y"}]}}]), 5)),
        b"this is not json\n".to_vec(),
        line(&json!({"type": "brand-new-record", "uuid": "n1", "whatever": 1})),
        line(&cl("user", "u5", Some("u3"), json!({"message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": big, "is_error": true}]}}))),
        line(&cl("user", "u6", Some("u4"), json!({"message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t2", "content": [
                {"type": "text", "text": "todos saved"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(b"second image")}}]}]}}))),
        // Re-appended on resume: same uuid, must not duplicate.
        line(&cl("user", "u5", Some("u3"), json!({"message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "again", "is_error": false}]}}))),
        // Invalid UTF-8 inside a string.
        [b"{\"type\":\"user\",\"uuid\":\"u7\",\"sessionId\":\"hostile-1\",\"timestamp\":\"2026-01-01T00:00:01.000Z\",\"message\":{\"role\":\"user\",\"content\":\"caf\xff latte\"}}\n".as_slice()].concat(),
        line(&cl("user", "u8", Some("u7"), json!({"isCompactSummary": true, "message": {"role": "user", "content": "This session is being continued. Summary: ..."}}))),
        // An inline sidechain (older Claude Code wrote sub-agents into the main file).
        line(&cl("user", "s1", None, json!({"isSidechain": true, "message": {"role": "user", "content": "sub task"}}))),
        line(&cl("assistant", "s2", Some("s1"), json!({"isSidechain": true, "message": {"id": "msg_S", "role": "assistant", "content": [{"type": "text", "text": "sub done"}], "usage": {"input_tokens": 1, "output_tokens": 1}}}))),
        // A torn last line: the file is still being written.
        b"{\"type\":\"assistant\",\"uuid\":\"u9\",\"message\":{\"id\":\"msg_B\",\"content\":[{\"type\":\"te".to_vec(),
    ];
    write_lines(&path, &lines);

    let conv = import::convert(SourceTool::ClaudeCode, &path).unwrap();
    assert_eq!(conv.stats.malformed, 1);
    assert_eq!(conv.stats.unknown, 1);
    assert_eq!(conv.stats.duplicates, 1);
    assert_eq!(conv.stats.lossy, 1);
    assert!(conv.stats.torn_tail);
    assert_eq!(conv.sessions.len(), 2, "main and the inline sidechain");
    let doc = &conv.sessions[0];
    let (calls, results) = calls_and_results(doc);
    assert_eq!(calls, ["t1", "t2"]);
    assert_eq!(results, ["t1", "t2"]);
    let r1 = doc
        .messages
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("t1"))
        .unwrap();
    assert!(r1.is_error);
    assert!(matches!(&r1.parts[0], Part::Text { text } if text.len() == big.len()));
    let a = doc
        .messages
        .iter()
        .find(|m| m.role == Role::Assistant)
        .unwrap();
    assert_eq!(
        (
            a.usage.input_tokens,
            a.usage.output_tokens,
            a.usage.cached_input_tokens
        ),
        (10, 5, 100)
    );
    assert!(doc.messages[0].injected, "isMeta");
    let compact = doc
        .messages
        .iter()
        .find(|m| m.text_is("This session is being continued. Summary: ..."))
        .unwrap();
    assert!(compact.injected);
    assert_eq!(
        compact.metadata.as_ref().unwrap()["kind"],
        "compaction_summary"
    );
    assert!(doc.messages.iter().any(|m| m.text_is("caf\u{fffd} latte")));
    let plan = doc.session.plan.as_ref().unwrap();
    assert_eq!(plan.steps.len(), 2);
    assert_eq!(
        (plan.steps[0].status, plan.steps[1].status),
        (StepStatus::Completed, StepStatus::Running)
    );
    assert_eq!(doc.session.title, "Hostile \u{1b}[2J title");
    let side = &conv.sessions[1];
    assert_eq!(side.session.subagent_of.as_deref(), Some("hostile-1"));
    assert_eq!(side.messages.len(), 2);

    // Through the binary: imported, images byte for byte, output harmless.
    let ws = Ws::new();
    let mut c = ws.cmd();
    c.args(["import", "--from", "claude-code"]).arg(&path);
    let out = ok_stdout(&mut c);
    starts(&out, "imported 2, updated 0, skipped 0 unchanged, failed 0");
    assert!(out.contains("1 malformed line(s) skipped"), "{out}");
    assert!(out.contains("still being written"), "{out}");
    let rt = ws.sessions();
    let assets = rt.assets("hostile-1").unwrap();
    let mut bytes: Vec<Vec<u8>> = assets
        .iter()
        .map(|a| rt.asset_bytes("hostile-1", &a.id).unwrap().1)
        .collect();
    bytes.sort();
    let mut want = vec![PNG.to_vec(), b"second image".to_vec()];
    want.sort();
    assert_eq!(bytes, want);
    for args in [
        vec!["show", "hostile-1"],
        vec!["--list"],
        vec!["export", "hostile-1", "--format", "markdown"],
    ] {
        let mut c = ws.cmd();
        c.args(&args);
        let out = c.output().unwrap();
        assert!(out.status.success(), "{args:?}");
        assert_harmless(&out.stdout);
        if args[0] == "export" {
            // The harness's messages read as such, and only they.
            let md = String::from_utf8_lossy(&out.stdout);
            let marked: Vec<&str> = md
                .lines()
                .filter(|l| l.starts_with("### ") && l.ends_with(" (injected)"))
                .collect();
            let injected = doc.messages.iter().filter(|m| m.injected).count();
            assert_eq!(marked.len(), injected, "{md}");
            assert!(marked[0].starts_with("### 1 · user"), "{marked:?}");
        }
    }
}

trait TextIs {
    fn text_is(&self, t: &str) -> bool;
}

impl TextIs for neocode::session::file::FileMessage {
    fn text_is(&self, t: &str) -> bool {
        self.parts
            .iter()
            .any(|p| matches!(p, Part::Text { text } if text == t))
    }
}

#[test]
#[expect(clippy::too_many_lines)]
fn hostile_codex_rollout_imports_what_is_sound() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir
        .path()
        .join("rollout-2026-01-01T00-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000.jsonl");
    let ev = |ty: &str, payload: Value| json!({"timestamp": "2026-01-01T00:00:00.000Z", "type": ty, "payload": payload});
    let tc = |input: u64, cached: u64, out: u64, reasoning: u64, total: (u64, u64, u64, u64)| {
        ev(
            "event_msg",
            json!({"type": "token_count", "info": {
            "total_token_usage": {"input_tokens": total.0, "cached_input_tokens": total.1, "output_tokens": total.2, "reasoning_output_tokens": total.3},
            "last_token_usage": {"input_tokens": input, "cached_input_tokens": cached, "output_tokens": out, "reasoning_output_tokens": reasoning}}}),
        )
    };
    let item = |payload: Value| line(&ev("response_item", payload));
    let lines = vec![
        line(&ev(
            "session_meta",
            json!({"id": "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000", "cwd": "/w", "cli_version": "0.50.0", "forked_from_id": "0199aaaa-0000-7ccc-8ddd-eeeeffff0000"}),
        )),
        line(&ev(
            "turn_context",
            json!({"model": "gpt-x", "approval_policy": "never", "sandbox_policy": {"mode": "danger-full-access"}}),
        )),
        item(
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>cwd</environment_context>"}]}),
        ),
        item(json!({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "fix \u{1b}]8;;http://x\u{7}this"},
            {"type": "input_image", "image_url": format!("data:image/png;base64,{}", b64(PNG))}]})),
        line(&ev(
            "event_msg",
            json!({"type": "user_message", "message": "fix this"}),
        )),
        item(
            json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Planning**"}], "encrypted_content": "zzz"}),
        ),
        item(
            json!({"type": "function_call", "name": "update_plan", "arguments": "{\"plan\":[{\"step\":\"read\",\"status\":\"completed\"},{\"step\":\"patch\",\"status\":\"in_progress\"}]}", "call_id": "c1"}),
        ),
        line(&tc(100, 40, 10, 4, (100, 40, 10, 4))),
        line(&tc(100, 40, 10, 4, (100, 40, 10, 4))),
        item(json!({"type": "function_call_output", "call_id": "c1", "output": "Plan updated"})),
        item(
            json!({"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch", "call_id": "c2", "status": "completed"}),
        ),
        item(
            json!({"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"false\"]}", "call_id": "c3"}),
        ),
        line(&tc(200, 150, 20, 0, (300, 190, 30, 4))),
        item(
            json!({"type": "custom_tool_call_output", "call_id": "c2", "output": "{\"output\":\"Success. Updated the following files:\\nM a.rs\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.1}}"}),
        ),
        item(
            json!({"type": "function_call_output", "call_id": "c3", "output": "Process exited with code 1\nOutput:\nboom"}),
        ),
        item(json!({"type": "function_call_output", "call_id": "c3", "output": "duplicate"})),
        b"{\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"type\":\"mystery\",\"payload\":{}}\n"
            .to_vec(),
        b"{broken\n".to_vec(),
        line(&ev(
            "compacted",
            json!({"message": "Summary of the conversation so far"}),
        )),
        item(
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}], "phase": "final_answer"}),
        ),
        line(&tc(50, 0, 5, 0, (350, 190, 35, 4))),
    ];
    write_lines(&path, &lines);
    let conv = import::convert(SourceTool::Codex, &path).unwrap();
    assert_eq!(conv.stats.malformed, 1);
    assert_eq!(conv.stats.unknown, 1);
    let doc = &conv.sessions[0];
    let (calls, results) = calls_and_results(doc);
    assert_eq!(calls, ["c1", "c2", "c3"]);
    assert_eq!(results, ["c1", "c2", "c3"]);
    let by_id: HashMap<&str, &neocode::session::file::FileMessage> = doc
        .messages
        .iter()
        .filter_map(|m| m.tool_call_id.as_deref().map(|id| (id, m)))
        .collect();
    assert!(!by_id["c2"].is_error);
    assert!(by_id["c2"].text_is("Success. Updated the following files:\nM a.rs\n"));
    assert_eq!(by_id["c2"].tool_metadata.as_ref().unwrap()["exit_code"], 0);
    assert!(by_id["c3"].is_error);
    let call2 = doc
        .messages
        .iter()
        .flat_map(|m| &m.tool_calls)
        .find(|c| c.id == "c2")
        .unwrap();
    assert_eq!(call2.arguments, "*** Begin Patch\n*** End Patch");
    assert_eq!(usage_totals(doc), [350, 190, 35, 4]);
    assert!(doc.messages[0].injected, "environment context");
    let plan = doc.session.plan.as_ref().unwrap();
    assert_eq!(plan.steps[1].title, "patch");
    assert_eq!(plan.steps[1].status, StepStatus::Running);
    let compact = doc
        .messages
        .iter()
        .find(|m| m.text_is("Summary of the conversation so far"))
        .unwrap();
    assert_eq!(
        compact.metadata.as_ref().unwrap()["kind"],
        "compaction_summary"
    );
    let last = doc.messages.last().unwrap();
    assert_eq!(last.metadata.as_ref().unwrap()["phase"], "final_answer");
    assert_eq!(
        doc.session.parent_id.as_deref(),
        Some("0199aaaa-0000-7ccc-8ddd-eeeeffff0000")
    );

    let ws = Ws::new();
    let mut c = ws.cmd();
    c.args(["import", "--from", "codex"]).arg(&path);
    ok_stdout(&mut c);
    let rt = ws.sessions();
    let id = "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000";
    let a = &rt.assets(id).unwrap()[0];
    assert_eq!(rt.asset_bytes(id, &a.id).unwrap().1, PNG);
    // The fork's parent is not in this workspace: its id stays, and show says so.
    assert_eq!(
        rt.header(id).unwrap().parent_id.as_deref(),
        Some("0199aaaa-0000-7ccc-8ddd-eeeeffff0000")
    );
    let mut c = ws.cmd();
    c.args(["show", id]);
    let out = ok_stdout(&mut c);
    assert!(out.contains("not in this workspace"), "{out}");
    assert_harmless(out.as_bytes());
}

// ----- discovery ------------------------------------------------------------------------------

fn claude_session(dir: &Path, id: &str, cwd: &Path, text: &str) {
    fs::create_dir_all(dir).unwrap();
    let v = json!({"type": "user", "uuid": format!("{id}-u"), "sessionId": id, "cwd": cwd,
        "timestamp": "2026-01-01T00:00:00.000Z", "message": {"role": "user", "content": text}});
    write_lines(&dir.join(format!("{id}.jsonl")), &[line(&v)]);
}

fn codex_session(dir: &Path, id: &str, cwd: &Path, text: &str) {
    fs::create_dir_all(dir).unwrap();
    let lines = [
        json!({"timestamp": "2026-01-01T00:00:00.000Z", "type": "session_meta", "payload": {"id": id, "cwd": cwd}}),
        json!({"timestamp": "2026-01-01T00:00:00.000Z", "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}}),
    ];
    write_lines(
        &dir.join(format!("rollout-2026-01-01T00-00-00-{id}.jsonl")),
        &lines.iter().map(line).collect::<Vec<_>>(),
    );
}

#[test]
fn discovery_finds_this_workspaces_sessions_and_all_workspaces_files_each() {
    let ws = Ws::new();
    let other_loc = ws.sibling("other");
    let tools = tempfile::tempdir().unwrap();
    let claude = tools.path().join("claude");
    let codex = tools.path().join("codex");
    let root = ws.workdir.to_path_buf();
    let other = other_loc.root().to_path_buf();
    let enc = import::claude_project_dir_name(&root);
    claude_session(
        &claude.join("projects").join(&enc),
        "c0000001-0000-0000-0000-000000000001",
        &root,
        "mine",
    );
    claude_session(
        &claude.join("projects").join(&enc),
        "c0000001-0000-0000-0000-000000000002",
        &root.join("sub"),
        "mine too",
    );
    claude_session(
        &claude
            .join("projects")
            .join(import::claude_project_dir_name(&other)),
        "c0000001-0000-0000-0000-000000000003",
        &other,
        "theirs",
    );
    codex_session(
        &codex.join("sessions/2026/01/01"),
        "0199aaaa-bbbb-7ccc-8ddd-000000000001",
        &root,
        "mine",
    );
    codex_session(
        &codex.join("archived_sessions"),
        "0199aaaa-bbbb-7ccc-8ddd-000000000002",
        &root,
        "archived mine",
    );
    codex_session(
        &codex.join("sessions/2026/01/02"),
        "0199aaaa-bbbb-7ccc-8ddd-000000000003",
        &other,
        "theirs",
    );

    let run = |tool: &str, extra: &[&str]| {
        let mut c = ws.cmd();
        c.env("CLAUDE_CONFIG_DIR", &claude)
            .env("CODEX_HOME", &codex);
        c.args(["import", "--from", tool]).args(extra);
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (out, err) = run("claude-code", &[]);
    assert!(err.starts_with("2 claude-code transcripts for"), "{err}");
    assert!(out.starts_with("imported 2,"), "{out}");
    let (out, err) = run("codex", &[]);
    assert!(err.starts_with("2 codex transcripts for"), "{err}");
    assert!(out.starts_with("imported 2,"), "{out}");
    assert_eq!(ws.sessions().count().unwrap(), 4);

    let (out, _) = run("codex", &["--all-workspaces"]);
    starts(&out, "imported 1, updated 0, skipped 2 unchanged");
    let theirs = neocode::runtime::Sessions::open(&other_loc).unwrap();
    assert_eq!(theirs.count().unwrap(), 1);
    assert_eq!(
        theirs
            .load("0199aaaa-bbbb-7ccc-8ddd-000000000003")
            .unwrap()
            .messages[0]
            .text(),
        "theirs"
    );
}

#[test]
fn import_without_a_source_is_a_usage_error() {
    let ws = Ws::new();
    let mut c = ws.cmd();
    c.args(["import", "--from", "codex", "/no/such/place"]);
    let (code, _, err) = fail(&mut c);
    assert_eq!(code, 2);
    assert!(err.contains("no such file or folder"), "{err}");
    let mut c = ws.cmd();
    c.args(["import"]);
    let (code, _, _) = fail(&mut c);
    assert_eq!(code, 2);
}

#[test]
fn list_json_and_show_mark_imported_sessions() {
    let ws = Ws::new();
    import_cmd(&ws, "claude-code", &[&data("claude-code")]);
    ws.session("native", 1);
    let mut c = ws.cmd();
    c.args(["--list", "--json"]);
    let rows: Value = serde_json::from_str(&ok_stdout(&mut c)).unwrap();
    let by_id: HashMap<String, &Value> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["id"].as_str().unwrap().to_string(), r))
        .collect();
    assert_eq!(by_id[CLAUDE_MAIN]["source"], "claude-code");
    let child = format!("{CLAUDE_MAIN}-agent-a2898e3");
    assert_eq!(by_id[child.as_str()]["subagent_of"], CLAUDE_MAIN);
    let native = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["title"] == "native")
        .unwrap();
    assert!(native["source"].is_null());
    let mut c = ws.cmd();
    c.args(["show", CLAUDE_MAIN]);
    let out = ok_stdout(&mut c);
    assert!(out.contains("imported from claude-code 2.1.39"), "{out}");
}

#[test]
fn a_transcript_without_messages_is_skipped_not_imported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir
        .path()
        .join("e0000000-0000-0000-0000-000000000001.jsonl");
    write_lines(
        &path,
        &[line(
            &json!({"type": "summary", "summary": "nothing happened", "leafUuid": "x"}),
        )],
    );
    let ws = Ws::new();
    let out = import_cmd(&ws, "claude-code", &[&path]);
    starts(&out, "imported 0, updated 0, skipped 0 unchanged, failed 0");
    has(&out, "1 transcript(s) without messages skipped");
    assert_eq!(ws.sessions().count().unwrap(), 0);
}
