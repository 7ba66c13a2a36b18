//! A background thread that owns a [`Sessions`] clone and runs storage work off the render
//! loop. Requests carry a token; the caller keeps the token of the request it still cares
//! about and drops answers whose token is no longer current.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;

use crate::runtime::Sessions;
use crate::runtime::context::{ContextReport, header_report};
use crate::session::{
    AppendMeta, AssetMeta, ListPage, ListQuery, Message, NewMessage, NewSession, PlanProgress,
    Role, SearchHit, SessionHeader, ToolCall, Usage,
};

/// Storage work the TUI asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// The database's change counter (`Sessions::data_version`), polled to stay live.
    Poll,
    /// One page of the session list, plus the total count when `count` is set.
    List {
        /// Filters and page key.
        query: ListQuery,
        /// Also count all sessions.
        count: bool,
    },
    /// Header, merged plan progress and asset list of one session.
    Detail {
        /// Session id.
        id: String,
    },
    /// Messages `from..=to` of a session.
    Messages {
        /// Session id.
        id: String,
        /// First seq.
        from: i64,
        /// Last seq.
        to: i64,
    },
    /// Per-turn usage of a session (the usage of every message that carries some).
    Usage {
        /// Session id.
        id: String,
    },
    /// Full-text search across the workspace.
    Search {
        /// The query as typed.
        query: String,
        /// Maximum hits.
        limit: usize,
    },
    /// Fork a session at a seq (default: the end).
    Fork {
        /// Source session.
        id: String,
        /// Fork point.
        at: Option<i64>,
    },
    /// Delete a session and its assets.
    Delete {
        /// Session id.
        id: String,
    },
    /// Rename a session.
    Rename {
        /// Session id.
        id: String,
        /// New title.
        title: String,
    },
    /// Start a new, empty session.
    NewSession {
        /// Its workdir.
        workdir: String,
    },
    /// Write `<short-id>.json` (the session file) into `dir`.
    Export {
        /// Session id.
        id: String,
        /// Target folder.
        dir: PathBuf,
    },
    /// Write an asset's bytes to a file in `dir`.
    SaveAsset {
        /// Session id.
        id: String,
        /// Asset id.
        asset_id: String,
        /// Target folder.
        dir: PathBuf,
    },
    /// Append a user message.
    Append {
        /// Session id.
        id: String,
        /// The text the user submitted.
        text: String,
    },
}

impl Request {
    /// Read requests whose older queued copies are worthless once a newer one of the same kind
    /// is queued (the latest selection wins). Writes are never collapsed.
    fn replaceable(&self) -> Option<u8> {
        match self {
            Request::Detail { .. } => Some(1),
            Request::Usage { .. } => Some(2),
            Request::Search { .. } => Some(3),
            Request::Poll => Some(4),
            Request::List { .. }
            | Request::Messages { .. }
            | Request::Fork { .. }
            | Request::Delete { .. }
            | Request::Rename { .. }
            | Request::NewSession { .. }
            | Request::Export { .. }
            | Request::SaveAsset { .. }
            | Request::Append { .. } => None,
        }
    }
}

/// What a request produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// The database's change counter.
    Version(i64),
    /// A list page and, if asked, the total count.
    List {
        /// The page.
        page: ListPage,
        /// Total sessions.
        count: Option<u64>,
        /// Whether this page continued an earlier one.
        continued: bool,
    },
    /// One session's detail.
    Detail {
        /// Header.
        header: Box<SessionHeader>,
        /// Merged plan progress.
        progress: PlanProgress,
        /// Assets.
        assets: Vec<AssetMeta>,
        /// Tool calls left without a result when the session stopped.
        interrupted: Vec<ToolCall>,
        /// Instruction files, skills and MCP servers its turns take in.
        context: Box<ContextReport>,
    },
    /// A window of messages.
    Messages {
        /// Session id.
        id: String,
        /// Asked range start.
        from: i64,
        /// Asked range end.
        to: i64,
        /// The messages found.
        messages: Vec<Message>,
    },
    /// Per-turn usage, in seq order.
    Usage {
        /// Session id.
        id: String,
        /// (seq, usage) of each message with usage.
        turns: Vec<(i64, Usage)>,
    },
    /// Search hits.
    Search {
        /// The query answered.
        query: String,
        /// Hits, best first.
        hits: Vec<SearchHit>,
    },
    /// A fork was created.
    Forked(Box<SessionHeader>),
    /// A session was deleted.
    Deleted(String),
    /// A session was renamed.
    Renamed {
        /// Session id.
        id: String,
        /// New title.
        title: String,
    },
    /// A session was created.
    Created(Box<SessionHeader>),
    /// A file was written.
    Wrote(PathBuf),
    /// A message was appended.
    Appended {
        /// Session id.
        id: String,
        /// Its seq.
        seq: i64,
    },
}

/// A request with its token.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// Caller-chosen token, echoed in the answer.
    pub token: u64,
    /// The work.
    pub request: Request,
}

/// The answer to a [`Job`].
#[derive(Debug, Clone, PartialEq)]
pub struct Done {
    /// The job's token.
    pub token: u64,
    /// The result, or a one-line user-facing error.
    pub result: Result<Reply, String>,
}

/// Runs one request synchronously (the worker thread calls this; tests may too).
pub fn handle(rt: &Sessions, request: Request) -> Result<Reply, String> {
    run(rt, request).map_err(|e| e.to_string())
}

fn run(rt: &Sessions, request: Request) -> anyhow::Result<Reply> {
    Ok(match request {
        Request::Poll => Reply::Version(rt.data_version()?),
        Request::List { query, count } => {
            let continued = query.after.is_some();
            let page = rt.list(&query)?;
            let count = if count { Some(rt.count()?) } else { None };
            Reply::List {
                page,
                count,
                continued,
            }
        }
        Request::Detail { id } => {
            let header = rt.header(&id)?;
            let context = header_report(rt.home(), rt.root(), header.skills.as_ref());
            Reply::Detail {
                header: Box::new(header),
                progress: rt.plan_progress(&id)?,
                assets: rt.assets(&id)?,
                interrupted: rt.interrupted_tool_calls(&id)?,
                context: Box::new(context),
            }
        }
        Request::Messages { id, from, to } => {
            let messages = rt.messages(&id, from, to)?;
            Reply::Messages {
                id,
                from,
                to,
                messages,
            }
        }
        Request::Usage { id } => {
            let last = rt.header(&id)?.last_seq;
            let mut turns = Vec::new();
            let mut from = 1;
            while from <= last {
                let to = from + 2047;
                for m in rt.messages(&id, from, to)? {
                    if m.usage.input_tokens + m.usage.output_tokens > 0 {
                        turns.push((m.seq, m.usage));
                    }
                }
                from = to + 1;
            }
            Reply::Usage { id, turns }
        }
        Request::Search { query, limit } => {
            let hits = rt.search(&query, limit)?;
            Reply::Search { query, hits }
        }
        Request::Fork { id, at } => Reply::Forked(Box::new(rt.fork(&id, at)?)),
        Request::Delete { id } => {
            rt.delete(&id)?;
            Reply::Deleted(id)
        }
        Request::Rename { id, title } => {
            rt.rename(&id, &title)?;
            Reply::Renamed { id, title }
        }
        Request::NewSession { workdir } => {
            Reply::Created(Box::new(rt.new_session(NewSession {
                workdir,
                ..NewSession::default()
            })?))
        }
        Request::Export { id, dir } => {
            let doc = rt.export(&id)?;
            let short: String = id.chars().take(8).collect();
            let path = dir.join(format!("{short}.json"));
            let mut text = serde_json::to_string_pretty(&doc)?;
            text.push('\n');
            write_new(&path, text.as_bytes())?;
            Reply::Wrote(path)
        }
        Request::SaveAsset { id, asset_id, dir } => {
            let (meta, bytes) = rt.asset_bytes(&id, &asset_id)?;
            let path = dir.join(format!("{}.{}", meta.id, extension(&meta.mime_type)));
            write_new(&path, &bytes)?;
            Reply::Wrote(path)
        }
        Request::Append { id, text } => {
            let seqs = rt.append(
                &id,
                &[NewMessage::text(Role::User, text)],
                &AppendMeta::default(),
            )?;
            Reply::Appended {
                id,
                seq: seqs.last().copied().unwrap_or(0),
            }
        }
    })
}

/// Writes a file, refusing to overwrite an existing one.
fn write_new(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    f.write_all(bytes)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    Ok(())
}

fn extension(mime: &str) -> &'static str {
    match mime {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "application/json" => "json",
        "text/plain" => "txt",
        _ => "bin",
    }
}

/// The background worker. Dropping it closes the queue and joins the thread.
pub struct Worker {
    tx: Option<Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    /// Starts the thread; every answer is handed to `deliver`.
    pub fn spawn(rt: Sessions, deliver: impl Fn(Done) + Send + 'static) -> Worker {
        let (tx, rx) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("neocode-store".into())
            .spawn(move || worker_loop(rt, rx, deliver))
            .expect("spawning the storage thread");
        Worker {
            tx: Some(tx),
            thread: Some(thread),
        }
    }

    /// Queues a job.
    pub fn send(&self, job: Job) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(job);
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.tx.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn worker_loop(rt: Sessions, rx: Receiver<Job>, deliver: impl Fn(Done)) {
    let mut queue: VecDeque<Job> = VecDeque::new();
    loop {
        if queue.is_empty() {
            match rx.recv() {
                Ok(j) => queue.push_back(j),
                Err(_) => return,
            }
        }
        // Drain what is queued and keep only the newest of each replaceable kind.
        while let Ok(j) = rx.try_recv() {
            if let Some(kind) = j.request.replaceable() {
                queue.retain(|q| q.request.replaceable() != Some(kind));
            }
            queue.push_back(j);
        }
        if let Some(job) = queue.pop_front() {
            let result = handle(&rt, job.request);
            deliver(Done {
                token: job.token,
                result,
            });
        }
    }
}
