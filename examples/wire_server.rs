//! A scripted model server on 127.0.0.1 that answers every request with a one-delta reply in
//! the wire format of one API, for timing a whole `neocode run` turn per API
//! (`scripts/wire-turn-bench.sh`): `cargo run --release --features testkit --example
//! wire_server -- chat|responses|anthropic [TURNS]` prints its base URL on the first line and
//! serves TURNS replies (default 500), then exits when its standard input closes.
//! `command` serves Chat Completions turns of two replies each: a `run_command` call of
//! `true` (`COMMAND` overrides it), then a one-delta text, for timing a command's round trip.
// Tests, benchmarks and examples may unwrap: a failure there is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, Write};

use neocode::testkit::scripted::{Reply, ScriptedServer, Stream};
use neocode::testkit::scripted_wire::{Messages, ResponsesStream};

fn one_delta(api: &str) -> Reply {
    match api {
        "chat" => Stream::new()
            .role()
            .text_deltas("ok", 1)
            .finish("stop")
            .usage(10, 1)
            .reply(),
        "responses" => ResponsesStream::start()
            .text("ok", 1)
            .completed(10, 0, 1, 0)
            .reply(),
        "anthropic" => Messages::start(10, 0, 0)
            .text("ok", 1)
            .stop("end_turn", 1)
            .reply(),
        other => {
            eprintln!("unknown api `{other}`: use chat, responses or anthropic");
            std::process::exit(2);
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let api = args.next().unwrap_or_else(|| "chat".into());
    let turns: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(500);
    let replies: Vec<Reply> = if api == "command" {
        let command = std::env::var("COMMAND").unwrap_or_else(|_| "true".into());
        let args = serde_json::json!({ "command": command }).to_string();
        (0..turns)
            .flat_map(|_| {
                [
                    Reply::tool_calls(&[("c1", "run_command", &args)]),
                    one_delta("chat"),
                ]
            })
            .collect()
    } else {
        (0..turns).map(|_| one_delta(&api)).collect()
    };
    let srv = ScriptedServer::start(replies).expect("cannot start the scripted server");
    println!("{}", srv.base_url());
    std::io::stdout().flush().unwrap();
    // Serve until the caller closes our standard input.
    for _ in std::io::stdin().lock().lines() {}
}
