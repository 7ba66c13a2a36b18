//! Domain types of a session: header, messages, parts, usage and runtime ledger.
//!
//! These are plain data; the store reads and writes them, the runtime and the views consume
//! them. Nothing here knows SQL.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::plan::{Plan, PlanProgress};

/// Lifecycle status of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Created, no turn has run yet.
    #[default]
    Created,
    /// A turn is running (or the process died while one was).
    Running,
    /// Waiting for the user (approval, external tool, budget).
    Paused,
    /// Finished successfully.
    Completed,
    /// Finished with a failure.
    Failed,
    /// Cancelled by the user.
    Cancelled,
}

impl Status {
    /// Every status, in display order.
    pub(crate) const ALL: [Status; 6] = [
        Status::Created,
        Status::Running,
        Status::Paused,
        Status::Completed,
        Status::Failed,
        Status::Cancelled,
    ];

    /// The lower-case name used in the database, JSON and the command line.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Status::Created => "created",
            Status::Running => "running",
            Status::Paused => "paused",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    /// Parses the lower-case name.
    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The person at the keyboard.
    User,
    /// The model.
    Assistant,
    /// A tool's result.
    Tool,
    /// System or developer instructions.
    System,
}

impl Role {
    /// The lower-case name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::System => "system",
        }
    }

    /// Parses the lower-case name.
    pub fn parse(s: &str) -> Option<Role> {
        [Role::User, Role::Assistant, Role::Tool, Role::System]
            .into_iter()
            .find(|r| r.as_str() == s)
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One piece of a message's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Part {
    /// Plain or markdown text.
    Text { text: String },
    /// An image stored as an asset of the same session.
    Image {
        /// Asset id within the session.
        asset_id: String,
        /// MIME type, e.g. `image/png`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
    /// A model's reasoning summary, shown dimmed.
    Reasoning {
        text: String,
        /// What the provider that produced it needs to have it sent back verbatim (a
        /// signature, encrypted content), with its provenance; `None`: text only (Chat
        /// Completions, imported sessions).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replay: Option<Box<ReasoningReplay>>,
    },
}

/// A reasoning part as its API returned it, so it can be replayed on the following requests
/// of the turn and after a resume (Anthropic requires the thinking blocks of a tool turn back,
/// the Responses API its encrypted reasoning items when nothing is stored server-side). Only
/// replayed to the same provider and model family it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasoningReplay {
    /// The provider that produced it (its `Provider::name`: `anthropic`, `openai-responses`).
    pub provider: String,
    /// The model that produced it.
    pub model: String,
    /// The item id (Responses `rs_...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The signature of an Anthropic thinking block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Opaque content: the Responses `encrypted_content`, the data of an Anthropic
    /// `redacted_thinking` block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted: Option<String>,
    /// An Anthropic `redacted_thinking` block (no readable text; `encrypted` is its data).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
}

impl Part {
    pub fn text(s: impl Into<String>) -> Part {
        Part::Text { text: s.into() }
    }

    /// A reasoning part of text only (nothing to replay).
    pub fn reasoning(s: impl Into<String>) -> Part {
        Part::Reasoning {
            text: s.into(),
            replay: None,
        }
    }
}

/// A tool invocation requested by the assistant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Id the matching tool result refers to.
    pub id: String,
    pub name: String,
    /// Arguments as a JSON string, exactly as the model produced them.
    pub arguments: String,
}

/// Token usage of one model call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
}

/// Token counts of one model call beyond [`Usage`], as some APIs report them: what a provider
/// returns and a message stores. Cached and written prompt tokens are counted apart from
/// `input_tokens`; reasoning tokens are part of `output_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenDetail {
    /// Prompt tokens read from the provider's cache.
    pub cached_input_tokens: u64,
    /// Prompt tokens written to the provider's cache.
    pub cache_write_tokens: u64,
    /// The part of `output_tokens` spent on reasoning.
    pub reasoning_tokens: u64,
}

impl std::iter::Sum for TokenDetail {
    fn sum<I: Iterator<Item = TokenDetail>>(iter: I) -> TokenDetail {
        iter.fold(TokenDetail::default(), |a, b| TokenDetail {
            cached_input_tokens: a.cached_input_tokens + b.cached_input_tokens,
            cache_write_tokens: a.cache_write_tokens + b.cache_write_tokens,
            reasoning_tokens: a.reasoning_tokens + b.reasoning_tokens,
        })
    }
}

/// What a message carries beyond role, parts and calls: the finer token counts of the model
/// call that produced it, whether the harness injected it, and provenance metadata (source
/// ids, stop reason, phase) of an imported message.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MessageExtra {
    /// The model call's cached, cache-write and reasoning tokens.
    pub tokens: TokenDetail,
    /// Written by the harness (reminders, hook output, environment context), not typed by
    /// the person; shown as such and not taken for the first prompt.
    pub injected: bool,
    /// Free-form provenance (source record ids, stop reason, phase), kept for a lossless
    /// export.
    pub metadata: Option<Value>,
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes the field by reference"
)]
pub(crate) fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Where an imported session came from. Native sessions have none.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SessionSource {
    /// The tool that wrote it: `claude-code` or `codex`.
    pub tool: String,
    /// That tool's version, as recorded in the transcript.
    #[serde(default)]
    pub version: String,
    /// The session's id in that tool.
    #[serde(default)]
    pub id: String,
    /// Size, mtime and hash of the file last read, so an unchanged file is skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stamp: Option<String>,
    /// Session-level records kept as they were (file path, policies, models used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

/// A message to append; the store assigns `seq`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NewMessage {
    /// Author.
    pub role: Option<Role>,
    pub parts: Vec<Part>,
    /// Tool calls requested (assistant messages).
    pub tool_calls: Vec<ToolCall>,
    /// For tool results: the call answered.
    pub tool_call_id: Option<String>,
    /// The message reports an error (failed tool, provider error).
    pub is_error: bool,
    /// Free-form tool metadata (exit code, duration, paths).
    pub tool_metadata: Option<Value>,
    /// Usage of the model call that produced this message.
    pub usage: Usage,
    /// Creation time in ms since the epoch; `None` means now.
    pub created_at_ms: Option<i64>,
    /// Finer usage, injected flag and metadata.
    pub extra: MessageExtra,
}

impl NewMessage {
    /// A message with one text part.
    pub fn text(role: Role, text: impl Into<String>) -> NewMessage {
        NewMessage {
            role: Some(role),
            parts: vec![Part::text(text)],
            ..NewMessage::default()
        }
    }

    /// A tool result answering `call_id`.
    pub fn tool_result(
        call_id: impl Into<String>,
        text: impl Into<String>,
        is_error: bool,
    ) -> NewMessage {
        NewMessage {
            role: Some(Role::Tool),
            parts: vec![Part::text(text)],
            tool_call_id: Some(call_id.into()),
            is_error,
            ..NewMessage::default()
        }
    }

    /// The role, defaulting to user.
    pub(crate) fn role(&self) -> Role {
        self.role.unwrap_or(Role::User)
    }
}

/// Marks (in `tool_metadata`) the system message a compaction stores: the summary the model is
/// sent in place of the messages before [`CONTEXT_FROM`].
pub const COMPACTION_MARK: &str = "compaction_summary";

/// The seq (in a compaction summary's `tool_metadata`) of the first message the compaction
/// kept verbatim: the model's context is the summary and the messages from there on. The
/// messages before it stay in the transcript (shown, searched, exported, rewound); only the
/// requests leave them out. A summary without it (written before neocode kept the whole
/// transcript) stands at the start of what it kept.
pub const CONTEXT_FROM: &str = "context_from";

/// The seq of the compaction summary (in the task state a compaction writes): a fork taken
/// before it does not carry that task state.
pub(crate) const TASK_SUMMARY_SEQ: &str = "summary_seq";

/// A stored message.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Position within the session, 1-based and contiguous.
    pub seq: i64,
    /// Author.
    pub role: Role,
    pub parts: Vec<Part>,
    /// Tool calls requested.
    pub tool_calls: Vec<ToolCall>,
    /// For tool results: the call answered.
    pub tool_call_id: Option<String>,
    /// The message reports an error.
    pub is_error: bool,
    /// Free-form tool metadata.
    pub tool_metadata: Option<Value>,
    /// Creation time, ms since the epoch.
    pub created_at_ms: i64,
    /// Usage of the model call that produced it.
    pub usage: Usage,
    /// Finer usage, injected flag and metadata.
    pub extra: MessageExtra,
}

impl Message {
    /// Whether it is the summary a compaction stored ([`COMPACTION_MARK`]).
    pub fn is_compaction(&self) -> bool {
        self.role == Role::System
            && self
                .tool_metadata
                .as_ref()
                .and_then(|v| v.get(COMPACTION_MARK))
                .is_some()
    }

    /// Where the model's context starts after the compaction this message is the summary of
    /// (see [`CONTEXT_FROM`]); `None` for any other message, and for a summary of the kind
    /// that replaced the transcript.
    pub fn context_from(&self) -> Option<i64> {
        if !self.is_compaction() {
            return None;
        }
        self.tool_metadata
            .as_ref()
            .and_then(|v| v.get(CONTEXT_FROM))
            .and_then(serde_json::Value::as_i64)
    }

    /// `new` as the store reads it back at `seq`, made at time 0 unless it says when (for
    /// tests).
    #[cfg(test)]
    pub(crate) fn stored(seq: i64, new: NewMessage) -> Message {
        Message {
            seq,
            role: new.role(),
            parts: new.parts,
            tool_calls: new.tool_calls,
            tool_call_id: new.tool_call_id,
            is_error: new.is_error,
            tool_metadata: new.tool_metadata,
            created_at_ms: new.created_at_ms.unwrap_or(0),
            usage: new.usage,
            extra: new.extra,
        }
    }

    /// All text parts joined by blank lines.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for p in &self.parts {
            if let Part::Text { text } = p {
                if !out.is_empty() {
                    out.push_str("\n\n");
                }
                out.push_str(text);
            }
        }
        out
    }
}

/// Budget limits of a session's runtime.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RuntimeLimits {
    /// Input token budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_input_tokens: Option<u64>,
    /// Output token budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    /// Tool call budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_calls: Option<u64>,
    /// Model turn budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u64>,
    /// Wall-clock budget in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_wall_secs: Option<u64>,
    /// Spending budget in dollars (counts the model calls that have a price).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
}

/// What a session's runtime has consumed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RuntimeUsage {
    /// Input tokens used.
    #[serde(default)]
    pub input_tokens: u64,
    /// Output tokens used.
    #[serde(default)]
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's cache, apart from `input_tokens`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input_tokens: u64,
    /// Prompt tokens written to the provider's cache, apart from `input_tokens`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    /// Tool calls made.
    #[serde(default)]
    pub tool_calls: u64,
    /// Model turns taken.
    #[serde(default)]
    pub turns: u64,
    /// Dollars spent on model calls with a price; `None` while no call had one (a model
    /// without a price shows tokens only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Time spent running turns, in ms (the wall-clock budget counts from `started_at_ms`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub wall_ms: u64,
}

/// The runtime ledger: restored on resume, never recreated (the seed's rule), so budgets
/// cannot be bypassed by restarting.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RuntimeLedger {
    /// Budget limits.
    #[serde(default)]
    pub limits: RuntimeLimits,
    /// Consumption so far.
    #[serde(default)]
    pub usage: RuntimeUsage,
    /// When the runtime first started, ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at_ms: Option<i64>,
    /// Wall-clock deadline, ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_at_ms: Option<i64>,
    /// When it was cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled_at_ms: Option<i64>,
    /// Why it stopped, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination: Option<String>,
    /// Tools the user allowed "always" for this session (seed 000 §3.4 extension state):
    /// they run without asking, also after a restart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approved_tools: Vec<String>,
}

/// A session header: everything about a session except its messages.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SessionHeader {
    /// UUID.
    pub id: String,
    /// Human title.
    pub title: String,
    /// Creation time, ms since the epoch.
    pub created_at_ms: i64,
    /// Last activity, ms since the epoch.
    pub updated_at_ms: i64,
    pub provider: String,
    pub model: String,
    /// Directory the last run used.
    pub workdir: String,
    /// Lifecycle status.
    pub status: Status,
    /// The session this one was forked from.
    pub parent_id: Option<String>,
    /// The parent's seq this fork was taken at.
    pub fork_seq: Option<i64>,
    /// SHA-256 of the first user message, for recovering a lost session id.
    pub conversation_key: Option<String>,
    /// Durable task summary used by compaction.
    pub task_state: Option<Value>,
    /// Structured todo list.
    pub todos: Option<Value>,
    /// Activated skills.
    pub skills: Option<Value>,
    /// Current plan (steps only; progress is in [`Session::plan_progress`]).
    pub plan: Option<Plan>,
    pub ledger: Option<RuntimeLedger>,
    /// Lifetime input tokens: the ledger's usage once neocode has run the session (kept equal
    /// to it by the store), else what its messages carry (an imported session). Compaction
    /// keeps it; a fork starts at 0.
    pub token_input_total: u64,
    /// Lifetime output tokens (as `token_input_total`).
    pub token_output_total: u64,
    /// Highest seq written.
    pub last_seq: i64,
    pub message_count: u64,
    /// The session this one runs as a sub-agent of (a link apart from forks).
    pub subagent_of: Option<String>,
    /// Where an imported session came from.
    pub source: Option<SessionSource>,
    /// The git branch its workdir was on when it was created (`None`: not a repository, a
    /// detached HEAD, or made before neocode recorded it).
    pub branch: Option<String>,
    /// The `[providers.NAME]` profile its last turn ran with (`None`: none, or made before
    /// neocode recorded it). Never a key.
    pub profile: Option<String>,
}

/// A whole session: header, plan progress and messages.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Session {
    pub header: SessionHeader,
    /// Merged step progress.
    pub plan_progress: PlanProgress,
    /// Messages by seq.
    pub messages: Vec<Message>,
}

/// Metadata of a stored asset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssetMeta {
    /// Asset id, `[A-Za-z0-9_-]`.
    pub id: String,
    /// Owning session.
    pub session_id: String,
    pub mime_type: String,
    pub size_bytes: u64,
    /// Path relative to the workspace folder.
    pub relative_path: String,
    /// Creation time, ms since the epoch.
    pub created_at_ms: i64,
}

/// One full-text search hit.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    /// Session of the matching message.
    pub session_id: String,
    /// Title of that session.
    pub session_title: String,
    /// Seq of the matching message.
    pub seq: i64,
    /// Role of the matching message.
    pub role: Role,
    /// Text around the match; matched terms wrapped in `[` `]` markers
    /// ([`SNIPPET_OPEN`], [`SNIPPET_CLOSE`]).
    pub snippet: String,
}

/// The `tool_metadata` key of an assistant message whose tool calls this store's runtime
/// received from the model (value `"model"`): the turn sets it, an import never keeps it. Only
/// such calls are replayed when a session stopped before their results; a call that came in
/// some other way (a bridge caller's history, an imported session file) is answered "not run".
pub(crate) const CALLS_FROM: &str = "calls_from";

/// Marks the start of a matched term in [`SearchHit::snippet`].
pub const SNIPPET_OPEN: char = '\u{E000}';
/// Marks the end of a matched term in [`SearchHit::snippet`].
pub const SNIPPET_CLOSE: char = '\u{E001}';

/// What a [`StateUpdate`] does to one optional header field.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Change<T> {
    /// Leave the field as it is.
    #[default]
    Keep,
    /// Empty the field.
    Clear,
    /// Store this value.
    Set(T),
}

impl<T> Change<T> {
    /// True for [`Change::Keep`].
    pub(crate) fn is_keep(&self) -> bool {
        matches!(self, Change::Keep)
    }
}

/// Header fields to change; `None` (or [`Change::Keep`]) leaves a field as it is.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StateUpdate {
    pub title: Option<String>,
    pub workdir: Option<String>,
    pub provider: Option<String>,
    pub model: Option<String>,
    /// The `[providers.NAME]` profile the session's turns run with (`/provider`).
    pub profile: Option<String>,
    pub status: Option<Status>,
    pub task_state: Change<Value>,
    pub todos: Change<Value>,
    pub skills: Change<Value>,
    /// New plan; step progress of steps no longer in the plan is dropped (all of it when
    /// the plan is cleared).
    pub plan: Change<Plan>,
    /// New ledger; setting one also sets the token totals to its lifetime usage (unless
    /// `token_totals` is given).
    pub ledger: Change<RuntimeLedger>,
    /// Overwrite token totals (input, output).
    pub token_totals: Option<(u64, u64)>,
    /// Touch `updated_at` (activity). Renames do not count as activity.
    pub touch: bool,
    /// Queued messages (ids) this write delivers: marked `delivered` in the same transaction
    /// as the messages appended with it, so a kill never leaves one delivered but not stored.
    /// The write fails ([`crate::session::StoreError::NotQueued`]) when one no longer waits.
    pub delivers: Vec<i64>,
}

/// What an append changes in the header besides the messages.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AppendMeta {
    /// Provider that produced the messages.
    pub provider: Option<String>,
    /// Model that produced the messages.
    pub model: Option<String>,
    /// Directory the run used.
    pub workdir: Option<String>,
    /// The `[providers.NAME]` profile the run used (`None`: keep the session's).
    pub profile: Option<String>,
}

/// What a transcript replacement (compaction) writes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Replacement {
    /// The new transcript, in order; seqs restart at 1.
    pub messages: Vec<NewMessage>,
    /// The durable summary carried forward.
    pub task_state: Option<Value>,
    /// Token totals after compaction: the lifetime usage, which compaction does not reset.
    pub token_totals: (u64, u64),
    /// Provider, model, workdir at compaction time.
    pub meta: AppendMeta,
}
