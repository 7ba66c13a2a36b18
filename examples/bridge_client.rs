//! A reference client of `neocode bridge` that behaves like the lifecycle seed's editor-side
//! provider (seed 000 §1-2): one fresh `neocode bridge` process per turn, and only the
//! session id carried between them.
//!
//! ```text
//! bridge_client [--cwd DIR] [--new] [--approve] [--bin PATH] <prompt>
//! ```
//!
//! - The conversation (what an editor would keep in memory) lives in
//!   `<cwd>/.neocode/provider-history.json`, OpenAI-shaped, starting with a system message.
//! - The session id lives in `<cwd>/.neocode/provider-session.id`: read before a turn,
//!   written when `session_init` arrives.
//! - New or continue is decided from the history alone (the seed's `isNewConversation`):
//!   no assistant or tool message means a new conversation, so no `session_id` and no
//!   `conversation_key` are sent. Otherwise the id from the file goes along with the key,
//!   the hex SHA-256 of the first user message's text. Whether the id file exists plays no
//!   part in the decision; a lost file is what the key recovers from.
//! - `--new` is the editor's `/new`: the history restarts and `new_session: true` is sent.
//! - Assistant text goes to stdout; the session and warnings are reported on stderr.
//!   Approvals are granted with `--approve`, else denied.
//!
//! The binary is `--bin`, else `$NEOCODE_BIN`, else `neocode` on the PATH. Exit code: 0 when
//! the turn completed, 1 on an error, 3 when a limit stopped it, 4 when it was cancelled.
//!
//! `tests/suite/bridge/bridge_process.rs` drives this same code (included as a module) against the real binary.
// Tests, benchmarks and examples may unwrap: a failure there is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The system message an editor would put first; neocode ignores it for the transcript.
pub(crate) const SYSTEM_PROMPT: &str =
    "You are driven through the neocode bridge reference client.";

/// One editor-side provider for one working directory.
#[derive(Debug, Clone)]
pub(crate) struct Client {
    /// The `neocode` binary.
    pub bin: PathBuf,
    /// The editor's working directory (the workspace; the files live under `.neocode/`).
    pub cwd: PathBuf,
    /// Extra environment for the bridge process (tests point it at a home and a model).
    pub env: Vec<(String, String)>,
    /// Grant every approval request (else deny).
    pub approve: bool,
}

/// What one turn produced.
#[derive(Debug, Clone, Default)]
pub(crate) struct Outcome {
    /// Every event line, in order.
    pub events: Vec<Value>,
    /// The request sent.
    pub request: Value,
    /// The assistant text of this turn.
    pub text: String,
    /// `finish.reason`, if the turn got that far.
    pub finish: Option<String>,
}

impl Outcome {
    /// The first event of this type.
    pub(crate) fn event(&self, ty: &str) -> Option<&Value> {
        self.events.iter().find(|e| e["type"] == ty)
    }

    /// The types of the events, in order.
    pub(crate) fn types(&self) -> Vec<String> {
        self.events
            .iter()
            .map(|e| e["type"].as_str().unwrap_or("?").to_string())
            .collect()
    }
}

impl Client {
    /// `<cwd>/.neocode/provider-session.id`.
    pub(crate) fn id_file(&self) -> PathBuf {
        self.cwd.join(".neocode").join("provider-session.id")
    }

    /// `<cwd>/.neocode/provider-history.json`.
    pub(crate) fn history_file(&self) -> PathBuf {
        self.cwd.join(".neocode").join("provider-history.json")
    }

    /// The seed's `loadChatSessionId`: the trimmed file content, or none.
    pub(crate) fn load_session_id(&self) -> Option<String> {
        let id = std::fs::read_to_string(self.id_file()).ok()?;
        let id = id.trim();
        (!id.is_empty()).then(|| id.to_string())
    }

    fn save_session_id(&self, id: &str) -> std::io::Result<()> {
        std::fs::create_dir_all(self.id_file().parent().unwrap_or(&self.cwd))?;
        std::fs::write(self.id_file(), id)
    }

    /// The conversation so far (a system message when there is none yet).
    pub(crate) fn load_history(&self) -> Vec<Value> {
        std::fs::read(self.history_file())
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_else(|| vec![json!({"role": "system", "content": SYSTEM_PROMPT})])
    }

    fn save_history(&self, h: &[Value]) -> std::io::Result<()> {
        std::fs::create_dir_all(self.history_file().parent().unwrap_or(&self.cwd))?;
        std::fs::write(self.history_file(), serde_json::to_vec_pretty(h)?)
    }

    /// Builds the request for `prompt` the way the seed's provider does.
    pub(crate) fn request(&self, history: &[Value], new: bool) -> Value {
        let mut req = json!({
            "type": "chat",
            "request_id": uuid_like(),
            "cwd": self.cwd,
            "messages": history,
        });
        if new {
            req["new_session"] = json!(true);
        } else if !is_new_conversation(history) {
            if let Some(id) = self.load_session_id() {
                req["session_id"] = json!(id);
            }
            if let Some(key) = conversation_key(history) {
                req["conversation_key"] = json!(key);
            }
        }
        req
    }

    /// Runs one turn in a fresh bridge process. `new` is the editor's `/new`.
    pub(crate) fn turn(&self, prompt: &str, new: bool) -> std::io::Result<Outcome> {
        let mut history = if new {
            vec![json!({"role": "system", "content": SYSTEM_PROMPT})]
        } else {
            self.load_history()
        };
        history.push(json!({"role": "user", "content": prompt}));
        let request = self.request(&history, new);

        let mut child = Command::new(&self.bin)
            .arg("bridge")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let mut stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped stdout");
        if let Some(w) = stdin.as_mut() {
            writeln!(w, "{request}")?;
            w.flush()?;
        }

        let mut out = Outcome {
            request,
            ..Outcome::default()
        };
        let mut turn = TurnRecorder::default();
        let mut started = false;
        for line in BufReader::new(stdout).lines() {
            let line = line?;
            let Ok(ev) = serde_json::from_str::<Value>(&line) else {
                eprintln!("bridge_client: not JSON from the bridge: {line}");
                continue;
            };
            match ev["type"].as_str().unwrap_or("") {
                "session_init" => {
                    started = true;
                    let id = ev["session_id"].as_str().unwrap_or_default();
                    // The seed's onSessionInit: keep the id for the next process.
                    self.save_session_id(id)?;
                    let id = line_safe(id);
                    match ev["recovery_reason"].as_str() {
                        Some(why) => eprintln!("neocode: session {id} (recovered: {why})"),
                        None => eprintln!("neocode: session {id}"),
                    }
                }
                "warning" => eprintln!(
                    "neocode warning [{}]: {}",
                    line_safe(ev["code"].as_str().unwrap_or("")),
                    line_safe(ev["message"].as_str().unwrap_or(""))
                ),
                "error" => {
                    eprintln!(
                        "neocode error [{}]: {}",
                        line_safe(ev["code"].as_str().unwrap_or("")),
                        line_safe(ev["message"].as_str().unwrap_or(""))
                    );
                    // An error before session_init means the chat never started: no
                    // finish will follow, so end the process.
                    if !started {
                        stdin.take();
                    }
                }
                "text_delta" => {
                    let t = ev["text"].as_str().unwrap_or_default();
                    // Model text is untrusted: escape sequences are shown, never obeyed.
                    print!("{}", neocode::sanitize::text(t));
                    let _ = std::io::stdout().flush();
                    out.text.push_str(t);
                    turn.text(t);
                }
                "tool_call" => turn.call(&ev),
                "tool_result" => turn.result(&ev),
                "message_stored" => turn.close(),
                "approval_request" => {
                    let decision = if self.approve { "approve" } else { "deny" };
                    if let Some(w) = stdin.as_mut() {
                        let answer = json!({"type": "approval", "call_id": ev["call_id"],
                                            "decision": decision});
                        writeln!(w, "{answer}")?;
                        w.flush()?;
                    }
                }
                "finish" => {
                    out.finish = ev["reason"].as_str().map(str::to_string);
                    stdin.take();
                }
                _ => {}
            }
            out.events.push(ev);
        }
        drop(stdin);
        child.wait()?;
        if !out.text.is_empty() && !out.text.ends_with('\n') {
            println!();
        }
        if out.finish.is_some() {
            history.extend(turn.finish());
            self.save_history(&history)?;
        }
        Ok(out)
    }
}

/// The seed's `isNewConversation`: no assistant or tool message in the prompt.
pub(crate) fn is_new_conversation(history: &[Value]) -> bool {
    !history
        .iter()
        .any(|m| m["role"] == "assistant" || m["role"] == "tool")
}

/// The seed's `computeConversationKey`: hex SHA-256 of the first user message's text (the
/// same as `neocode::session::conversation_key`).
pub(crate) fn conversation_key(history: &[Value]) -> Option<String> {
    let first = history.iter().find(|m| m["role"] == "user")?;
    let text = match &first["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|p| p["type"] == "text")
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => return None,
    };
    if text.is_empty() {
        return None;
    }
    Some(
        Sha256::digest(text.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    )
}

/// Rebuilds the turn's messages from its events in the shape neocode stored them: one
/// assistant message per model call (its text, then `message_stored`; its tool calls may be
/// announced before or after that line), one tool message per result.
#[derive(Default)]
struct TurnRecorder {
    done: Vec<Value>,
    text: String,
    pending_calls: Vec<Value>,
    /// The assistant message stored last, while no new text has started another.
    current: Option<usize>,
}

impl TurnRecorder {
    fn text(&mut self, t: &str) {
        self.current = None;
        self.text.push_str(t);
    }

    fn call(&mut self, ev: &Value) {
        let call = json!({"id": ev["call_id"], "type": "function",
            "function": {"name": ev["name"], "arguments": ev["arguments"]}});
        match self.current {
            Some(i) => {
                let calls = self.done[i]
                    .as_object_mut()
                    .map(|o| o.entry("tool_calls").or_insert_with(|| json!([])));
                if let Some(Value::Array(a)) = calls {
                    a.push(call);
                }
            }
            None => self.pending_calls.push(call),
        }
    }

    fn close(&mut self) {
        let mut m = json!({"role": "assistant", "content": std::mem::take(&mut self.text)});
        if !self.pending_calls.is_empty() {
            m["tool_calls"] = Value::Array(std::mem::take(&mut self.pending_calls));
        }
        self.done.push(m);
        self.current = Some(self.done.len() - 1);
    }

    fn result(&mut self, ev: &Value) {
        self.done
            .push(json!({"role": "tool", "tool_call_id": ev["call_id"],
                              "content": ev["text"]}));
    }

    fn finish(self) -> Vec<Value> {
        // Text of a cancelled stream that was never stored is dropped, like the partial
        // answer an editor discards.
        self.done
    }
}

fn line_safe(s: &str) -> String {
    neocode::sanitize::line(s).into_owned()
}

fn uuid_like() -> String {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("req-{n:x}-{}", std::process::id())
}

fn main() -> std::process::ExitCode {
    let mut cwd = None;
    let mut bin = std::env::var_os("NEOCODE_BIN").map(PathBuf::from);
    let mut new = false;
    let mut approve = false;
    let mut prompt = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--cwd" => cwd = args.next().map(PathBuf::from),
            "--bin" => bin = args.next().map(PathBuf::from),
            "--new" => new = true,
            "--approve" => approve = true,
            "-h" | "--help" => {
                println!("bridge_client [--cwd DIR] [--new] [--approve] [--bin PATH] <prompt>");
                return std::process::ExitCode::SUCCESS;
            }
            _ if prompt.is_none() => prompt = Some(a),
            _ => {
                eprintln!("bridge_client: unexpected argument {a:?}");
                return std::process::ExitCode::from(2);
            }
        }
    }
    let Some(prompt) = prompt else {
        eprintln!("bridge_client: give a prompt (see --help)");
        return std::process::ExitCode::from(2);
    };
    let cwd = match cwd.map_or_else(std::env::current_dir, Ok) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("bridge_client: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let client = Client {
        bin: bin.unwrap_or_else(|| Path::new("neocode").to_path_buf()),
        cwd,
        env: Vec::new(),
        approve,
    };
    match client.turn(&prompt, new) {
        Ok(o) => std::process::ExitCode::from(match o.finish.as_deref() {
            Some("completed") => 0,
            Some("limit_reached") => 3,
            Some("cancelled") => 4,
            _ => 1,
        }),
        Err(e) => {
            eprintln!("bridge_client: {e}");
            std::process::ExitCode::from(1)
        }
    }
}
