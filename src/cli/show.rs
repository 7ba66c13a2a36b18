//! `neocode show <ID>`: header, tokens, plan with step statuses, assets, fork parent, message
//! count and the last few messages.

use serde::Serialize;

use super::common::{CmdResult, open_for_id};
use super::fmt;
use super::list::JsonRow;
use super::out::Out;
use crate::runtime::extensions::lsp::DiagnosticReport;
use crate::runtime::extensions::project_context::ContextReport;
use crate::runtime::session_report::SessionReport;
use crate::runtime::{Location, Sessions};
use crate::sanitize;
use crate::session::file::rfc3339;
use crate::session::{
    Message, Part, RuntimeLedger, RuntimeLimits, RuntimeUsage, Step, StepStatus, now_ms,
};

/// Messages shown at the end of `show`.
const LAST_MESSAGES: usize = 5;
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
    /// A tool result's language-server errors and warnings in the files it changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    diagnostics: Option<DiagnosticReport>,
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
fn elsewhere(here: Option<bool>) -> &'static str {
    if here == Some(false) {
        " (not in this workspace)"
    } else {
        ""
    }
}

/// `neocode show`.
pub(super) fn run(loc: &Location, key: &str, json: bool) -> CmdResult {
    let (sessions, id) = open_for_id(loc, key)?;
    let report = sessions.report(&loc.home, &id, LAST_MESSAGES)?;
    let mut out = Out::stdout();
    if json {
        out.line(&fmt::to_json(&json_doc(&sessions, &report)))?;
        return out.finish();
    }
    let now = now_ms();
    let title = out.paint("1", &l(report.summary.display_title()));
    out.line(&title)?;
    for line in header_lines(&out, &report, now) {
        out.line(&line)?;
    }
    plan_section(&mut out, &report)?;
    runtime_section(&mut out, &report, now)?;
    interrupted_section(&mut out, &report)?;
    context_section(&mut out, &report.context)?;
    assets_section(&mut out, &report)?;
    files_section(&mut out, &report)?;
    messages_section(&mut out, &report)?;
    out.finish()
}

/// One line of untrusted text, sanitised.
fn l(s: &str) -> String {
    sanitize::line(s).into_owned()
}

/// The plan's steps (none without a plan).
fn steps(r: &SessionReport) -> &[Step] {
    r.header
        .plan
        .as_ref()
        .map(|p| p.steps.as_slice())
        .unwrap_or(&[])
}

/// `show --json`'s document.
fn json_doc<'a>(sessions: &Sessions, r: &'a SessionReport) -> JsonShow<'a> {
    JsonShow {
        row: JsonRow::new(&r.summary.list_line(), None).shown(sessions, r.summary.status),
        fork_seq: r.summary.fork_seq,
        steps: steps(r)
            .iter()
            .map(|s| JsonStep {
                id: &s.id,
                title: &s.title,
                depends_on: &s.depends_on,
                status: r.progress.status(&s.id).as_str(),
            })
            .collect(),
        assets: r
            .assets
            .iter()
            .map(|a| JsonAsset {
                id: &a.id,
                mime_type: &a.mime_type,
                size_bytes: a.size_bytes,
                created_at: rfc3339(a.created_at_ms),
            })
            .collect(),
        interrupted_tool_calls: r
            .interrupted
            .iter()
            .map(|c| JsonCall {
                id: &c.id,
                name: &c.name,
                arguments: &c.arguments,
            })
            .collect(),
        context: &r.context,
        runtime: r.header.ledger.as_ref().map(JsonRuntime::new),
        context_now: r
            .context_now
            .map(|(tokens, estimated)| JsonContextNow { tokens, estimated }),
        last_messages: r
            .last_messages
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
                diagnostics: DiagnosticReport::of_metadata(m.tool_metadata.as_ref()),
            })
            .collect(),
        file_changes: &r.file_changes,
    }
}

/// The `key  value` lines under the title: who, when, which model, where from, how big.
fn header_lines(out: &Out, r: &SessionReport, now: i64) -> Vec<String> {
    let summary = &r.summary;
    let field = |k: &str, v: String| format!("{}  {v}", out.paint("2", &format!("{k:<9}")));
    let mut lines = vec![
        field("id", l(&summary.id)),
        field("status", r.status.to_string()),
        field("created", when(now, summary.created_at_ms)),
        field("active", when(now, summary.updated_at_ms)),
        field(
            "model",
            match (summary.provider.is_empty(), summary.model.is_empty()) {
                (_, true) => "-".to_string(),
                (true, false) => l(&summary.model),
                (false, false) => format!("{} / {}", l(&summary.provider), l(&summary.model)),
            },
        ),
    ];
    if let Some(p) = &summary.profile {
        lines.push(field("profile", format!("[providers.{}]", l(p))));
    }
    if !summary.workdir.is_empty() {
        lines.push(field("workdir", l(&summary.workdir)));
    }
    if let Some(parent) = &summary.parent_id {
        let at = summary
            .fork_seq
            .map(|s| format!(" at message {s}"))
            .unwrap_or_default();
        lines.push(field(
            "forked",
            format!("from {}{at}{}", l(parent), elsewhere(r.parent_here)),
        ));
    }
    if let Some(parent) = &r.header.subagent_of {
        lines.push(field(
            "sub-agent",
            format!("of {}{}", l(parent), elsewhere(r.sub_agent_parent_here)),
        ));
    }
    if let Some(src) = &r.header.source {
        lines.push(field(
            "source",
            format!("imported from {} {}", l(&src.tool), l(&src.version))
                .trim_end()
                .to_string(),
        ));
    }
    lines.push(field(
        "tokens",
        format!(
            "{} in / {} out (lifetime)",
            summary.token_input_total, summary.token_output_total
        ),
    ));
    if let Some((n, est)) = r.context_now {
        lines.push(field(
            "context",
            format!(
                "{}{n} tokens (what the next request carries)",
                if est { "~" } else { "" }
            ),
        ));
    }
    lines.push(field("messages", summary.message_count.to_string()));
    lines
}

/// The plan's steps with their status, in the TUI's order.
fn plan_section(out: &mut Out, r: &SessionReport) -> CmdResult {
    let steps = steps(r);
    if steps.is_empty() {
        return Ok(());
    }
    out.line("")?;
    let heading = format!("Plan  {}", fmt::plan_progress(&r.summary.plan));
    let heading = out.paint("1", &heading);
    out.line(&heading)?;
    // The TUI's order: layer by layer (a step after everything it depends on).
    let ordered: Vec<&Step> = r
        .header
        .plan
        .as_ref()
        .and_then(|p| p.layers().ok())
        .map(|layers| layers.into_iter().flatten().collect())
        .unwrap_or_else(|| steps.iter().collect());
    for s in ordered {
        let st = r.progress.status(&s.id);
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
        if let Some(f) = r.progress.failures.get(&s.id) {
            line.push_str(&format!(" — {}: {}", l(&f.error_type), l(&f.message)));
        }
        out.line(&line)?;
    }
    Ok(())
}

/// The runtime ledger: used against the limits, and why the last run stopped.
fn runtime_section(out: &mut Out, r: &SessionReport, now: i64) -> CmdResult {
    let Some(ledger) = &r.header.ledger else {
        return Ok(());
    };
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
    Ok(())
}

/// Tool calls that never got a result.
fn interrupted_section(out: &mut Out, r: &SessionReport) -> CmdResult {
    let interrupted = &r.interrupted;
    if interrupted.is_empty() {
        return Ok(());
    }
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
    for c in interrupted {
        out.line(&format!(
            "  {}  {}  {}",
            l(&c.id),
            l(&c.name),
            fmt::cut(&l(&c.arguments), 80)
        ))?;
    }
    Ok(())
}

/// What the next turn takes in beyond the transcript.
fn context_section(out: &mut Out, context: &ContextReport) -> CmdResult {
    let ctx_rows: [(&str, &[String]); 5] = [
        ("instructions", &context.instructions),
        ("skills", &context.skills),
        ("missing skills", &context.active_missing),
        ("mcp servers", &context.mcp_servers),
        ("skipped", &context.problems),
    ];
    if ctx_rows.iter().all(|(_, v)| v.is_empty()) {
        return Ok(());
    }
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
    Ok(())
}

/// The session's stored files (pasted images).
fn assets_section(out: &mut Out, r: &SessionReport) -> CmdResult {
    if r.assets.is_empty() {
        return Ok(());
    }
    out.line("")?;
    let heading = out.paint("1", &format!("Assets  {}", r.assets.len()));
    out.line(&heading)?;
    for a in &r.assets {
        out.line(&format!(
            "  {}  {}  {}",
            l(&a.id),
            l(&a.mime_type),
            fmt::compact(a.size_bytes) + "B"
        ))?;
    }
    Ok(())
}

/// The workspace files the session's tools changed, by turn.
fn files_section(out: &mut Out, r: &SessionReport) -> CmdResult {
    if r.file_changes.is_empty() {
        return Ok(());
    }
    out.line("")?;
    let n: usize = r.file_changes.iter().map(|t| t.files.len()).sum();
    let heading = out.paint(
        "1",
        &format!("Files  {n} changes (neocode rewind <ID> --to <SEQ> goes back)"),
    );
    out.line(&heading)?;
    for line in super::rewind::turn_lines(&r.file_changes) {
        out.line(&line)?;
    }
    Ok(())
}

/// The last messages, a few lines each.
fn messages_section(out: &mut Out, r: &SessionReport) -> CmdResult {
    let msgs = &r.last_messages;
    if msgs.is_empty() {
        return Ok(());
    }
    out.line("")?;
    let heading = out.paint(
        "1",
        &format!(
            "Last {} of {} messages",
            msgs.len(),
            r.summary.message_count
        ),
    );
    out.line(&heading)?;
    for m in msgs {
        message_lines(out, m)?;
    }
    Ok(())
}

/// One message: its head (seq, role, calls, error), its decision notes, its first lines.
fn message_lines(out: &mut Out, m: &Message) -> CmdResult {
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
    diagnostics_lines(out, m)?;
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
        let more = all.len() - MESSAGE_LINES;
        let more = out.paint(
            "2",
            &format!("  … {more} more line{}", if more == 1 { "" } else { "s" }),
        );
        out.line(&more)?;
    }
    Ok(())
}

/// A tool result's language-server diagnostics: the counts, then each listed one
/// (`error calc.c:3:20 message  (clangd)`), errors red and warnings yellow.
fn diagnostics_lines(out: &mut Out, m: &Message) -> CmdResult {
    let Some(d) = DiagnosticReport::of_metadata(m.tool_metadata.as_ref()) else {
        return Ok(());
    };
    let counts = d
        .counts()
        .unwrap_or_else(|| "no errors or warnings".to_string());
    let head = out.paint("2", &format!("  diagnostics: {counts}"));
    out.line(&head)?;
    for i in &d.items {
        let colour = if i.severity == "error" { "31" } else { "33" };
        let severity = out.paint(colour, &format!("{:<7}", l(&i.severity)));
        let server = out.paint("2", &format!("({})", l(&i.server)));
        let row = format!(
            "    {severity} {}:{}:{}  {}  {server}",
            l(&i.path),
            i.line,
            i.column,
            l(&i.message)
        );
        out.line(&row)?;
    }
    Ok(())
}
