//! Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`, also
//! `~/.codex/archived_sessions/`).
//!
//! Each line is `{timestamp, type, payload}`. The conversation is the `response_item`s; the
//! `event_msg` copies of them (user_message, agent_message, agent_reasoning) are skipped, but
//! `token_count` events carry the usage: consecutive repeats of the same running total are
//! one event, and each counts on the assistant message of the model call that produced it.
//! Input tokens are stored without their cached part (kept apart), so input + cached of all
//! messages is the rollout's final input total.

use std::path::Path;

use serde_json::{Value, json};

use crate::session::file::{self, FileSession, FileTokens, SessionFile};
use crate::session::{Part, Role, SessionSource, Status, ToolCall};

use super::read::{
    Builder, Converted, Lines, ReadStats, checklist_plan, message, safe_id, text_of, time,
};

#[derive(Default)]
struct Conv {
    b: Builder,
    /// The assistant message collecting the current model call's items.
    open: Option<usize>,
    /// Last assistant message, for usage reported after its outputs.
    last_assistant: Option<usize>,
    last_total: Option<Value>,
    pending_usage: Option<Value>,
    meta: Value,
    turn_context: Option<Value>,
    turn_contexts: u64,
    /// Each distinct policy set seen (a turn context without its turn id), in order.
    policies: Vec<Value>,
    models: Vec<String>,
    plan: Option<Value>,
    first_time: String,
    compactions: u64,
}

/// Harness text Codex injects as user messages.
fn is_injected_user_text(t: &str) -> bool {
    let t = t.trim_start();
    t.starts_with("<environment_context>")
        || t.starts_with("<user_instructions>")
        || t.starts_with("# AGENTS.md instructions")
        || t.starts_with("<turn_aborted>")
}

impl Conv {
    fn feed(&mut self, line: &Value, stats: &mut ReadStats) {
        let ts = time(line.get("timestamp")).unwrap_or_default();
        if !ts.is_empty() {
            if self.first_time.is_empty() {
                self.first_time = ts.clone();
            }
            self.b.last_time = ts.clone();
        }
        // Old rollouts have no envelope: the first line is the meta, the rest bare items.
        let (ty, payload) = match (
            line.get("type").and_then(Value::as_str),
            line.get("payload"),
        ) {
            (Some(t), Some(p)) => (t.to_string(), p.clone()),
            (Some(_), None) => ("response_item".to_string(), line.clone()),
            (None, _) if line.get("id").is_some() && self.meta.is_null() => {
                ("session_meta".to_string(), line.clone())
            }
            _ => {
                stats.unknown += 1;
                return;
            }
        };
        match ty.as_str() {
            "session_meta" => {
                if self.meta.is_null() {
                    self.meta = payload;
                }
            }
            "turn_context" => {
                if let Some(m) = payload.get("model").and_then(Value::as_str)
                    && !self.models.iter().any(|x| x == m)
                {
                    self.models.push(m.to_string());
                }
                self.turn_contexts += 1;
                let mut policy = payload.clone();
                if let Value::Object(o) = &mut policy {
                    o.remove("turn_id");
                }
                if self.policies.last() != Some(&policy) {
                    self.policies.push(policy);
                }
                self.turn_context = Some(payload);
            }
            "response_item" => self.item(&payload, &ts, stats),
            "event_msg" => {
                if payload.get("type").and_then(Value::as_str) == Some("token_count") {
                    self.token_count(&payload);
                }
            }
            "compacted" => {
                let mut m = message(Role::User, &ts);
                m.parts.push(Part::text(
                    payload.get("message").map(text_of).unwrap_or_default(),
                ));
                m.injected = true;
                m.metadata = Some(json!({"kind": "compaction_summary"}));
                self.compactions += 1;
                self.close();
                self.b.push(m);
            }
            _ => stats.unknown += 1,
        }
    }

    fn close(&mut self) {
        self.open = None;
    }

    fn assistant(&mut self, ts: &str) -> usize {
        if let Some(i) = self.open {
            return i;
        }
        let i = self.b.push(message(Role::Assistant, ts));
        self.open = Some(i);
        self.last_assistant = Some(i);
        if let Some(u) = self.pending_usage.take() {
            add_usage(&mut self.b.messages[i], &u);
        }
        i
    }

    fn item(&mut self, p: &Value, ts: &str, stats: &mut ReadStats) {
        match p.get("type").and_then(Value::as_str) {
            Some("message") => self.message_item(p, ts),
            Some("reasoning") => self.reasoning_item(p, ts),
            Some(kind @ ("function_call" | "custom_tool_call" | "local_shell_call")) => {
                self.call_item(kind, p, ts);
            }
            Some("function_call_output" | "custom_tool_call_output") => {
                self.output_item(p, ts, stats);
            }
            _ => stats.unknown += 1,
        }
    }

    /// The parts of a `message` item's content: text, and images (kept as assets when they
    /// are data URLs, else named).
    fn content_parts(&mut self, p: &Value) -> Vec<Part> {
        let mut parts = Vec::new();
        let Some(Value::Array(items)) = p.get("content") else {
            return parts;
        };
        for it in items {
            match it.get("type").and_then(Value::as_str) {
                Some("input_text" | "output_text" | "text") => {
                    parts.push(Part::text(it.get("text").map(text_of).unwrap_or_default()));
                }
                Some("input_image") => {
                    let url = it.get("image_url").map(text_of).unwrap_or_default();
                    match self.b.data_url_image(&url) {
                        Some(part) => parts.push(part),
                        None => parts.push(Part::text(format!("[image: {url}]"))),
                    }
                }
                _ => {}
            }
        }
        parts
    }

    fn message_item(&mut self, p: &Value, ts: &str) {
        let role = p.get("role").and_then(Value::as_str).unwrap_or("user");
        let parts = self.content_parts(p);
        let mut meta = serde_json::Map::new();
        if let Some(ph) = p.get("phase") {
            meta.insert("phase".into(), ph.clone());
        }
        if let Some(id) = p.get("id") {
            meta.insert("item_id".into(), id.clone());
        }
        if role == "assistant" {
            let i = self.assistant(ts);
            self.b.messages[i].parts.extend(parts);
            merge_meta(&mut self.b.messages[i].metadata, meta);
            return;
        }
        self.close();
        let mut m = message(
            if role == "user" {
                Role::User
            } else {
                Role::System
            },
            ts,
        );
        m.injected = role != "user"
            || parts
                .iter()
                .any(|p| matches!(p, Part::Text { text } if is_injected_user_text(text)));
        meta.insert("role".into(), json!(role));
        m.metadata = Some(Value::Object(meta));
        m.parts = parts;
        if !m.parts.is_empty() {
            self.b.push(m);
        }
    }

    fn reasoning_item(&mut self, p: &Value, ts: &str) {
        let i = self.assistant(ts);
        if let Some(Value::Array(sum)) = p.get("summary") {
            for s in sum {
                let t = s.get("text").map(text_of).unwrap_or_default();
                if !t.trim().is_empty() {
                    self.b.messages[i].parts.push(Part::reasoning(t));
                }
            }
        }
    }

    fn call_item(&mut self, kind: &str, p: &Value, ts: &str) {
        let id = p
            .get("call_id")
            .or_else(|| p.get("id"))
            .map(text_of)
            .unwrap_or_default();
        let name = match kind {
            "local_shell_call" => "local_shell".to_string(),
            _ => p.get("name").map(text_of).unwrap_or_default(),
        };
        let arguments = match kind {
            "custom_tool_call" => p.get("input").map(text_of).unwrap_or_default(),
            "local_shell_call" => p.get("action").cloned().unwrap_or(Value::Null).to_string(),
            _ => p.get("arguments").map(text_of).unwrap_or_default(),
        };
        if name == "update_plan"
            && let Ok(v) = serde_json::from_str::<Value>(&arguments)
            && let Some(plan) = v.get("plan")
        {
            self.plan = Some(plan.clone());
        }
        let i = self.assistant(ts);
        if kind != "function_call" {
            merge_meta(
                &mut self.b.messages[i].metadata,
                [(format!("call_kind:{id}"), json!(kind))]
                    .into_iter()
                    .collect(),
            );
        }
        if !id.is_empty() {
            self.b.add_call(
                i,
                ToolCall {
                    id,
                    name,
                    arguments,
                },
            );
        }
    }

    fn output_item(&mut self, p: &Value, ts: &str, stats: &mut ReadStats) {
        self.close();
        let id = p.get("call_id").map(text_of).unwrap_or_default();
        let raw = p.get("output").cloned().unwrap_or(Value::Null);
        let (text, tool_meta, is_error) = output(&raw);
        if !self.b.calls.contains(&id) {
            let mut m = message(Role::User, ts);
            m.parts.push(Part::text(text));
            m.injected = true;
            m.metadata = Some(json!({"orphan_tool_result": id}));
            self.b.push(m);
            return;
        }
        if !self.b.answered.insert(id.clone()) {
            stats.duplicates += 1;
            return;
        }
        let mut m = message(Role::Tool, ts);
        m.parts.push(Part::text(text));
        m.tool_call_id = Some(id);
        m.is_error = is_error;
        m.tool_metadata = tool_meta;
        self.b.push(m);
    }

    fn token_count(&mut self, p: &Value) {
        let Some(info) = p.get("info").filter(|i| !i.is_null()) else {
            return;
        };
        let total = info.get("total_token_usage").cloned();
        if total.is_some() && total == self.last_total {
            return;
        }
        let last = info
            .get("last_token_usage")
            .cloned()
            .or_else(|| total.clone());
        self.last_total = total;
        let Some(last) = last else { return };
        match self.open.or(self.last_assistant) {
            Some(i) => add_usage(&mut self.b.messages[i], &last),
            None => self.pending_usage = Some(last),
        }
        // The model call is over: its next items start a new message.
        self.close();
    }

    fn finish(self, path: &Path) -> SessionFile {
        let Conv {
            b,
            meta,
            turn_context,
            turn_contexts,
            policies,
            models,
            plan,
            first_time,
            compactions,
            last_total,
            ..
        } = self;
        let raw_id = meta.get("id").map(text_of).unwrap_or_default();
        let id = if raw_id.is_empty() {
            expected_id(path).unwrap_or_else(|| safe_id("codex"))
        } else {
            safe_id(&raw_id)
        };
        let (input, output) = b.token_totals();
        let (created, updated) = b.created_updated(first_time);
        let fork = meta
            .get("forked_from_id")
            .and_then(Value::as_str)
            .map(safe_id);
        let plan_steps = plan
            .as_ref()
            .and_then(|p| checklist_plan(p, "step", "step"));
        let provider = meta
            .get("model_provider")
            .map(text_of)
            .unwrap_or_else(|| "openai".into());
        SessionFile {
            format: file::FORMAT.into(),
            version: file::VERSION,
            session: FileSession {
                id: id.clone(),
                title: String::new(),
                created_at: created,
                updated_at: updated,
                provider,
                model: models.last().cloned().unwrap_or_default(),
                workdir: meta.get("cwd").map(text_of).unwrap_or_default(),
                status: Status::Paused,
                parent_id: fork,
                subagent_of: None,
                branch: None,
                profile: None,
                source: Some(SessionSource {
                    tool: "codex".into(),
                    version: meta.get("cli_version").map(text_of).unwrap_or_default(),
                    id,
                    stamp: None,
                    metadata: Some(json!({
                        "path": path.to_string_lossy(),
                        "session_meta": meta,
                        "turn_context": turn_context,
                        "turn_contexts": turn_contexts,
                        "turn_context_changes": policies,
                        "models": models,
                        "compactions": compactions,
                        "final_token_usage": last_total,
                    })),
                }),
                fork_seq: None,
                conversation_key: None,
                plan: plan_steps,
                tokens: FileTokens {
                    input,
                    output,
                    ..FileTokens::default()
                },
                task_state: None,
                todos: plan,
                skills: None,
                ledger: None,
                last_seq: None,
            },
            messages: b.messages,
            assets: b.assets,
        }
    }
}

fn merge_meta(slot: &mut Option<Value>, add: serde_json::Map<String, Value>) {
    if add.is_empty() {
        return;
    }
    match slot {
        Some(Value::Object(o)) => o.extend(add),
        _ => *slot = Some(Value::Object(add)),
    }
}

/// Adds one model call's usage (`last_token_usage`) to a message. Codex counts cached input
/// inside `input_tokens` and reasoning inside `output_tokens`.
fn add_usage(m: &mut file::FileMessage, u: &Value) {
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    let cached = n("cached_input_tokens");
    m.usage.input_tokens += n("input_tokens").saturating_sub(cached);
    m.usage.cached_input_tokens += cached;
    m.usage.output_tokens += n("output_tokens");
    m.usage.reasoning_tokens += n("reasoning_output_tokens");
}

/// A tool output's text, metadata and error flag. Outputs come as a JSON envelope
/// (`{"output": ..., "metadata": {"exit_code": N, ...}}`), as text with an exit code line
/// (`Exit code: N` or `Process exited with code N`), or as plain text.
fn output(raw: &Value) -> (String, Option<Value>, bool) {
    let text = match raw {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|i| i.get("text").map(text_of).unwrap_or_else(|| i.to_string()))
            .collect::<Vec<_>>()
            .join("\n"),
        other => text_of(other),
    };
    if let Ok(v) = serde_json::from_str::<Value>(&text)
        && let Some(out) = v.get("output")
    {
        let meta = v.get("metadata").cloned();
        let code = meta
            .as_ref()
            .and_then(|m| m.get("exit_code"))
            .and_then(Value::as_i64);
        return (text_of(out), meta, code.is_some_and(|c| c != 0));
    }
    let code = text.lines().take(4).find_map(|l| {
        let l = l.trim();
        l.strip_prefix("Exit code: ")
            .or_else(|| l.strip_prefix("Process exited with code "))
            .and_then(|n| n.trim().parse::<i64>().ok())
    });
    let meta = code.map(|c| json!({"exit_code": c}));
    (text, meta, code.is_some_and(|c| c != 0))
}

/// The uuid at the end of `rollout-<time>-<uuid>.jsonl`.
pub(crate) fn expected_id(path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_string_lossy().into_owned();
    let tail = stem.get(stem.len().checked_sub(36)?..)?;
    let ok = tail.bytes().enumerate().all(|(i, b)| {
        if [8, 13, 18, 23].contains(&i) {
            b == b'-'
        } else {
            b.is_ascii_hexdigit()
        }
    });
    ok.then(|| tail.to_string())
}

/// Converts one Codex rollout.
pub(crate) fn convert(path: &Path) -> std::io::Result<Converted> {
    let mut lines = Lines::open(path)?;
    let mut conv = Conv::default();
    let mut stats = ReadStats::default();
    while let Some(line) = lines.next_object()? {
        conv.feed(&line, &mut stats);
    }
    let mut s = lines.stats;
    s.unknown += stats.unknown;
    s.duplicates += stats.duplicates;
    Ok(Converted {
        sessions: vec![conv.finish(path)],
        stats: s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_comes_from_the_file_name_when_it_ends_in_a_uuid() {
        let id = |n: &str| expected_id(Path::new(n));
        assert_eq!(
            id("rollout-2026-01-01T00-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000.jsonl").as_deref(),
            Some("0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000")
        );
        assert_eq!(id("rollout-short.jsonl"), None);
        // A multi-byte character where the uuid would start must not split a character.
        assert_eq!(id("rollout-ééééééééééééééééééééééééééééé.jsonl"), None);
        assert_eq!(id("x-0199aaaa-bbbb-7ccc-8ddd-eeeeffff000é.jsonl"), None);
    }
}
