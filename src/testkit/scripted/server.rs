//! The server: its accept thread, the script, and what a test reads back.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;

use super::conn::serve;
use super::llama::LlamaLike;
use super::replies::Reply;
use super::request::RecordedRequest;
use super::shared::{Shared, lock};
use super::strict::Strict;

/// The running server; stops when dropped.
pub struct ScriptedServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl ScriptedServer {
    /// Starts a server on a free port of 127.0.0.1 answering with `replies` in order. When the
    /// script is used up, requests get a 500 saying so.
    pub fn start(replies: Vec<Reply>) -> std::io::Result<ScriptedServer> {
        ScriptedServer::start_with(replies, None)
    }

    /// A server that behaves like llama-cpp-python's as measured here: an assistant message
    /// whose `content` is not a string gets a 500 with a pydantic validation report; a prompt
    /// past the window gets an empty 200 stream (a 400 with the numbers when not streamed); a
    /// streamed request with tools and `tool_choice: "auto"` gets an empty 200 stream; streams
    /// carry no usage; an unstreamed request gets the scripted reply whole, as JSON with usage.
    /// Requests it answers itself leave the script as it is.
    pub fn start_llama_like(
        replies: Vec<Reply>,
        like: LlamaLike,
    ) -> std::io::Result<ScriptedServer> {
        ScriptedServer::start_with(replies, Some(like))
    }

    fn start_with(replies: Vec<Reply>, like: Option<LlamaLike>) -> std::io::Result<ScriptedServer> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            like,
            strict: Mutex::new(Strict::default()),
            props: Mutex::new(None),
            script: Mutex::new(replies.into()),
            models: Mutex::new(Vec::new()),
            requests: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("scripted-server".into())
            .spawn(move || {
                for conn in listener.incoming() {
                    if s.stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(conn) = conn else { continue };
                    let s = s.clone();
                    let _ = std::thread::Builder::new()
                        .name("scripted-conn".into())
                        .spawn(move || {
                            let _ = serve(conn, &s);
                        });
                }
            })?;
        Ok(ScriptedServer {
            addr,
            shared,
            thread: Some(thread),
        })
    }

    /// The base URL to configure (`http://127.0.0.1:<port>/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The socket address.
    #[cfg(test)]
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Appends replies to the script.
    pub fn push(&self, replies: impl IntoIterator<Item = Reply>) {
        lock(&self.shared.script).extend(replies);
    }

    /// Answers `GET /props` with `props` from now on, as llama.cpp's server does (its
    /// `default_generation_settings.n_ctx` is the window).
    pub fn set_props(&self, props: Value) {
        *lock(&self.shared.props) = Some(props);
    }

    /// From now on a request whose assistant message with tool calls has no
    /// `reasoning_content` gets the 400 DeepSeek's thinking mode answers.
    pub fn require_reasoning_back(&self) {
        lock(&self.shared.strict).reasoning_back = true;
    }

    /// From now on a request whose assistant message's first tool call has no
    /// `extra_content.google.thought_signature` gets the 400 Gemini 3 answers.
    pub fn require_thought_signatures(&self) {
        lock(&self.shared.strict).thought_signatures = true;
    }

    /// The models `GET /v1/models` lists from now on (none at first: it answers 404 then).
    pub fn set_models(&self, names: &[&str]) {
        *lock(&self.shared.models) = names.iter().map(ToString::to_string).collect();
    }

    /// Replies not yet used.
    pub fn remaining(&self) -> usize {
        lock(&self.shared.script).len()
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// Number of requests received so far.
    pub fn request_count(&self) -> usize {
        lock(&self.shared.requests).len()
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
