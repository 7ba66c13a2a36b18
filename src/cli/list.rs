//! `neocode --list`: the workspace's sessions, newest activity first.

use serde::Serialize;

use super::fmt::{self, Align};
use super::out::Out;
use super::{CmdResult, Failure};
use crate::runtime::{Location, Runtime};
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
    let items = match Runtime::open_existing(loc)? {
        Some(rt) => rt.list(&query(opts.limit))?.items,
        None => Vec::new(),
    };
    let mut out = Out::stdout();
    if opts.json {
        let rows: Vec<JsonRow> = items.iter().map(|s| JsonRow::new(s, None)).collect();
        out.line(&fmt::to_json(&rows))?;
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
    for (dir, rt) in Runtime::open_all(home) {
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
        let rows: Vec<JsonRow> = workspaces
            .iter()
            .flat_map(|(root, items)| items.iter().map(|s| JsonRow::new(s, Some(root.as_str()))))
            .collect();
        out.line(&fmt::to_json(&rows))?;
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

/// Prints the table of `items`.
fn table(out: &mut Out, items: &[SessionSummary]) -> CmdResult {
    let now = now_ms();
    let id_len = fmt::short_id_len(items.iter().map(|s| s.id.as_str()));
    let mut rows: Vec<Vec<String>> = Vec::with_capacity(items.len() + 1);
    rows.push(
        [
            "ID",
            "ACTIVE",
            "MSGS",
            "TOKENS IN/OUT",
            "PLAN",
            "MODEL",
            "TITLE",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
    );
    for s in items {
        let title = sanitize::line(s.display_title());
        let title = if s.parent_id.is_some() {
            format!("↳ {title}")
        } else {
            title.into_owned()
        };
        rows.push(vec![
            sanitize::line(fmt::short_id(&s.id, id_len)).into_owned(),
            fmt::relative_time(now, s.updated_at_ms, &chrono::Local),
            s.message_count.to_string(),
            format!(
                "{}/{}",
                fmt::compact(s.token_input_total),
                fmt::compact(s.token_output_total)
            ),
            fmt::plan_progress(&s.plan),
            if s.model.is_empty() {
                "-".to_string()
            } else {
                sanitize::line(&s.model).into_owned()
            },
            title,
        ]);
    }
    let laid = fmt::layout(
        &rows,
        &[
            Align::Left,
            Align::Left,
            Align::Right,
            Align::Right,
            Align::Left,
            Align::Left,
            Align::Left,
        ],
    );
    let mut line = String::with_capacity(256);
    for (i, cells) in laid.iter().enumerate() {
        line.clear();
        let last = cells.len() - 1;
        for (j, c) in cells.iter().enumerate() {
            let cell = if j == last {
                match out.width {
                    Some(w) => fmt::cut(c, w.saturating_sub(fmt::prefix_width(cells)).max(1)),
                    None => c.clone(),
                }
            } else {
                c.clone()
            };
            let painted = if i == 0 {
                out.paint("1", &cell)
            } else {
                match j {
                    0 => out.paint("33", &cell),
                    1 | 5 => out.paint("2", &cell),
                    4 if items[i - 1].plan.failed > 0 => out.paint("31", &cell),
                    _ => cell,
                }
            };
            line.push_str(&painted);
            if j != last {
                line.push_str("  ");
            }
        }
        out.line(line.trim_end())?;
    }
    Ok(())
}
