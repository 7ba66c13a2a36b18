//! What the `neocode bridge` tests share: the event sequences a turn answers with, reading a
//! bridge's events (in-process or from a real process), and the session a turn's
//! `session_init` names.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use neocode::session::Role;
use neocode::testkit::scripted::{Reply, ScriptedServer};
use serde_json::Value;

/// The one [`super::env::Env`] (its home made) and a scripted model, for a bridge process;
/// each front end's tests add how they start it.
pub(crate) struct Env {
    pub base: super::env::Env,
    pub server: ScriptedServer,
}

impl std::ops::Deref for Env {
    type Target = super::env::Env;

    fn deref(&self) -> &super::env::Env {
        &self.base
    }
}

impl Env {
    pub(crate) fn new(replies: Vec<Reply>) -> Env {
        let base = super::env::Env::new();
        std::fs::create_dir_all(&base.home).unwrap();
        Env {
            base,
            server: ScriptedServer::start(replies).unwrap(),
        }
    }

    /// [`Env::new`] with a model that answers with each of `texts` in turn.
    pub(crate) fn answering(texts: &[&str]) -> Env {
        Env::new(texts.iter().map(|t| Reply::text(t)).collect())
    }

    /// [`Env::new`] with a model that answers `answer 0`, `answer 1`, … `n` times.
    pub(crate) fn numbered(n: usize) -> Env {
        Env::new(
            (0..n)
                .map(|i| Reply::text(&format!("answer {i}")))
                .collect(),
        )
    }

    /// This env with `config` as its home's `config.toml`.
    pub(crate) fn configured(self, config: &str) -> Env {
        std::fs::write(self.home.join("config.toml"), config).unwrap();
        self
    }

    /// Each stored message of session `id`: its role and text.
    pub(crate) fn texts(&self, id: &str) -> Vec<(Role, String)> {
        self.sessions()
            .load(id)
            .unwrap()
            .messages
            .iter()
            .map(|m| (m.role, m.text()))
            .collect()
    }
}

/// What [`json_lines`] does with a line that is not JSON.
#[derive(Clone, Copy)]
pub(crate) enum NotJson {
    /// The reader panics: every line the process writes must be JSON.
    Panic,
    /// The line is passed over.
    Skip,
}

/// The JSON lines a process writes on `stdout`, read on a thread into a channel until the
/// stream ends (or nobody listens).
pub(crate) fn json_lines(stdout: impl Read + Send + 'static, not_json: NotJson) -> Receiver<Value> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            let v = match (serde_json::from_str::<Value>(&line), not_json) {
                (Ok(v), _) => v,
                (Err(_), NotJson::Skip) => continue,
                (Err(e), NotJson::Panic) => panic!("not a JSON line ({e}): {line:?}"),
            };
            if tx.send(v).is_err() {
                return;
            }
        }
    });
    rx
}

/// Starts `cmd` with its standard input and output piped and its errors to `stderr`; the child
/// (its standard input still in it) and the JSON lines of its standard output.
pub(crate) fn spawn_json(
    cmd: &mut Command,
    stderr: Stdio,
    not_json: NotJson,
) -> (Child, Receiver<Value>) {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let rx = json_lines(child.stdout.take().unwrap(), not_json);
    (child, rx)
}

/// A plain answered turn, one run of `text_delta`s.
pub(crate) const PLAIN_TURN: [&str; 5] = [
    "protocol_ack",
    "session_init",
    "text_delta",
    "message_stored",
    "finish",
];

/// A turn that warns before it answers (a new session or a fork instead of the one asked for).
pub(crate) const WARNED_TURN: [&str; 6] = [
    "protocol_ack",
    "session_init",
    "warning",
    "text_delta",
    "message_stored",
    "finish",
];

/// A model reply calling `tool` (as call `id`) to run `command`: `run_command`, or a host's
/// own shell tool.
pub(crate) fn command_call(id: &str, tool: &str, command: &str) -> Reply {
    let args = serde_json::json!({ "command": command }).to_string();
    Reply::tool_calls(&[(id, tool, &args)])
}

/// A model reply calling `write_file` (as call `id`) to write `content` to `path`, the
/// arguments in that order.
pub(crate) fn write_call(id: &str, path: &str, content: &str) -> Reply {
    let args = format!(
        r#"{{"path":{},"content":{}}}"#,
        Value::from(path),
        Value::from(content)
    );
    Reply::tool_calls(&[(id, "write_file", &args)])
}

/// The messages of `(prompt, answer)` exchanges, as [`Env::texts`] reads them.
pub(crate) fn exchanges(pairs: &[(&str, &str)]) -> Vec<(Role, String)> {
    pairs
        .iter()
        .flat_map(|(q, a)| {
            [
                (Role::User, q.to_string()),
                (Role::Assistant, a.to_string()),
            ]
        })
        .collect()
}

/// How a turn whose model's first reply calls a tool opens: that reply stored and its call
/// announced.
pub(crate) const TOOL_CALLED: [&str; 4] = [
    "protocol_ack",
    "session_init",
    "message_stored",
    "tool_call",
];

/// The session a turn's `session_init` names.
pub(crate) fn session_id(events: &[Value]) -> String {
    events
        .iter()
        .find(|e| e["type"] == "session_init")
        .unwrap_or_else(|| panic!("no session_init in {events:#?}"))["session_id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The next event a bridge wrote, waiting up to 30 s.
pub(crate) fn next(events: &Receiver<Value>) -> Value {
    events
        .recv_timeout(Duration::from_secs(30))
        .expect("an event within 30 s")
}

/// Events up to and including the next one of type `ty`.
pub(crate) fn until(events: &Receiver<Value>, ty: &str) -> Vec<Value> {
    let mut out = Vec::new();
    loop {
        let v = next(events);
        let done = v["type"] == ty;
        out.push(v);
        if done {
            return out;
        }
    }
}

/// The first event of type `ty`.
pub(crate) fn find<'a>(events: &'a [Value], ty: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["type"] == ty)
        .unwrap_or_else(|| panic!("no {ty} in {events:#?}"))
}
