//! `neocode show <ID>`: header, tokens, plan with step statuses, assets, fork parent, message
//! count and the last few messages.

use serde::Serialize;

use super::fmt;
use super::list::JsonRow;
use super::out::Out;
use super::{CmdResult, open_for_id};
use crate::runtime::project_context::{ContextReport, session_report};
use crate::runtime::{Location, Sessions};
use crate::sanitize;
use crate::session::file::rfc3339;
use crate::session::{
    Message, Part, RuntimeLedger, RuntimeLimits, RuntimeUsage, StepStatus, now_ms,
};

/// Messages shown at the end of `show`.
const LAST_MESSAGES: usize = 5;
/// Messages read from the end to find the latest model call (context now).
const CONTEXT_TAIL: i64 = 64;
/// Lines of each message shown.
const MESSAGE_LINES: usize = 6;

#[derive(Serialize)]
struct JsonStep<'a> {
    id: &'a str,
    title: &'a str,
    depends_on: &'a [String],
    status: &'static str,
}

#[derive(Serialize)]
struct JsonAsset<'a> {
    id: &'a str,
    mime_type: &'a str,
    size_bytes: u64,
    created_at: String,
}

#[derive(Serialize)]
struct JsonMessage<'a> {
    seq: i64,
    role: &'static str,
    text: String,
    tool_calls: Vec<&'a str>,
    is_error: bool,
    created_at: String,
    /// Who let the call run or denied it (a tool result's rule, hook, policy or user).
    #[serde(skip_serializing_if = "Option::is_none")]
    permission: Option<crate::runtime::agent::Permission>,
}

/// The runtime ledger: what the session's runs consumed against its limits, and why the last
/// one stopped.
#[derive(Serialize)]
struct JsonRuntime<'a> {
    usage: &'a RuntimeUsage,
    limits: &'a RuntimeLimits,
    started_at: Option<String>,
    deadline_at: Option<String>,
    /// Why it stopped (a limit, an error, a cancel), when it did.
    termination: Option<&'a str>,
    cancelled_at: Option<String>,
}

impl<'a> JsonRuntime<'a> {
    fn new(l: &'a RuntimeLedger) -> JsonRuntime<'a> {
        JsonRuntime {
            usage: &l.usage,
            limits: &l.limits,
            started_at: l.started_at_ms.map(rfc3339),
            deadline_at: l.deadline_at_ms.map(rfc3339),
            termination: l.termination.as_deref(),
            cancelled_at: l.cancelled_at_ms.map(rfc3339),
        }
    }
}

/// `used / limit` rows of the ledger that have a limit or a use.
fn ledger_rows(l: &RuntimeLedger) -> Vec<(&'static str, String)> {
    let u = &l.usage;
    let m = &l.limits;
    let mut rows = Vec::new();
    for (k, used, limit) in [
        ("turns", u.turns, m.max_turns),
        ("tool calls", u.tool_calls, m.max_tool_calls),
        ("input tok", u.input_tokens, m.max_input_tokens),
        ("output tok", u.output_tokens, m.max_output_tokens),
        ("wall secs", u.wall_ms / 1000, m.max_wall_secs),
    ] {
        match limit {
            Some(lim) => rows.push((k, format!("{used} / {lim}"))),
            None if used > 0 => rows.push((k, format!("{used} (no limit)"))),
            None => {}
        }
    }
    match (u.cost_usd, m.max_cost_usd) {
        (spent, Some(lim)) => {
            rows.push(("cost", format!("${:.4} / ${lim:.2}", spent.unwrap_or(0.0))))
        }
        (Some(spent), None) => rows.push(("cost", format!("${spent:.4} (no limit)"))),
        (None, None) => {}
    }
    rows
}

#[derive(Serialize)]
struct JsonShow<'a> {
    #[serde(flatten)]
    row: JsonRow<'a>,
    fork_seq: Option<i64>,
    steps: Vec<JsonStep<'a>>,
    assets: Vec<JsonAsset<'a>>,
    /// Tool calls left without a result when the session stopped.
    interrupted_tool_calls: Vec<JsonCall<'a>>,
    /// Instruction files, skills and MCP servers the session's turns take in.
    context: &'a ContextReport,
    /// `null` when the session never ran (an imported or TUI-only one).
    runtime: Option<JsonRuntime<'a>>,
    /// What the next request carries (README "Token figures"); `null` before a model call.
    context_now: Option<JsonContextNow>,
    last_messages: Vec<JsonMessage<'a>>,
    /// The workspace files the session's tools changed, by turn (what a rewind restores).
    file_changes: &'a [super::rewind::TurnChanges],
}

#[derive(Serialize)]
struct JsonContextNow {
    tokens: u64,
    /// Estimated (a compaction since the last model call), not reported by the model.
    estimated: bool,
}

#[derive(Serialize)]
struct JsonCall<'a> {
    id: &'a str,
    name: &'a str,
    arguments: &'a str,
}

/// The last `n` messages, even after compaction left `last_seq` beyond the stored seqs.
fn last_messages(
    sessions: &Sessions,
    id: &str,
    last_seq: i64,
    n: usize,
) -> crate::session::Result<Vec<Message>> {
    let from = (last_seq - n as i64 + 1).max(1);
    let mut msgs = sessions.messages(id, from, last_seq)?;
    if msgs.len() < n && from > 1 {
        msgs = sessions.messages(id, 1, last_seq)?;
    }
    let skip = msgs.len().saturating_sub(n);
    Ok(msgs.split_off(skip))
}

/// What a message records of its decision and its hooks: who let the call run or denied it,
/// and each hook run (`hook PreToolUse \`cmd\` exit 0, 12 ms`).
fn decision_notes(m: &Message) -> Vec<String> {
    let meta = m.tool_metadata.as_ref();
    let mut out: Vec<String> = crate::runtime::agent::Permission::of_metadata(meta)
        .map(|p| p.describe())
        .into_iter()
        .collect();
    let runs = meta.and_then(|v| v.get("hooks")).and_then(|h| h.as_array());
    for r in runs.into_iter().flatten() {
        let s = |k: &str| r.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
        let exit = match r.get("exit_code").and_then(serde_json::Value::as_i64) {
            Some(c) => format!("exit {c}"),
            None => "killed or not started".to_string(),
        };
        let ms = r
            .get("duration_ms")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        out.push(format!(
            "hook {} `{}` {exit}, {ms} ms",
            s("event"),
            s("command")
        ));
    }
    out
}

/// Text of a message for a preview: text parts, then image and reasoning markers.
fn message_text(m: &Message) -> String {
    let mut out = m.text();
    for p in &m.parts {
        match p {
            Part::Text { .. } => {}
            Part::Image { asset_id, .. } => {
                out.push_str(&format!("\n[image {asset_id}]"));
            }
            // A part with no text (a thought signature, redacted thinking) is kept only to be
            // sent back: nothing to show.
            Part::Reasoning { text, .. } if text.trim().is_empty() => {}
            Part::Reasoning { text, .. } => {
                out.push_str(&format!("\n[reasoning] {text}"));
            }
        }
    }
    out.trim().to_string()
}

/// RFC 3339, with the relative time when it is recent (an older one reads as the date itself).
fn when(now: i64, ms: i64) -> String {
    let rel = fmt::relative_time(now, ms, &chrono::Local);
    if rel.contains(' ') || rel == "yesterday" {
        format!("{} ({rel})", rfc3339(ms))
    } else {
        rfc3339(ms)
    }
}

/// A note when a linked session is not in this workspace (imported without it, or deleted).
fn elsewhere(sessions: &crate::runtime::Sessions, id: &str) -> &'static str {
    if sessions.summary(id).is_ok() {
        ""
    } else {
        " (not in this workspace)"
    }
}

/// `neocode show`.
#[expect(clippy::too_many_lines)]
pub fn run(loc: &Location, key: &str, json: bool) -> CmdResult {
    let (sessions, id) = open_for_id(loc, key)?;
    let summary = sessions.summary(&id)?;
    let header = sessions.header(&id)?;
    let progress = sessions.plan_progress(&id)?;
    let assets = sessions.assets(&id)?;
    let msgs = last_messages(&sessions, &id, header.last_seq, LAST_MESSAGES)?;
    // Context now: the latest model call's figures, found in the transcript's tail.
    let tail = sessions.messages(&id, header.last_seq - CONTEXT_TAIL + 1, header.last_seq)?;
    let context_now = crate::runtime::agent::compact::context_now(&header, tail.iter().rev());
    let interrupted = sessions.interrupted_tool_calls(&id)?;
    let context = session_report(&loc.home, &sessions, &id)?;
    let file_changes = super::rewind::turn_changes(&sessions, &id, header.last_seq)?;
    let steps = header
        .plan
        .as_ref()
        .map(|p| p.steps.as_slice())
        .unwrap_or(&[]);
    let mut out = Out::stdout();
    if json {
        let doc = JsonShow {
            row: JsonRow::new(&summary.list_line(), None).shown(&sessions, summary.status),
            fork_seq: summary.fork_seq,
            steps: steps
                .iter()
                .map(|s| JsonStep {
                    id: &s.id,
                    title: &s.title,
                    depends_on: &s.depends_on,
                    status: progress.status(&s.id).as_str(),
                })
                .collect(),
            assets: assets
                .iter()
                .map(|a| JsonAsset {
                    id: &a.id,
                    mime_type: &a.mime_type,
                    size_bytes: a.size_bytes,
                    created_at: rfc3339(a.created_at_ms),
                })
                .collect(),
            interrupted_tool_calls: interrupted
                .iter()
                .map(|c| JsonCall {
                    id: &c.id,
                    name: &c.name,
                    arguments: &c.arguments,
                })
                .collect(),
            context: &context,
            runtime: header.ledger.as_ref().map(JsonRuntime::new),
            context_now: context_now
                .map(|(tokens, estimated)| JsonContextNow { tokens, estimated }),
            last_messages: msgs
                .iter()
                .map(|m| JsonMessage {
                    seq: m.seq,
                    role: m.role.as_str(),
                    text: message_text(m),
                    tool_calls: m.tool_calls.iter().map(|c| c.name.as_str()).collect(),
                    is_error: m.is_error,
                    created_at: rfc3339(m.created_at_ms),
                    permission: crate::runtime::agent::Permission::of_metadata(
                        m.tool_metadata.as_ref(),
                    ),
                })
                .collect(),
            file_changes: &file_changes,
        };
        out.line(&fmt::to_json(&doc))?;
        return out.finish();
    }

    let now = now_ms();
    let l = |s: &str| sanitize::line(s).into_owned();
    let title = out.paint("1", &l(summary.display_title()));
    out.line(&title)?;
    let field =
        |out: &Out, k: &str, v: String| format!("{}  {v}", out.paint("2", &format!("{k:<9}")));
    let mut lines = vec![
        field(&out, "id", l(&summary.id)),
        field(
            &out,
            "status",
            sessions
                .shown_status(&summary.id, summary.status)
                .to_string(),
        ),
        field(&out, "created", when(now, summary.created_at_ms)),
        field(&out, "active", when(now, summary.updated_at_ms)),
        field(
            &out,
            "model",
            match (summary.provider.is_empty(), summary.model.is_empty()) {
                (_, true) => "-".to_string(),
                (true, false) => l(&summary.model),
                (false, false) => format!("{} / {}", l(&summary.provider), l(&summary.model)),
            },
        ),
    ];
    if let Some(p) = &summary.profile {
        lines.push(field(&out, "profile", format!("[providers.{}]", l(p))));
    }
    if !summary.workdir.is_empty() {
        lines.push(field(&out, "workdir", l(&summary.workdir)));
    }
    if let Some(parent) = &summary.parent_id {
        let at = summary
            .fork_seq
            .map(|s| format!(" at message {s}"))
            .unwrap_or_default();
        lines.push(field(
            &out,
            "forked",
            format!("from {}{at}{}", l(parent), elsewhere(&sessions, parent)),
        ));
    }
    if let Some(parent) = &header.subagent_of {
        lines.push(field(
            &out,
            "sub-agent",
            format!("of {}{}", l(parent), elsewhere(&sessions, parent)),
        ));
    }
    if let Some(src) = &header.source {
        lines.push(field(
            &out,
            "source",
            format!("imported from {} {}", l(&src.tool), l(&src.version))
                .trim_end()
                .to_string(),
        ));
    }
    lines.push(field(
        &out,
        "tokens",
        format!(
            "{} in / {} out (lifetime)",
            summary.token_input_total, summary.token_output_total
        ),
    ));
    if let Some((n, est)) = context_now {
        lines.push(field(
            &out,
            "context",
            format!(
                "{}{n} tokens (what the next request carries)",
                if est { "~" } else { "" }
            ),
        ));
    }
    lines.push(field(&out, "messages", summary.message_count.to_string()));
    for line in lines {
        out.line(&line)?;
    }

    if !steps.is_empty() {
        out.line("")?;
        let heading = format!("Plan  {}", fmt::plan_progress(&summary.plan));
        let heading = out.paint("1", &heading);
        out.line(&heading)?;
        // The TUI's order: layer by layer (a step after everything it depends on).
        let ordered: Vec<&crate::session::Step> = header
            .plan
            .as_ref()
            .and_then(|p| p.layers().ok())
            .map(|layers| layers.into_iter().flatten().collect())
            .unwrap_or_else(|| steps.iter().collect());
        for s in ordered {
            let st = progress.status(&s.id);
            let sgr = match st {
                StepStatus::Completed => "32",
                StepStatus::Failed => "31",
                StepStatus::Running => "33",
                StepStatus::Pending => "2",
            };
            let mark = st.symbol();
            let mut line = format!(
                "  {} {}  ({})",
                out.paint(sgr, mark),
                l(&s.title),
                st.as_str()
            );
            if let Some(f) = progress.failures.get(&s.id) {
                line.push_str(&format!(" — {}: {}", l(&f.error_type), l(&f.message)));
            }
            out.line(&line)?;
        }
    }

    if let Some(ledger) = &header.ledger {
        out.line("")?;
        let heading = out.paint("1", "Runtime  (used / limit across every run)");
        out.line(&heading)?;
        let mut rows = ledger_rows(ledger);
        if let Some(t) = &ledger.termination {
            rows.push(("stopped", l(t)));
        }
        if let Some(at) = ledger.cancelled_at_ms {
            rows.push(("cancelled", when(now, at)));
        }
        for (k, v) in rows {
            let key = out.paint("2", &format!("{k:<11}"));
            out.line(&format!("  {key}{v}"))?;
        }
    }

    if !interrupted.is_empty() {
        out.line("")?;
        let heading = out.paint(
            "1;33",
            &format!(
                "Interrupted  {} tool call{} never got a result (the session stopped mid-turn; resuming replays them)",
                interrupted.len(),
                if interrupted.len() == 1 { "" } else { "s" }
            ),
        );
        out.line(&heading)?;
        for c in &interrupted {
            out.line(&format!(
                "  {}  {}  {}",
                l(&c.id),
                l(&c.name),
                fmt::cut(&l(&c.arguments), 80)
            ))?;
        }
    }

    let ctx_rows: [(&str, &[String]); 5] = [
        ("instructions", &context.instructions),
        ("skills", &context.skills),
        ("missing skills", &context.active_missing),
        ("mcp servers", &context.mcp_servers),
        ("skipped", &context.problems),
    ];
    if ctx_rows.iter().any(|(_, v)| !v.is_empty()) {
        out.line("")?;
        let heading = out.paint(
            "1",
            "Context  (what the next turn takes in beyond the transcript)",
        );
        out.line(&heading)?;
        for (k, v) in ctx_rows {
            if v.is_empty() {
                continue;
            }
            let key = out.paint("2", &format!("{k:<14}"));
            let vals: Vec<String> = v.iter().map(|s| l(s)).collect();
            out.line(&format!("  {key}{}", vals.join(", ")))?;
        }
    }

    if !assets.is_empty() {
        out.line("")?;
        let heading = out.paint("1", &format!("Assets  {}", assets.len()));
        out.line(&heading)?;
        for a in &assets {
            out.line(&format!(
                "  {}  {}  {}",
                l(&a.id),
                l(&a.mime_type),
                fmt::compact(a.size_bytes) + "B"
            ))?;
        }
    }

    if !file_changes.is_empty() {
        out.line("")?;
        let n: usize = file_changes.iter().map(|t| t.files.len()).sum();
        let heading = out.paint(
            "1",
            &format!("Files  {n} changes (neocode rewind <ID> --to <SEQ> goes back)"),
        );
        out.line(&heading)?;
        for line in super::rewind::turn_lines(&file_changes) {
            out.line(&line)?;
        }
    }

    if !msgs.is_empty() {
        out.line("")?;
        let heading = out.paint(
            "1",
            &format!("Last {} of {} messages", msgs.len(), summary.message_count),
        );
        out.line(&heading)?;
        for m in &msgs {
            let mut head = format!("#{} {}", m.seq, m.role.as_str());
            if !m.tool_calls.is_empty() {
                let names: Vec<String> = m.tool_calls.iter().map(|c| l(&c.name)).collect();
                head.push_str(&format!(" → {}", names.join(", ")));
            }
            if m.is_error {
                // A reply the user cancelled is not an error (the list's ⊘ cancelled).
                let cancelled = m
                    .tool_metadata
                    .as_ref()
                    .and_then(|v| v.get("reason"))
                    .and_then(|r| r.as_str())
                    == Some("cancelled");
                head.push_str(if cancelled {
                    " (cancelled)"
                } else {
                    " (error)"
                });
            }
            let head = out.paint("36", &head);
            out.line(&head)?;
            for note in decision_notes(m) {
                let note = out.paint("2", &format!("  {}", l(&note)));
                out.line(&note)?;
            }
            let text = message_text(m);
            let all: Vec<&str> = text.lines().collect();
            for t in all.iter().take(MESSAGE_LINES) {
                let t = l(t);
                let t = match out.width {
                    Some(w) => fmt::cut(&t, w.saturating_sub(2).max(1)),
                    None => t,
                };
                out.line(&format!("  {t}"))?;
            }
            if all.len() > MESSAGE_LINES {
                let more = out.paint(
                    "2",
                    &format!(
                        "  … {} more line{}",
                        all.len() - MESSAGE_LINES,
                        if all.len() - MESSAGE_LINES == 1 {
                            ""
                        } else {
                            "s"
                        }
                    ),
                );
                out.line(&more)?;
            }
        }
    }
    out.finish()
}
