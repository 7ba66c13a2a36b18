//! What the storage worker is asked ([`Request`]) and answers ([`Reply`]), with their tokens.

use std::path::PathBuf;

use crate::runtime::extensions::project_context::ContextReport;
use crate::session::{
    AssetMeta, ListPage, ListQuery, Message, PlanProgress, QueuedMessage, SearchResults,
    SessionHeader, StepConversation, ToolCall, Usage,
};
use crate::tui::filter::FilterResult;

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
    /// A page of the list starting at a session (a jump to one outside the loaded window),
    /// with the total count.
    ListAt {
        /// The session.
        id: String,
        /// Rows.
        limit: usize,
    },
    /// Header, merged plan progress, assets and interrupted tool calls of one session, read
    /// in one transaction.
    Detail { id: String },
    /// Messages `from..=to` of a session.
    Messages { id: String, from: i64, to: i64 },
    /// Per-turn usage of a session (the usage of every message that carries some).
    Usage { id: String },
    /// The editor's ↑ history: what was typed recently, that session's first.
    History { id: Option<String> },
    /// The list filter: the best fuzzy matches of every session's title and first prompt
    /// (see [`crate::tui::filter`]).
    Filter {
        /// The filter text as typed.
        text: String,
    },
    /// The filter closed: the text kept for it is let go (memory at 100,000 sessions).
    FilterClosed,
    /// Full-text search across the workspace.
    Search {
        /// The query as typed.
        query: String,
        limit: usize,
    },
    /// Transcript search in one session: the seqs of its messages matching `query`.
    Find {
        id: String,
        /// The query as typed.
        query: String,
        limit: usize,
    },
    /// Fork a session at a seq (default: the end).
    Fork {
        id: String,
        /// Fork point.
        at: Option<i64>,
    },
    /// Delete a session and its assets.
    Delete { id: String },
    /// Rename a session.
    Rename { id: String, title: String },
    /// Write `<short-id>.json` (the session file) into `dir`, or `<short-id>.md` (the readable
    /// markdown transcript) when `markdown` is set.
    Export {
        id: String,
        /// Target folder.
        dir: PathBuf,
        markdown: bool,
    },
    /// Write an asset's bytes to a file in `dir`.
    SaveAsset {
        id: String,
        asset_id: String,
        /// Target folder.
        dir: PathBuf,
    },
    /// The workspace's files (relative paths, `.gitignore` respected), for `@path`
    /// completion.
    Files,
    /// The `@` picker's best files for `query` among `files` (ranked here, so a key never
    /// waits for it).
    RankFiles {
        files: std::sync::Arc<Vec<String>>,
        query: String,
    },
    /// Queue a message for the session (typed while a turn runs; `steer`: Alt-Enter, for the
    /// running turn's next tool boundary).
    Enqueue {
        id: String,
        text: String,
        steer: bool,
    },
    /// Take a waiting message out of the session's queue (to edit it in the editor).
    Unqueue { id: String, qid: i64 },
    /// Answer tool calls a stopped session left without a result as "not run" (the user's
    /// "mark interrupted" on resume), so the transcript is whole and nothing replays.
    MarkInterrupted {
        id: String,
        /// The calls' ids.
        calls: Vec<String>,
    },
    /// `/undo`: put back the files the session's last turn changed.
    UndoTurn { id: String },
    /// What a rewind from message `at` (else the last) would do: the rewind dialog opens on it.
    RewindPreview { id: String, at: Option<i64> },
    /// The rewind dialog's Enter: back to the user message `seq`.
    Rewind {
        id: String,
        seq: i64,
        scope: crate::runtime::rewind::Scope,
    },
    /// The session's file changes by turn (the Info tab).
    FileChanges { id: String },
}

/// A kind of read whose queued copies collapse to the newest (see [`Request::replaceable`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ReadKind {
    Detail,
    Usage,
    Search,
    /// Transcript search in the open session.
    Find,
    Poll,
    /// The list filter's matches (and closing the filter).
    Filter,
    /// The editor's prompt history.
    History,
    /// The `@` picker's ranking.
    RankFiles,
}

impl Request {
    /// Read requests whose older queued copies are worthless once a newer one of the same kind
    /// is queued (the latest selection wins). Writes are never collapsed.
    pub(super) fn replaceable(&self) -> Option<ReadKind> {
        match self {
            Request::Detail { .. } => Some(ReadKind::Detail),
            Request::Usage { .. } => Some(ReadKind::Usage),
            Request::Search { .. } => Some(ReadKind::Search),
            Request::Find { .. } => Some(ReadKind::Find),
            Request::Poll => Some(ReadKind::Poll),
            Request::History { .. } => Some(ReadKind::History),
            Request::RankFiles { .. } => Some(ReadKind::RankFiles),
            Request::Filter { .. } | Request::FilterClosed => Some(ReadKind::Filter),
            Request::List { .. }
            | Request::ListAt { .. }
            | Request::Messages { .. }
            | Request::Fork { .. }
            | Request::Delete { .. }
            | Request::Rename { .. }
            | Request::Export { .. }
            | Request::SaveAsset { .. }
            | Request::MarkInterrupted { .. }
            | Request::Enqueue { .. }
            | Request::Unqueue { .. }
            | Request::UndoTurn { .. }
            | Request::RewindPreview { .. }
            | Request::Rewind { .. }
            | Request::FileChanges { .. }
            | Request::Files => None,
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
        page: ListPage,
        /// Total sessions.
        count: Option<u64>,
        /// Whether this page continued an earlier one.
        continued: bool,
        /// Sessions above the page's first row, when the request started at a session.
        base: Option<u64>,
    },
    /// One session's detail.
    Detail {
        header: Box<SessionHeader>,
        /// Merged plan progress.
        progress: PlanProgress,
        assets: Vec<AssetMeta>,
        /// Tool calls left without a result when the session stopped.
        interrupted: Vec<ToolCall>,
        /// The step conversations of a plan run (oldest attempt first).
        steps: Vec<StepConversation>,
        /// Instruction files, skills and MCP servers its turns take in.
        context: Box<ContextReport>,
        /// Messages waiting in its queue, oldest first.
        queued: Vec<QueuedMessage>,
    },
    /// A window of messages.
    Messages {
        id: String,
        /// Asked range start.
        from: i64,
        /// Asked range end.
        to: i64,
        /// The messages found.
        messages: Vec<Message>,
    },
    /// The editor's history, newest first.
    History(Vec<String>),
    /// Per-turn usage, in seq order.
    Usage {
        id: String,
        /// (seq, usage) of each message with usage.
        turns: Vec<(i64, Usage)>,
    },
    /// The list filter's matches.
    Filter {
        /// The filter text answered.
        text: String,
        /// Best matches and the count of all; `None` when a newer text stopped the matching.
        result: Option<FilterResult>,
    },
    /// Search hits.
    Search {
        /// The query answered.
        query: String,
        /// Hits, best first, how many matched and how the last word was completed.
        found: Box<SearchResults>,
    },
    /// The open session's messages matching a transcript search.
    Found {
        id: String,
        /// The query answered.
        query: String,
        /// Matching seqs, in order.
        seqs: Vec<i64>,
        /// More matched than were returned.
        more: bool,
    },
    /// A fork was created.
    Forked(Box<SessionHeader>),
    /// A session was deleted.
    Deleted(String),
    /// A session was renamed.
    Renamed { id: String, title: String },
    /// A file was written.
    Wrote(PathBuf),
    /// A message was appended.
    Appended { id: String, seq: i64 },
    /// Workspace files, sorted.
    Files(Vec<String>),
    /// The `@` picker's matches for `query`, best first.
    Ranked { query: String, matches: Vec<String> },
    /// A session's queue after a change: what still waits, oldest first, and the message
    /// taken out (`Unqueue`; `None` when it no longer waited).
    Queue {
        id: String,
        queued: Vec<QueuedMessage>,
        taken: Option<QueuedMessage>,
        /// The answer to an `Unqueue`.
        unqueue: bool,
    },
    /// `/undo` ran: what it did, one line for the conversation (already sanitised).
    Undone(String),
    /// What a rewind would do (the dialog opens on it).
    RewindPreview(Box<crate::tui::rewind::Preview>),
    /// A rewind was done.
    Rewound(Box<crate::tui::rewind::Rewound>),
    /// A session's file changes by turn.
    FileChanges {
        id: String,
        turns: Vec<crate::runtime::rewind::TurnChanges>,
    },
}

/// A request with its token.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// Caller-chosen token, echoed in the answer.
    pub token: u64,
    pub request: Request,
}

/// The answer to a [`Job`].
#[derive(Debug, Clone, PartialEq)]
pub struct Done {
    /// The job's token.
    pub token: u64,
    /// The result, or a one-line user-facing error.
    pub result: Result<Reply, crate::tui::error::Failure>,
}
