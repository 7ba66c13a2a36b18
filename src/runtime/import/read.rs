//! What both importers share: reading a JSONL file line by line ([`Lines`], with what it
//! met in [`ReadStats`]), building a session file ([`Builder`], [`message`]) and the small
//! conversions of ids, times, texts and checklists.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use base64::Engine;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::session::file::{
    self, FileAsset, FileMessage, FilePlan, FileStep, FileUsage, SessionFile,
};
use crate::session::{Part, Role, StepStatus, ToolCall};

/// What reading one transcript file met besides records it understood.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReadStats {
    /// Complete lines read.
    pub lines: u64,
    /// Lines that were not JSON objects (skipped).
    pub malformed: u64,
    /// Lines that were not valid UTF-8 and were read with replacement characters.
    pub lossy: u64,
    /// Records of a type this importer does not know (skipped).
    pub unknown: u64,
    /// Records already seen (re-appended on resume) and dropped.
    pub duplicates: u64,
    /// An incomplete last line (a file still being written) was left unread.
    pub torn_tail: bool,
}

/// One transcript file converted: its session first, then child sessions found inside it.
#[derive(Debug, Clone)]
pub struct Converted {
    /// Session files, parents before children.
    pub sessions: Vec<SessionFile>,
    /// What reading met.
    pub stats: ReadStats,
}

/// Reads a JSONL file record by record up to its last complete line.
pub(crate) struct Lines {
    reader: BufReader<File>,
    buf: Vec<u8>,
    pub stats: ReadStats,
}

impl Lines {
    pub(crate) fn open(path: &Path) -> std::io::Result<Lines> {
        Ok(Lines {
            reader: BufReader::with_capacity(1 << 16, File::open(path)?),
            buf: Vec::new(),
            stats: ReadStats::default(),
        })
    }

    /// The next JSON object, skipping (and counting) lines that are not one.
    pub(crate) fn next_object(&mut self) -> std::io::Result<Option<Value>> {
        loop {
            self.buf.clear();
            let n = self.reader.read_until(b'\n', &mut self.buf)?;
            if n == 0 {
                return Ok(None);
            }
            let complete = self.buf.last() == Some(&b'\n');
            let line = trim_ascii(&self.buf);
            if line.is_empty() {
                continue;
            }
            let parsed = match serde_json::from_slice::<Value>(line) {
                Ok(v) => Some(v),
                Err(_) if std::str::from_utf8(line).is_err() => {
                    let text = String::from_utf8_lossy(line);
                    let v = serde_json::from_str::<Value>(&text).ok();
                    if v.is_some() {
                        self.stats.lossy += 1;
                    }
                    v
                }
                Err(_) => None,
            };
            if !complete && parsed.is_none() {
                // A writer is mid-line: read up to the last complete line only.
                self.stats.torn_tail = true;
                return Ok(None);
            }
            self.stats.lines += 1;
            match parsed {
                Some(v) if v.is_object() => return Ok(Some(v)),
                _ => self.stats.malformed += 1,
            }
        }
    }
}

fn trim_ascii(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &b[start..end.max(start)]
}

/// Messages and assets of one session being built, with the bookkeeping that keeps every
/// tool call id once and every result after its call.
#[derive(Debug, Default)]
pub(crate) struct Builder {
    pub messages: Vec<FileMessage>,
    pub assets: Vec<FileAsset>,
    asset_ids: HashSet<String>,
    pub calls: HashSet<String>,
    pub answered: HashSet<String>,
    pub last_time: String,
}

impl Builder {
    /// Appends a message, giving it the next seq; returns its index.
    pub(crate) fn push(&mut self, mut m: FileMessage) -> usize {
        m.seq = self.messages.len() as i64 + 1;
        if m.created_at.is_empty() {
            m.created_at = self.last_time.clone();
        }
        if m.created_at.is_empty() {
            m.created_at = file::rfc3339(0);
        }
        self.messages.push(m);
        self.messages.len() - 1
    }

    /// The input and output tokens of the messages so far.
    pub(crate) fn token_totals(&self) -> (u64, u64) {
        self.messages.iter().fold((0, 0), |(i, o), m| {
            (i + m.usage.input_tokens, o + m.usage.output_tokens)
        })
    }

    /// When the session was created (`first_time`, or the epoch when the source had none)
    /// and last updated (the last time read, or its creation).
    pub(crate) fn created_updated(&self, first_time: String) -> (String, String) {
        let created = if first_time.is_empty() {
            file::rfc3339(0)
        } else {
            first_time
        };
        let updated = if self.last_time.is_empty() {
            created.clone()
        } else {
            self.last_time.clone()
        };
        (created, updated)
    }

    /// Adds a tool call to message `idx` unless a call with that id was already made.
    pub(crate) fn add_call(&mut self, idx: usize, call: ToolCall) -> bool {
        if !self.calls.insert(call.id.clone()) {
            return false;
        }
        self.messages[idx].tool_calls.push(call);
        true
    }

    /// Stores image bytes as an asset (content-addressed, so one image is stored once) and
    /// returns the part that shows it.
    pub(crate) fn image(&mut self, mime: &str, data: &[u8]) -> Part {
        let hash = Sha256::digest(data);
        let id = format!("img-{}", hex(&hash[..12]));
        if self.asset_ids.insert(id.clone()) {
            self.assets.push(FileAsset {
                id: id.clone(),
                mime_type: mime.to_string(),
                created_at: if self.last_time.is_empty() {
                    file::rfc3339(0)
                } else {
                    self.last_time.clone()
                },
                data_base64: base64::engine::general_purpose::STANDARD.encode(data),
            });
        }
        Part::Image {
            asset_id: id,
            mime_type: Some(mime.to_string()),
        }
    }

    /// A base64 image as a part; undecodable data becomes a note instead.
    pub(crate) fn base64_image(&mut self, mime: &str, b64: &str) -> Part {
        let cleaned: String = b64.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        match base64::engine::general_purpose::STANDARD.decode(cleaned.as_bytes()) {
            Ok(bytes) => self.image(mime, &bytes),
            Err(_) => Part::text("[image: undecodable base64 data]"),
        }
    }

    /// A `data:<mime>;base64,<data>` URL as an image part, if it is one.
    pub(crate) fn data_url_image(&mut self, url: &str) -> Option<Part> {
        let rest = url.strip_prefix("data:")?;
        let (head, data) = rest.split_once(',')?;
        let mime = head.strip_suffix(";base64")?;
        Some(self.base64_image(if mime.is_empty() { "image/png" } else { mime }, data))
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A message with defaults, to fill in.
pub(crate) fn message(role: Role, created_at: &str) -> FileMessage {
    FileMessage {
        seq: 0,
        role,
        parts: Vec::new(),
        tool_calls: Vec::new(),
        tool_call_id: None,
        is_error: false,
        tool_metadata: None,
        created_at: created_at.to_string(),
        usage: FileUsage::default(),
        injected: false,
        metadata: None,
    }
}

/// An RFC 3339 time as the file wants it (normalised), or `None`.
pub(crate) fn time(v: Option<&Value>) -> Option<String> {
    let s = v?.as_str()?;
    chrono::DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|d| file::rfc3339(d.timestamp_millis()))
}

/// A session or derived id made safe for neocode (`[A-Za-z0-9_-]`, at most 128 bytes).
pub(crate) fn safe_id(raw: &str) -> String {
    let mut s: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.len() > 128 {
        let hash = Sha256::digest(raw.as_bytes());
        s.truncate(100);
        s.push('-');
        s.push_str(&hex(&hash[..8]));
    }
    if s.is_empty() {
        s.push_str("imported");
    }
    s
}

/// A tool's checklist (Claude Code's TodoWrite todos, Codex's update_plan steps) as a plan:
/// one step per item, in order, titled by the item's `title_key`, with its status; steps are
/// named `<prefix>-1`, `<prefix>-2`, …
pub(crate) fn checklist_plan(items: &Value, prefix: &str, title_key: &str) -> Option<FilePlan> {
    let steps = items
        .as_array()?
        .iter()
        .enumerate()
        .map(|(i, t)| FileStep {
            id: format!("{prefix}-{}", i + 1),
            title: t.get(title_key).map(text_of).unwrap_or_default(),
            depends_on: Vec::new(),
            status: match t.get("status").and_then(Value::as_str) {
                Some("completed") => StepStatus::Completed,
                Some("in_progress") => StepStatus::Running,
                _ => StepStatus::Pending,
            },
            result: None,
            error: None,
        })
        .collect::<Vec<_>>();
    (!steps.is_empty()).then_some(FilePlan { steps })
}

/// Text of a JSON value that should be a string; other values as compact JSON.
pub(crate) fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}
