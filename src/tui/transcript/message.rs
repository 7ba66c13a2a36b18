//! One message laid out into lines: its head (role, marks, seq, tokens) and its parts.

use std::collections::HashMap;

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::marks::{CANCELLED_MARK, COLLAPSED_LINES};
use super::tool::{call_lines, capped, output_lines};
use crate::format;
use crate::sanitize;
use crate::session::{Message, Part, Role};
use crate::tui::markdown;
use crate::tui::theme::Theme;

/// Role label and style.
fn role_label(m: &Message, tools: &HashMap<String, String>, theme: Theme) -> (String, Style) {
    match m.role {
        Role::User => ("You".into(), theme.user()),
        Role::Assistant => ("Assistant".into(), theme.assistant()),
        Role::System if is_plan_instructions(m) => (
            "Plan-drafting instructions (neocode to the model)".into(),
            theme.dim(),
        ),
        Role::System if m.is_compaction() => ("Compaction summary".into(), theme.system()),
        Role::System => ("System".into(), theme.system()),
        Role::Tool => {
            let name = m
                .tool_call_id
                .as_deref()
                .and_then(|id| tools.get(id))
                .map(|n| sanitize::line(n).into_owned())
                .unwrap_or_else(|| "tool".into());
            (format!("Tool · {name}"), theme.tool())
        }
    }
}

/// The instructions a plan run stores before its goal: the harness speaking, not a message
/// of the conversation.
fn is_plan_instructions(m: &Message) -> bool {
    m.role == Role::System
        && m.tool_metadata
            .as_ref()
            .is_some_and(|v| v.get("plan_instructions").is_some())
}

/// A reply the user cancelled while it streamed (stored as far as it arrived).
fn cancelled_reply(m: &Message) -> bool {
    m.tool_metadata
        .as_ref()
        .and_then(|v| v.get("reason"))
        .and_then(|r| r.as_str())
        == Some("cancelled")
}

/// Lays out one message.
pub(crate) fn message_lines(
    m: &Message,
    width: usize,
    expanded: bool,
    tools: &HashMap<String, String>,
    theme: Theme,
) -> Vec<Line<'static>> {
    let width = width.max(8);
    let mut out = Vec::new();
    out.push(message_head(m, tools, theme));
    if is_plan_instructions(m) && !expanded {
        out.push(Line::from(Span::styled(
            "  (what a plan run asks the model to do; expand to read)",
            theme.dim(),
        )));
        out.push(Line::default());
        return out;
    }
    for p in &m.parts {
        match p {
            Part::Text { text } => {
                out.extend(text_lines(m, text, width, expanded, tools, theme));
            }
            Part::Reasoning { text, .. } => {
                let clean = sanitize::text_without_sgr(text);
                let rendered = markdown::render_with(
                    &clean,
                    width.saturating_sub(4),
                    theme,
                    theme.reasoning(),
                    false,
                );
                for l in rendered {
                    let mut spans = vec![Span::styled("  ∴ ", theme.reasoning())];
                    spans.extend(l.spans);
                    out.push(Line::from(spans));
                }
            }
            Part::Image {
                asset_id,
                mime_type,
            } => {
                let mime = mime_type.as_deref().unwrap_or("image");
                out.extend(markdown::wrap(
                    &[
                        (
                            format!(
                                "[image {} · {}]",
                                sanitize::line(asset_id),
                                sanitize::line(mime)
                            ),
                            theme.accent(),
                        ),
                        ("  (Assets tab to export)".into(), theme.dim()),
                    ],
                    width,
                    "  ",
                    "  ",
                ));
            }
        }
    }
    if m.role == Role::Assistant && m.tool_calls.is_empty() && is_blank(m) {
        // Said, not drawn as an empty message.
        out.push(Line::from(Span::styled(
            "  (an empty reply: the model sent no text)",
            theme.dim(),
        )));
    }
    for call in &m.tool_calls {
        out.extend(call_lines(call, width, expanded, theme));
    }
    out.extend(decision_lines(m, theme));
    if expanded && let Some(meta) = &m.tool_metadata {
        out.push(Line::from(Span::styled(
            format!("  meta {}", sanitize::line(&meta.to_string())),
            theme.dim(),
        )));
    }
    out.push(Line::default());
    out
}

/// One text part of `m` laid out: a tool's output (collapsed to a few lines; a done edit to
/// what it changed), a user's text with its chips, or markdown.
fn text_lines(
    m: &Message,
    text: &str,
    width: usize,
    expanded: bool,
    tools: &HashMap<String, String>,
    theme: Theme,
) -> Vec<Line<'static>> {
    let body_w = width.saturating_sub(2);
    let clean = sanitize::text_without_sgr(text);
    let edit = m.role == Role::Tool
        && !m.is_error
        && !expanded
        && m.tool_call_id
            .as_deref()
            .and_then(|id| tools.get(id))
            .is_some_and(|n| crate::tui::diff::is_edit(n));
    match m.role {
        // A done edit, collapsed: what it changed, not its diff's headers.
        Role::Tool if edit => {
            crate::tui::diff::result_lines(text, width, "  │ ", COLLAPSED_LINES, theme)
        }
        Role::Tool => {
            let style = if m.is_error {
                theme.error()
            } else {
                theme.text()
            };
            let text = crate::tui::denial::shown(text);
            let rows = output_lines(&text, width, "  │ ", style, theme);
            capped(rows, expanded, "  │ ", theme)
        }
        Role::User => user_text_lines(&clean, body_w, expanded, theme),
        Role::Assistant | Role::System => {
            markdown::render_with(&clean, body_w, theme, theme.text(), false)
                .into_iter()
                .map(|l| {
                    let mut spans = vec![Span::raw("  ")];
                    spans.extend(l.spans);
                    Line::from(spans)
                })
                .collect()
        }
    }
}

/// Whether a message has nothing to show: no text but blanks, no reasoning, no image.
fn is_blank(m: &Message) -> bool {
    m.parts.iter().all(|p| match p {
        Part::Text { text } => text.trim().is_empty(),
        Part::Reasoning { text, .. } => text.trim().is_empty(),
        Part::Image { .. } => false,
    })
}

/// A user message of more lines than this shows only its first [`USER_LINES_CUT`] until it is
/// expanded.
const USER_LINES: usize = 40;
/// Lines of a long user message shown while it is collapsed.
const USER_LINES_CUT: usize = 12;

/// What a hook added to a prompt starts with (`runtime::policy::gate::context_parts`).
const HOOK_CONTEXT: &str = "[context from a hook]\n";

/// A user message's text part: what was typed (markdown, its line breaks kept), then each
/// `@path` attachment and each hook's context as a one-line chip, their text shown only when
/// the message is expanded.
pub(crate) fn user_text_lines(
    clean: &str,
    body_w: usize,
    expanded: bool,
    theme: Theme,
) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let chip = |head: String, lines: usize, out: &mut Vec<Line<'static>>| {
        let mut spans = vec![
            Span::raw("  "),
            Span::styled(format!("[{head}]"), theme.accent()),
        ];
        if !expanded && lines > 0 {
            let n = lines;
            spans.push(Span::styled(
                format!(
                    "  {n} line{} · expand to read",
                    if n == 1 { "" } else { "s" }
                ),
                theme.dim(),
            ));
        }
        out.push(Line::from(spans));
    };
    let body = |text: &str, out: &mut Vec<Line<'static>>| {
        if expanded {
            let rows = output_lines(text, body_w + 2, "  │ ", theme.text(), theme);
            out.extend(rows.into_iter().flatten());
        }
    };
    if let Some(context) = clean.strip_prefix(HOOK_CONTEXT) {
        chip(
            "context from a hook".into(),
            context.lines().count(),
            &mut out,
        );
        body(context, &mut out);
        return out;
    }
    let (typed, blocks) = crate::tui::attachment::split(clean);
    if !typed.trim().is_empty() {
        // A long message (a big paste sent whole) shows its beginning until expanded; only
        // that much is laid out.
        let total = typed.lines().count();
        let cut = !expanded && total > USER_LINES;
        let shown = if cut {
            typed
                .lines()
                .take(USER_LINES_CUT)
                .collect::<Vec<_>>()
                .join("\n")
        } else {
            typed.to_string()
        };
        for l in markdown::render_with(&shown, body_w, theme, theme.text(), true) {
            let mut spans = vec![Span::raw("  ")];
            spans.extend(l.spans);
            out.push(Line::from(spans));
        }
        if cut {
            out.push(Line::from(Span::styled(
                format!(
                    "  … {} more lines · expand to read",
                    crate::format::thousands((total - USER_LINES_CUT) as u64)
                ),
                theme.dim(),
            )));
        }
    }
    for b in blocks {
        chip(
            b.head.to_string(),
            b.body.map_or(0, |t| t.lines().count()),
            &mut out,
        );
        if let Some(text) = b.body {
            body(text, &mut out);
        }
    }
    out
}

/// A message's head line: who wrote it, its marks (cancelled, denied, error, injected), its
/// seq and its tokens.
fn message_head(m: &Message, tools: &HashMap<String, String>, theme: Theme) -> Line<'static> {
    let (label, style) = role_label(m, tools, theme);
    let mut head = vec![Span::styled(label, style)];
    if m.role == Role::Tool && !m.is_error && m.text().contains(CANCELLED_MARK) {
        head.push(Span::styled("  ⊘ cancelled", theme.dim()));
    }
    if m.is_error {
        // The runtime's words for calls that never ran: the same states the live cards show.
        let text = m.text();
        let (mark, style) = if m.role == Role::Tool && crate::tui::denial::is_denial(&text) {
            ("  ⊘ denied", theme.error())
        } else if m.role == Role::Tool && text.starts_with("Not run:") {
            ("  ! interrupted", theme.warn())
        } else if m.role == Role::Assistant && cancelled_reply(m) {
            // The user stopped it: the list's mark for a cancelled session.
            ("  ⊘ cancelled", theme.dim())
        } else {
            ("  ✗ error", theme.error())
        };
        head.push(Span::styled(mark, style));
    }
    if m.role == Role::Tool
        && let Some((chip, errors)) = diagnostics_chip(m.tool_metadata.as_ref())
    {
        let style = if errors { theme.error() } else { theme.warn() };
        head.push(Span::styled(format!("  {chip}"), style));
    }
    if m.extra.injected {
        // Written by the harness a session was imported from, not by the person.
        head.push(Span::styled("  injected", theme.dim()));
    }
    head.push(Span::styled(format!("  #{}", m.seq), theme.dim()));
    if m.usage.input_tokens + m.usage.output_tokens > 0 {
        head.push(Span::styled(
            format!(
                "  {}↑ {}↓",
                format::compact(m.usage.input_tokens),
                format::compact(m.usage.output_tokens)
            ),
            theme.dim(),
        ));
    }
    Line::from(head)
}

/// The count of the language-server diagnostics a tool result carried (its metadata's
/// `diagnostics`), as "2 errors, 1 warning", and whether there are errors; `None` when there
/// are none.
fn diagnostics_chip(meta: Option<&serde_json::Value>) -> Option<(String, bool)> {
    let d = crate::runtime::extensions::lsp::DiagnosticReport::of_metadata(meta)?;
    Some((d.counts()?, d.errors > 0))
}

/// What a message records of its decision and its hooks (issue 27), dim: the rule or hook
/// that let a call run or denied it, and each hook run (event, command, exit, duration).
fn decision_lines(m: &Message, theme: Theme) -> Vec<Line<'static>> {
    let Some(meta) = &m.tool_metadata else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(p) = crate::runtime::agent::Permission::of_metadata(Some(meta))
        && (p.by == "rule" || p.by == "hook")
        && !crate::tui::denial::decision_repeats(&p)
    {
        out.push(Line::from(Span::styled(
            format!("  {}", sanitize::line(&p.describe())),
            theme.dim(),
        )));
    }
    for run in meta
        .get("hooks")
        .and_then(|h| h.as_array())
        .into_iter()
        .flatten()
    {
        let s = |k: &str| run.get(k).and_then(|v| v.as_str()).unwrap_or("");
        let exit = match run.get("exit_code").and_then(serde_json::Value::as_i64) {
            Some(c) => format!("exit {c}"),
            None if run.get("timed_out").and_then(serde_json::Value::as_bool) == Some(true) => {
                "killed at its timeout".to_string()
            }
            None => "did not finish".to_string(),
        };
        let ms = run
            .get("duration_ms")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        out.push(Line::from(Span::styled(
            format!(
                "  hook {} `{}` · {exit} · {ms} ms",
                sanitize::line(s("event")),
                sanitize::line(s("command"))
            ),
            theme.dim(),
        )));
    }
    out
}
