//! Claude Code transcripts (`~/.claude/projects/<encoded cwd>/<session>.jsonl`, sub-agents in
//! `<session>/subagents/agent-<id>.jsonl`).
//!
//! Read linearly in file order (walking back from the leaf would lose parallel tool calls,
//! whose results hang off different parents). One model response is streamed as several
//! lines sharing `message.id`, each repeating the response's usage: the lines merge into one
//! message and the usage counts once. Lines re-appended on resume (same `uuid`) and blocks
//! repeating a tool call or result already seen are dropped. Inline sidechains become child
//! sessions linked as sub-agents.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::{Value, json};

use crate::session::file::{FileSession, FileTokens, SessionFile};
use crate::session::{Part, Role, SessionSource, Status, ToolCall};

use super::read::{Builder, Converted, Lines, checklist_plan, message, safe_id, text_of, time};
use crate::session::file;

/// One session being built (the main one or a sidechain).
#[derive(Default)]
struct Conv {
    b: Builder,
    /// `message.id` of a streamed response -> index of its merged message.
    by_message_id: HashMap<String, usize>,
    model: String,
    cwd: String,
    version: String,
    first_time: String,
    todos: Option<Value>,
    title: String,
}

impl Conv {
    fn feed(&mut self, line: &Value) {
        let ts = time(line.get("timestamp")).unwrap_or_default();
        if !ts.is_empty() {
            if self.first_time.is_empty() {
                self.first_time = ts.clone();
            }
            self.b.last_time = ts.clone();
        }
        if let Some(c) = line.get("cwd").and_then(Value::as_str)
            && self.cwd.is_empty()
        {
            self.cwd = c.to_string();
        }
        if let Some(v) = line.get("version").and_then(Value::as_str) {
            self.version = v.to_string();
        }
        match line.get("type").and_then(Value::as_str) {
            Some("assistant") => self.assistant(line, &ts),
            Some("user") => self.user(line, &ts),
            Some("system") => self.system(line, &ts),
            _ => {}
        }
    }

    fn assistant(&mut self, line: &Value, ts: &str) {
        let Some(msg) = line.get("message") else {
            return;
        };
        let mid = msg
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if let Some(m) = msg.get("model").and_then(Value::as_str)
            && m != "<synthetic>"
        {
            self.model = m.to_string();
        }
        let idx = match self.by_message_id.get(&mid) {
            Some(&i) if !mid.is_empty() => i,
            _ => {
                let mut m = message(Role::Assistant, ts);
                m.metadata = Some(json!({
                    "message_id": mid,
                    "uuids": [],
                    "request_id": line.get("requestId"),
                    "model": msg.get("model"),
                }));
                let i = self.b.push(m);
                if !mid.is_empty() {
                    self.by_message_id.insert(mid.clone(), i);
                }
                i
            }
        };
        if let Some(Value::Object(meta)) = self.b.messages[idx].metadata.as_mut() {
            if let Some(Value::Array(u)) = meta.get_mut("uuids")
                && let Some(id) = line.get("uuid")
            {
                u.push(id.clone());
            }
            if let Some(r) = msg.get("stop_reason").filter(|r| !r.is_null()) {
                meta.insert("stop_reason".into(), r.clone());
            }
        }
        if line.get("isApiErrorMessage").and_then(Value::as_bool) == Some(true) {
            self.b.messages[idx].is_error = true;
        }
        // Every streamed line repeats the response's usage; the last one is final.
        if let Some(u) = msg.get("usage") {
            let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
            let usage = &mut self.b.messages[idx].usage;
            usage.input_tokens = n("input_tokens");
            usage.output_tokens = n("output_tokens");
            usage.cached_input_tokens = n("cache_read_input_tokens");
            usage.cache_write_tokens = n("cache_creation_input_tokens");
        }
        let blocks = match msg.get("content") {
            Some(Value::Array(a)) => a.clone(),
            Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
            _ => Vec::new(),
        };
        for block in &blocks {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => {
                    let t = block.get("text").map(text_of).unwrap_or_default();
                    if !t.trim().is_empty() {
                        self.b.messages[idx].parts.push(Part::text(t));
                    }
                }
                Some("thinking") => {
                    let t = block.get("thinking").map(text_of).unwrap_or_default();
                    if !t.trim().is_empty() {
                        self.b.messages[idx].parts.push(Part::reasoning(t));
                    }
                }
                Some("tool_use") | Some("server_tool_use") => {
                    let id = block.get("id").map(text_of).unwrap_or_default();
                    let name = block.get("name").map(text_of).unwrap_or_default();
                    let input = block.get("input").cloned().unwrap_or(json!({}));
                    if name == "TodoWrite"
                        && let Some(t) = input.get("todos")
                    {
                        self.todos = Some(t.clone());
                    }
                    if !id.is_empty() {
                        self.b.add_call(
                            idx,
                            ToolCall {
                                id,
                                name,
                                arguments: input.to_string(),
                            },
                        );
                    }
                }
                _ => {}
            }
        }
    }

    fn user(&mut self, line: &Value, ts: &str) {
        let Some(msg) = line.get("message") else {
            return;
        };
        let injected = line.get("isMeta").and_then(Value::as_bool) == Some(true);
        let compact = line.get("isCompactSummary").and_then(Value::as_bool) == Some(true);
        let mut meta = json!({"uuid": line.get("uuid")});
        if compact {
            meta["kind"] = json!("compaction_summary");
        }
        let mut m = message(Role::User, ts);
        m.injected = injected || compact;
        m.metadata = Some(meta.clone());
        match msg.get("content") {
            Some(Value::String(s)) => m.parts.push(Part::text(s.clone())),
            Some(Value::Array(blocks)) => {
                for block in blocks {
                    match block.get("type").and_then(Value::as_str) {
                        Some("text") => m.parts.push(Part::text(
                            block.get("text").map(text_of).unwrap_or_default(),
                        )),
                        Some("image") => {
                            if let Some(p) = self.image(block) {
                                m.parts.push(p);
                            }
                        }
                        Some("tool_result") => self.tool_result(block, ts, &meta),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        if !m.parts.is_empty() {
            self.b.push(m);
        }
    }

    fn tool_result(&mut self, block: &Value, ts: &str, meta: &Value) {
        let id = block.get("tool_use_id").map(text_of).unwrap_or_default();
        let is_error = block.get("is_error").and_then(Value::as_bool) == Some(true);
        let mut parts = Vec::new();
        match block.get("content") {
            Some(Value::Array(items)) => {
                for it in items {
                    match it.get("type").and_then(Value::as_str) {
                        Some("image") => {
                            if let Some(p) = self.image(it) {
                                parts.push(p);
                            }
                        }
                        _ => parts.push(Part::text(
                            it.get("text")
                                .map(text_of)
                                .unwrap_or_else(|| it.to_string()),
                        )),
                    }
                }
            }
            Some(v) => parts.push(Part::text(text_of(v))),
            None => {}
        }
        if parts.is_empty() {
            parts.push(Part::text(""));
        }
        if !self.b.calls.contains(&id) {
            // A result whose call is not in this transcript: keep its text, not as a result.
            let mut m = message(Role::User, ts);
            m.parts = parts;
            m.injected = true;
            m.metadata = Some(json!({"uuid": meta.get("uuid"), "orphan_tool_result": id}));
            self.b.push(m);
            return;
        }
        if !self.b.answered.insert(id.clone()) {
            return;
        }
        let mut m = message(Role::Tool, ts);
        m.parts = parts;
        m.tool_call_id = Some(id);
        m.is_error = is_error;
        m.metadata = Some(meta.clone());
        self.b.push(m);
    }

    fn system(&mut self, line: &Value, ts: &str) {
        let text = line.get("content").map(text_of).unwrap_or_default();
        let subtype = line.get("subtype").cloned().unwrap_or(Value::Null);
        if text.trim().is_empty() && subtype.is_null() {
            return;
        }
        let mut m = message(Role::System, ts);
        m.parts.push(Part::text(text));
        m.injected = true;
        m.metadata =
            Some(json!({"uuid": line.get("uuid"), "subtype": subtype, "level": line.get("level")}));
        self.b.push(m);
    }

    fn image(&mut self, block: &Value) -> Option<Part> {
        let src = block.get("source")?;
        match src.get("type").and_then(Value::as_str) {
            Some("base64") => {
                let mime = src
                    .get("media_type")
                    .and_then(Value::as_str)
                    .unwrap_or("image/png");
                let data = src.get("data").and_then(Value::as_str).unwrap_or("");
                Some(self.b.base64_image(mime, data))
            }
            Some("url") => Some(Part::text(format!(
                "[image: {}]",
                src.get("url").map(text_of).unwrap_or_default()
            ))),
            _ => None,
        }
    }

    fn finish(self, id: String, source_id: String, parent: Option<String>) -> SessionFile {
        let Conv {
            b,
            model,
            cwd,
            version,
            first_time,
            todos,
            title,
            ..
        } = self;
        let (input, output) = b.token_totals();
        let plan = todos
            .as_ref()
            .and_then(|t| checklist_plan(t, "todo", "content"));
        let (created, updated) = b.created_updated(first_time);
        SessionFile {
            format: file::FORMAT.into(),
            version: file::VERSION,
            session: FileSession {
                id,
                title,
                created_at: created,
                updated_at: updated,
                provider: "anthropic".into(),
                model,
                workdir: cwd,
                status: Status::Paused,
                // Where the source recorded a branch it stays in its metadata.
                branch: None,
                profile: None,
                parent_id: None,
                subagent_of: parent,
                source: Some(SessionSource {
                    tool: "claude-code".into(),
                    version,
                    id: source_id,
                    stamp: None,
                    metadata: None,
                }),
                fork_seq: None,
                conversation_key: None,
                plan,
                tokens: FileTokens {
                    input,
                    output,
                    ..FileTokens::default()
                },
                task_state: None,
                todos,
                skills: None,
                ledger: None,
                last_seq: None,
            },
            messages: b.messages,
            assets: b.assets,
        }
    }
}

/// `<parent>/subagents/agent-x.jsonl` -> `Some("<parent>")`.
fn subagent_parent(path: &Path) -> Option<String> {
    let dir = path.parent()?;
    if dir.file_name()? != "subagents" {
        return None;
    }
    Some(dir.parent()?.file_name()?.to_string_lossy().into_owned())
}

/// The session id of a transcript path: its stem, or `<parent>-<stem>` for a sub-agent.
pub(crate) fn expected_id(path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_string_lossy().into_owned();
    Some(match subagent_parent(path) {
        Some(parent) => safe_id(&format!("{parent}-{stem}")),
        None => safe_id(&stem),
    })
}

/// Converts one Claude Code transcript.
pub(crate) fn convert(path: &Path) -> std::io::Result<Converted> {
    let mut lines = Lines::open(path)?;
    let sub_parent = subagent_parent(path).map(|p| safe_id(&p));
    let mut main = Conv::default();
    let mut session_id: Option<String> = None;
    let mut seen: HashSet<String> = HashSet::new();
    // Inline sidechains: uuid -> root uuid, and one conversation per root.
    let mut side_root: HashMap<String, String> = HashMap::new();
    let mut sides: Vec<(String, Conv)> = Vec::new();
    let mut summaries: Vec<String> = Vec::new();
    while let Some(line) = lines.next_object()? {
        let ty = line.get("type").and_then(Value::as_str).unwrap_or("");
        if !matches!(
            ty,
            "user"
                | "assistant"
                | "system"
                | "summary"
                | "progress"
                | "file-history-snapshot"
                | "queue-operation"
                | "custom-title"
                | "tag"
        ) {
            lines.stats.unknown += 1;
            continue;
        }
        if let Some(u) = line.get("uuid").and_then(Value::as_str)
            && !seen.insert(u.to_string())
        {
            lines.stats.duplicates += 1;
            continue;
        }
        if ty == "summary" || ty == "custom-title" {
            let t = line
                .get("summary")
                .or_else(|| line.get("customTitle"))
                .map(text_of)
                .unwrap_or_default();
            if !t.trim().is_empty() {
                summaries.push(t);
            }
            continue;
        }
        if !matches!(ty, "user" | "assistant" | "system") {
            continue;
        }
        if session_id.is_none() {
            session_id = line
                .get("sessionId")
                .and_then(Value::as_str)
                .map(str::to_string);
        }
        let sidechain = line.get("isSidechain").and_then(Value::as_bool) == Some(true);
        if sidechain && sub_parent.is_none() {
            let uuid = line
                .get("uuid")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let parent = line.get("parentUuid").and_then(Value::as_str).unwrap_or("");
            let root = side_root
                .get(parent)
                .cloned()
                .unwrap_or_else(|| uuid.clone());
            side_root.insert(uuid, root.clone());
            match sides.iter_mut().find(|(r, _)| *r == root) {
                Some((_, c)) => c.feed(&line),
                None => {
                    let mut c = Conv::default();
                    c.feed(&line);
                    sides.push((root, c));
                }
            }
            continue;
        }
        main.feed(&line);
    }
    if let Some(t) = summaries.last() {
        main.title = t.clone();
    }
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let id = expected_id(path)
        .or_else(|| session_id.as_deref().map(safe_id))
        .unwrap_or_else(|| safe_id(&stem));
    let mut sessions = vec![main.finish(id.clone(), id.clone(), sub_parent)];
    for (root, c) in sides {
        let child = safe_id(&format!("{id}-side-{root}"));
        sessions.push(c.finish(child.clone(), child, Some(id.clone())));
    }
    Ok(Converted {
        sessions,
        stats: lines.stats,
    })
}
