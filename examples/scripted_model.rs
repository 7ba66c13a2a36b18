//! A scripted OpenAI-compatible model on 127.0.0.1 for demos and screenshots of the live
//! conversation: `cargo run --example scripted_model` prints its base URL and serves, in
//! order, a streamed markdown answer, a `write_file` call (which asks for approval), and a
//! closing answer. Point neocode at it with `NEOCODE_BASE_URL=<url> NEOCODE_MODEL=scripted`.
//! With `subagents` as its argument it serves a turn that starts two sub-agents side by side
//! (each reading a file, slowly), for a look at the TUI's Ctrl-T list.
// Tests, benchmarks and examples may unwrap: a failure there is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use neocode::testkit::scripted::{Reply, ScriptedServer, Stream};

/// Two `task` calls, their children's slow replies, and the parent's closing answer.
fn subagents() -> Vec<Reply> {
    let slow = |text: &str, secs: u64| {
        Stream::text(text)
            .delays(Duration::from_secs(secs), Duration::ZERO)
            .reply()
    };
    vec![
        Reply::tool_calls(&[
            (
                "t1",
                "task",
                r#"{"prompt":"Find where the config is loaded"}"#,
            ),
            (
                "t2",
                "task",
                r#"{"prompt":"List the tests that cover the loader"}"#,
            ),
        ]),
        Reply::tool_calls(&[("c1", "list_dir", r#"{"path":"."}"#)]),
        Reply::tool_calls(&[("c2", "list_dir", r#"{"path":"."}"#)]),
        slow("The loader is in src/config.rs.", 20),
        slow("tests/config.rs covers it.", 25),
        Reply::text("Both sub-agents answered: src/config.rs, covered by tests/config.rs."),
    ]
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("subagents") {
        let srv = ScriptedServer::start(subagents()).expect("cannot start the scripted server");
        println!("{}", srv.base_url());
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    let answer = "The config loader lives in `src/config.rs`. It reads `config.toml`, then \
                  applies the environment:\n\n\
                  | source | wins over |\n|---|---|\n| `ACME_PORT` | `server.port` |\n| flags | everything |\n\n\
                  An **empty file** panics on line 42:\n\n\
                  ```rust\nlet url = doc[\"database\"][\"url\"].as_str().unwrap();\n```\n\n\
                  I will make it return `ConfigError::Missing` instead.";
    let srv = ScriptedServer::start(vec![
        Stream::new()
            .role()
            .text_deltas(answer, 120)
            .finish("stop")
            .usage(3_120, 180)
            .delays(Duration::ZERO, Duration::from_millis(25))
            .reply(),
        Stream::new()
            .role()
            .text_deltas("Writing the fix:", 4)
            .tool_call(
                0,
                "call_1",
                "edit_file",
                r#"{"path":"src/config.rs","old_string":"let url = doc[\"database\"][\"url\"].as_str().unwrap();","new_string":"let url = doc[\"database\"][\"url\"]\n    .as_str()\n    .ok_or(ConfigError::Missing(\"database.url\"))?;"}"#,
                3,
            )
            .finish("tool_calls")
            .usage(3_400, 90)
            .reply(),
        Reply::text("Done: an empty `config.toml` now says which key is missing."),
    ])
    .expect("cannot start the scripted server");
    println!("{}", srv.base_url());
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}
