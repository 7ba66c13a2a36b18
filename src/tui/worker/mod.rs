//! A background thread that owns a [`Sessions`] clone and runs storage work off the render
//! loop. Requests carry a token; the caller keeps the token of the request it still cares
//! about and drops answers whose token is no longer current.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;

use crate::runtime::Sessions;
use crate::runtime::extensions::project_context::header_report;
use crate::session::{ListQuery, QueuedMessage};
use crate::tui::filter::FilterState;

mod request;
pub use request::{Done, Job, Reply, Request};

/// Messages read per query when collecting per-turn usage.
const USAGE_BATCH: i64 = 2048;
/// Entries of the editor's ↑ history read from the store.
const HISTORY: usize = 200;

/// Runs one request synchronously (tests and headless runs; nothing is kept between calls).
pub fn handle(sessions: &Sessions, request: Request) -> Result<Reply, crate::tui::error::Failure> {
    run(sessions, &mut FilterState::default(), &|| false, request)
        .map_err(|e| crate::tui::error::Failure::new(e.to_string()))
}

/// Runs one request. `filter` is the filter's state kept between requests; `stale` tells a
/// running filter that a newer one is queued.
fn run(
    sessions: &Sessions,
    filter: &mut FilterState,
    stale: &(dyn Fn() -> bool + Sync),
    request: Request,
) -> anyhow::Result<Reply> {
    if matches!(
        request,
        Request::Fork { .. }
            | Request::Delete { .. }
            | Request::Rename { .. }
            | Request::Rewind { .. }
    ) {
        // A write through this connection: `data_version` does not see it.
        filter.invalidate();
    }
    Ok(match request {
        Request::FilterClosed => {
            filter.invalidate();
            Reply::Filter {
                text: String::new(),
                result: None,
            }
        }
        Request::Filter { text } => {
            let result = filter.run(sessions, &text, stale)?;
            Reply::Filter { text, result }
        }
        Request::Files => files(sessions),
        Request::RankFiles { files, query } => {
            let matches = crate::tui::rank::rank_with(&files, &query, filter.picker());
            Reply::Ranked { query, matches }
        }
        r @ (Request::Poll
        | Request::List { .. }
        | Request::ListAt { .. }
        | Request::Detail { .. }
        | Request::Messages { .. }
        | Request::History { .. }
        | Request::Usage { .. }
        | Request::Search { .. }
        | Request::Find { .. }) => read_request(sessions, r)?,
        r @ (Request::Fork { .. }
        | Request::Delete { .. }
        | Request::Rename { .. }
        | Request::Export { .. }
        | Request::SaveAsset { .. }
        | Request::Enqueue { .. }
        | Request::Unqueue { .. }
        | Request::MarkInterrupted { .. }) => write_request(sessions, r)?,
        r @ (Request::UndoTurn { .. }
        | Request::RewindPreview { .. }
        | Request::Rewind { .. }
        | Request::FileChanges { .. }) => rewind_request(sessions, r)?,
    })
}

/// The reads: the change counter, list pages, a session's detail, messages, history and
/// usage, the searches.
fn read_request(sessions: &Sessions, request: Request) -> anyhow::Result<Reply> {
    Ok(match request {
        Request::Poll => Reply::Version(sessions.data_version()?),
        Request::List { query, count } => list_page(sessions, query, count)?,
        Request::ListAt { id, limit } => list_at(sessions, id, limit)?,
        Request::Detail { id } => detail(sessions, id)?,
        Request::Messages { id, from, to } => {
            let messages = sessions.messages(&id, from, to)?;
            Reply::Messages {
                id,
                from,
                to,
                messages,
            }
        }
        Request::History { id } => {
            Reply::History(sessions.recent_user_texts(id.as_deref(), HISTORY)?)
        }
        Request::Usage { id } => usage(sessions, id)?,
        Request::Search { query, limit } => {
            let found = sessions.search_counted(&query, limit)?;
            Reply::Search {
                query,
                found: Box::new(found),
            }
        }
        Request::Find { id, query, limit } => {
            let (seqs, more) = sessions.search_session(&id, &query, limit)?;
            Reply::Found {
                id,
                query,
                seqs,
                more,
            }
        }
        other => anyhow::bail!("not a read request: {other:?}"),
    })
}

/// The one-call intents: fork, delete, rename, a new session, exports, the queue, appends
/// and marking interrupted calls.
fn write_request(sessions: &Sessions, request: Request) -> anyhow::Result<Reply> {
    Ok(match request {
        Request::Fork { id, at } => Reply::Forked(Box::new(sessions.fork(&id, at)?)),
        Request::Delete { id } => {
            sessions.delete(&id)?;
            Reply::Deleted(id)
        }
        Request::Rename { id, title } => {
            sessions.rename(&id, &title)?;
            Reply::Renamed { id, title }
        }
        Request::Export { id, dir, markdown } => export(sessions, id, dir, markdown)?,
        Request::SaveAsset { id, asset_id, dir } => save_asset(sessions, id, asset_id, dir)?,
        Request::Enqueue { id, text, steer } => {
            sessions.enqueue(&id, &text, steer)?;
            queue_read(sessions, id, None)?
        }
        Request::Unqueue { id, qid } => unqueue(sessions, id, qid)?,
        Request::MarkInterrupted { id, calls } => {
            let seq = sessions.mark_interrupted(&id, calls)?;
            Reply::Appended { id, seq }
        }
        other => anyhow::bail!("not a write request: {other:?}"),
    })
}

/// The requests of rewind (issue 26): `/undo`, the rewind dialog, the Info tab's changes.
fn rewind_request(sessions: &Sessions, request: Request) -> anyhow::Result<Reply> {
    use crate::tui::rewind;
    Ok(match request {
        Request::UndoTurn { id } => Reply::Undone(rewind::undo_turn(sessions, &id)?),
        Request::RewindPreview { id, at } => {
            Reply::RewindPreview(Box::new(rewind::preview(sessions, &id, at)?))
        }
        Request::Rewind { id, seq, scope } => {
            Reply::Rewound(Box::new(rewind::apply(sessions, &id, seq, scope)?))
        }
        Request::FileChanges { id } => {
            let last = sessions.header(&id)?.last_seq;
            let turns = crate::runtime::rewind::turn_changes(sessions, &id, last)?;
            Reply::FileChanges { id, turns }
        }
        other => anyhow::bail!("not a rewind request: {other:?}"),
    })
}

/// The session's queue after an `Enqueue` (`taken`: `None`) or an `Unqueue`.
fn queue_read(
    sessions: &Sessions,
    id: String,
    taken: Option<Option<QueuedMessage>>,
) -> anyhow::Result<Reply> {
    Ok(Reply::Queue {
        queued: sessions.queued(&id)?,
        id,
        unqueue: taken.is_some(),
        taken: taken.flatten(),
    })
}

/// `Unqueue`: the waiting message `qid` taken out of the queue (`None` when it no longer
/// waited).
fn unqueue(sessions: &Sessions, id: String, qid: i64) -> anyhow::Result<Reply> {
    let waiting = sessions.queued(&id)?.into_iter().find(|q| q.id == qid);
    let taken = match waiting {
        Some(q) if sessions.remove_queued(&id, qid)? => Some(q),
        _ => None,
    };
    queue_read(sessions, id, Some(taken))
}

/// A page of the list (and the count, when asked).
fn list_page(sessions: &Sessions, query: ListQuery, count: bool) -> anyhow::Result<Reply> {
    let continued = query.after.is_some();
    let page = sessions.list(&query)?;
    let count = if count { Some(sessions.count()?) } else { None };
    Ok(Reply::List {
        page,
        count,
        continued,
        base: None,
    })
}

/// A page of the list starting at a session (a search jump, a resume).
fn list_at(sessions: &Sessions, id: String, limit: usize) -> anyhow::Result<Reply> {
    let Some((key, base)) = sessions.locate(&id)? else {
        anyhow::bail!(
            "session {} no longer exists",
            crate::format::short_id(&id, 8)
        );
    };
    let mut page = sessions.list(&ListQuery {
        limit,
        after: Some(key.clone()),
        ..ListQuery::default()
    })?;
    // Re-reading this window starts at the session again.
    page.above = (base > 0).then_some(key);
    Ok(Reply::List {
        page,
        count: Some(sessions.count()?),
        continued: false,
        base: Some(base),
    })
}

/// The open session: header, progress, assets, the calls left without a result, step conversations.
fn detail(sessions: &Sessions, id: String) -> anyhow::Result<Reply> {
    let o = sessions.open_session(&id)?;
    let steps = if o.header.plan.is_some() {
        sessions.step_conversations(&id)?
    } else {
        Vec::new()
    };
    let skills = crate::runtime::trust::Admission::check(sessions.home(), sessions.root())
        .skills(sessions.home());
    let context = header_report(
        sessions.home(),
        sessions.root(),
        o.header.skills.as_ref(),
        skills,
    );
    Ok(Reply::Detail {
        header: Box::new(o.header),
        progress: o.progress,
        assets: o.assets,
        interrupted: o.interrupted,
        steps,
        context: Box::new(context),
        queued: sessions.queued(&id)?,
    })
}

/// Per-turn usage of a session.
fn usage(sessions: &Sessions, id: String) -> anyhow::Result<Reply> {
    let last = sessions.header(&id)?.last_seq;
    let mut turns = Vec::new();
    let mut from = 1;
    // In batches: memory stays bounded on a 100,000-message session.
    while from <= last {
        let to = from + USAGE_BATCH - 1;
        for m in sessions.messages(&id, from, to)? {
            if m.usage.input_tokens + m.usage.output_tokens > 0 {
                turns.push((m.seq, m.usage));
            }
        }
        from = to + 1;
    }
    Ok(Reply::Usage { id, turns })
}

/// A session exported into `dir`: the session file as JSON, or the markdown transcript.
fn export(sessions: &Sessions, id: String, dir: PathBuf, markdown: bool) -> anyhow::Result<Reply> {
    let doc = sessions.export(&id)?;
    let short = crate::format::short_id(&id, 8);
    let (path, mut text) = if markdown {
        let text = crate::runtime::export_md::markdown(&doc);
        (dir.join(format!("{short}.md")), text)
    } else {
        let text = serde_json::to_string_pretty(&doc)?;
        (dir.join(format!("{short}.json")), text)
    };
    text.push('\n');
    write_new(&path, text.as_bytes())?;
    Ok(Reply::Wrote(path))
}

/// An asset written into `dir`.
fn save_asset(
    sessions: &Sessions,
    id: String,
    asset_id: String,
    dir: PathBuf,
) -> anyhow::Result<Reply> {
    let (meta, bytes) = sessions.asset_bytes(&id, &asset_id)?;
    let path = dir.join(format!("{}.{}", meta.id, extension(&meta.mime_type)));
    write_new(&path, &bytes)?;
    Ok(Reply::Wrote(path))
}

/// The workspace files for `@path` completion.
fn files(sessions: &Sessions) -> Reply {
    let root = sessions.root().to_path_buf();
    let mut files = Vec::new();
    for e in ignore::WalkBuilder::new(&root).build().flatten() {
        if files.len() >= MAX_FILES {
            break;
        }
        if e.file_type().is_some_and(|t| t.is_file())
            && let Ok(rel) = e.path().strip_prefix(&root)
        {
            files.push(rel.to_string_lossy().into_owned());
        }
    }
    files.sort();
    Reply::Files(files)
}

/// Most workspace files listed for `@path` completion.
const MAX_FILES: usize = 250_000;

pub(crate) use crate::runtime::agent::images::image_mime;

/// Writes a file, refusing to overwrite an existing one.
fn write_new(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    let shown = crate::sanitize::line(&path.to_string_lossy()).into_owned();
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => {
                anyhow::anyhow!("file exists: {shown}; move or rename it, then export again")
            }
            _ => anyhow::anyhow!("cannot write {shown}: {}", crate::format::io_error(&e)),
        })?;
    f.write_all(bytes)
        .map_err(|e| anyhow::anyhow!("cannot write {shown}: {}", crate::format::io_error(&e)))?;
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
    /// Filter requests sent so far: a running filter stops when this moves on.
    filters: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    /// Starts the thread; every answer is handed to `deliver`.
    pub fn spawn(
        sessions: Sessions,
        deliver: impl Fn(Done) + Send + 'static,
    ) -> std::io::Result<Worker> {
        let (tx, rx) = mpsc::channel::<Job>();
        let filters = Arc::new(AtomicU64::new(0));
        let sent = filters.clone();
        let thread = std::thread::Builder::new()
            .name("neocode-store".into())
            .spawn(move || worker_loop(sessions, rx, &sent, deliver))?;
        Ok(Worker {
            tx: Some(tx),
            filters,
            thread: Some(thread),
        })
    }

    /// Queues a job.
    pub fn send(&self, job: Job) {
        if let Some(tx) = &self.tx {
            if matches!(job.request, Request::Filter { .. } | Request::FilterClosed) {
                self.filters.fetch_add(1, Ordering::SeqCst);
            }
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

fn worker_loop(sessions: Sessions, rx: Receiver<Job>, filters: &AtomicU64, deliver: impl Fn(Done)) {
    let mut queue: VecDeque<Job> = VecDeque::new();
    let mut filter = FilterState::default();
    loop {
        if queue.is_empty() {
            match rx.recv() {
                Ok(j) => queue.push_back(j),
                Err(_) => return,
            }
        }
        while let Ok(j) = rx.try_recv() {
            enqueue(&mut queue, j);
        }
        if let Some(job) = queue.pop_front() {
            let at = filters.load(Ordering::SeqCst);
            let stale = || filters.load(Ordering::SeqCst) != at;
            let result = run(&sessions, &mut filter, &stale, job.request)
                .map_err(|e| crate::tui::error::Failure::new(e.to_string()));
            deliver(Done {
                token: job.token,
                result,
            });
        }
    }
}

/// Queues a job behind the others, dropping queued reads of the same replaceable kind: only
/// the newest of those is worth running (its answer is the only one the app still wants).
/// Writes are never dropped and keep their order.
pub(crate) fn enqueue(queue: &mut VecDeque<Job>, job: Job) {
    if let Some(kind) = job.request.replaceable() {
        queue.retain(|q| q.request.replaceable() != Some(kind));
    }
    queue.push_back(job);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(token: u64, request: Request) -> Job {
        Job { token, request }
    }

    fn detail(id: &str) -> Request {
        Request::Detail { id: id.into() }
    }

    fn rename(id: &str) -> Request {
        Request::Rename {
            id: id.into(),
            title: "t".into(),
        }
    }

    #[test]
    fn queued_reads_of_a_kind_collapse_to_the_newest_and_writes_never_do() {
        let mut q = VecDeque::new();
        for j in [
            job(1, detail("a")),
            job(2, rename("a")),
            job(3, Request::Poll),
            job(4, detail("b")),
            job(5, rename("b")),
            job(6, Request::Poll),
            job(
                7,
                Request::List {
                    query: ListQuery::default(),
                    count: true,
                },
            ),
            job(
                8,
                Request::List {
                    query: ListQuery::default(),
                    count: false,
                },
            ),
            job(
                9,
                Request::Search {
                    query: "x".into(),
                    limit: 1,
                },
            ),
            job(10, detail("c")),
        ] {
            enqueue(&mut q, j);
        }
        let tokens: Vec<u64> = q.iter().map(|j| j.token).collect();
        // Detail a and b and the first poll are superseded; both renames and both list
        // loads (pages are not interchangeable) stay, in order.
        assert_eq!(tokens, [2, 5, 6, 7, 8, 9, 10]);
        assert_eq!(q.back().unwrap().request, detail("c"));
    }
}
