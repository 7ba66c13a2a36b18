//! The session document's types: what a `neocode-session` file holds, field by field,
//! with the error naming the JSON path of a problem.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::session::model::*;
use crate::session::plan::{Plan, Step, StepFailure, StepStatus};
use crate::session::snapshot::FileChangeRow;

/// The `format` field's value.
pub(crate) const FORMAT: &str = "neocode-session";
/// The version this binary writes.
pub(crate) const VERSION: u32 = 2;
/// The oldest version this binary reads.
pub(crate) const MIN_VERSION: u32 = 1;

/// The whole document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionFile {
    /// Always `neocode-session`.
    pub format: String,
    /// Format version.
    pub version: u32,
    /// The header.
    pub session: FileSession,
    /// Messages by seq.
    pub messages: Vec<FileMessage>,
    /// Assets, inline.
    #[serde(default)]
    pub assets: Vec<FileAsset>,
}

/// The header part of a session file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileSession {
    pub id: String,
    pub title: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
    #[serde(default)]
    pub provider: String,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub workdir: String,
    pub status: Status,
    /// Parent id for forks, kept as written even when that session is not in the workspace.
    #[serde(default)]
    pub parent_id: Option<String>,
    /// The session this one ran as a sub-agent of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent_of: Option<String>,
    /// Where an imported session came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SessionSource>,
    /// Fork point in the parent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_seq: Option<i64>,
    /// The git branch the session started on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The `[providers.NAME]` profile its last turn ran with (never a key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_key: Option<String>,
    /// Plan with per-step progress.
    #[serde(default)]
    pub plan: Option<FilePlan>,
    /// Token totals.
    #[serde(default)]
    pub tokens: FileTokens,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_state: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub todos: Option<Value>,
    /// Activated skills.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ledger: Option<RuntimeLedger>,
    /// Highest seq (may exceed the last message after compaction or fork).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_seq: Option<i64>,
}

/// Token totals in a session file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FileTokens {
    #[serde(default)]
    pub input: u64,
    #[serde(default)]
    pub output: u64,
    /// Cached-input tokens of the messages (derived from them; informative).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input: u64,
    /// Cache-write tokens of the messages (derived; informative).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write: u64,
    /// Reasoning tokens of the messages (derived; informative).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning: u64,
}

/// Token usage of one message in a session file. Its fields are the file format's own, each
/// declared here rather than flattened from [`TokenDetail`], so a bad value in a file is
/// named by its whole path (`$.messages[3].usage.reasoning_tokens`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FileUsage {
    /// Prompt tokens (not counting cached ones).
    #[serde(default)]
    pub input_tokens: u64,
    /// Completion tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// Prompt tokens read from cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input_tokens: u64,
    /// Prompt tokens written to cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    /// The reasoning part of the completion tokens.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
}

/// A plan with step progress.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FilePlan {
    pub steps: Vec<FileStep>,
}

/// One step with its progress.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileStep {
    pub id: String,
    pub title: String,
    /// Dependencies.
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// Merged status.
    #[serde(default)]
    pub status: StepStatus,
    /// Result of a completed step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Failure of a failed step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<StepFailure>,
}

/// One message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileMessage {
    pub seq: i64,
    pub role: Role,
    pub parts: Vec<Part>,
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// Answered call.
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// Error flag.
    #[serde(default)]
    pub is_error: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_metadata: Option<Value>,
    /// RFC 3339.
    pub created_at: String,
    #[serde(default)]
    pub usage: FileUsage,
    /// Written by the harness, not the person.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub injected: bool,
    /// Provenance metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

impl FileMessage {
    /// The message's usage and extra fields in the store's shape.
    pub(crate) fn split_usage(&self) -> (Usage, MessageExtra) {
        (
            Usage {
                input_tokens: self.usage.input_tokens,
                output_tokens: self.usage.output_tokens,
            },
            MessageExtra {
                tokens: TokenDetail {
                    cached_input_tokens: self.usage.cached_input_tokens,
                    cache_write_tokens: self.usage.cache_write_tokens,
                    reasoning_tokens: self.usage.reasoning_tokens,
                },
                injected: self.injected,
                metadata: self.metadata.clone(),
            },
        )
    }
}

/// A file usage from the store's usage and extras.
pub(crate) fn file_usage(u: &Usage, x: &MessageExtra) -> FileUsage {
    FileUsage {
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
        cached_input_tokens: x.tokens.cached_input_tokens,
        cache_write_tokens: x.tokens.cache_write_tokens,
        reasoning_tokens: x.tokens.reasoning_tokens,
    }
}

/// One asset, inline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileAsset {
    pub id: String,
    pub mime_type: String,
    /// RFC 3339.
    pub created_at: String,
    /// Bytes, standard base64.
    pub data_base64: String,
}

/// A rejected session file: the JSON path of the first problem and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct FileError {
    /// JSON path, e.g. `$.messages[3].role`.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

pub(super) fn ferr(path: impl Into<String>, message: impl Into<String>) -> FileError {
    FileError {
        path: path.into(),
        message: message.into(),
    }
}

pub(super) fn to_plan(p: &FilePlan) -> Plan {
    Plan {
        steps: p
            .steps
            .iter()
            .map(|s| Step {
                id: s.id.clone(),
                title: s.title.clone(),
                depends_on: s.depends_on.clone(),
            })
            .collect(),
    }
}

/// The file snapshots of a session file (empty: it was exported without `--with-files`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSnapshots {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub file_changes: Vec<FileChangeRow>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blobs: Vec<FileBlob>,
}

/// One snapshot: a file's bytes, named by their SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileBlob {
    /// Lower-case hex SHA-256 of the bytes.
    pub hash: String,
    pub data_base64: String,
}
