//! nonoka's requests in neocode's terms: the flat chat request (its contract is checked in
//! `contract`), and
//! its history as the provider renders the AI SDK's prompt (assistant text with
//! `<tool_call>name(json)</tool_call>` markers and flat `tool_calls`, calls the bridge ran
//! without their results, approval answers inside `tool` messages).

use std::collections::HashSet;

use serde::Deserialize;
use serde_json::Value;

use super::contract::{Contract, FlatLimits};
use crate::bridge::history::Incoming;
use crate::runtime::provider::ToolDef;
use crate::runtime::tools::verification::Receipt;
use crate::session::{Role, ToolCall};

/// A nonoka `chat` request. Fields neocode does not know are ignored.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct Chat {
    #[serde(default)]
    pub protocol: Option<Contract>,
    /// `chat` (default) or `title`.
    #[serde(default)]
    pub purpose: Option<String>,
    pub messages: Vec<Message>,
    /// The host's (OpenCode's) tools; not offered to the model.
    #[serde(default)]
    pub tools: Option<Vec<Value>>,
    #[serde(default)]
    pub external_mcp_servers: Option<Vec<Value>>,
    #[serde(default)]
    pub external_skills: Option<Vec<Value>>,
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub new_session: bool,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub request_id: Option<String>,
    #[serde(flatten)]
    pub limits: FlatLimits,
}

/// One message as the provider sends it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct Message {
    pub role: String,
    #[serde(default)]
    pub content: Value,
    #[serde(default)]
    pub tool_call_id: Option<String>,
    #[serde(default)]
    pub tool_calls: Option<Vec<FlatCall>>,
    /// A host tool's structured receipt; its text stands in when `content` is empty.
    #[serde(default)]
    pub result: Option<Value>,
}

/// A call as nonoka sends it: `{id, name, arguments}` (arguments a JSON text).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct FlatCall {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub arguments: Value,
}

impl FlatCall {
    fn to_call(&self) -> ToolCall {
        ToolCall {
            id: self.id.clone(),
            name: self.name.clone(),
            arguments: match &self.arguments {
                Value::String(s) => s.clone(),
                Value::Null => "{}".to_string(),
                v => v.to_string(),
            },
        }
    }
}

/// Arguments the AI SDK kept as the JSON text they streamed as, then encoded once more
/// (`"{\"path\":\"a\"}"`), decoded to that text; any other arguments as they are.
fn unwrap_encoded(arguments: &str) -> String {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::String(inner)) if serde_json::from_str::<Value>(&inner).is_ok() => inner,
        _ => arguments.to_string(),
    }
}

/// The history in the store's terms, and the approval answers it ends with.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Translated {
    /// Without system messages; approval answers at the end are not in it.
    pub history: Vec<Incoming>,
    /// `(call id, approved)` from the `tool-approval-response` parts of the trailing tool
    /// messages: the history resumes a turn paused for these calls.
    pub approvals: Vec<(String, bool)>,
    /// The trailing tool messages that are results (of the caller's own tools, which it ran):
    /// the history resumes a turn that waits for them.
    pub results: Vec<HostResult>,
    /// Tool messages answering no call of the history (left out).
    pub orphans: usize,
}

/// A result the caller sends for a call of one of its own tools.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HostResult {
    pub call_id: String,
    /// What the model reads: the result's text, then the one-line summary of its
    /// verification receipt (or the reason the receipt was not accepted).
    pub text: String,
    /// nonoka's structured receipt (`result`), kept with the stored result.
    pub receipt: Option<Value>,
    /// The receipt's verification, validated.
    pub verification: Option<Receipt>,
    /// Why the receipt was not accepted (stored and warned about, never dropped silently).
    pub invalid: Option<String>,
}

impl HostResult {
    /// The stored result's `tool_metadata`: who ran it, the receipt as sent, and its
    /// verification (or why it was refused).
    pub(crate) fn metadata(&self) -> Option<Value> {
        let receipt = self.receipt.as_ref()?;
        let mut m = serde_json::json!({"executor": "host", "receipt": receipt});
        if let Some(v) = self
            .verification
            .as_ref()
            .and_then(|v| serde_json::to_value(v).ok())
        {
            m["verification"] = v;
        }
        if let Some(e) = &self.invalid {
            m["verification_error"] = e.as_str().into();
        }
        Some(m)
    }
}

/// Checks a host receipt (`NonokaExternalToolReceipt`): its `completeness` and `truncated`
/// when present, and its `verification` when present. `Ok(None)`: no verification.
/// Why a host receipt is refused (the message names the field).
#[derive(Debug, thiserror::Error)]
enum BadReceipt {
    #[error("at `completeness`: {0} is not complete, partial or unknown")]
    Completeness(Value),
    #[error("at `truncated`: not a boolean")]
    Truncated,
    #[error("at `verification` {0}")]
    Verification(crate::runtime::tools::verification::ReceiptError),
}

fn check_receipt(result: &Value) -> Result<Option<Receipt>, BadReceipt> {
    let Some(obj) = result.as_object() else {
        return Ok(None);
    };
    if let Some(c) = obj.get("completeness")
        && !matches!(c.as_str(), Some("complete" | "partial" | "unknown"))
    {
        return Err(BadReceipt::Completeness(c.clone()));
    }
    if obj.get("truncated").is_some_and(|t| !t.is_boolean()) {
        return Err(BadReceipt::Truncated);
    }
    match obj.get("verification") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => Receipt::parse(v)
            .map(Some)
            .map_err(BadReceipt::Verification),
    }
}

fn host_result(m: &Message) -> HostResult {
    let mut text = tool_text(m);
    let (verification, invalid) = match m.result.as_ref().map(check_receipt) {
        Some(Ok(v)) => (v, None),
        Some(Err(e)) => (
            None,
            Some(crate::sanitize::line(&e.to_string()).into_owned()),
        ),
        None => (None, None),
    };
    if let Some(v) = &verification {
        text = format!("{}\n{}", text.trim_end(), v.line());
    }
    if let Some(e) = &invalid {
        text = format!(
            "{}\n[the host's verification receipt was not accepted ({e}); this result proves no check]",
            text.trim_end()
        );
    }
    HostResult {
        call_id: m.tool_call_id.clone().unwrap_or_default(),
        text,
        receipt: m.result.clone(),
        verification,
        invalid,
    }
}

/// A tool message's text: its content, else its receipt's result.
fn tool_text(m: &Message) -> String {
    let text = text_of(&m.content);
    match &m.result {
        Some(r) if text.is_empty() => match r.get("result").unwrap_or(r) {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        },
        _ => text,
    }
}

/// The caller's tool definitions (`{name, description, parameters}`) that may be offered to
/// the model, and the names left out because neocode has a tool of that name (so a call is
/// never ambiguous, and never runs twice).
pub(crate) fn host_tools(tools: &[Value]) -> (Vec<ToolDef>, Vec<String>) {
    let mut offered: Vec<ToolDef> = Vec::new();
    let mut hidden = Vec::new();
    for t in tools {
        let Some(name) = t
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
        else {
            continue;
        };
        if offered.iter().any(|o| o.name == name) {
            continue;
        }
        let ours = crate::runtime::tools::spec(name).is_some()
            || name == "skill"
            || name.starts_with("mcp__");
        if ours {
            hidden.push(name.to_string());
            continue;
        }
        let description = t
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let parameters = t
            .get("parameters")
            .cloned()
            .unwrap_or_else(|| serde_json::json!({"type": "object"}));
        offered.push(ToolDef::new(name, description, parameters));
    }
    (offered, hidden)
}

/// Text of a nonoka `content`: a string, null, or text parts.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        v => v.to_string(),
    }
}

/// The approval answers a tool message carries (`[{"type":"tool-approval-response",
/// "toolCallId", "approved"}]` as its content), if it is one.
fn approval_answers(m: &Message) -> Option<Vec<(String, bool)>> {
    let parts: Vec<Value> = serde_json::from_str(&text_of(&m.content)).ok()?;
    let answers: Vec<(String, bool)> = parts
        .iter()
        .filter(|p| p.get("type").and_then(Value::as_str) == Some("tool-approval-response"))
        .filter_map(|p| {
            let id = p
                .get("toolCallId")
                .or_else(|| p.get("tool_call_id"))
                .or_else(|| p.get("approvalId"))
                .and_then(Value::as_str)?;
            let approved = p.get("approved").and_then(Value::as_bool).unwrap_or(false);
            Some((id.to_string(), approved))
        })
        .collect();
    (!answers.is_empty()).then_some(answers)
}

/// Converts the provider's messages. Calls already seen earlier in the history are dropped
/// (a resumed turn announces its paused call again); a call no tool message answers gets a
/// placeholder result that matches the stored one, and so does a tool message answering a
/// call of neocode's own tools (neocode ran it: the stored result is the result, whatever the
/// host made of the call), and so does one of the host's tools (`is_host`), which carries
/// its receipt's summary line as the stored result does.
pub(crate) fn translate(messages: &[Message], is_host: &dyn Fn(&str) -> bool) -> Translated {
    let mut end = messages.len();
    let mut approvals = Vec::new();
    let mut results = Vec::new();
    while end > 0 && messages[end - 1].role == "tool" {
        let m = &messages[end - 1];
        match approval_answers(m) {
            Some(mut a) => {
                a.append(&mut approvals);
                approvals = a;
            }
            None => results.insert(0, host_result(m)),
        }
        end -= 1;
    }
    let messages = &messages[..end];
    let answered: HashSet<&str> = messages
        .iter()
        .filter(|m| m.role == "tool")
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    let mut out = Translated {
        approvals,
        results,
        ..Translated::default()
    };
    // Call id -> tool name.
    let mut called: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    let mut has_result: HashSet<String> = HashSet::new();
    for m in messages {
        match m.role.as_str() {
            "user" => out.history.push(plain(Role::User, text_of(&m.content))),
            "assistant" => {
                let calls: Vec<ToolCall> = m
                    .tool_calls
                    .iter()
                    .flatten()
                    .filter(|c| !c.id.is_empty() && !c.name.is_empty())
                    .map(FlatCall::to_call)
                    .collect();
                for (text, calls) in segments(&text_of(&m.content), &calls) {
                    let fresh: Vec<ToolCall> = calls
                        .into_iter()
                        .filter(|c| called.insert(c.id.clone(), c.name.clone()).is_none())
                        .map(|mut c| {
                            c.arguments = unwrap_encoded(&c.arguments);
                            c
                        })
                        .collect();
                    if text.trim().is_empty() && fresh.is_empty() {
                        continue;
                    }
                    let mut a = plain(Role::Assistant, text);
                    a.tool_calls = fresh.clone();
                    out.history.push(a);
                    for c in fresh.iter().filter(|c| !answered.contains(c.id.as_str())) {
                        has_result.insert(c.id.clone());
                        out.history.push(placeholder(&c.id));
                    }
                }
            }
            "tool" => {
                let id = m.tool_call_id.clone().unwrap_or_default();
                let Some(name) = called.get(&id) else {
                    out.orphans += 1;
                    continue;
                };
                let ours = !is_host(name);
                if !has_result.insert(id.clone()) {
                    continue;
                }
                if approval_answers(m).is_some() {
                    out.history.push(placeholder(&id));
                    continue;
                }
                // A host result with the summary line it was stored with (if the store lacks
                // it, it is appended so); either way the stored result of a call is what
                // counts, so it matches whatever its text (the provider re-renders receipts).
                let text = if ours {
                    tool_text(m)
                } else {
                    host_result(m).text
                };
                let mut t = plain(Role::Tool, text);
                t.tool_call_id = Some(id);
                t.placeholder = true;
                out.history.push(t);
            }
            // system and developer messages are the caller's business, as in the native
            // protocol; unknown roles are skipped like the provider skips them.
            _ => {}
        }
    }
    out
}

fn plain(role: Role, text: String) -> Incoming {
    Incoming {
        role,
        text,
        tool_calls: Vec::new(),
        tool_call_id: None,
        placeholder: false,
    }
}

/// The result of a call the caller sent without one: it stands for the stored result.
fn placeholder(call_id: &str) -> Incoming {
    Incoming {
        role: Role::Tool,
        text: "[the caller sent this call without its result]".into(),
        tool_calls: Vec::new(),
        tool_call_id: Some(call_id.to_string()),
        placeholder: true,
    }
}

/// Splits an assistant message the provider rendered from one AI SDK message (text, calls,
/// results, text, ...) into the model calls it came from: text up to a run of
/// `<tool_call>` markers is one call's text, the run its calls. Calls whose marker is not
/// in the text belong to the last model call.
fn segments(content: &str, calls: &[ToolCall]) -> Vec<(String, Vec<ToolCall>)> {
    let mut out: Vec<(String, Vec<ToolCall>)> = Vec::new();
    let mut text = String::new();
    let mut group: Vec<ToolCall> = Vec::new();
    let mut pos = 0;
    let mut unplaced = Vec::new();
    for c in calls {
        let marker = format!("<tool_call>{}({})</tool_call>", c.name, c.arguments);
        let Some(at) = content[pos..].find(&marker).map(|i| i + pos) else {
            unplaced.push(c.clone());
            continue;
        };
        let between = &content[pos..at];
        if !between.trim().is_empty() && !group.is_empty() {
            out.push((std::mem::take(&mut text), std::mem::take(&mut group)));
        }
        text.push_str(between);
        group.push(c.clone());
        pos = at + marker.len();
    }
    let rest = &content[pos..];
    if group.is_empty() {
        text.push_str(rest);
        group = unplaced;
        out.push((text, group));
    } else {
        out.push((text, group));
        if !rest.trim().is_empty() || !unplaced.is_empty() {
            out.push((rest.to_string(), unplaced));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msgs(v: Value) -> Vec<Message> {
        serde_json::from_value(v).unwrap()
    }

    /// With no host tools.
    fn translate_all(m: &[Message]) -> Translated {
        translate(m, &|_| false)
    }

    /// Role, text, call ids, answered call, placeholder.
    type Shape = (Role, String, Vec<String>, Option<String>, bool);

    fn shape(t: &Translated) -> Vec<Shape> {
        t.history
            .iter()
            .map(|m| {
                (
                    m.role,
                    m.text.clone(),
                    m.tool_calls.iter().map(|c| c.id.clone()).collect(),
                    m.tool_call_id.clone(),
                    m.placeholder,
                )
            })
            .collect()
    }

    #[test]
    fn a_rendered_provider_executed_turn_splits_back_into_its_model_calls() {
        let t = translate_all(&msgs(json!([
            {"role": "system", "content": "you are opencode"},
            {"role": "user", "content": "read a.rs"},
            {"role": "assistant",
             "content": "Let me look.<tool_call>read_file({\"path\":\"a.rs\"})</tool_call>It is empty.",
             "tool_calls": [{"id": "c1", "name": "read_file", "arguments": "{\"path\":\"a.rs\"}"}]},
            {"role": "user", "content": "thanks"}
        ])));
        assert_eq!(
            shape(&t),
            [
                (Role::User, "read a.rs".into(), vec![], None, false),
                (
                    Role::Assistant,
                    "Let me look.".into(),
                    vec!["c1".into()],
                    None,
                    false
                ),
                (
                    Role::Tool,
                    "[the caller sent this call without its result]".into(),
                    vec![],
                    Some("c1".into()),
                    true
                ),
                (Role::Assistant, "It is empty.".into(), vec![], None, false),
                (Role::User, "thanks".into(), vec![], None, false),
            ]
        );
        assert!(t.approvals.is_empty());
    }

    #[test]
    fn trailing_approval_answers_are_taken_out_and_earlier_ones_stand_for_results() {
        let answer = |id: &str, ok: bool| {
            json!({"role": "tool", "tool_call_id": id,
                   "content": json!([{"type": "tool-approval-response", "toolCallId": id, "approved": ok}]).to_string()})
        };
        let call = json!({"role": "assistant", "content": "<tool_call>write_file({})</tool_call>",
                          "tool_calls": [{"id": "w1", "name": "write_file", "arguments": "{}"}]});
        let t = translate_all(&msgs(
            json!([{"role": "user", "content": "go"}, call, answer("w1", true)]),
        ));
        assert_eq!(t.approvals, [("w1".to_string(), true)]);
        // The answer is not part of the history (a resume runs on the stored transcript).
        assert_eq!(t.history.len(), 3);
        assert!(t.history.iter().all(|m| !m.text.contains("approval")));
        let again = json!({"role": "assistant", "content": "<tool_call>write_file({})</tool_call>Done.",
                           "tool_calls": [{"id": "w1", "name": "write_file", "arguments": "{}"}]});
        let t = translate_all(&msgs(json!([
            {"role": "user", "content": "go"}, call, answer("w1", false), again,
            {"role": "user", "content": "next"}
        ])));
        assert!(t.approvals.is_empty());
        let s = shape(&t);
        assert_eq!(s.len(), 5, "{s:?}");
        assert_eq!(s[2].3.as_deref(), Some("w1"));
        assert!(s[2].4);
        // The resumed turn's repeated announcement of w1 is not a second call.
        assert_eq!((s[3].1.as_str(), s[3].2.len()), ("Done.", 0));
    }

    #[test]
    fn markers_split_text_into_model_calls_and_unmarked_calls_go_last() {
        let call = |id: &str, name: &str| ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: "{}".into(),
        };
        let (c1, c2, c3) = (call("1", "a"), call("2", "b"), call("3", "c"));
        let text = "one <tool_call>a({})</tool_call>two<tool_call>b({})</tool_call>\n\
                    <tool_call>c({})</tool_call> three";
        let segs = segments(text, &[c1.clone(), c2.clone(), c3]);
        let ids = |v: &[ToolCall]| v.iter().map(|c| c.id.clone()).collect::<Vec<_>>();
        let got: Vec<(String, Vec<String>)> = segs
            .iter()
            .map(|(t, c)| (t.trim().to_string(), ids(c)))
            .collect();
        assert_eq!(
            got,
            [
                ("one".to_string(), vec!["1".to_string()]),
                ("two".to_string(), vec!["2".to_string(), "3".to_string()]),
                ("three".to_string(), vec![]),
            ]
        );
        // No markers (a provider that does not draw them): one message with every call.
        let segs = segments("just text", &[c1, c2]);
        assert_eq!(segs.len(), 1);
        assert_eq!(ids(&segs[0].1), ["1", "2"]);
    }

    #[test]
    fn arguments_encoded_twice_are_decoded_after_the_markers_are_found() {
        let t = translate_all(&msgs(json!([
            {"role": "user", "content": "read"},
            {"role": "assistant",
             "content": "<tool_call>read_file(\"{\\\"path\\\":\\\"a\\\"}\")</tool_call>Done.",
             "tool_calls": [{"id": "c1", "name": "read_file", "arguments": "\"{\\\"path\\\":\\\"a\\\"}\""}]},
            {"role": "user", "content": "ok"}
        ])));
        assert_eq!(t.history.len(), 5, "{:?}", t.history);
        assert_eq!(t.history[1].tool_calls[0].arguments, r#"{"path":"a"}"#);
        assert_eq!(t.history[3].text, "Done.");
        assert_eq!(unwrap_encoded("{}"), "{}");
        assert_eq!(unwrap_encoded("\"plain\""), "\"plain\"");
    }

    #[test]
    fn a_result_of_our_own_call_or_a_host_call_stands_for_the_stored_one() {
        let history = msgs(json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "",
             "tool_calls": [{"id": "r1", "name": "read_file", "arguments": "{}"},
                            {"id": "h1", "name": "bash", "arguments": "{}"}]},
            {"role": "tool", "tool_call_id": "r1", "content": "Model tried to call unavailable tool"},
            {"role": "tool", "tool_call_id": "h1", "content": "hi"},
            {"role": "user", "content": "next"}
        ]));
        let t = translate(&history, &|n| n == "bash");
        let s = shape(&t);
        assert_eq!(s[2].3.as_deref(), Some("r1"));
        assert!(s[2].4, "neocode's own call: the stored result counts");
        assert_eq!(
            s[2].1, "Model tried to call unavailable tool",
            "kept if appended"
        );
        assert_eq!((s[3].3.as_deref(), s[3].4), (Some("h1"), true));
        assert_eq!(s[3].1, "hi");
    }

    #[test]
    fn host_tools_named_like_ours_are_hidden() {
        let (offered, hidden) = host_tools(&[
            json!({"name": "bash", "description": "shell", "parameters": {"type": "object"}}),
            json!({"name": "grep", "description": "OpenCode's grep"}),
            json!({"name": "bash", "description": "twice"}),
            json!({"description": "nameless"}),
        ]);
        let names: Vec<&str> = offered.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["bash"]);
        assert_eq!(hidden, ["grep"]);
    }

    #[test]
    fn trailing_results_are_taken_out_with_their_receipts() {
        let t = translate_all(&msgs(json!([
            {"role": "system", "content": "s"},
            {"role": "tool", "tool_call_id": "h1", "content": "", "result": {"result": "hi", "completeness": "complete"}}
        ])));
        assert!(t.history.is_empty());
        assert_eq!(t.results.len(), 1);
        assert_eq!(
            (t.results[0].call_id.as_str(), t.results[0].text.as_str()),
            ("h1", "hi")
        );
        assert_eq!(
            t.results[0].receipt.as_ref().unwrap()["completeness"],
            "complete"
        );
    }

    #[test]
    fn host_receipts_are_validated_summarised_and_never_dropped() {
        let verification = json!({"status": "passed", "level": "focused", "kind": "test",
            "command": "NONOKA_VERIFY=focused pytest -q", "cwd": "/w", "exit_code": 0,
            "timed_out": false, "truncated": false, "completeness": "complete",
            "executed_tests": 2, "summary": "2 passed"});
        let good = msgs(
            json!([{"role": "tool", "tool_call_id": "h1", "content": "2 passed",
            "result": {"result": "2 passed", "completeness": "complete", "verification": verification}}]),
        );
        let r = &translate_all(&good).results[0];
        assert_eq!(r.invalid, None);
        assert_eq!(
            r.text,
            "2 passed\n[verification: test (focused) passed: 2 passed; `NONOKA_VERIFY=focused pytest -q`]"
        );
        let meta = r.metadata().unwrap();
        assert_eq!(meta["verification"]["status"], "passed");
        assert_eq!(meta["receipt"]["completeness"], "complete");
        let mut broken = verification;
        broken["level"] = json!("thorough");
        let bad = msgs(
            json!([{"role": "tool", "tool_call_id": "h1", "content": "2 passed",
            "result": {"result": "2 passed", "completeness": "complete", "verification": broken}}]),
        );
        let r = &translate_all(&bad).results[0];
        let why = r.invalid.as_deref().unwrap();
        assert!(
            why.contains("verification") && why.contains("level"),
            "{why}"
        );
        assert!(r.text.contains("was not accepted"), "{}", r.text);
        assert!(r.metadata().unwrap()["verification_error"].is_string());
        let odd = msgs(
            json!([{"role": "tool", "tool_call_id": "h1", "content": "x",
            "result": {"result": "x", "completeness": "most"}}]),
        );
        assert!(translate_all(&odd).results[0].invalid.is_some());
    }
}
