//! Tests of message and tool-call layout.

use super::tool::args_summary;
use super::*;
use crate::session::{NewMessage, Part, Role, ToolCall};
use ratatui::style::{Color, Modifier};

fn msg(role: Role, parts: Vec<Part>, tool_calls: Vec<ToolCall>) -> Message {
    let new = NewMessage {
        role: Some(role),
        parts,
        tool_calls,
        ..NewMessage::default()
    };
    Message::stored(3, new)
}

fn text(lines: &[Line<'_>]) -> Vec<String> {
    lines.iter().map(ToString::to_string).collect()
}

#[test]
fn the_plan_drafting_instructions_are_labelled_and_folded() {
    let t = Theme::new(false);
    let mut m = msg(
        Role::System,
        vec![Part::text("You are drafting a plan. Call update_plan ...")],
        vec![],
    );
    m.tool_metadata = Some(serde_json::json!({"plan_instructions": "draft"}));
    let shown = text(&message_lines(&m, 80, false, &HashMap::new(), t));
    assert!(
        shown[0].starts_with("Plan-drafting instructions (neocode to the model)  #3"),
        "{shown:#?}"
    );
    assert!(!shown[0].starts_with("System"), "{shown:#?}");
    assert!(
        !shown.iter().any(|l| l.contains("update_plan")),
        "{shown:#?}"
    );
    let open = text(&message_lines(&m, 80, true, &HashMap::new(), t));
    assert!(open.iter().any(|l| l.contains("update_plan")), "{open:#?}");
}

#[test]
fn more_lines_counts_lines_not_the_rows_they_wrap_into() {
    let t = Theme::new(false);
    let long = |i: usize| format!("line {i} {}", "word ".repeat(8));
    let out: String = (0..6).map(|i| long(i) + "\n").collect();
    let mut m = msg(Role::Tool, vec![Part::text(out)], vec![]);
    m.tool_call_id = Some("c1".into());
    let shown = text(&message_lines(&m, 40, false, &HashMap::new(), t));
    // Each line wraps into two rows: two whole lines fit, four are left.
    assert!(
        shown.iter().any(|l| l.contains("… 4 more lines")),
        "{shown:#?}"
    );
    let expanded = text(&message_lines(&m, 40, true, &HashMap::new(), t));
    assert!(
        expanded.iter().any(|l| l.contains("line 5")),
        "{expanded:#?}"
    );
}

fn write_call(content: &str) -> Message {
    let args = serde_json::json!({"path": "src/big.rs", "content": content}).to_string();
    msg(
        Role::Assistant,
        Vec::new(),
        vec![ToolCall {
            id: "c1".into(),
            name: "write_file".into(),
            arguments: args,
        }],
    )
}

#[test]
fn injected_messages_carry_a_dim_mark() {
    let t = Theme::new(false);
    let tools = HashMap::new();
    let text = vec![Part::Text {
        text: "<system-reminder>ctx</system-reminder>".into(),
    }];
    let mut m = msg(Role::User, text, Vec::new());
    let head = message_lines(&m, 60, false, &tools, t).remove(0);
    assert!(!head.to_string().contains("injected"), "{head}");
    m.extra.injected = true;
    let head = message_lines(&m, 60, false, &tools, t).remove(0);
    let mark = head
        .spans
        .iter()
        .find(|s| s.content.trim() == "injected")
        .unwrap_or_else(|| panic!("no mark in {head}"));
    assert_eq!(mark.style, t.dim());
}

#[test]
fn a_big_write_collapses_to_a_few_lines_and_expands_with_real_newlines() {
    let t = Theme::new(false);
    let content: String = (0..600)
        .map(|i| format!("line {i} of the file\n"))
        .collect();
    assert!(content.len() > 12_000);
    let m = write_call(&content);
    let collapsed = text(&message_lines(&m, 80, false, &HashMap::new(), t));
    assert!(collapsed.len() <= 9, "{collapsed:#?}");
    assert!(
        collapsed[1].contains("write_file  src/big.rs …"),
        "{collapsed:#?}"
    );
    // Collapsed: the new content as a diff.
    assert_eq!(collapsed[2], "    + line 0 of the file");
    assert_eq!(collapsed[5], "    + line 3 of the file");
    assert!(
        collapsed[6].contains("+ … 596 more lines"),
        "{collapsed:#?}"
    );
    let expanded = text(&message_lines(&m, 80, true, &HashMap::new(), t));
    assert!(expanded.iter().any(|l| l == "      line 599 of the file"));
    assert!(expanded.iter().any(|l| l == "    path: src/big.rs"));
    assert!(
        !expanded
            .iter()
            .any(|l| l.contains("\\n") || l.contains("^J"))
    );
}

#[test]
fn a_multi_line_command_summary_shows_its_first_line() {
    assert_eq!(args_summary(r#"{"command":"echo a\necho b"}"#), "echo a …");
    assert_eq!(args_summary("not json\nsecond"), "not json …");
}

#[test]
fn tool_output_colours_become_styles() {
    let t = Theme::new(true);
    let mut m = msg(
        Role::Tool,
        vec![Part::Text {
            text: "\x1b[36mcyan\x1b[0m plain \x1b[2Jafter".into(),
        }],
        Vec::new(),
    );
    m.tool_call_id = Some("c1".into());
    let lines = message_lines(&m, 80, false, &HashMap::new(), t);
    assert_eq!(lines[1].to_string(), "  │ cyan plain ^[[2Jafter");
    let cyan = lines[1].spans.iter().find(|s| s.content == "cyan").unwrap();
    assert_eq!(cyan.style.fg, Some(Color::Indexed(6)));
    // Without colour the attributes stay and the colour goes.
    let plain = message_lines(&m, 80, false, &HashMap::new(), Theme::new(false));
    assert!(plain[1].spans.iter().all(|s| s.style.fg.is_none()));
}

#[test]
fn reasoning_is_markdown_and_marked() {
    let t = Theme::new(false);
    let m = msg(
        Role::Assistant,
        vec![
            Part::reasoning("Think **hard**"),
            Part::Text {
                text: "Answer".into(),
            },
        ],
        Vec::new(),
    );
    let lines = message_lines(&m, 60, false, &HashMap::new(), t);
    assert_eq!(lines[1].to_string(), "  ∴ Think hard");
    let hard = lines[1].spans.iter().find(|s| s.content == "hard").unwrap();
    assert!(
        hard.style
            .add_modifier
            .contains(Modifier::BOLD | Modifier::ITALIC)
    );
    assert_eq!(lines[2].to_string(), "  Answer");
}

#[test]
fn user_messages_keep_their_line_breaks() {
    let t = Theme::new(false);
    let m = msg(
        Role::User,
        vec![Part::Text {
            text: "first\nsecond".into(),
        }],
        Vec::new(),
    );
    let lines = text(&message_lines(&m, 60, false, &HashMap::new(), t));
    assert_eq!(&lines[1..3], ["  first", "  second"]);
}

#[test]
fn a_tool_result_shows_its_rule_and_hook_runs_dim() {
    let t = Theme::new(false);
    let mut m = msg(Role::Tool, vec![Part::text("ok")], vec![]);
    m.tool_call_id = Some("c1".into());
    m.tool_metadata = Some(serde_json::json!({
        "permission": {"decision": "allow", "by": "rule", "rule": "run_command(cargo test *)",
                       "file": "/w/.neocode/permissions.toml", "line": 2},
        "hooks": [{"event": "PreToolUse", "command": "lint \u{1b}[2J", "exit_code": 0,
                   "duration_ms": 12, "timed_out": false},
                  {"event": "PostToolUse", "command": "sleep 9", "exit_code": null,
                   "duration_ms": 500, "timed_out": true}]
    }));
    let lines = message_lines(&m, 100, false, &HashMap::new(), t);
    let shown = text(&lines);
    let rule = "  allowed by rule run_command(cargo test *) (/w/.neocode/permissions.toml:2)";
    let at = shown.iter().position(|l| l == rule);
    assert!(at.is_some(), "{shown:#?}");
    assert_eq!(lines[at.unwrap()].spans[0].style, t.dim());
    assert!(
        shown
            .iter()
            .any(|l| l.starts_with("  hook PreToolUse `lint ") && l.ends_with("· exit 0 · 12 ms")),
        "{shown:#?}"
    );
    assert!(!shown.iter().any(|l| l.contains('\u{1b}')), "sanitised");
    assert!(
        shown
            .contains(&"  hook PostToolUse `sleep 9` · killed at its timeout · 500 ms".to_string()),
        "{shown:#?}"
    );
}
