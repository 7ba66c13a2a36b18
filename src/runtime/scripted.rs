//! A real OpenAI-compatible streaming HTTP server on 127.0.0.1 with scripted replies, for tests
//! of every branch and for the screenshots (`examples/scripted_model.rs`). A test double: only
//! built with the `testkit` feature (tests, benches and examples), never in the shipped binary. Each request to `/v1/chat/completions` takes the next
//! [`Reply`] from the script; every request (method, path, headers, body) is recorded so a test
//! can assert on what the model was sent, count requests, and check that no key leaks.
//!
//! Replies are written the way real servers misbehave: tool-call arguments split across chunks
//! by `index`, interleaved calls, `:` keep-alive comments, CRLF line endings, a usage-only final
//! chunk with empty `choices`, `[DONE]` or a plain close, HTTP errors with `Retry-After`, a
//! connection cut mid-reply (chunked body never terminated), delays before and between chunks.
//! [`ScriptedServer::start_llama_like`] adds what llama-cpp-python's server does on its own
//! (a 500 for `content: null`, empty streams for tools and for overflow, no streamed usage);
//! `GET /props` answers what [`ScriptedServer::set_props`] set, other paths 404.
//!
//! Plain std threads: the server must not need the caller to run an async runtime.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

/// One request the server received.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// `POST`, `GET` ...
    pub method: String,
    /// Path with query, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Header names lower-cased, values as sent.
    pub headers: Vec<(String, String)>,
    /// The body as text.
    pub body: String,
}

impl RecordedRequest {
    /// The body parsed as JSON (`Null` when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    /// A header's value (name case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One piece of a streamed reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    /// A `data: <json>` event.
    Data(Value),
    /// A `: <text>` comment (keep-alive).
    Comment(String),
    /// Raw bytes written as they are (for malformed streams).
    Raw(String),
    /// Nothing for this long (a server that stalls mid-reply).
    Pause(Duration),
}

/// A scripted streaming reply (status 200, `text/event-stream`).
#[derive(Debug, Clone, PartialEq)]
pub struct Stream {
    /// The events, in order.
    pub pieces: Vec<Piece>,
    /// Use `\r\n` line endings.
    pub crlf: bool,
    /// End with `data: [DONE]` (else the body just ends).
    pub done: bool,
    /// Wait this long before sending the response head.
    pub delay_before: Duration,
    /// Wait this long before each piece.
    pub delay_between: Duration,
    /// Cut the connection after this many pieces (the chunked body is never terminated).
    pub cut_after: Option<usize>,
    /// Write the event bytes in slices of this size, each flushed on its own, so events break
    /// across reads.
    pub write_size: Option<usize>,
}

/// One scripted answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A streamed completion.
    Stream(Stream),
    /// An HTTP error with a JSON body `{"error": {"message": ...}}`.
    Error {
        /// Status code, e.g. 401, 429, 500.
        status: u16,
        /// The error message in the body.
        message: String,
        /// `Retry-After` seconds.
        retry_after: Option<u64>,
    },
    /// A non-streamed JSON body with status 200.
    Json(Value),
}

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "scripted",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    })
}

/// A usage-only chunk (empty `choices`), as `stream_options.include_usage` sends last.
pub fn usage_chunk(input: u64, output: u64) -> Value {
    json!({
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "scripted",
        "choices": [],
        "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output},
    })
}

/// Splits `s` into about `n` pieces on char boundaries (at least one piece).
fn split_n(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    let size = chars.len().div_ceil(n.max(1));
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

impl Stream {
    /// An empty stream (no pieces) ending with `[DONE]`.
    pub fn new() -> Stream {
        Stream {
            pieces: Vec::new(),
            crlf: false,
            done: true,
            delay_before: Duration::ZERO,
            delay_between: Duration::ZERO,
            cut_after: None,
            write_size: None,
        }
    }

    /// A reply saying `text` in a few deltas, then `finish_reason: stop` and usage.
    pub fn text(text: &str) -> Stream {
        Stream::new()
            .role()
            .text_deltas(text, 3)
            .finish("stop")
            .usage(10, 5)
    }

    /// A reply making the given tool calls `(id, name, arguments)`, arguments split in
    /// fragments, then `finish_reason: tool_calls` and usage.
    pub fn tool_calls(calls: &[(&str, &str, &str)]) -> Stream {
        let mut s = Stream::new().role();
        for (i, (id, name, args)) in calls.iter().enumerate() {
            s = s.tool_call(i, id, name, args, 3);
        }
        s.finish("tool_calls").usage(20, 8)
    }

    /// Adds the assistant role delta.
    pub fn role(mut self) -> Stream {
        self.pieces.push(Piece::Data(chunk(
            json!({"role": "assistant", "content": ""}),
            None,
        )));
        self
    }

    /// Adds `text` as `parts` content deltas.
    pub fn text_deltas(mut self, text: &str, parts: usize) -> Stream {
        for p in split_n(text, parts) {
            self.pieces
                .push(Piece::Data(chunk(json!({"content": p}), None)));
        }
        self
    }

    /// Adds `text` as reasoning deltas (`reasoning_content`, as DeepSeek, vLLM and llama.cpp
    /// send it).
    pub fn reasoning(mut self, text: &str, parts: usize) -> Stream {
        for p in split_n(text, parts) {
            self.pieces
                .push(Piece::Data(chunk(json!({"reasoning_content": p}), None)));
        }
        self
    }

    /// Adds one tool call at `index`: the first chunk carries id and name, the arguments follow
    /// in `fragments` chunks.
    pub fn tool_call(
        mut self,
        index: usize,
        id: &str,
        name: &str,
        args: &str,
        fragments: usize,
    ) -> Stream {
        self.pieces.push(Piece::Data(chunk(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                "function": {"name": name, "arguments": ""}}]}),
            None,
        )));
        for f in split_n(args, fragments) {
            self.pieces.push(Piece::Data(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": f}}]}),
                None,
            )));
        }
        self
    }

    /// Adds one tool call at `index` the way vLLM and llama-cpp-python stream it: every delta
    /// repeats the call's `id`, `type` and whole `function.name` (and a legacy
    /// `function_call`), with `content: null`, while the arguments arrive in `fragments`.
    pub fn repeated_tool_call(
        mut self,
        index: usize,
        id: &str,
        name: &str,
        args: &str,
        fragments: usize,
    ) -> Stream {
        for f in split_n(args, fragments) {
            self.pieces.push(Piece::Data(chunk(
                json!({"role": null, "content": null,
                    "function_call": {"name": name, "arguments": f},
                    "tool_calls": [{"index": index, "id": id, "type": "function",
                        "function": {"name": name, "arguments": f}}]}),
                None,
            )));
        }
        self
    }

    /// Adds calls whose argument fragments alternate between them (`index` tells them apart),
    /// as parallel tool calls arrive from some servers.
    pub fn interleaved_calls(mut self, calls: &[(&str, &str, &str)], fragments: usize) -> Stream {
        for (i, (id, name, _)) in calls.iter().enumerate() {
            self.pieces.push(Piece::Data(chunk(
                json!({"tool_calls": [{"index": i, "id": id, "type": "function",
                    "function": {"name": name, "arguments": ""}}]}),
                None,
            )));
        }
        let split: Vec<Vec<String>> = calls
            .iter()
            .map(|(_, _, a)| split_n(a, fragments))
            .collect();
        let longest = split.iter().map(Vec::len).max().unwrap_or(0);
        for k in 0..longest {
            for (i, parts) in split.iter().enumerate() {
                if let Some(f) = parts.get(k) {
                    self.pieces.push(Piece::Data(chunk(
                        json!({"tool_calls": [{"index": i, "function": {"arguments": f}}]}),
                        None,
                    )));
                }
            }
        }
        self
    }

    /// Adds a chunk with `finish_reason` and an empty delta.
    pub fn finish(mut self, reason: &str) -> Stream {
        self.pieces
            .push(Piece::Data(chunk(json!({}), Some(reason))));
        self
    }

    /// Adds the usage-only final chunk.
    pub fn usage(mut self, input: u64, output: u64) -> Stream {
        self.pieces.push(Piece::Data(usage_chunk(input, output)));
        self
    }

    /// Adds a `: keep-alive` comment.
    pub fn keep_alive(mut self) -> Stream {
        self.pieces.push(Piece::Comment("keep-alive".into()));
        self
    }

    /// Puts a keep-alive comment between every two pieces.
    pub fn keep_alives_between(mut self) -> Stream {
        let mut out = Vec::with_capacity(self.pieces.len() * 2);
        for p in self.pieces {
            out.push(Piece::Comment("keep-alive".into()));
            out.push(p);
        }
        self.pieces = out;
        self
    }

    /// Adds any piece.
    pub fn piece(mut self, p: Piece) -> Stream {
        self.pieces.push(p);
        self
    }

    /// Uses CRLF line endings.
    pub fn crlf(mut self) -> Stream {
        self.crlf = true;
        self
    }

    /// Ends without `data: [DONE]`.
    pub fn no_done(mut self) -> Stream {
        self.done = false;
        self
    }

    /// Cuts the connection after `n` pieces.
    pub fn cut_after(mut self, n: usize) -> Stream {
        self.cut_after = Some(n);
        self
    }

    /// Waits before the response head and before each piece.
    pub fn delays(mut self, before: Duration, between: Duration) -> Stream {
        self.delay_before = before;
        self.delay_between = between;
        self
    }

    /// Writes the body in slices of `n` bytes.
    pub fn write_size(mut self, n: usize) -> Stream {
        self.write_size = Some(n.max(1));
        self
    }

    /// Wraps it as a [`Reply`].
    pub fn reply(self) -> Reply {
        Reply::Stream(self)
    }

    /// The body bytes this stream sends (all pieces, no cut), for parser tests.
    pub fn body_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for p in &self.pieces {
            out.extend_from_slice(&self.piece_bytes(p));
        }
        if self.done {
            out.extend_from_slice(&self.piece_bytes(&Piece::Raw(String::new())));
        }
        out
    }

    fn piece_bytes(&self, p: &Piece) -> Vec<u8> {
        let nl = if self.crlf { "\r\n" } else { "\n" };
        let s = match p {
            Piece::Data(v) => format!("data: {v}{nl}{nl}"),
            Piece::Comment(c) => format!(": {c}{nl}{nl}"),
            Piece::Raw(r) if r.is_empty() => format!("data: [DONE]{nl}{nl}"),
            Piece::Raw(r) => r.clone(),
            Piece::Pause(_) => String::new(),
        };
        s.into_bytes()
    }
}

impl Default for Stream {
    fn default() -> Stream {
        Stream::new()
    }
}

impl Reply {
    /// A streamed text answer.
    pub fn text(text: &str) -> Reply {
        Stream::text(text).reply()
    }

    /// A streamed answer making tool calls `(id, name, arguments)`.
    pub fn tool_calls(calls: &[(&str, &str, &str)]) -> Reply {
        Stream::tool_calls(calls).reply()
    }

    /// An HTTP error.
    pub fn error(status: u16, message: &str) -> Reply {
        Reply::Error {
            status,
            message: message.into(),
            retry_after: None,
        }
    }

    /// A 429 with `Retry-After: secs`.
    pub fn rate_limited(secs: u64) -> Reply {
        Reply::Error {
            status: 429,
            message: "Rate limit reached".into(),
            retry_after: Some(secs),
        }
    }
}

/// How a server like llama-cpp-python's (0.3, `--chat_format chatml-function-calling`)
/// treats a request before it answers from the script; see [`ScriptedServer::start_llama_like`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LlamaLike {
    /// The context window in tokens (a prompt's tokens are counted as its body's bytes / 4).
    pub window: u64,
}

/// What a request whose answer a [`LlamaLike`] server decides itself gets.
fn llama_like(req: &RecordedRequest, like: LlamaLike) -> Option<Reply> {
    let body = req.json();
    let streamed = body["stream"] == json!(true);
    let assistant_content_not_a_string = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|m| m["role"] == "assistant" && !m["content"].is_string());
    if assistant_content_not_a_string {
        return Some(Reply::error(
            500,
            "3 validation errors:\n  {'type': 'literal_error', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestSystemMessage', 'role'), 'msg': \"Input should be 'system'\", 'input': 'assistant'}\n  {'type': 'string_type', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestAssistantMessage', 'content'), 'msg': 'Input should be a valid string', 'input': None}\n  {'type': 'literal_error', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestToolMessage', 'role'), 'msg': \"Input should be 'tool'\", 'input': 'assistant'}",
        ));
    }
    let tokens = req.body.len() as u64 / 4;
    if tokens > like.window {
        // Streaming, the overflow is an empty 200; unstreamed, a 400 with the numbers.
        return Some(if streamed {
            Stream::new().no_done().reply()
        } else {
            Reply::error(
                400,
                &format!(
                    "This model's maximum context length is {} tokens. However, you requested {tokens} tokens ({tokens} in the messages, None in the completion). Please reduce the length of the messages or completion.",
                    like.window
                ),
            )
        });
    }
    if streamed && body["tool_choice"] == "auto" && body.get("tools").is_some() {
        // "Automatic streaming tool choice is not supported", after the 200 head.
        return Some(Stream::new().no_done().reply());
    }
    None
}

/// A scripted reply as `like` sends it: streamed without usage, or whole (as JSON with usage)
/// when the request did not ask for a stream.
fn as_llama_sends(reply: Reply, streamed: bool) -> Reply {
    let Reply::Stream(s) = reply else {
        return reply;
    };
    if !streamed {
        return Reply::Json(completion_json(&s));
    }
    let pieces = s
        .pieces
        .iter()
        .filter(|p| !matches!(p, Piece::Data(v) if v.get("usage").is_some()))
        .cloned()
        .collect();
    Reply::Stream(Stream { pieces, ..s })
}

/// The whole (non-streamed) completion a stream adds up to, with its usage.
pub fn completion_json(s: &Stream) -> Value {
    let folded = crate::runtime::provider::sse::fold_sse_bytes(vec![s.body_bytes()]);
    let c = folded.map(|(_, c)| c).unwrap_or_default();
    let calls: Vec<Value> = c
        .tool_calls
        .iter()
        .map(|t| {
            json!({"id": t.id, "type": "function",
            "function": {"name": t.name, "arguments": t.arguments}})
        })
        .collect();
    let mut message = json!({"role": "assistant",
        "content": if c.text.is_empty() { Value::Null } else { Value::String(c.text.clone()) }});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    json!({
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [{"index": 0, "message": message,
            "finish_reason": c.finish_reason.unwrap_or_else(|| "stop".into())}],
        "usage": {"prompt_tokens": c.usage.input_tokens,
            "completion_tokens": c.usage.output_tokens,
            "total_tokens": c.usage.input_tokens + c.usage.output_tokens},
    })
}

struct Shared {
    like: Option<LlamaLike>,
    /// What `GET /props` answers (llama.cpp's server), if set.
    props: Mutex<Option<Value>>,
    script: Mutex<VecDeque<Reply>>,
    /// What `GET /v1/models` lists (it takes no reply from the script).
    models: Mutex<Vec<String>>,
    requests: Mutex<Vec<RecordedRequest>>,
    stop: AtomicBool,
}

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
    pub fn addr(&self) -> SocketAddr {
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

    /// The models `GET /v1/models` lists from now on (none at first: it answers 404 then).
    pub fn set_models(&self, names: &[&str]) {
        *lock(&self.shared.models) = names.iter().map(|n| n.to_string()).collect();
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

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn read_request(conn: &TcpStream) -> std::io::Result<Option<RecordedRequest>> {
    let mut r = BufReader::new(conn);
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut it = line.split_whitespace();
    let method = it.next().unwrap_or_default().to_string();
    let path = it.next().unwrap_or_default().to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if r.read_line(&mut h)? == 0 {
            break;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let get = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let mut body = Vec::new();
    if let Some(len) = get("content-length").and_then(|v| v.parse::<usize>().ok()) {
        body.resize(len, 0);
        r.read_exact(&mut body)?;
    } else if get("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            r.read_line(&mut size)?;
            let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            let mut buf = vec![0; n + 2];
            r.read_exact(&mut buf)?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&buf[..n]);
        }
    }
    Ok(Some(RecordedRequest {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }))
}

fn serve(mut conn: TcpStream, shared: &Shared) -> std::io::Result<()> {
    let Some(req) = read_request(&conn)? else {
        return Ok(());
    };
    if shared.stop.load(Ordering::SeqCst) {
        return Ok(());
    }
    // Model calls are POSTs (`/chat/completions`, `/responses`, `/messages`); the GETs are
    // the servers' metadata.
    if req.method == "GET" {
        // `/props`, `/v1/models`: what the test set, else 404; not scripted. A model list
        // asked for is recorded once one is set (`/model` asks once per run).
        let props = lock(&shared.props).clone();
        let models = lock(&shared.models).clone();
        let body = match (&props, req.path.as_str()) {
            (Some(p), "/props") => Some(p.to_string()),
            (_, path) if path.ends_with("/models") && !models.is_empty() => {
                let data: Vec<Value> = models
                    .iter()
                    .map(|id| json!({"id": id, "object": "model", "owned_by": "scripted"}))
                    .collect();
                lock(&shared.requests).push(req.clone());
                Some(json!({"object": "list", "data": data}).to_string())
            }
            _ => None,
        };
        let (status, body) = match body {
            Some(b) => ("200 OK", b),
            None => ("404 Not Found", r#"{"detail":"Not Found"}"#.to_string()),
        };
        write!(
            conn,
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )?;
        return conn.flush();
    }
    let own = shared.like.and_then(|like| llama_like(&req, like));
    let streamed = req.json()["stream"] == json!(true);
    lock(&shared.requests).push(req);
    let reply = match own {
        Some(r) => r,
        None => {
            let next = lock(&shared.script).pop_front();
            let next = next.unwrap_or_else(|| Reply::error(500, "scripted server: no reply left"));
            if shared.like.is_some() {
                as_llama_sends(next, streamed)
            } else {
                next
            }
        }
    };
    match reply {
        Reply::Error {
            status,
            message,
            retry_after,
        } => {
            let body = json!({"error": {"message": message, "type": "scripted", "code": status}})
                .to_string();
            let retry = retry_after
                .map(|s| format!("Retry-After: {s}\r\n"))
                .unwrap_or_default();
            write!(
                conn,
                "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{retry}Connection: close\r\n\r\n{body}",
                reason(status),
                body.len()
            )?;
            conn.flush()
        }
        Reply::Json(v) => {
            let body = v.to_string();
            write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )?;
            conn.flush()
        }
        Reply::Stream(s) => serve_stream(conn, &s),
    }
}

fn serve_stream(mut conn: TcpStream, s: &Stream) -> std::io::Result<()> {
    std::thread::sleep(s.delay_before);
    conn.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
    )?;
    conn.flush()?;
    let mut send = |bytes: &[u8]| -> std::io::Result<()> {
        let size = s.write_size.unwrap_or(bytes.len().max(1));
        for part in bytes.chunks(size) {
            write!(conn, "{:x}\r\n", part.len())?;
            conn.write_all(part)?;
            conn.write_all(b"\r\n")?;
            conn.flush()?;
        }
        Ok(())
    };
    for (i, p) in s.pieces.iter().enumerate() {
        if s.cut_after == Some(i) {
            // Drop the socket with the chunked body unterminated: the client sees a cut.
            return Ok(());
        }
        std::thread::sleep(s.delay_between);
        if let Piece::Pause(d) = p {
            std::thread::sleep(*d);
            continue;
        }
        send(&s.piece_bytes(p))?;
    }
    if s.cut_after.is_some_and(|n| n >= s.pieces.len()) {
        return Ok(());
    }
    if s.done {
        send(&s.piece_bytes(&Piece::Raw(String::new())))?;
    }
    conn.write_all(b"0\r\n\r\n")?;
    conn.flush()
}

fn reason(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw_post(addr: SocketAddr, body: &str) -> String {
        let mut c = TcpStream::connect(addr).unwrap();
        write!(
            c,
            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-test\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut out = String::new();
        let _ = c.read_to_string(&mut out);
        out
    }

    #[test]
    fn records_requests_and_serves_script_in_order() {
        let srv =
            ScriptedServer::start(vec![Reply::text("hello"), Reply::rate_limited(2)]).unwrap();
        let a = raw_post(srv.addr(), r#"{"model":"m"}"#);
        assert!(a.starts_with("HTTP/1.1 200"), "{a}");
        assert!(a.contains("data: [DONE]"));
        assert!(a.contains(r#""content":"he"#) || a.contains("hel"));
        let b = raw_post(srv.addr(), "{}");
        assert!(b.starts_with("HTTP/1.1 429"), "{b}");
        assert!(b.contains("Retry-After: 2"));
        let c = raw_post(srv.addr(), "{}");
        assert!(c.starts_with("HTTP/1.1 500"), "{c}");
        let reqs = srv.requests();
        assert_eq!(reqs.len(), 3);
        assert_eq!(reqs[0].json()["model"], "m");
        assert_eq!(reqs[0].header("authorization"), Some("Bearer sk-test"));
    }

    #[test]
    fn cut_connection_leaves_chunked_body_unterminated() {
        let srv = ScriptedServer::start(vec![Stream::text("abcdef").cut_after(2).reply()]).unwrap();
        let a = raw_post(srv.addr(), "{}");
        assert!(!a.ends_with("0\r\n\r\n"), "{a}");
        assert!(!a.contains("[DONE]"));
    }

    #[test]
    fn crlf_and_keep_alives_are_written() {
        let s = Stream::text("hi").keep_alives_between().crlf();
        let body = String::from_utf8(s.body_bytes()).unwrap();
        assert!(body.contains(": keep-alive\r\n\r\n"));
        assert!(body.ends_with("data: [DONE]\r\n\r\n"));
    }
}
