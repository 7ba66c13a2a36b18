//! How neocode's turn events and stored messages read as ACP `session/update`s: text and
//! reasoning chunks, tool calls with their kind, status, location and diff, plans.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Diff, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    SessionUpdate, Terminal, TextContent, ToolCall, ToolCallContent, ToolCallLocation,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use serde_json::Value;

use crate::runtime::agent::TurnEvent;
use crate::session::{Message, Part, Role};

fn text_block(text: impl Into<String>) -> ContentBlock {
    ContentBlock::Text(TextContent::new(text))
}

fn chunk(text: impl Into<String>) -> ContentChunk {
    ContentChunk::new(text_block(text))
}

/// The ACP kind of a neocode tool (the editor's icon and grouping).
pub(crate) fn tool_kind(name: &str) -> ToolKind {
    match name {
        "read_file" => ToolKind::Read,
        "edit_file" | "write_file" => ToolKind::Edit,
        "run_command" => ToolKind::Execute,
        "web_fetch" => ToolKind::Fetch,
        "grep" | "list_dir" | "glob" => ToolKind::Search,
        _ => ToolKind::Other,
    }
}

fn args(arguments: &str) -> Value {
    serde_json::from_str(arguments).unwrap_or(Value::Null)
}

fn arg<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Files' text as the editor holds it (its unsaved buffers), read for an edit's diff; a
/// file not in it is read from the disk.
#[derive(Default)]
pub(crate) struct Buffers(HashMap<PathBuf, String>);

impl Buffers {
    pub(crate) fn insert(&mut self, path: PathBuf, text: String) {
        self.0.insert(path, text);
    }

    fn read(&self, path: &Path) -> Option<String> {
        match self.0.get(path) {
            Some(text) => Some(text.clone()),
            None => std::fs::read_to_string(path).ok(),
        }
    }
}

/// The file an edit call in `event` changes (absolute), when the event is one.
pub(crate) fn edited_path(event: &TurnEvent, cwd: &Path) -> Option<PathBuf> {
    match event {
        TurnEvent::ToolCall { call, .. } if matches!(tool_kind(&call.name), ToolKind::Edit) => {
            Some(cwd.join(arg(&args(&call.arguments), "path")?))
        }
        TurnEvent::Step { event, .. } => edited_path(event, cwd),
        _ => None,
    }
}

/// The diff an edit makes, as whole-file old and new text when the file can be read now
/// (before the call runs; the editor's buffer when it holds one), else the edited snippets.
fn edit_diff(name: &str, v: &Value, cwd: &Path, buffers: &Buffers) -> Option<Diff> {
    let path = cwd.join(arg(v, "path")?);
    let old = buffers.read(&path);
    match name {
        "write_file" => Some(Diff::new(path, arg(v, "content")?).old_text(old)),
        "edit_file" => {
            let from = arg(v, "old_string").or_else(|| arg(v, "old"))?;
            let to = arg(v, "new_string").or_else(|| arg(v, "new"))?;
            Some(match old {
                Some(text) if text.contains(from) => {
                    let new = text.replacen(from, to, 1);
                    Diff::new(path, new).old_text(text)
                }
                _ => Diff::new(path, to).old_text(from.to_string()),
            })
        }
        _ => None,
    }
}

/// The `tool_call` update of a call the model made (pending until it runs or is approved).
pub(crate) fn tool_call(
    call: &crate::session::ToolCall,
    title: &str,
    cwd: &Path,
    buffers: &Buffers,
) -> ToolCall {
    let v = args(&call.arguments);
    let mut out = ToolCall::new(call.id.clone(), crate::sanitize::line(title).into_owned())
        .kind(tool_kind(&call.name))
        .status(ToolCallStatus::Pending)
        .raw_input(v.clone());
    if let Some(p) = arg(&v, "path") {
        out = out.locations(vec![ToolCallLocation::new(cwd.join(p))]);
    }
    if let Some(d) = edit_diff(&call.name, &v, cwd, buffers) {
        out = out.content(vec![ToolCallContent::Diff(d)]);
    }
    out
}

/// A command's output as a fenced block (`console`), so an editor shows it as terminal
/// output rather than reading it as markdown; the fence is longer than any backtick run in
/// the output.
pub(crate) fn terminal_text(output: &str) -> String {
    let longest = output.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let nl = if output.ends_with('\n') { "" } else { "\n" };
    format!("{fence}console\n{output}{nl}{fence}")
}

/// The `tool_call_update` of a finished call: completed or failed, with its result text (a
/// command's output as terminal text; after the editor's terminal it ran in, when it did).
pub(crate) fn tool_result(
    call_id: &str,
    text: &str,
    is_error: bool,
    command: bool,
    terminal_id: Option<&str>,
) -> ToolCallUpdate {
    let status = if is_error {
        ToolCallStatus::Failed
    } else {
        ToolCallStatus::Completed
    };
    let text = if command {
        terminal_text(text)
    } else {
        text.to_string()
    };
    let mut content: Vec<ToolCallContent> = terminal_id.map(terminal).into_iter().collect();
    content.push(ToolCallContent::from(text_block(text)));
    let fields = ToolCallUpdateFields::new().status(status).content(content);
    ToolCallUpdate::new(call_id.to_string(), fields)
}

/// A plan's steps as ACP plan entries (all pending: the run reports steps as they go).
fn plan(p: &crate::session::Plan, done: &[String]) -> Plan {
    let entries = p
        .steps
        .iter()
        .map(|s| {
            let status = if done.contains(&s.id) {
                PlanEntryStatus::Completed
            } else {
                PlanEntryStatus::Pending
            };
            PlanEntry::new(s.title.clone(), PlanEntryPriority::Medium, status)
        })
        .collect();
    Plan::new(entries)
}

/// The ids of the turn's command calls (`run_command`), whose results are terminal output,
/// and the editor's terminals they ran in.
#[derive(Default)]
pub(crate) struct Commands {
    ids: std::collections::HashSet<String>,
    terminals: HashMap<String, String>,
}

impl Commands {
    fn insert(&mut self, call_id: &str) {
        self.ids.insert(call_id.to_string());
    }

    fn contains(&self, call_id: &str) -> bool {
        self.ids.contains(call_id)
    }

    /// Call `call_id` runs in the editor's terminal `terminal_id`: the update that shows it
    /// on the call (in progress), live.
    pub(crate) fn in_terminal(&mut self, call_id: &str, terminal_id: &str) -> SessionUpdate {
        self.terminals
            .insert(call_id.to_string(), terminal_id.to_string());
        let fields = ToolCallUpdateFields::new()
            .status(ToolCallStatus::InProgress)
            .content(vec![terminal(terminal_id)]);
        SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(call_id.to_string(), fields))
    }
}

fn terminal(terminal_id: &str) -> ToolCallContent {
    ToolCallContent::Terminal(Terminal::new(terminal_id.to_string()))
}

/// The updates one turn event reads as (none for events the protocol has no place for;
/// approvals are asked separately, the finish is the prompt's response).
pub(crate) fn from_event(
    event: &TurnEvent,
    cwd: &Path,
    commands: &mut Commands,
    buffers: &Buffers,
) -> Vec<SessionUpdate> {
    match event {
        // A sub-agent's calls are in its own session (its id and the editor's tool call ids
        // could meet); its question is asked like the turn's own.
        TurnEvent::Subagent { .. } => Vec::new(),
        TurnEvent::TextDelta(t) => vec![SessionUpdate::AgentMessageChunk(chunk(t.clone()))],
        TurnEvent::ReasoningDelta(t) => vec![SessionUpdate::AgentThoughtChunk(chunk(t.clone()))],
        TurnEvent::ToolCall { call, summary, .. } => {
            if matches!(tool_kind(&call.name), ToolKind::Execute) {
                commands.insert(&call.id);
            }
            vec![SessionUpdate::ToolCall(tool_call(
                call, summary, cwd, buffers,
            ))]
        }
        TurnEvent::ToolResult {
            call_id,
            text,
            is_error,
            ..
        } => vec![SessionUpdate::ToolCallUpdate(tool_result(
            call_id,
            text,
            *is_error,
            commands.contains(call_id),
            commands.terminals.get(call_id).map(String::as_str),
        ))],
        TurnEvent::Warning { message, .. }
        | TurnEvent::Compacting { message }
        | TurnEvent::CompactionFailed { message } => {
            vec![SessionUpdate::AgentThoughtChunk(chunk(format!(
                "{message}\n"
            )))]
        }
        TurnEvent::PlanProposed { plan: p, .. } => vec![SessionUpdate::Plan(plan(p, &[]))],
        TurnEvent::Step { event, .. } => from_event(event, cwd, commands, buffers),
        TurnEvent::Started { .. }
        | TurnEvent::AssistantStored { .. }
        | TurnEvent::ApprovalNeeded { .. }
        | TurnEvent::StepStarted { .. }
        | TurnEvent::StepFinished { .. }
        | TurnEvent::Finished { .. } => Vec::new(),
    }
}

/// A stored transcript as the updates that replay it (`session/load`): user and agent
/// chunks, reasoning, tool calls and their results, in order.
pub(crate) fn replay(messages: &[Message], cwd: &Path) -> Vec<SessionUpdate> {
    let mut out = Vec::new();
    let mut commands = Commands::default();
    for m in messages {
        match m.role {
            Role::User => {
                out.push(SessionUpdate::UserMessageChunk(chunk(m.text())));
            }
            Role::Assistant => {
                for part in &m.parts {
                    match part {
                        Part::Text { text } if !text.is_empty() => {
                            out.push(SessionUpdate::AgentMessageChunk(chunk(text.clone())));
                        }
                        Part::Reasoning { text, .. } if !text.is_empty() => {
                            out.push(SessionUpdate::AgentThoughtChunk(chunk(text.clone())));
                        }
                        _ => {}
                    }
                }
                for call in &m.tool_calls {
                    if matches!(tool_kind(&call.name), ToolKind::Execute) {
                        commands.insert(&call.id);
                    }
                    let disk = Buffers::default();
                    out.push(SessionUpdate::ToolCall(tool_call(
                        call, &call.name, cwd, &disk,
                    )));
                }
            }
            Role::Tool => {
                if let Some(id) = &m.tool_call_id {
                    out.push(SessionUpdate::ToolCallUpdate(tool_result(
                        id,
                        &m.text(),
                        m.is_error,
                        commands.contains(id),
                        None,
                    )));
                }
            }
            Role::System => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Call `c1` of tool `name` with JSON `arguments`.
    fn call(name: &str, arguments: &str) -> crate::session::ToolCall {
        crate::session::ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn an_edit_reads_as_a_whole_file_diff_with_its_location() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.rs"), "fn a() {}\nfn b() {}\n").unwrap();
        let call = call(
            "edit_file",
            r#"{"path":"a.rs","old_string":"fn b() {}","new_string":"fn c() {}"}"#,
        );
        let v = serde_json::to_value(tool_call(
            &call,
            "edit a.rs",
            dir.path(),
            &Buffers::default(),
        ))
        .unwrap();
        assert_eq!(v["kind"], "edit");
        assert_eq!(
            v["locations"][0]["path"],
            dir.path().join("a.rs").display().to_string()
        );
        let diff = &v["content"][0];
        assert_eq!(diff["type"], "diff");
        assert_eq!(diff["oldText"], "fn a() {}\nfn b() {}\n");
        assert_eq!(diff["newText"], "fn a() {}\nfn c() {}\n");
    }

    #[test]
    fn an_edits_old_text_is_the_editors_buffer_when_it_holds_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.rs"), "on disk\n").unwrap();
        let call = call("write_file", r#"{"path":"a.rs","content":"new\n"}"#);
        let mut buffers = Buffers::default();
        buffers.insert(dir.path().join("a.rs"), "in the buffer\n".into());
        let v = serde_json::to_value(tool_call(&call, "write a.rs", dir.path(), &buffers)).unwrap();
        assert_eq!(v["content"][0]["oldText"], "in the buffer\n");
        let v =
            serde_json::to_value(tool_call(&call, "w", dir.path(), &Buffers::default())).unwrap();
        assert_eq!(v["content"][0]["oldText"], "on disk\n");
    }

    #[test]
    fn a_command_is_execute_and_a_failed_result_is_failed() {
        assert!(matches!(tool_kind("run_command"), ToolKind::Execute));
        let v = serde_json::to_value(tool_result("c1", "exit 1", true, false, None)).unwrap();
        assert_eq!(v["status"], "failed");
        assert_eq!(v["content"][0]["content"]["text"], "exit 1");
    }

    #[test]
    fn command_output_is_fenced_terminal_text_longer_than_its_backticks() {
        assert_eq!(terminal_text("ok\n"), "```console\nok\n```");
        assert_eq!(terminal_text("a ```` b"), "`````console\na ```` b\n`````");
        let v = serde_json::to_value(tool_result("c1", "hi", false, true, None)).unwrap();
        assert_eq!(v["content"][0]["content"]["text"], "```console\nhi\n```");
    }

    #[test]
    fn a_command_run_in_the_editors_terminal_keeps_the_terminal_on_its_result() {
        let mut commands = Commands::default();
        commands.insert("c1");
        let live = serde_json::to_value(commands.in_terminal("c1", "t-7")).unwrap();
        assert_eq!(live["status"], "in_progress");
        assert_eq!(live["content"][0]["type"], "terminal");
        assert_eq!(live["content"][0]["terminalId"], "t-7");
        let event = TurnEvent::ToolResult {
            call_id: "c1".into(),
            text: "ok\n".into(),
            is_error: false,
            seq: 3,
            permission: None,
            diagnostics: None,
        };
        let out = from_event(&event, Path::new("/"), &mut commands, &Buffers::default());
        let v = serde_json::to_value(&out[0]).unwrap();
        assert_eq!(v["content"][0]["terminalId"], "t-7", "{v}");
        assert_eq!(v["content"][1]["content"]["text"], "```console\nok\n```");
    }
}
