//! `neocode --list`: the workspace's sessions, newest activity first.

use std::borrow::Cow;

use serde::Serialize;

use super::fmt::{self, Align};
use super::out::Out;
use super::{CmdResult, Failure};
use crate::runtime::{Location, Sessions};
use crate::sanitize;
use crate::session::file::rfc3339;
use crate::session::{ListQuery, PlanCounts, SessionSummary, now_ms};

/// Options of `--list`.
#[derive(Debug, Clone, Copy)]
pub struct ListOptions {
    /// Print the stable JSON array.
    pub json: bool,
    /// At most this many rows per workspace (0 = all).
    pub limit: usize,
}

/// Token totals in the JSON rows.
#[derive(Serialize)]
struct JsonTokens {
    input: u64,
    output: u64,
}

/// One row of `--list --json`: the stable keys of DESIGN.md (more may be added, none renamed).
#[derive(Serialize)]
pub(crate) struct JsonRow<'a> {
    id: &'a str,
    title: &'a str,
    created_at: String,
    updated_at: String,
    message_count: u64,
    tokens: JsonTokens,
    model: &'a str,
    provider: &'a str,
    status: &'static str,
    parent_id: Option<&'a str>,
    subagent_of: Option<&'a str>,
    /// The tool an imported session came from; null for native sessions.
    source: Option<&'a str>,
    plan: PlanCounts,
    asset_count: u64,
    workdir: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    workspace: Option<&'a str>,
}

impl<'a> JsonRow<'a> {
    pub(crate) fn new(s: &'a SessionSummary, workspace: Option<&'a str>) -> JsonRow<'a> {
        JsonRow {
            id: &s.id,
            title: &s.title,
            created_at: rfc3339(s.created_at_ms),
            updated_at: rfc3339(s.updated_at_ms),
            message_count: s.message_count,
            tokens: JsonTokens {
                input: s.token_input_total,
                output: s.token_output_total,
            },
            model: &s.model,
            provider: &s.provider,
            status: s.status.as_str(),
            parent_id: s.parent_id.as_deref(),
            subagent_of: s.subagent_of.as_deref(),
            source: s.source.as_deref(),
            plan: s.plan,
            asset_count: s.asset_count,
            workdir: &s.workdir,
            workspace,
        }
    }
}

fn query(limit: usize) -> ListQuery {
    ListQuery {
        limit,
        ..ListQuery::default()
    }
}

/// `neocode --list` for one workspace.
pub fn run(loc: &Location, opts: ListOptions) -> CmdResult {
    let items = match Sessions::open_existing(loc)? {
        Some(rt) => rt.list(&query(opts.limit))?.items,
        None => Vec::new(),
    };
    let mut out = Out::stdout();
    if opts.json {
        out.json_array(items.iter().map(|s| JsonRow::new(s, None)))?;
    } else if items.is_empty() {
        out.line(&format!(
            "no sessions yet in {} — run `neocode` there to start one",
            sanitize::line(&loc.root().to_string_lossy())
        ))?;
    } else {
        table(&mut out, &items)?;
    }
    out.finish()
}

/// `neocode --list --all-workspaces`: every workspace under the home with its root path.
pub fn run_all(home: &std::path::Path, opts: ListOptions) -> CmdResult {
    let mut workspaces = Vec::new();
    for (dir, rt) in Sessions::open_all(home) {
        let rt = rt.map_err(|e| {
            let mut f = Failure::from(e);
            f.lines[0] = format!("{}: {}", sanitize::line(&dir.to_string_lossy()), f.lines[0]);
            f
        })?;
        let items = rt.list(&query(opts.limit))?.items;
        workspaces.push((rt.root().to_string_lossy().into_owned(), items));
    }
    let mut out = Out::stdout();
    if opts.json {
        out.json_array(
            workspaces.iter().flat_map(|(root, items)| {
                items.iter().map(|s| JsonRow::new(s, Some(root.as_str())))
            }),
        )?;
        return out.finish();
    }
    if workspaces.iter().all(|(_, items)| items.is_empty()) {
        out.line(&format!(
            "no sessions yet under {} — run `neocode` in a project to start one",
            sanitize::line(&home.to_string_lossy())
        ))?;
        return out.finish();
    }
    let mut first = true;
    for (root, items) in &workspaces {
        if items.is_empty() {
            continue;
        }
        if !first {
            out.line("")?;
        }
        first = false;
        let n = items.len();
        let heading = format!(
            "{}  ({n} session{})",
            sanitize::line(root),
            if n == 1 { "" } else { "s" }
        );
        let heading = out.paint("1", &heading);
        out.line(&heading)?;
        table(&mut out, items)?;
    }
    out.finish()
}

/// Colour of a cell (header row = bold).
fn sgr(col: usize, s: &SessionSummary) -> Option<&'static str> {
    match col {
        0 => Some("33"),
        1 | 5 => Some("2"),
        4 if s.plan.failed > 0 => Some("31"),
        _ => None,
    }
}

/// Prints the table of `items`: one line per session, cut to the terminal's width.
fn table(out: &mut Out, items: &[SessionSummary]) -> CmdResult {
    const HEADER: [&str; 7] = [
        "ID",
        "ACTIVE",
        "MSGS",
        "TOKENS IN/OUT",
        "PLAN",
        "MODEL",
        "TITLE",
    ];
    const ALIGN: [Align; 7] = [
        Align::Left,
        Align::Left,
        Align::Right,
        Align::Right,
        Align::Left,
        Align::Left,
        Align::Left,
    ];
    let now = now_ms();
    let id_len = fmt::short_id_len(items.iter().map(|s| s.id.as_str()));
    let mut rows: Vec<Vec<Cow<str>>> = Vec::with_capacity(items.len() + 1);
    rows.push(HEADER.iter().map(|h| Cow::Borrowed(*h)).collect());
    for s in items {
        let title = sanitize::line(s.display_title());
        let title = if s.parent_id.is_some() || s.subagent_of.is_some() {
            Cow::Owned(format!("↳ {title}"))
        } else {
            title
        };
        let title = match &s.source {
            Some(src) => Cow::Owned(format!("[{}] {title}", sanitize::line(src))),
            None => title,
        };
        let mut tokens = fmt::compact(s.token_input_total);
        tokens.push('/');
        tokens.push_str(&fmt::compact(s.token_output_total));
        rows.push(vec![
            sanitize::line(fmt::short_id(&s.id, id_len)),
            Cow::Owned(fmt::relative_time(now, s.updated_at_ms, &chrono::Local)),
            Cow::Owned(s.message_count.to_string()),
            Cow::Owned(tokens),
            Cow::Owned(fmt::plan_progress(&s.plan)),
            if s.model.is_empty() {
                Cow::Borrowed("-")
            } else {
                sanitize::line(&s.model)
            },
            title,
        ]);
    }
    let widths = fmt::column_widths(&rows);
    // Everything before the title: the columns and their two-space gaps.
    let prefix: usize = widths[..6].iter().map(|w| w + 2).sum();
    let room = out.width.map(|w| w.saturating_sub(prefix).max(1));
    let mut line = String::with_capacity(256);
    for (i, cells) in rows.iter().enumerate() {
        line.clear();
        for (j, cell) in cells.iter().enumerate() {
            let code = if i == 0 {
                Some("1")
            } else {
                sgr(j, &items[i - 1])
            };
            let code = code.filter(|_| out.color);
            if let Some(c) = code {
                line.push_str("\x1b[");
                line.push_str(c);
                line.push('m');
            }
            if j == 6 {
                match room {
                    Some(r) if fmt::width(cell) > r => line.push_str(&fmt::cut(cell, r)),
                    _ => line.push_str(cell),
                }
            } else {
                fmt::push_padded(&mut line, cell, widths[j], ALIGN[j]);
            }
            if code.is_some() {
                line.push_str("\x1b[0m");
            }
            if j != 6 {
                line.push_str("  ");
            }
        }
        out.line(line.trim_end())?;
    }
    Ok(())
}
