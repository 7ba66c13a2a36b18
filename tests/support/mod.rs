//! What the tests share: one throwaway [`Env`] (home + workspace + location + sessions) and
//! the helpers that extend it for the store and crash harnesses, the command line ([`cli`]),
//! the agent ([`agent`]) and the real binary in a pseudo-terminal ([`pty`]).

pub(crate) mod agent;
pub(crate) mod bridge;
pub(crate) mod cli;
pub(crate) mod env;
pub(crate) mod flows;
pub(crate) mod git;
pub(crate) mod hostile_repo;
pub(crate) mod live;
pub(crate) mod process;
pub(crate) mod pty;
pub(crate) mod rerun;
pub(crate) mod text;
pub(crate) mod tui;
pub(crate) mod tui_flows;

pub(crate) use env::Env;
pub(crate) use process::Succeeds;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use neocode::runtime::agent::{FinishReason, TurnEvent};
use neocode::runtime::{Location, Sessions};
use neocode::session::testing::{MIGRATIONS, register_functions};
use neocode::session::{
    AppendMeta, NewMessage, NewSession, Role, SessionHeader, Store, WorkspacePaths,
};
use neocode::testkit::scripted::{RecordedRequest, ScriptedServer, Stream};
use serde_json::Value;

/// Extensions of the one [`Env`] for the store, crash and command-line harnesses.
impl Env {
    /// A new empty session (the defaults of [`NewSession`]); its id.
    pub(crate) fn new_session(&self) -> String {
        self.sessions()
            .new_session(NewSession::default())
            .expect("creating a session")
            .id
    }

    /// A new session holding `n` messages, user and assistant in turn, each
    /// `message <i>: ` and sixty words (about 80 tokens); its id.
    pub(crate) fn session_with(&self, n: usize) -> String {
        let id = self.new_session();
        let msgs: Vec<NewMessage> = (0..n)
            .map(|i| {
                let role = if i % 2 == 0 {
                    Role::User
                } else {
                    Role::Assistant
                };
                NewMessage::text(role, format!("message {i}: {}", "word ".repeat(60)))
            })
            .collect();
        self.sessions()
            .append(&id, &msgs, &AppendMeta::default())
            .expect("appending the messages");
        id
    }

    /// Another workspace, `tmp/<name>` (created), under the same home.
    pub(crate) fn sibling(&self, name: &str) -> Location {
        let dir = self.tmp.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        Location {
            home: self.home.clone(),
            paths: WorkspacePaths::resolve(&self.home, &dir).unwrap(),
        }
    }

    /// Trusts the workspace as its files are now (what `neocode trust --yes` records): the
    /// tests that write the workspace's own hooks, rules or skills are its user.
    pub(crate) fn trust_workspace(&self) {
        neocode::runtime::trust::trust(&self.home, &self.workdir).expect("recording trust");
    }

    /// The workspace's paths under the home.
    pub(crate) fn paths(&self) -> WorkspacePaths {
        self.location().paths
    }

    /// The bare store of the workspace (no runtime around it).
    pub(crate) fn store(&self) -> Store {
        Store::open(self.paths()).expect("open the store")
    }

    /// The workspace's database as a release of schema `version` left it, holding `rows` (SQL
    /// that release could have written): its first `version` migrations and `rows` run on a
    /// plain connection (with the store's SQL functions), no store opened.
    pub(crate) fn database_of_version(&self, version: usize, rows: &str) -> rusqlite::Connection {
        let paths = self.paths();
        paths.create_dirs().unwrap();
        let c = rusqlite::Connection::open(paths.db()).unwrap();
        register_functions(&c).unwrap();
        for sql in &MIGRATIONS[..version] {
            c.execute_batch(sql).unwrap();
        }
        c.pragma_update(None, "user_version", version as i64)
            .unwrap();
        c.execute_batch(rows).unwrap();
        c
    }

    pub(crate) fn db(&self) -> PathBuf {
        self.location().paths.db()
    }

    /// The neocode binary with this env's home and workspace.
    pub(crate) fn neocode(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_neocode"));
        c.env("NEOCODE_HOME", &self.home)
            .env("NO_COLOR", "1")
            .arg("--workdir")
            .arg(&self.workdir);
        c
    }

    /// The dev-only writer example, appending to `session`.
    pub(crate) fn writer(&self, session: &str, count: u64, batch: u64) -> Command {
        let mut c = Command::new(writer_path());
        c.arg("--home")
            .arg(&self.home)
            .arg("--workdir")
            .arg(&self.workdir)
            .arg("--session")
            .arg(session)
            .arg("--count")
            .arg(count.to_string())
            .arg("--batch")
            .arg(batch.to_string());
        c
    }
}

/// `target/<profile>/examples/writer`, built by `cargo test` along with the tests.
pub(crate) fn writer_path() -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_neocode"));
    let p = bin.parent().unwrap().join("examples").join("writer");
    assert!(
        p.exists(),
        "{} is missing: run the tests with `cargo test` (which builds examples)",
        p.display()
    );
    p
}

/// Every `committed <seq>` line's seq.
pub(crate) fn committed_seqs(stdout: &str) -> Vec<i64> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("committed "))
        .filter_map(|n| n.trim().parse().ok())
        .collect()
}

/// xorshift64*: enough randomness for kill timings, reproducible from a printed seed.
pub(crate) struct Rng(pub u64);

impl Rng {
    pub(crate) fn from_time() -> Rng {
        let seed = std::env::var("NEOCODE_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
                    | 1
            });
        eprintln!("rng seed {seed} (set NEOCODE_TEST_SEED to replay)");
        Rng(seed)
    }

    pub(crate) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// `PRAGMA integrity_check` on a plain connection.
pub(crate) fn integrity_ok(db: &Path) -> String {
    let c = rusqlite::Connection::open(db).expect("open db");
    c.query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0))
        .expect("integrity_check")
}

/// Why the turn whose events these are ended.
pub(crate) fn finish(evs: &[TurnEvent]) -> FinishReason {
    match evs.last() {
        Some(TurnEvent::Finished { reason, .. }) => reason.clone(),
        other => panic!("last event {other:?}"),
    }
}

/// The step a recorded request was made for (`None` for the drafting conversation).
fn step_of(r: &RecordedRequest) -> Option<String> {
    let body = r.json();
    let first_user = body["messages"]
        .as_array()?
        .iter()
        .find(|m| m["role"] == "user")?["content"]
        .as_str()?
        .to_string();
    let rest = first_user.strip_prefix("Your step: ")?;
    Some(rest.split(' ').next()?.to_string())
}

/// The steps of a plan run, in the order their requests reached the scripted model.
pub(crate) fn steps_requested(srv: &ScriptedServer) -> Vec<String> {
    srv.requests().iter().filter_map(step_of).collect()
}

/// A process's standard output, lossily decoded.
/// The `warning` events with `code` among JSON events (`run --json` lines, bridge events).
pub(crate) fn warnings<'a>(events: &'a [Value], code: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["type"] == "warning" && e["code"] == code)
        .collect()
}

/// The names of the tools a chat-completions request body offers the model.
pub(crate) fn tool_names(req: &Value) -> Vec<&str> {
    req["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect()
}

/// How many messages of `role` a chat-completions request body sends.
pub(crate) fn messages_of_role(req: &Value, role: &str) -> usize {
    req["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == role)
        .count()
}

pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A process's standard error, lossily decoded.
pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Every file under `dir`, depth first.
pub(crate) fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Asserts that no file under `dir` holds any of `secrets` (an API key, or a part of one).
pub(crate) fn assert_no_file_holds(dir: &Path, secrets: &[&str]) {
    for f in files_under(dir) {
        let hay = String::from_utf8_lossy(&std::fs::read(&f).unwrap()).into_owned();
        for secret in secrets {
            assert!(
                !hay.contains(secret),
                "{secret:?} leaked into {}",
                f.display()
            );
        }
    }
}

/// The text of the result of call `call_id` in a request body the scripted server recorded.
pub(crate) fn tool_text(body: &Value, call_id: &str) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no result for {call_id} in {body:#}"))
        .to_string()
}

/// The text of the last `tool` message in a request body the scripted server recorded.
pub(crate) fn last_tool_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no tool message in {body:#}"))
        .to_string()
}

/// The last message of the `n`th request (from 0) the scripted server recorded.
pub(crate) fn last_message(srv: &ScriptedServer, n: usize) -> Value {
    srv.requests()[n].json()["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone()
}

/// A new session titled `title`, through the runtime's [`Sessions`].
pub(crate) fn titled(rt: &Sessions, title: &str) -> SessionHeader {
    rt.new_session(NewSession {
        title: title.into(),
        ..NewSession::default()
    })
    .unwrap()
}

/// A streamed text answer in `parts` deltas, `between` apart (slow enough to interrupt).
pub(crate) fn slow_text(text: &str, parts: usize, between: std::time::Duration) -> Stream {
    Stream::new()
        .role()
        .text_deltas(text, parts)
        .delays(std::time::Duration::ZERO, between)
}

/// What only the suite's agent tests use of [`agent::Env`] (`tests/mcp.rs` shares the rest).
impl agent::Env {
    /// `neocode run --plan --yes ARGS` on `srv`, run to its end (it may fail).
    pub(crate) fn run_plan(&self, srv: &ScriptedServer, args: &[&str]) -> Output {
        let all: Vec<&str> = ["run", "--plan", "--yes"]
            .iter()
            .chain(args)
            .copied()
            .collect();
        self.cmd(Some(srv), &all).output().unwrap()
    }

    /// [`agent::Env::cmd`] on `srv` started in the background, its input, output and errors
    /// piped (the test writes its standard input).
    pub(crate) fn spawn_fed(&self, srv: &ScriptedServer, args: &[&str]) -> std::process::Child {
        self.cmd(Some(srv), args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// [`agent::Env::cmd`] on `srv` started in the background, its output and errors piped.
    pub(crate) fn spawn(&self, srv: &ScriptedServer, args: &[&str]) -> std::process::Child {
        self.cmd(Some(srv), args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }
}
