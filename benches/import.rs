//! Importing history at scale: generates 1,000 transcripts (half Claude Code, half Codex) of
//! about 1 MB each, then imports them the way `neocode import --from` does (convert on one
//! thread; write on the other, several files per transaction), reporting time, throughput and
//! peak resident memory along the way (flat memory: each session is dropped before the next
//! is read). A second run shows the fast skip of unchanged files.
//!
//! `cargo bench --bench import` (sizes: NEOCODE_BENCH_SESSIONS, NEOCODE_BENCH_SESSION_KB;
//! NEOCODE_BENCH_BATCH_KB=0 for one transaction per file).
// Tests, benchmarks and examples may unwrap: a failure there is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use neocode::runtime::import::{self, SourceTool};
use neocode::runtime::{Location, Sessions};
use neocode::session::WorkspacePaths;
use serde_json::json;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// CPU seconds (user + system, all threads) this process has used so far.
fn cpu_secs() -> f64 {
    let stat = fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which ends with the last ')'): utime is the 12th, stime
    // the 13th, in clock ticks (100 a second on Linux).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    f.get(11)
        .zip(f.get(12))
        .map_or(0.0, |(u, s)| (u + s) as f64 / 100.0)
}

/// Bytes this process has handed to `write` so far (database, WAL and asset files alike).
fn written_bytes() -> u64 {
    fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("wchar:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn vm_hwm_kib() -> u64 {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Tool output of about `n` bytes: varied words, so the search index sees real-looking text.
fn output(seed: usize, n: usize) -> String {
    const WORDS: [&str; 12] = [
        "fn", "let", "match", "error", "config", "loader", "panic", "return", "struct", "impl",
        "test", "value",
    ];
    let mut s = String::with_capacity(n + 16);
    let mut i = seed;
    while s.len() < n {
        s.push_str(WORDS[i % WORDS.len()]);
        s.push(if i.is_multiple_of(9) { '\n' } else { ' ' });
        i = i.wrapping_mul(31).wrapping_add(7);
    }
    s
}

fn claude(path: &Path, n: usize, kb: usize) {
    let mut w = BufWriter::new(fs::File::create(path).unwrap());
    let sid = format!("00000000-0000-4000-8000-{n:012}");
    let mut bytes = 0;
    let mut turn = 0;
    let mut parent = serde_json::Value::Null;
    while bytes < kb * 1024 {
        let base = |uuid: &str, parent: &serde_json::Value| {
            json!({"uuid": uuid, "parentUuid": parent, "sessionId": sid, "cwd": "/bench",
                "version": "2.1.39", "timestamp": "2026-02-12T16:02:25.284Z", "isSidechain": false})
        };
        let mut lines = Vec::new();
        let mut u = base(&format!("u{turn}"), &parent);
        u["type"] = json!("user");
        u["message"] =
            json!({"role": "user", "content": format!("turn {turn}: please look at the loader")});
        lines.push(u);
        for (k, block) in [
            json!({"type": "thinking", "thinking": "checking the loader first"}),
            json!({"type": "tool_use", "id": format!("toolu_{n}_{turn}"), "name": "Bash", "input": {"command": "cargo test"}}),
        ]
        .into_iter()
        .enumerate()
        {
            let mut a = base(&format!("a{turn}-{k}"), &json!(format!("u{turn}")));
            a["type"] = json!("assistant");
            a["message"] = json!({"id": format!("msg_{n}_{turn}"), "model": "claude-opus-4-6", "role": "assistant",
                "content": [block], "usage": {"input_tokens": 3, "output_tokens": 40, "cache_read_input_tokens": 9000}});
            lines.push(a);
        }
        let mut r = base(&format!("r{turn}"), &json!(format!("a{turn}-1")));
        r["type"] = json!("user");
        r["message"] = json!({"role": "user", "content": [{"type": "tool_result",
            "tool_use_id": format!("toolu_{n}_{turn}"), "content": output(n + turn, 6000)}]});
        lines.push(r);
        for l in lines {
            let s = serde_json::to_string(&l).unwrap();
            bytes += s.len() + 1;
            writeln!(w, "{s}").unwrap();
        }
        parent = json!(format!("r{turn}"));
        turn += 1;
    }
}

fn codex(path: &Path, n: usize, kb: usize) {
    let mut w = BufWriter::new(fs::File::create(path).unwrap());
    let ts = "2026-02-23T11:41:32.239Z";
    let mut bytes = 0;
    let mut put = |v: serde_json::Value, bytes: &mut usize| {
        let s = serde_json::to_string(&v).unwrap();
        *bytes += s.len() + 1;
        writeln!(w, "{s}").unwrap();
    };
    put(
        json!({"timestamp": ts, "type": "session_meta", "payload": {"id": format!("0199aaaa-bbbb-7ccc-8ddd-{n:012}"), "cwd": "/bench", "cli_version": "0.104.0"}}),
        &mut bytes,
    );
    let mut turn = 0;
    let (mut tin, mut tout) = (0u64, 0u64);
    while bytes < kb * 1024 {
        let call = format!("call_{n}_{turn}");
        put(
            json!({"timestamp": ts, "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": format!("turn {turn}")}]}}),
            &mut bytes,
        );
        put(
            json!({"timestamp": ts, "type": "event_msg", "payload": {"type": "user_message", "message": format!("turn {turn}")}}),
            &mut bytes,
        );
        put(
            json!({"timestamp": ts, "type": "response_item", "payload": {"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Looking**"}]}}),
            &mut bytes,
        );
        put(
            json!({"timestamp": ts, "type": "response_item", "payload": {"type": "function_call", "name": "exec_command", "arguments": "{\"cmd\":\"cargo test\"}", "call_id": call}}),
            &mut bytes,
        );
        tin += 20000;
        tout += 300;
        let tc = json!({"timestamp": ts, "type": "event_msg", "payload": {"type": "token_count", "info": {
            "total_token_usage": {"input_tokens": tin, "cached_input_tokens": tin / 2, "output_tokens": tout},
            "last_token_usage": {"input_tokens": 20000, "cached_input_tokens": 10000, "output_tokens": 300}}}});
        put(tc.clone(), &mut bytes);
        put(tc, &mut bytes);
        put(
            json!({"timestamp": ts, "type": "response_item", "payload": {"type": "function_call_output", "call_id": call, "output": output(n * 7 + turn, 6000)}}),
            &mut bytes,
        );
        turn += 1;
    }
}

#[expect(clippy::too_many_lines)]
fn main() {
    // `cargo bench` passes `--bench`; a filter argument that is not ours means "not me".
    if std::env::args()
        .skip(1)
        .any(|a| !a.starts_with("--") && !"import".contains(a.as_str()))
    {
        return;
    }
    let sessions = env_usize("NEOCODE_BENCH_SESSIONS", 1000);
    let kb = env_usize("NEOCODE_BENCH_SESSION_KB", 1024);
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let cdir = src.join("claude/projects/-bench");
    let xdir = src.join("codex/sessions/2026/02/23");
    fs::create_dir_all(&cdir).unwrap();
    fs::create_dir_all(&xdir).unwrap();
    let t = Instant::now();
    let mut files = Vec::new();
    for n in 0..sessions {
        if n % 2 == 0 {
            let p = cdir.join(format!("00000000-0000-4000-8000-{n:012}.jsonl"));
            claude(&p, n, kb);
            files.push((SourceTool::ClaudeCode, p));
        } else {
            let p = xdir.join(format!(
                "rollout-2026-02-23T12-00-00-0199aaaa-bbbb-7ccc-8ddd-{n:012}.jsonl"
            ));
            codex(&p, n, kb);
            files.push((SourceTool::Codex, p));
        }
    }
    let total: u64 = files
        .iter()
        .map(|(_, p)| fs::metadata(p).unwrap().len())
        .sum();
    println!(
        "generated {sessions} transcripts, {:.1} MB, in {:.1} s",
        total as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );

    let ws = tmp.path().join("ws");
    fs::create_dir_all(&ws).unwrap();
    let home = tmp.path().join("home");
    let loc = Location {
        paths: WorkspacePaths::resolve(&home, &ws).unwrap(),
        home,
    };
    let rt = Sessions::open(&loc).unwrap();
    let hwm0 = vm_hwm_kib();
    let (cpu0, w0) = (cpu_secs(), written_bytes());
    let t = Instant::now();
    let mut done: usize = 0;
    // NEOCODE_BENCH_BATCH_KB=0 writes every file in its own transaction (as before batching).
    let batch = std::env::var("NEOCODE_BENCH_BATCH_KB")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(import::BATCH_BYTES, |kb| kb * 1024);
    for tool in [SourceTool::ClaudeCode, SourceTool::Codex] {
        let mine: Vec<_> = files
            .iter()
            .filter(|(t, _)| *t == tool)
            .map(|(_, p)| import::Todo {
                stamp: import::stamp(p).unwrap(),
                path: p.clone(),
            })
            .collect();
        import::import_files(&rt, tool, mine, batch, |p| {
            if let import::Progress::Done(d) = p {
                assert!(d.result.is_ok(), "{:?}", d.result);
                done += 1;
                if done.is_multiple_of((sessions / 4).max(1)) {
                    println!(
                        "  {:>5} imported  {:>6.1} s  peak RSS {:>6.1} MiB",
                        done,
                        t.elapsed().as_secs_f64(),
                        vm_hwm_kib() as f64 / 1024.0
                    );
                }
            }
        })
        .unwrap();
    }
    let secs = t.elapsed().as_secs_f64();
    // CPU time and bytes written barely move with the load of other processes on the
    // machine, which the elapsed time does.
    println!(
        "import: CPU {:.1} s (both threads), {:.2} GB written",
        cpu_secs() - cpu0,
        (written_bytes() - w0) as f64 / 1e9
    );
    println!(
        "import: {sessions} sessions, {:.1} MB in {secs:.1} s ({:.1} MB/s); peak RSS {:.1} MiB (before import {:.1} MiB)",
        total as f64 / 1e6,
        total as f64 / 1e6 / secs,
        vm_hwm_kib() as f64 / 1024.0,
        hwm0 as f64 / 1024.0
    );
    let t = Instant::now();
    let mut skipped = 0;
    for (tool, p) in &files {
        let stamp = import::stamp(p).unwrap();
        let id = import::expected_id(*tool, p).unwrap();
        if import::unchanged(&rt, *tool, &id, &stamp)
            .unwrap()
            .is_some()
        {
            skipped += 1;
        }
    }
    println!(
        "re-import of unchanged files: {skipped}/{sessions} skipped in {:.3} s",
        t.elapsed().as_secs_f64()
    );
    assert_eq!(rt.count().unwrap() as usize, sessions);
}
