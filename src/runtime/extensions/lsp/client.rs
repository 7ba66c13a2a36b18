//! One running language server: a child process spoken to over stdio. A writer thread owns
//! its standard input (so a server that stops reading never blocks neocode), a reader thread
//! its standard output: answers go to the request waiting for them, `publishDiagnostics` to
//! the per-file store, and the server's own requests get an empty answer.

use std::collections::HashMap;
use std::io::BufReader;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use lsp_types::Diagnostic;
use serde_json::{Value, json};

use super::error::LspError;
use super::framing::{encode, read_message};
use crate::runtime::config::lsp::LspServerConfig;

/// How long a publication without a version must stand before it counts as final.
pub(crate) const SETTLE: Duration = Duration::from_millis(400);

/// The diagnostics a server last published for one file.
#[derive(Debug, Clone, Default)]
pub(crate) struct Published {
    /// Counts publications (any file), to tell a fresh one from an old one.
    pub(crate) seq: u64,
    pub(crate) version: Option<i32>,
    pub(crate) items: Vec<Diagnostic>,
}

#[derive(Default)]
struct State {
    pending: HashMap<i64, Sender<Value>>,
    diagnostics: HashMap<String, Published>,
    seq: u64,
    /// Why the server is gone (`None` while it runs).
    stopped: Option<String>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A started, initialised server.
pub(crate) struct Client {
    child: Mutex<Child>,
    out: Sender<Vec<u8>>,
    shared: Arc<Shared>,
    next_id: AtomicI64,
    versions: Mutex<HashMap<String, i32>>,
    /// `serverInfo` of its `initialize` answer (`name version`).
    pub(crate) info: Option<String>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Client {
    /// Starts `cfg`'s program (`program` is its resolved path) in `root` and initialises it,
    /// waiting at most `timeout`.
    pub(crate) fn start(
        cfg: &LspServerConfig,
        program: &Path,
        root: &Path,
        timeout: Duration,
    ) -> Result<Client, LspError> {
        let mut child = Command::new(program)
            .args(&cfg.args)
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| LspError::Spawn {
                command: cfg.command.clone(),
                reason: crate::session::io_error(&e),
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            return Err(LspError::Spawn {
                command: cfg.command.clone(),
                reason: "its pipes could not be opened".to_string(),
            });
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        });
        let (tx, rx) = channel::<Vec<u8>>();
        spawn_writer(stdin, rx);
        spawn_reader(stdout, Arc::clone(&shared), tx.clone());
        let mut client = Client {
            child: Mutex::new(child),
            out: tx,
            shared,
            next_id: AtomicI64::new(1),
            versions: Mutex::default(),
            info: None,
        };
        match client.initialize(root, timeout) {
            Ok(info) => {
                client.info = info;
                Ok(client)
            }
            Err(e) => {
                client.kill();
                Err(e)
            }
        }
    }

    fn initialize(&self, root: &Path, timeout: Duration) -> Result<Option<String>, LspError> {
        let uri = super::uri::from_path(root)?;
        let name = root
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let params = json!({
            "processId": std::process::id(),
            "clientInfo": {"name": "neocode", "version": env!("CARGO_PKG_VERSION")},
            "rootUri": uri,
            "rootPath": root.display().to_string(),
            "workspaceFolders": [{"uri": uri, "name": name}],
            "capabilities": {
                "textDocument": {
                    "synchronization": {"didSave": true, "dynamicRegistration": false},
                    "publishDiagnostics": {"relatedInformation": false, "versionSupport": true},
                    "definition": {"linkSupport": false},
                    "references": {},
                    "hover": {"contentFormat": ["plaintext", "markdown"]},
                    "documentSymbol": {"hierarchicalDocumentSymbolSupport": false}
                },
                "workspace": {"symbol": {}, "configuration": true, "workspaceFolders": true}
            }
        });
        let answer = self.request("initialize", params, timeout)?;
        self.notify("initialized", json!({}));
        let info = answer.get("serverInfo").and_then(|i| {
            let name = i.get("name")?.as_str()?;
            Some(match i.get("version").and_then(Value::as_str) {
                Some(v) => format!("{name} {v}"),
                None => name.to_string(),
            })
        });
        Ok(info)
    }

    fn send(&self, msg: &Value) {
        // A writer that is gone means the server is gone; the reader reports that.
        let _ = self.out.send(encode(msg.to_string().as_bytes()));
    }

    /// Sends a notification.
    pub(crate) fn notify(&self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and waits at most `timeout` for its result.
    pub(crate) fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, LspError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = channel();
        {
            let mut st = self.shared.lock();
            if let Some(why) = &st.stopped {
                return Err(LspError::Stopped(why.clone()));
            }
            st.pending.insert(id, tx);
        }
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let answer = rx.recv_timeout(timeout);
        self.shared.lock().pending.remove(&id);
        let answer = match answer {
            Ok(a) => a,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                return Err(LspError::Timeout {
                    method: method.to_string(),
                    millis: timeout.as_millis(),
                });
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                let why = self
                    .stopped()
                    .unwrap_or_else(|| "its output closed".to_string());
                return Err(LspError::Stopped(why));
            }
        };
        if let Some(e) = answer.get("error") {
            let message = e
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("unknown error");
            return Err(LspError::Refused {
                method: method.to_string(),
                message: crate::sanitize::line(message).into_owned(),
            });
        }
        Ok(answer.get("result").cloned().unwrap_or(Value::Null))
    }

    /// Why the server is gone, if it is.
    pub(crate) fn stopped(&self) -> Option<String> {
        self.shared.lock().stopped.clone()
    }

    /// Opens or changes (full text) the document `uri`; returns the publication counter before
    /// the change and the document's new version.
    pub(crate) fn sync(&self, uri: &str, language_id: &str, text: &str) -> (u64, i32) {
        let seq = self.shared.lock().seq;
        let mut versions = lock(&self.versions);
        let version = match versions.get(uri) {
            Some(v) => {
                let v = v + 1;
                self.notify(
                    "textDocument/didChange",
                    json!({"textDocument": {"uri": uri, "version": v}, "contentChanges": [{"text": text}]}),
                );
                v
            }
            None => {
                self.notify(
                    "textDocument/didOpen",
                    json!({"textDocument": {"uri": uri, "languageId": language_id, "version": 1, "text": text}}),
                );
                1
            }
        };
        versions.insert(uri.to_string(), version);
        self.notify(
            "textDocument/didSave",
            json!({"textDocument": {"uri": uri}}),
        );
        (seq, version)
    }

    /// The diagnostics of `uri` published after counter `since`, waiting at most `timeout`;
    /// `None` when none came in time. A publication naming `version` (or a later one) is
    /// final; one without a version may be a first stage (typescript-language-server sends
    /// syntax errors before type errors), so it counts once [`SETTLE`] passed without another.
    pub(crate) fn wait_diagnostics(
        &self,
        uri: &str,
        since: u64,
        version: i32,
        timeout: Duration,
    ) -> Option<Vec<Diagnostic>> {
        let deadline = Instant::now() + timeout;
        let mut st = self.shared.lock();
        // The unversioned publication seen last: its counter and when it was seen.
        let mut pending: Option<(u64, Instant)> = None;
        loop {
            let now = Instant::now();
            if let Some(p) = st.diagnostics.get(uri).filter(|p| p.seq > since) {
                match (p.version, pending) {
                    (Some(v), _) if v >= version => return Some(p.items.clone()),
                    (Some(_), _) => {}
                    (None, Some((seq, at))) if seq == p.seq => {
                        if now >= at + SETTLE || st.stopped.is_some() || now >= deadline {
                            return Some(p.items.clone());
                        }
                    }
                    (None, _) => pending = Some((p.seq, now)),
                }
                if pending.is_some_and(|(seq, _)| seq == p.seq)
                    && (st.stopped.is_some() || now >= deadline)
                {
                    return Some(p.items.clone());
                }
            }
            if st.stopped.is_some() || now >= deadline {
                return None;
            }
            let left = match pending {
                Some((_, at)) => (at + SETTLE)
                    .saturating_duration_since(now)
                    .min(deadline - now),
                None => deadline - now,
            };
            st = self
                .shared
                .changed
                .wait_timeout(st, left.max(Duration::from_millis(1)))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Asks the server to shut down, waits at most `grace` for it to exit, then kills it.
    pub(crate) fn shutdown(&self, grace: Duration) {
        if self.stopped().is_none() {
            let _ = self.request("shutdown", Value::Null, grace);
            self.notify("exit", Value::Null);
        }
        let deadline = Instant::now() + grace;
        let mut child = lock(&self.child);
        while Instant::now() < deadline {
            if matches!(child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    fn kill(&self) {
        let mut child = lock(&self.child);
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.kill();
    }
}

fn spawn_writer(mut stdin: std::process::ChildStdin, rx: Receiver<Vec<u8>>) {
    let _ = std::thread::Builder::new()
        .name("neocode-lsp-out".to_string())
        .spawn(move || {
            use std::io::Write;
            for bytes in rx {
                if stdin
                    .write_all(&bytes)
                    .and_then(|()| stdin.flush())
                    .is_err()
                {
                    break;
                }
            }
        });
}

fn spawn_reader(stdout: std::process::ChildStdout, shared: Arc<Shared>, out: Sender<Vec<u8>>) {
    let _ = std::thread::Builder::new()
        .name("neocode-lsp-in".to_string())
        .spawn(move || {
            let mut r = BufReader::new(stdout);
            let why = loop {
                match read_message(&mut r) {
                    Ok(Some(body)) => {
                        if let Ok(msg) = serde_json::from_slice::<Value>(&body) {
                            dispatch(&shared, &out, msg);
                        }
                    }
                    Ok(None) => break "it exited".to_string(),
                    Err(e) => break e.to_string(),
                }
            };
            let mut st = shared.lock();
            st.stopped = Some(why);
            st.pending.clear();
            drop(st);
            shared.changed.notify_all();
        });
}

/// Routes one message from the server.
fn dispatch(shared: &Shared, out: &Sender<Vec<u8>>, msg: Value) {
    let method = msg.get("method").and_then(Value::as_str);
    let id = msg.get("id").cloned();
    match (method, id) {
        (None, Some(id)) => {
            let tx = id.as_i64().and_then(|i| shared.lock().pending.remove(&i));
            if let Some(tx) = tx {
                let _ = tx.send(msg);
            }
        }
        (Some(m), Some(id)) => {
            // The server's own requests: settings are the defaults (one `null` per item),
            // everything else (progress tokens, registrations) is simply accepted.
            let result = if m == "workspace/configuration" {
                let n = msg["params"]["items"].as_array().map_or(0, Vec::len);
                Value::Array(vec![Value::Null; n])
            } else {
                Value::Null
            };
            let reply = json!({"jsonrpc": "2.0", "id": id, "result": result});
            let _ = out.send(encode(reply.to_string().as_bytes()));
        }
        (Some("textDocument/publishDiagnostics"), None) => {
            let Ok(p) = serde_json::from_value::<lsp_types::PublishDiagnosticsParams>(
                msg["params"].clone(),
            ) else {
                return;
            };
            let mut st = shared.lock();
            st.seq += 1;
            let seq = st.seq;
            st.diagnostics.insert(
                p.uri.as_str().to_string(),
                Published {
                    seq,
                    version: p.version,
                    items: p.diagnostics,
                },
            );
            drop(st);
            shared.changed.notify_all();
        }
        _ => {}
    }
}
