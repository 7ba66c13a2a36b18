//! The session file: one session as a single JSON document (format `neocode-session`,
//! version 2; version 1 is still read), lossless both ways, with validation naming the JSON
//! path of the first problem.
//!
//! Version 2 adds what imported history needs: cached-input, cache-write and reasoning token
//! counts, an `injected` flag and a `metadata` object per message, and per session the
//! sub-agent link (apart from the fork link) and the `source` it was imported from. A
//! version 1 file is a version 2 file without them.

mod files;

pub use files::{
    FileBlob, FileSnapshots, WithFiles, export_files, import_owned, import_with_files, parse_files,
};

use std::collections::HashSet;

use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::{Result as StoreResult, StoreError};
use super::model::*;
use super::plan::{Plan, PlanProgress, Step, StepFailure, StepStatus};
use super::store::{Prepared, Store, validate_id};

/// The `format` field's value.
pub const FORMAT: &str = "neocode-session";
/// The version this binary writes.
pub const VERSION: u32 = 2;
/// The oldest version this binary reads.
pub const MIN_VERSION: u32 = 1;

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

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Token usage of one message in a session file.
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
    pub fn split_usage(&self) -> (Usage, MessageExtra) {
        (
            Usage {
                input_tokens: self.usage.input_tokens,
                output_tokens: self.usage.output_tokens,
            },
            MessageExtra {
                cached_input_tokens: self.usage.cached_input_tokens,
                cache_write_tokens: self.usage.cache_write_tokens,
                reasoning_tokens: self.usage.reasoning_tokens,
                injected: self.injected,
                metadata: self.metadata.clone(),
            },
        )
    }
}

/// A file usage from the store's usage and extras.
pub fn file_usage(u: &Usage, x: &MessageExtra) -> FileUsage {
    FileUsage {
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
        cached_input_tokens: x.cached_input_tokens,
        cache_write_tokens: x.cache_write_tokens,
        reasoning_tokens: x.reasoning_tokens,
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

fn ferr(path: impl Into<String>, message: impl Into<String>) -> FileError {
    FileError {
        path: path.into(),
        message: message.into(),
    }
}

/// Formats ms since the epoch as RFC 3339 (UTC, milliseconds).
pub fn rfc3339(ms: i64) -> String {
    // Years 1970–9999 by arithmetic (a list of 100,000 sessions formats 200,000 of these);
    // anything else as chrono writes it.
    const MAX_MS: i64 = 253_402_300_799_999; // 9999-12-31T23:59:59.999Z
    if !(0..=MAX_MS).contains(&ms) {
        return chrono::DateTime::from_timestamp_millis(ms)
            .unwrap_or_default()
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    }
    let (days, rem) = (ms / 86_400_000, ms % 86_400_000);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, sec, milli) = (
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1_000 % 60,
        rem % 1_000,
    );
    // Digits by hand: `format!` with padding cost more than the rest of a list row.
    let mut out = [0u8; 24];
    let mut put = |at: usize, width: usize, mut n: i64| {
        for i in (at..at + width).rev() {
            out[i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
    };
    put(0, 4, year);
    put(5, 2, month);
    put(8, 2, day);
    put(11, 2, h);
    put(14, 2, m);
    put(17, 2, sec);
    put(20, 3, milli);
    for (i, c) in [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'.'),
        (23, b'Z'),
    ] {
        out[i] = c;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_time(path: &str, s: &str) -> Result<i64, FileError> {
    chrono::DateTime::parse_from_rfc3339(s)
        .map(|d| d.timestamp_millis())
        .map_err(|e| {
            ferr(
                path,
                format!("not an RFC 3339 time ({e}): {:?}", truncate(s)),
            )
        })
}

fn truncate(s: &str) -> String {
    s.chars().take(60).collect()
}

/// A deserialisation error at its JSON path.
fn path_error(e: serde_path_to_error::Error<serde_json::Error>) -> FileError {
    // serde_path_to_error writes `.` for the root and `?` for a position it does not know
    // (e.g. text that is not JSON at all); neither is a JSON path.
    let p = e.path().to_string();
    let p = p.trim_end_matches('?').trim_end_matches('.');
    let path = if p.is_empty() {
        "$".to_string()
    } else {
        format!("$.{p}")
    };
    ferr(path, e.inner().to_string())
}

/// Parses and validates a document. Nothing is written.
pub fn parse(text: &str) -> Result<SessionFile, FileError> {
    let de = &mut serde_json::Deserializer::from_str(text);
    let doc: SessionFile = serde_path_to_error::deserialize(de).map_err(path_error)?;
    validate(&doc)?;
    Ok(doc)
}

/// A session file with its snapshots, as [`read`] takes it in.
#[derive(Deserialize)]
struct Whole {
    format: String,
    version: u32,
    session: FileSession,
    messages: Vec<FileMessage>,
    #[serde(default)]
    assets: Vec<FileAsset>,
    #[serde(default)]
    file_changes: Vec<crate::session::snapshot::FileChangeRow>,
    #[serde(default)]
    blobs: Vec<FileBlob>,
}

/// Parses and validates a session file and its snapshots (`export --with-files`) in one pass
/// over `reader`, never holding its text: what is kept is the document itself. Nothing is
/// written.
pub fn read(reader: impl std::io::Read) -> Result<(SessionFile, FileSnapshots), FileError> {
    let de = &mut serde_json::Deserializer::from_reader(reader);
    let w: Whole = serde_path_to_error::deserialize(de).map_err(path_error)?;
    let doc = SessionFile {
        format: w.format,
        version: w.version,
        session: w.session,
        messages: w.messages,
        assets: w.assets,
    };
    validate(&doc)?;
    Ok((
        doc,
        FileSnapshots {
            file_changes: w.file_changes,
            blobs: w.blobs,
        },
    ))
}

/// Semantic checks beyond the types.
pub fn validate(doc: &SessionFile) -> Result<(), FileError> {
    if doc.format != FORMAT {
        return Err(ferr(
            "$.format",
            format!("expected \"{FORMAT}\", found {:?}", truncate(&doc.format)),
        ));
    }
    if !(MIN_VERSION..=VERSION).contains(&doc.version) {
        return Err(ferr(
            "$.version",
            format!(
                "version {} is not supported (this neocode reads versions {MIN_VERSION} to {VERSION})",
                doc.version
            ),
        ));
    }
    validate_session(&doc.session)?;
    validate_messages(doc)?;
    validate_assets(&doc.assets)
}

/// The header: ids, times, source and plan.
fn validate_session(s: &FileSession) -> Result<(), FileError> {
    validate_id("session", &s.id).map_err(|e| ferr("$.session.id", e.to_string()))?;
    parse_time("$.session.created_at", &s.created_at)?;
    parse_time("$.session.updated_at", &s.updated_at)?;
    if let Some(p) = &s.parent_id {
        validate_id("session", p).map_err(|e| ferr("$.session.parent_id", e.to_string()))?;
    }
    if let Some(p) = &s.subagent_of {
        validate_id("session", p).map_err(|e| ferr("$.session.subagent_of", e.to_string()))?;
    }
    if let Some(src) = &s.source
        && src.tool.trim().is_empty()
    {
        return Err(ferr("$.session.source.tool", "empty source tool"));
    }
    if let Some(plan) = &s.plan {
        for (i, st) in plan.steps.iter().enumerate() {
            if st.id.is_empty() {
                return Err(ferr(
                    format!("$.session.plan.steps[{i}].id"),
                    "empty step id",
                ));
            }
        }
        to_plan(plan)
            .validate()
            .map_err(|e| ferr("$.session.plan.steps", e.to_string()))?;
    }
    Ok(())
}

/// The messages: seqs unique and in order, every tool result after its call, every image's
/// asset in the file.
fn validate_messages(doc: &SessionFile) -> Result<(), FileError> {
    let mut seqs = HashSet::new();
    let mut calls: HashSet<&str> = HashSet::new();
    let asset_ids: HashSet<&str> = doc.assets.iter().map(|a| a.id.as_str()).collect();
    for (i, m) in doc.messages.iter().enumerate() {
        let at = |f: &str| format!("$.messages[{i}].{f}");
        if m.seq < 1 {
            return Err(ferr(
                at("seq"),
                format!("seq must be 1 or more, found {}", m.seq),
            ));
        }
        if !seqs.insert(m.seq) {
            return Err(ferr(at("seq"), format!("duplicate seq {}", m.seq)));
        }
        // Calls are matched to results in file order, and the store keeps seq order: the two
        // must agree, or a result could land before its call.
        if let Some(prev) = i.checked_sub(1).map(|j| doc.messages[j].seq)
            && m.seq < prev
        {
            return Err(ferr(
                at("seq"),
                format!(
                    "seq {} follows seq {prev}: messages must be in seq order",
                    m.seq
                ),
            ));
        }
        parse_time(&at("created_at"), &m.created_at)?;
        for c in &m.tool_calls {
            calls.insert(c.id.as_str());
        }
        if m.role == Role::Tool {
            match &m.tool_call_id {
                None => {
                    return Err(ferr(
                        at("tool_call_id"),
                        "a tool result needs the id of its tool call",
                    ));
                }
                Some(id) if !calls.contains(id.as_str()) => {
                    return Err(ferr(
                        at("tool_call_id"),
                        format!(
                            "tool result answers call {:?}, which no earlier message made",
                            truncate(id)
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
        for (j, p) in m.parts.iter().enumerate() {
            if let Part::Image { asset_id, .. } = p
                && !asset_ids.contains(asset_id.as_str())
            {
                return Err(ferr(
                    format!("$.messages[{i}].parts[{j}].asset_id"),
                    format!(
                        "image refers to asset {:?}, which the file does not contain",
                        truncate(asset_id)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The assets: ids valid and unique, times, base64 content.
fn validate_assets(assets: &[FileAsset]) -> Result<(), FileError> {
    let mut seen = HashSet::new();
    for (i, a) in assets.iter().enumerate() {
        validate_id("asset", &a.id)
            .map_err(|e| ferr(format!("$.assets[{i}].id"), e.to_string()))?;
        if !seen.insert(a.id.as_str()) {
            return Err(ferr(
                format!("$.assets[{i}].id"),
                format!("duplicate asset id {:?}", a.id),
            ));
        }
        parse_time(&format!("$.assets[{i}].created_at"), &a.created_at)?;
        base64::engine::general_purpose::STANDARD
            .decode(&a.data_base64)
            .map_err(|e| {
                ferr(
                    format!("$.assets[{i}].data_base64"),
                    format!("not valid base64: {e}"),
                )
            })?;
    }
    Ok(())
}

fn to_plan(p: &FilePlan) -> Plan {
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

/// Builds the document for a stored session.
pub fn export(store: &Store, session_id: &str) -> StoreResult<SessionFile> {
    let s = store.load_session(session_id)?;
    let h = &s.header;
    let plan = h.plan.as_ref().map(|plan| FilePlan {
        steps: plan
            .steps
            .iter()
            .map(|st| FileStep {
                id: st.id.clone(),
                title: st.title.clone(),
                depends_on: st.depends_on.clone(),
                status: s.plan_progress.status(&st.id),
                result: s.plan_progress.results.get(&st.id).cloned(),
                error: s.plan_progress.failures.get(&st.id).cloned(),
            })
            .collect(),
    });
    let mut assets = Vec::new();
    for a in store.list_assets(session_id)? {
        let (_, data) = store.open_asset(session_id, &a.id)?;
        assets.push(FileAsset {
            id: a.id,
            mime_type: a.mime_type,
            created_at: rfc3339(a.created_at_ms),
            data_base64: base64::engine::general_purpose::STANDARD.encode(data),
        });
    }
    Ok(SessionFile {
        format: FORMAT.into(),
        version: VERSION,
        session: FileSession {
            id: h.id.clone(),
            title: h.title.clone(),
            created_at: rfc3339(h.created_at_ms),
            updated_at: rfc3339(h.updated_at_ms),
            provider: h.provider.clone(),
            model: h.model.clone(),
            workdir: h.workdir.clone(),
            status: h.status,
            parent_id: h.parent_id.clone(),
            subagent_of: h.subagent_of.clone(),
            source: h.source.clone(),
            fork_seq: h.fork_seq,
            branch: h.branch.clone(),
            profile: h.profile.clone(),
            conversation_key: h.conversation_key.clone(),
            plan,
            tokens: FileTokens {
                input: h.token_input_total,
                output: h.token_output_total,
                cached_input: s.messages.iter().map(|m| m.extra.cached_input_tokens).sum(),
                cache_write: s.messages.iter().map(|m| m.extra.cache_write_tokens).sum(),
                reasoning: s.messages.iter().map(|m| m.extra.reasoning_tokens).sum(),
            },
            task_state: h.task_state.clone(),
            todos: h.todos.clone(),
            skills: h.skills.clone(),
            ledger: h.ledger.clone(),
            last_seq: Some(h.last_seq),
        },
        messages: s
            .messages
            .iter()
            .map(|m| FileMessage {
                seq: m.seq,
                role: m.role,
                parts: m.parts.clone(),
                tool_calls: m.tool_calls.clone(),
                tool_call_id: m.tool_call_id.clone(),
                is_error: m.is_error,
                tool_metadata: m.tool_metadata.clone(),
                created_at: rfc3339(m.created_at_ms),
                usage: file_usage(&m.usage, &m.extra),
                injected: m.extra.injected,
                metadata: m.extra.metadata.clone(),
            })
            .collect(),
        assets,
    })
}

/// Writes a validated document into the store. With `new_id`, the session gets a fresh id
/// (and no parent link); otherwise an existing id is refused. Nothing is written on error.
pub fn import(store: &Store, doc: &SessionFile, new_id: bool) -> StoreResult<SessionHeader> {
    import_doc(store, doc.clone(), new_id)
}

/// [`import`] of a document the caller gives up (nothing of it is copied).
pub(crate) fn import_doc(
    store: &Store,
    doc: SessionFile,
    new_id: bool,
) -> StoreResult<SessionHeader> {
    let p = prepare(store, doc, new_id)?;
    let id = p.session.header.id.clone();
    store.insert_full(p.session, &p.summary)?;
    for (meta, data) in &p.assets {
        if let Err(e) = store.attach_imported_asset(meta, data) {
            // Keep "nothing written on error": take the half-imported session out again.
            let _ = store.delete(&id);
            return Err(e);
        }
    }
    store.load_header(&id)
}

/// Validates `doc` and decodes everything the store needs, so that a write cannot fail on
/// the document's content halfway.
pub(crate) fn prepare(store: &Store, doc: SessionFile, new_id: bool) -> StoreResult<Prepared> {
    validate(&doc).map_err(|e| StoreError::Corrupt {
        path: "<session file>".into(),
        detail: e.to_string(),
    })?;
    let SessionFile {
        session: f,
        messages: file_messages,
        assets: file_assets,
        ..
    } = doc;
    let id = if new_id {
        uuid::Uuid::new_v4().to_string()
    } else {
        f.id.clone()
    };
    let ms = |s: &str| parse_time("", s).unwrap_or(0);
    let progress = file_progress(f.plan.as_ref());
    // The parts are moved, not copied: they are most of an imported transcript's bytes.
    let messages: Vec<Message> = file_messages
        .into_iter()
        .map(|m| {
            let (usage, extra) = m.split_usage();
            Message {
                seq: m.seq,
                role: m.role,
                created_at_ms: ms(&m.created_at),
                parts: m.parts,
                tool_calls: m.tool_calls,
                tool_call_id: m.tool_call_id,
                is_error: m.is_error,
                tool_metadata: m.tool_metadata,
                usage,
                extra,
            }
        })
        .collect();
    let max_seq = messages.iter().map(|m| m.seq).max().unwrap_or(0);
    let first_prompt = first_prompt(&messages);
    let session = Session {
        header: SessionHeader {
            id: id.clone(),
            title: f.title.clone(),
            created_at_ms: ms(&f.created_at),
            updated_at_ms: ms(&f.updated_at),
            provider: f.provider.clone(),
            model: f.model.clone(),
            workdir: f.workdir.clone(),
            status: f.status,
            parent_id: if new_id { None } else { f.parent_id.clone() },
            fork_seq: if new_id { None } else { f.fork_seq },
            subagent_of: if new_id { None } else { f.subagent_of.clone() },
            source: f.source.clone(),
            branch: f.branch.clone(),
            profile: f.profile.clone(),
            conversation_key: f.conversation_key.clone(),
            task_state: f.task_state.clone(),
            todos: f.todos.clone(),
            skills: f.skills.clone(),
            plan: f.plan.as_ref().map(to_plan),
            ledger: f.ledger.clone(),
            token_input_total: f.tokens.input,
            token_output_total: f.tokens.output,
            last_seq: f.last_seq.unwrap_or(0).max(max_seq),
            message_count: messages.len() as u64,
        },
        plan_progress: progress,
        messages,
    };
    Ok(Prepared {
        session,
        summary: SessionSummary {
            first_prompt,
            ..SessionSummary::default()
        },
        assets: decode_assets(store, &id, file_assets)?,
    })
}

/// The plan progress a session file's steps carry.
fn file_progress(plan: Option<&FilePlan>) -> PlanProgress {
    let mut progress = PlanProgress::default();
    for st in plan.map(|p| p.steps.as_slice()).unwrap_or(&[]) {
        if st.status != StepStatus::Pending {
            progress.statuses.insert(st.id.clone(), st.status);
        }
        if let Some(r) = &st.result {
            progress.results.insert(st.id.clone(), r.clone());
        }
        if let Some(e) = &st.error {
            progress.failures.insert(st.id.clone(), e.clone());
        }
    }
    progress
}

/// The first 200 characters of the first prompt the person typed, without joining a long
/// message's text.
fn first_prompt(messages: &[Message]) -> String {
    let head = |m: &Message| -> String {
        let mut out = String::new();
        for p in &m.parts {
            if let Part::Text { text } = p {
                if !out.is_empty() {
                    out.push_str("\n\n");
                }
                out.extend(text.chars().take(200));
                if out.chars().count() >= 200 {
                    break;
                }
            }
        }
        out.chars().take(200).collect()
    };
    messages
        .iter()
        .filter(|m| m.role == Role::User && !m.extra.injected)
        .map(head)
        .find(|h| !h.trim().is_empty())
        .unwrap_or_default()
}

/// Every asset decoded (before anything is written) and its size checked, for session `id`.
fn decode_assets(
    store: &Store,
    id: &str,
    file_assets: Vec<FileAsset>,
) -> StoreResult<Vec<(AssetMeta, Vec<u8>)>> {
    let ms = |s: &str| parse_time("", s).unwrap_or(0);
    let mut assets = Vec::with_capacity(file_assets.len());
    // Consumed one by one: each asset's text goes once it is decoded.
    for (i, a) in file_assets.into_iter().enumerate() {
        let data = base64::engine::general_purpose::STANDARD
            .decode(&a.data_base64)
            .map_err(|e| StoreError::Corrupt {
                path: "<session file>".into(),
                detail: format!("$.assets[{i}].data_base64: {e}"),
            })?;
        if data.len() as u64 > store.asset_limit() {
            return Err(StoreError::TooLarge {
                what: "asset",
                size: data.len() as u64,
                limit: store.asset_limit(),
            });
        }
        let meta = AssetMeta {
            id: a.id.clone(),
            session_id: id.to_string(),
            mime_type: a.mime_type.clone(),
            size_bytes: 0,
            relative_path: String::new(),
            created_at_ms: ms(&a.created_at),
        };
        assets.push((meta, data));
    }
    Ok(assets)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        /// The arithmetic agrees with chrono everywhere, the edges of its range included.
        #[test]
        fn rfc3339_is_chronos(ms in prop_oneof![
            -100_000_000_000_000i64..300_000_000_000_000,
            any::<i64>(),
            Just(0i64),
            Just(253_402_300_799_999i64),
            Just(253_402_300_800_000i64),
            Just(-1i64),
            Just(951_782_400_000i64), // 2000-02-29
            Just(1_796_044_962_738i64),
        ]) {
            let chrono = chrono::DateTime::from_timestamp_millis(ms)
                .unwrap_or_default()
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            prop_assert_eq!(super::rfc3339(ms), chrono);
        }
    }
}
