//! Builds a large workspace for benchmarks and manual testing:
//! `populate --home H --workdir W [--sessions 10000] [--messages 1000000] [--long 0]
//! [--spread-days 0]`
//!
//! Sessions get realistic titles, a small plan, tool calls and token usage; `--messages` is
//! spread evenly over them. `--long N` adds one more session holding N messages (for transcript
//! scrolling). Everything goes through the runtime, as the agent would write it. With
//! `--spread-days D` each session is then exported, its times moved back (the newest now, the
//! oldest D days ago, a few minutes apart like real use) and imported again under its id, so
//! that `--list` shows every kind of ACTIVE cell (minutes, hours, days, dates) as a user's
//! list does, instead of "just now" on every row.
// Tests, benchmarks and examples may unwrap: a failure there is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::Instant;

use neocode::runtime::{Location, Sessions};
use neocode::session::file::rfc3339;
use neocode::session::{
    AppendMeta, NewMessage, NewSession, Part, Plan, Role, StateUpdate, Step, StepStatus,
    StepUpdate, Store, ToolCall, Usage, WorkspacePaths, now_ms,
};

const TOPICS: &[&str] = &[
    "Fix flaky integration test in the payment service",
    "Add pagination to the sessions endpoint",
    "Refactor config loading into its own module",
    "Investigate memory growth in the indexer",
    "Port the CLI parser to clap 4",
    "Write migration for the new audit table",
    "Speed up cold start of the language server",
    "Explain the borrow checker error in parser.rs",
];

fn arg(name: &str, default: Option<&str>) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
        .or_else(|| default.map(str::to_string))
        .unwrap_or_else(|| {
            eprintln!("populate: {name} is required");
            std::process::exit(2)
        })
}

fn turn(i: u64, topic: &str) -> Vec<NewMessage> {
    let call = ToolCall {
        id: format!("call-{i}"),
        name: ["bash", "read_file", "edit_file", "grep"][(i % 4) as usize].into(),
        arguments: format!("{{\"path\": \"src/module_{}.rs\"}}", i % 17),
    };
    vec![
        NewMessage::text(
            Role::User,
            format!("{topic}: step {i}, please look at module {}", i % 17),
        ),
        NewMessage {
            role: Some(Role::Assistant),
            parts: vec![Part::text(format!(
                "I'll inspect `src/module_{}.rs` first.\n\n```rust\nfn step_{i}() -> Result<()> {{ Ok(()) }}\n```",
                i % 17
            ))],
            tool_calls: vec![call.clone()],
            usage: Usage {
                input_tokens: 1200 + i % 500,
                output_tokens: 80 + i % 90,
            },
            ..NewMessage::default()
        },
        NewMessage::tool_result(
            call.id,
            format!("ok: {} lines read", 40 + i % 300),
            i.is_multiple_of(29),
        ),
    ]
}

fn fill(rt: &Sessions, id: &str, topic: &str, count: u64) {
    let meta = AppendMeta {
        provider: Some("openai".into()),
        model: Some("gpt-5-codex".into()),
        workdir: None,
        ..AppendMeta::default()
    };
    let mut written = 0;
    let mut batch = Vec::new();
    let mut i = 0;
    while written < count {
        for m in turn(i, topic) {
            if written + batch.len() as u64 >= count {
                break;
            }
            batch.push(m);
        }
        i += 1;
        if batch.len() >= 3000 || written + batch.len() as u64 >= count {
            written += batch.len() as u64;
            rt.append(id, &batch, &meta).expect("append");
            batch.clear();
        }
    }
}

fn main() {
    let home = PathBuf::from(arg("--home", None));
    let workdir = PathBuf::from(arg("--workdir", None));
    let sessions: u64 = arg("--sessions", Some("10000"))
        .parse()
        .expect("--sessions");
    let messages: u64 = arg("--messages", Some("1000000"))
        .parse()
        .expect("--messages");
    let long: u64 = arg("--long", Some("0")).parse().expect("--long");
    let spread_days: u64 = arg("--spread-days", Some("0"))
        .parse()
        .expect("--spread-days");
    std::fs::create_dir_all(&workdir).expect("create workdir");
    let loc = Location {
        paths: WorkspacePaths::resolve(&home, &workdir).expect("workspace"),
        home,
    };
    let rt = Sessions::open(&loc).expect("open");
    let start = Instant::now();
    let mut ids = Vec::new();
    let per = messages.checked_div(sessions).unwrap_or(0);
    let plan = Plan {
        steps: vec![
            Step {
                id: "read".into(),
                title: "Read the code".into(),
                depends_on: vec![],
            },
            Step {
                id: "fix".into(),
                title: "Make the change".into(),
                depends_on: vec!["read".into()],
            },
            Step {
                id: "test".into(),
                title: "Run the tests".into(),
                depends_on: vec!["fix".into()],
            },
        ],
    };
    for s in 0..sessions {
        let topic = TOPICS[(s % TOPICS.len() as u64) as usize];
        let h = rt
            .new_session(NewSession {
                title: format!("{topic} #{s}"),
                provider: "openai".into(),
                model: "gpt-5-codex".into(),
                workdir: workdir.display().to_string(),
                ..NewSession::default()
            })
            .expect("create");
        if s.is_multiple_of(3) {
            rt.update_state(
                &h.id,
                &StateUpdate {
                    plan: neocode::session::Change::Set(plan.clone()),
                    ..StateUpdate::default()
                },
            )
            .expect("plan");
            rt.step_update(
                &h.id,
                "read",
                &StepUpdate::Status {
                    status: StepStatus::Completed,
                },
            )
            .expect("step");
        }
        fill(&rt, &h.id, topic, per);
        ids.push(h.id);
        if s % 1000 == 999 {
            eprintln!("{} sessions, {:.1}s", s + 1, start.elapsed().as_secs_f64());
        }
    }
    if spread_days > 0 {
        spread(&loc.paths, &ids, spread_days);
    }
    if long > 0 {
        let h = rt
            .new_session(NewSession {
                title: format!("Very long session ({long} messages)"),
                ..NewSession::default()
            })
            .expect("create");
        fill(&rt, &h.id, "Long refactor", long);
        println!("long session {}", h.id);
    }
    eprintln!(
        "populated {} in {:.1}s",
        rt.data_dir().display(),
        start.elapsed().as_secs_f64()
    );
}

/// Moves the sessions' times back over `days` (the last of `ids` newest), through export,
/// delete and import of each session file.
fn spread(paths: &WorkspacePaths, ids: &[String], days: u64) {
    let store = Store::open(paths.clone()).expect("open store");
    let now = now_ms();
    let span = (days * 24 * 3600 * 1000) as i64;
    let n = ids.len().max(1) as i64;
    for (i, id) in ids.iter().enumerate() {
        // Older sessions further back; the step grows a little with age, as activity thins.
        let back = span * (n - 1 - i as i64) / n;
        let updated = now - back - (i as i64 % 7) * 1_000;
        let created = updated - 3_600_000 - (i as i64 % 13) * 60_000;
        let mut doc = neocode::session::file::export(&store, id).expect("export");
        doc.session.created_at = rfc3339(created);
        doc.session.updated_at = rfc3339(updated);
        for m in &mut doc.messages {
            m.created_at = rfc3339(created + m.seq * 1_000);
        }
        store.delete(id).expect("delete");
        neocode::session::file::import(&store, &doc, false).expect("import");
        if i % 1000 == 999 {
            eprintln!("{} sessions moved back in time", i + 1);
        }
    }
}
