//! `neocode --list`: the workspace's sessions, newest activity first.

use std::borrow::Cow;

use serde::Serialize;

use super::fmt::{self, Align};
use super::out::Out;
use super::{CmdResult, Failure};
use crate::runtime::{Location, Sessions};
use crate::sanitize;
use crate::session::file::rfc3339;
use crate::session::{ListNumbers, ListQuery, PlanCounts, SessionSummary, StoreError, now_ms};

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

/// `neocode --list` for one workspace. Without `--limit` the rows are streamed from the
/// store and never held together, so memory stays flat at any number of sessions; the table
/// takes two passes (column widths, then rows) to print exactly what a collected list would.
pub fn run(loc: &Location, opts: ListOptions) -> CmdResult {
    let rt = Sessions::open_existing(loc)?;
    let mut out = Out::stdout();
    let listed = match &rt {
        None => false,
        Some(rt) if opts.limit == 0 => {
            if opts.json {
                json_streamed(&mut out, rt)?;
                return out.finish();
            }
            table_streamed(&mut out, rt)?
        }
        Some(rt) => {
            let items = rt.list(&query(opts.limit))?.items;
            if opts.json {
                out.json_array(items.iter().map(|s| JsonRow::new(s, None)))?;
                return out.finish();
            }
            if !items.is_empty() {
                table(&mut out, &items)?;
            }
            !items.is_empty()
        }
    };
    if !listed {
        if opts.json {
            out.json_array(std::iter::empty::<JsonRow>())?;
        } else {
            out.line(&format!(
                "no sessions yet in {} — run `neocode` there to start one",
                sanitize::line(&loc.root().to_string_lossy())
            ))?;
        }
    }
    out.finish()
}

/// Runs `f` on every summary in list order; a failed write stops the scan and is returned
/// as it is (a closed pipe stays a quiet success).
fn each_row(rt: &Sessions, mut f: impl FnMut(&SessionSummary) -> Result<(), Failure>) -> CmdResult {
    let mut failed = None;
    let scanned = rt.for_each_summary(&query(0), |s| {
        f(&s).map_err(|e| {
            failed = Some(e);
            StoreError::io("stdout", std::io::Error::other("write failed"))
        })
    });
    match failed {
        Some(f) => Err(f),
        None => Ok(scanned?),
    }
}

/// The JSON array of every session, one row at a time (the same bytes as
/// [`Out::json_array`]).
fn json_streamed(out: &mut Out, rt: &Sessions) -> CmdResult {
    let mut first = true;
    out.bytes(b"[")?;
    json_rows(out, rt, None, &mut first)?;
    out.bytes(if first { b"]\n" } else { b"\n]\n" })
}

/// A workspace's rows of a JSON array, one object per line; `first` until one is written.
fn json_rows(out: &mut Out, rt: &Sessions, workspace: Option<&str>, first: &mut bool) -> CmdResult {
    let mut buf = Vec::with_capacity(1024);
    each_row(rt, |s| {
        buf.clear();
        serde_json::to_writer(&mut buf, &JsonRow::new(s, workspace))
            .map_err(|e| Failure::from(StoreError::io("stdout", std::io::Error::other(e))))?;
        let text = String::from_utf8_lossy(&buf);
        out.bytes(if *first { b"\n" } else { b",\n" })?;
        out.bytes(crate::sanitize::json(&text).as_bytes())?;
        *first = false;
        Ok(())
    })
}

/// The table of every session, streamed: a first pass measures the columns, the second
/// prints. False when there is no session.
fn table_streamed(out: &mut Out, rt: &Sessions) -> Result<bool, Failure> {
    let now = now_ms();
    let (id_len, longest_id) = streamed_short_id_len(rt)?;
    let mut widths = [0; 7];
    for (w, h) in widths.iter_mut().zip(HEADER) {
        *w = fmt::width(h);
    }
    if longest_id == 0 {
        return Ok(false);
    }
    // Ids are ASCII: the widest shortened id is the longest id cut to `id_len`.
    widths[0] = widths[0].max(longest_id.min(id_len));
    // The other padded columns come from the figures alone (the title is not padded).
    rt.for_each_list_numbers(|n| {
        for (w, c) in widths[1..6].iter_mut().zip(figures(n, now)) {
            *w = (*w).max(fmt::width(&c));
        }
    })?;
    let mut w = RowWriter::new(out, &widths);
    w.row(out, &header(), None)?;
    each_row(rt, |s| w.row(out, &cells(s, id_len, now, true), Some(s)))?;
    Ok(true)
}

/// [`fmt::short_id_len`] over every session, from ids streamed in byte order (the longest
/// prefix shared by neighbours decides), and the length of the longest id (0: none).
fn streamed_short_id_len(rt: &Sessions) -> Result<(usize, usize), Failure> {
    let mut len = 8;
    let mut longest = 0;
    let mut prev = String::new();
    rt.for_each_id(|id| {
        longest = longest.max(id.chars().count());
        let common = prev
            .bytes()
            .zip(id.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        if !prev.is_empty() {
            len = len.max(common + 1);
        }
        prev.clear();
        prev.push_str(id);
    })?;
    Ok((len, longest))
}

/// `neocode --list --all-workspaces`: every workspace under the home with its root path.
pub fn run_all(home: &std::path::Path, opts: ListOptions) -> CmdResult {
    // Every workspace opens before anything is printed: one that cannot fails the command.
    let mut opened = Vec::new();
    for (dir, rt) in Sessions::open_all(home) {
        let rt = rt.map_err(|e| {
            let mut f = Failure::from(e);
            f.lines[0] = format!("{}: {}", sanitize::line(&dir.to_string_lossy()), f.lines[0]);
            f
        })?;
        opened.push((rt.root().to_string_lossy().into_owned(), rt));
    }
    let mut out = Out::stdout();
    if opts.limit == 0 {
        // Every row: streamed from each workspace in turn, never all in memory.
        if opts.json {
            let mut first = true;
            out.bytes(b"[")?;
            for (root, rt) in &opened {
                json_rows(&mut out, rt, Some(root), &mut first)?;
            }
            out.bytes(if first { b"]\n" } else { b"\n]\n" })?;
            return out.finish();
        }
        let mut counts = Vec::with_capacity(opened.len());
        for (_, rt) in &opened {
            counts.push(rt.count()?);
        }
        if counts.iter().all(|&n| n == 0) {
            return nothing_under(out, home);
        }
        let mut first = true;
        for ((root, rt), n) in opened.iter().zip(counts) {
            if n == 0 {
                continue;
            }
            if !first {
                out.line("")?;
            }
            first = false;
            heading(&mut out, root, n as usize)?;
            table_streamed(&mut out, rt)?;
        }
        return out.finish();
    }
    let mut workspaces = Vec::new();
    for (root, rt) in &opened {
        workspaces.push((root, rt.list(&query(opts.limit))?.items));
    }
    if opts.json {
        out.json_array(
            workspaces.iter().flat_map(|(root, items)| {
                items.iter().map(|s| JsonRow::new(s, Some(root.as_str())))
            }),
        )?;
        return out.finish();
    }
    if workspaces.iter().all(|(_, items)| items.is_empty()) {
        return nothing_under(out, home);
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
        heading(&mut out, root, items.len())?;
        table(&mut out, items)?;
    }
    out.finish()
}

fn nothing_under(mut out: Out, home: &std::path::Path) -> CmdResult {
    out.line(&format!(
        "no sessions yet under {} — run `neocode` in a project to start one",
        sanitize::line(&home.to_string_lossy())
    ))?;
    out.finish()
}

/// A workspace's heading in `--all-workspaces`: its root and how many sessions it holds.
fn heading(out: &mut Out, root: &str, n: usize) -> CmdResult {
    let heading = format!(
        "{}  ({n} session{})",
        sanitize::line(root),
        if n == 1 { "" } else { "s" }
    );
    let heading = out.paint("1", &heading);
    out.line(&heading)
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

fn header() -> [Cow<'static, str>; 7] {
    HEADER.map(Cow::Borrowed)
}

/// The cells of one session's line (the title left empty without `title`).
fn cells(s: &SessionSummary, id_len: usize, now: i64, title: bool) -> [Cow<'_, str>; 7] {
    let title = if !title {
        Cow::Borrowed("")
    } else {
        let title = sanitize::line(s.display_title());
        let title = if s.parent_id.is_some() || s.subagent_of.is_some() {
            Cow::Owned(format!("↳ {title}"))
        } else {
            title
        };
        match &s.source {
            Some(src) => Cow::Owned(format!("[{}] {title}", sanitize::line(src))),
            None => title,
        }
    };
    let [active, msgs, tokens, plan, _] = figures(
        &ListNumbers {
            updated_at_ms: s.updated_at_ms,
            model: String::new(),
            message_count: s.message_count,
            token_input_total: s.token_input_total,
            token_output_total: s.token_output_total,
            plan: s.plan,
        },
        now,
    );
    let model = if s.model.is_empty() {
        Cow::Borrowed("-")
    } else {
        sanitize::line(&s.model)
    };
    [
        sanitize::line(fmt::short_id(&s.id, id_len)),
        active,
        msgs,
        tokens,
        plan,
        model,
        title,
    ]
}

/// The ACTIVE, MSGS, TOKENS, PLAN and MODEL cells of a row.
fn figures(n: &ListNumbers, now: i64) -> [Cow<'static, str>; 5] {
    let mut tokens = fmt::compact(n.token_input_total);
    tokens.push('/');
    tokens.push_str(&fmt::compact(n.token_output_total));
    [
        Cow::Owned(fmt::relative_time(now, n.updated_at_ms, &chrono::Local)),
        Cow::Owned(n.message_count.to_string()),
        Cow::Owned(tokens),
        Cow::Owned(fmt::plan_progress(&n.plan)),
        if n.model.is_empty() {
            Cow::Borrowed("-")
        } else {
            Cow::Owned(sanitize::line(&n.model).into_owned())
        },
    ]
}

/// Prints table lines into one reused buffer: padded columns, the title cut to the width.
struct RowWriter {
    widths: [usize; 7],
    room: Option<usize>,
    line: String,
}

impl RowWriter {
    fn new(out: &Out, widths: &[usize; 7]) -> RowWriter {
        // Everything before the title: the columns and their two-space gaps.
        let prefix: usize = widths[..6].iter().map(|w| w + 2).sum();
        RowWriter {
            widths: *widths,
            room: out.width.map(|w| w.saturating_sub(prefix).max(1)),
            line: String::with_capacity(256),
        }
    }

    /// One line; `s` is `None` for the header.
    fn row(
        &mut self,
        out: &mut Out,
        cells: &[Cow<str>; 7],
        s: Option<&SessionSummary>,
    ) -> CmdResult {
        let line = &mut self.line;
        line.clear();
        for (j, cell) in cells.iter().enumerate() {
            let code = match s {
                None => Some("1"),
                Some(s) => sgr(j, s),
            };
            let code = code.filter(|_| out.color);
            if let Some(c) = code {
                line.push_str("\x1b[");
                line.push_str(c);
                line.push('m');
            }
            if j == 6 {
                match self.room {
                    Some(r) if fmt::width(cell) > r => line.push_str(&fmt::cut(cell, r)),
                    _ => line.push_str(cell),
                }
            } else {
                fmt::push_padded(line, cell, self.widths[j], ALIGN[j]);
            }
            if code.is_some() {
                line.push_str("\x1b[0m");
            }
            if j != 6 {
                line.push_str("  ");
            }
        }
        out.line(line.trim_end())
    }
}

/// Prints the table of `items`: one line per session, cut to the terminal's width.
fn table(out: &mut Out, items: &[SessionSummary]) -> CmdResult {
    let now = now_ms();
    let id_len = fmt::short_id_len(items.iter().map(|s| s.id.as_str()));
    let mut rows: Vec<[Cow<str>; 7]> = Vec::with_capacity(items.len() + 1);
    rows.push(header());
    rows.extend(items.iter().map(|s| cells(s, id_len, now, true)));
    let mut widths = [0; 7];
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(fmt::width(c));
        }
    }
    let mut w = RowWriter::new(out, &widths);
    for (i, cells) in rows.iter().enumerate() {
        w.row(out, cells, i.checked_sub(1).map(|i| &items[i]))?;
    }
    Ok(())
}
