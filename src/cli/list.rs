//! `neocode --list`: the workspace's sessions, newest activity first.

use serde::Serialize;

use super::common::{CmdResult, Failure};
use super::fmt::{self, Align};
use super::out::Out;
use crate::format::push_u64;
use crate::runtime::{Location, Sessions};
use crate::sanitize;
use crate::session::file::rfc3339;
use crate::session::{
    ListBounds, ListLine, ListQuery, PlanCounts, SessionSummary, StoreError, now_ms,
};

/// Options of `--list`.
#[derive(Debug, Clone)]
pub(super) struct ListOptions {
    /// Print the stable JSON array.
    pub json: bool,
    /// At most this many rows per workspace (0 = all).
    pub limit: usize,
    /// Only sessions started on this git branch (`--branch`).
    pub branch: Option<String>,
}

impl ListOptions {
    /// Every row, unfiltered: streamed from the store, never held together.
    fn streamed(&self) -> bool {
        self.limit == 0 && self.branch.is_none()
    }
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
    /// The `[providers.NAME]` profile its last turn ran with; null when none.
    profile: Option<&'a str>,
    /// Dollars of its priced model calls; null while no call had a price.
    cost_usd: Option<f64>,
    status: &'static str,
    parent_id: Option<&'a str>,
    subagent_of: Option<&'a str>,
    /// The tool an imported session came from; null for native sessions.
    source: Option<&'a str>,
    /// The git branch the session started on; null when none was recorded.
    branch: Option<&'a str>,
    plan: PlanCounts,
    asset_count: u64,
    workdir: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    workspace: Option<&'a str>,
}

impl<'a> JsonRow<'a> {
    /// This row with the status the user should see (`interrupted` for a running session
    /// whose process died).
    pub(crate) fn shown(
        mut self,
        sessions: &Sessions,
        status: crate::session::Status,
    ) -> JsonRow<'a> {
        self.status = sessions.shown_status(self.id, status);
        self
    }

    pub(crate) fn new(s: &ListLine<'a>, workspace: Option<&'a str>) -> JsonRow<'a> {
        JsonRow {
            id: s.id,
            title: s.title,
            created_at: rfc3339(s.created_at_ms),
            updated_at: rfc3339(s.updated_at_ms),
            message_count: s.message_count,
            tokens: JsonTokens {
                input: s.token_input_total,
                output: s.token_output_total,
            },
            model: s.model,
            provider: s.provider,
            profile: s.profile,
            cost_usd: s.cost_usd,
            status: s.status.as_str(),
            parent_id: s.parent_id,
            subagent_of: s.subagent_of,
            source: s.source,
            branch: s.branch,
            plan: s.plan,
            asset_count: s.asset_count,
            workdir: s.workdir,
            workspace,
        }
    }
}

impl JsonRow<'_> {
    /// The row as `serde_json::to_writer` writes it, byte for byte, written directly: a
    /// string that needs no escape (nearly all) is copied as it is instead of going through
    /// serde's byte-by-byte escaping, which was the largest cost of a 100,000-row list.
    fn write_compact(&self, out: &mut String) -> serde_json::Result<()> {
        use Field::{Float, Num, Opt, Str};
        let fields = [
            ("{\"id\":", Str(self.id)),
            (",\"title\":", Str(self.title)),
            (",\"created_at\":", Str(&self.created_at)),
            (",\"updated_at\":", Str(&self.updated_at)),
            (",\"message_count\":", Num(self.message_count)),
            (",\"tokens\":{\"input\":", Num(self.tokens.input)),
            (",\"output\":", Num(self.tokens.output)),
            ("},\"model\":", Str(self.model)),
            (",\"provider\":", Str(self.provider)),
            (",\"profile\":", Opt(self.profile)),
            (",\"cost_usd\":", Float(self.cost_usd)),
            (",\"status\":", Str(self.status)),
            (",\"parent_id\":", Opt(self.parent_id)),
            (",\"subagent_of\":", Opt(self.subagent_of)),
            (",\"source\":", Opt(self.source)),
            (",\"branch\":", Opt(self.branch)),
            (",\"plan\":{\"done\":", Num(self.plan.done)),
            (",\"failed\":", Num(self.plan.failed)),
            (",\"total\":", Num(self.plan.total)),
            ("},\"asset_count\":", Num(self.asset_count)),
            (",\"workdir\":", Str(self.workdir)),
            (",\"workspace\":", Str(self.workspace.unwrap_or_default())),
        ];
        // `workspace` is written only when there is one.
        let count = fields.len() - usize::from(self.workspace.is_none());
        for (key, value) in &fields[..count] {
            out.push_str(key);
            value.write(out)?;
        }
        out.push('}');
        Ok(())
    }
}

/// A value of [`JsonRow::write_compact`]'s row.
enum Field<'a> {
    Str(&'a str),
    Opt(Option<&'a str>),
    Num(u64),
    Float(Option<f64>),
}

impl Field<'_> {
    /// Writes the value as `serde_json` does; a string that needs no escape is copied.
    fn write(&self, out: &mut String) -> serde_json::Result<()> {
        match *self {
            Field::Str(s) | Field::Opt(Some(s)) => {
                if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
                    out.push('"');
                    out.push_str(s);
                    out.push('"');
                } else {
                    out.push_str(&serde_json::to_string(s)?);
                }
            }
            Field::Num(n) => push_u64(out, n),
            Field::Float(Some(c)) => out.push_str(&serde_json::to_string(&c)?),
            Field::Opt(None) | Field::Float(None) => out.push_str("null"),
        }
        Ok(())
    }
}

fn query(opts: &ListOptions) -> ListQuery {
    ListQuery {
        limit: opts.limit,
        branch: opts.branch.clone(),
        ..ListQuery::default()
    }
}

/// `neocode --list` for one workspace. Without `--limit` the rows are streamed from the
/// store and never held together, so memory stays flat at any number of sessions; the table
/// takes two passes (column widths, then rows) to print exactly what a collected list would.
pub(super) fn run(loc: &Location, opts: ListOptions) -> CmdResult {
    let sessions = Sessions::open_existing(loc)?;
    let mut out = Out::stdout();
    let listed = match &sessions {
        None => false,
        Some(sessions) if opts.streamed() => {
            if opts.json {
                json_streamed(&mut out, sessions)?;
                return out.finish();
            }
            table_streamed(&mut out, sessions)?
        }
        Some(sessions) => {
            let items = sessions.list(&query(&opts))?.items;
            if opts.json {
                out.json_array(
                    items
                        .iter()
                        .map(|s| JsonRow::new(&s.list_line(), None).shown(sessions, s.status)),
                )?;
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
        } else if let Some(b) = &opts.branch {
            out.line(&format!(
                "no session started on branch {} in {}",
                sanitize::line(b),
                sanitize::line(&loc.root().to_string_lossy())
            ))?;
        } else {
            out.line(&format!(
                "no sessions yet in {} — run `neocode` there to start one",
                sanitize::line(&loc.root().to_string_lossy())
            ))?;
        }
    }
    out.finish()
}

/// The JSON array of every session, one row at a time (the same bytes as
/// [`Out::json_array`]).
fn json_streamed(out: &mut Out, sessions: &Sessions) -> CmdResult {
    let mut first = true;
    out.bytes(b"[")?;
    json_rows(out, sessions, None, &mut first)?;
    out.bytes(if first { b"]\n" } else { b"\n]\n" })
}

/// A workspace's rows of a JSON array, one object per line; `first` until one is written.
fn json_rows(
    out: &mut Out,
    sessions: &Sessions,
    workspace: Option<&str>,
    first: &mut bool,
) -> CmdResult {
    let mut buf = String::with_capacity(1024);
    let mut failed = None;
    let scanned = sessions.for_each_list_line(true, |s| {
        write_json_row(out, &mut buf, sessions, s, workspace, first).map_err(|e| {
            failed = Some(e);
            StoreError::io("stdout", std::io::Error::other("write failed"))
        })
    });
    match failed {
        Some(f) => Err(f),
        None => Ok(scanned?),
    }
}

/// One row of a streamed JSON array, preceded by its separator.
fn write_json_row(
    out: &mut Out,
    buf: &mut String,
    sessions: &Sessions,
    s: &ListLine<'_>,
    workspace: Option<&str>,
    first: &mut bool,
) -> CmdResult {
    buf.clear();
    JsonRow::new(s, workspace)
        .shown(sessions, s.status)
        .write_compact(buf)
        .map_err(|e| Failure::from(StoreError::io("stdout", std::io::Error::other(e))))?;
    out.bytes(if *first { b"\n" } else { b",\n" })?;
    out.bytes(crate::sanitize::json(buf).as_bytes())?;
    *first = false;
    Ok(())
}

/// The table of every session, streamed in one pass: the column widths come first from the
/// ids (an index-only scan) and [`ListBounds`] (index probes), so no row is read twice and
/// none is held. False when there is no session.
fn table_streamed(out: &mut Out, sessions: &Sessions) -> Result<bool, Failure> {
    let now = now_ms();
    let (id_len, longest_id) = streamed_short_id_len(sessions)?;
    if longest_id == 0 {
        return Ok(false);
    }
    let widths = widths(&sessions.list_bounds()?, longest_id.min(id_len), now);
    let mut w = RowWriter::new(out, widths, id_len, now);
    w.header(out)?;
    let mut failed = None;
    let scanned = sessions.for_each_list_line(false, |l| {
        w.row(out, l).map_err(|e| {
            failed = Some(e);
            StoreError::io("stdout", std::io::Error::other("write failed"))
        })
    });
    match failed {
        Some(f) => Err(f),
        None => Ok(scanned.map(|()| true)?),
    }
}

/// [`fmt::short_id_len`] over every session, from ids streamed in byte order (the longest
/// prefix shared by neighbours decides), and the length of the longest id (0: none).
fn streamed_short_id_len(sessions: &Sessions) -> Result<(usize, usize), Failure> {
    let mut len = 8;
    let mut longest = 0;
    let mut prev = String::new();
    sessions.for_each_id(|id| {
        let chars = if id.is_ascii() {
            id.len()
        } else {
            id.chars().count()
        };
        longest = longest.max(chars);
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
pub(super) fn run_all(home: &std::path::Path, opts: ListOptions) -> CmdResult {
    // Every workspace opens before anything is printed: one that cannot fails the command.
    let mut opened = Vec::new();
    for (dir, sessions) in Sessions::open_all(home) {
        let sessions = sessions.map_err(|e| {
            let mut f = Failure::from(e);
            f.lines[0] = format!("{}: {}", sanitize::line(&dir.to_string_lossy()), f.lines[0]);
            f
        })?;
        opened.push((sessions.root().to_string_lossy().into_owned(), sessions));
    }
    let mut out = Out::stdout();
    if opts.streamed() {
        // Every row: streamed from each workspace in turn, never all in memory.
        if opts.json {
            let mut first = true;
            out.bytes(b"[")?;
            for (root, sessions) in &opened {
                json_rows(&mut out, sessions, Some(root), &mut first)?;
            }
            out.bytes(if first { b"]\n" } else { b"\n]\n" })?;
            return out.finish();
        }
        let mut counts = Vec::with_capacity(opened.len());
        for (_, sessions) in &opened {
            counts.push(sessions.count()?);
        }
        if counts.iter().all(|&n| n == 0) {
            return nothing_under(out, home);
        }
        let mut first = true;
        for ((root, sessions), n) in opened.iter().zip(counts) {
            if n == 0 {
                continue;
            }
            if !first {
                out.line("")?;
            }
            first = false;
            heading(&mut out, root, n as usize)?;
            table_streamed(&mut out, sessions)?;
        }
        return out.finish();
    }
    let mut workspaces = Vec::new();
    for (root, sessions) in &opened {
        workspaces.push((root, sessions, sessions.list(&query(&opts))?.items));
    }
    if opts.json {
        out.json_array(workspaces.iter().flat_map(|(root, sessions, items)| {
            items.iter().map(|s| {
                JsonRow::new(&s.list_line(), Some(root.as_str())).shown(sessions, s.status)
            })
        }))?;
        return out.finish();
    }
    if workspaces.iter().all(|(_, _, items)| items.is_empty()) {
        return nothing_under(out, home);
    }
    let mut first = true;
    for (root, _, items) in &workspaces {
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

const HEADER: [&str; 8] = [
    "ID",
    "ACTIVE",
    "MSGS",
    "TOKENS IN/OUT",
    "COST",
    "PLAN",
    "MODEL",
    "TITLE",
];

/// The COST column and the title, which is not padded.
const COST: usize = 4;
const TITLE: usize = 7;
/// Dollar cells are at most this wide ([`crate::format::push_usd`]).
const COST_WIDTH: usize = 7;
/// The COST column shows only when the title keeps at least this many columns.
const MIN_TITLE: usize = 20;

/// The padded columns' widths (the title is not padded): at least the heading, and wide
/// enough for any row within `b`. The same rule serves a streamed list (bounds from the
/// store's indexes) and a collected one (bounds of its rows), so both print the same bytes.
fn widths(b: &ListBounds, id_width: usize, now: i64) -> [usize; 7] {
    let mut w = [0; 7];
    for (w, h) in w.iter_mut().zip(HEADER) {
        *w = fmt::width(h);
    }
    w[0] = w[0].max(id_width);
    // "yesterday" is the widest relative time; past a week the date shows.
    if let Some(oldest) = b.oldest_updated_at_ms {
        w[1] = w[1]
            .max("yesterday".len())
            .max(fmt::width(&fmt::relative_time(now, oldest, &chrono::Local)));
    }
    w[2] = w[2].max(b.max_message_count.to_string().len());
    // Token cells are at most "999.9k/999.9k" wide below a trillion: the heading's width.
    // 0: no session has a cost, and the column is left out.
    w[COST] = if b.any_cost { COST_WIDTH } else { 0 };
    if b.max_plan_total > 0 {
        w[5] = w[5].max(fmt::width(&fmt::plan_progress(&PlanCounts {
            done: b.max_plan_total,
            failed: b.max_plan_failed,
            total: b.max_plan_total,
        })));
    }
    for m in &b.models {
        w[6] = w[6].max(if m.is_empty() {
            1
        } else {
            fmt::width(&sanitize::line(m))
        });
    }
    w
}

/// Prints table lines into one reused buffer: padded columns, the title cut to the width.
struct RowWriter {
    widths: [usize; 7],
    /// The COST column is printed (some session has a cost and it fits the width).
    cost: bool,
    id_len: usize,
    room: Option<usize>,
    line: String,
    cell: String,
    /// ACTIVE cells, made once per minute, hour, day or date the rows fall in.
    active: crate::format::RelativeCells<chrono::Local>,
}

impl RowWriter {
    fn new(out: &Out, widths: [usize; 7], id_len: usize, now: i64) -> RowWriter {
        // Everything before the title: the columns and their two-space gaps.
        let mut prefix: usize = widths.iter().map(|w| w + 2).sum();
        let cost = widths[COST] > 0 && out.width.is_none_or(|w| w >= prefix + MIN_TITLE);
        if !cost {
            prefix -= widths[COST] + 2;
        }
        RowWriter {
            widths,
            cost,
            id_len,
            room: out.width.map(|w| w.saturating_sub(prefix).max(1)),
            line: String::with_capacity(256),
            cell: String::with_capacity(64),
            active: crate::format::RelativeCells::new(now, chrono::Local),
        }
    }

    fn header(&mut self, out: &mut Out) -> CmdResult {
        self.line.clear();
        for (j, h) in HEADER.iter().enumerate() {
            self.cell.clear();
            self.cell.push_str(h);
            self.push_cell(j, out.color.then_some("1"));
        }
        out.line(self.line.trim_end())
    }

    /// One session's line.
    fn row(&mut self, out: &mut Out, l: &ListLine<'_>) -> CmdResult {
        let paint = |code: &'static str| out.color.then_some(code);
        self.line.clear();
        self.cell.clear();
        self.cell
            .push_str(&sanitize::line(fmt::short_id(l.id, self.id_len)));
        self.push_cell(0, paint("33"));
        self.cell.clear();
        self.cell.push_str(self.active.cell(l.updated_at_ms));
        self.push_cell(1, paint("2"));
        self.cell.clear();
        push_u64(&mut self.cell, l.message_count);
        self.push_cell(2, None);
        self.cell.clear();
        crate::format::push_compact(&mut self.cell, l.token_input_total);
        self.cell.push('/');
        crate::format::push_compact(&mut self.cell, l.token_output_total);
        self.push_cell(3, None);
        self.cell.clear();
        // Blank for a session with no priced call: tokens only, never a made-up dollar.
        if let Some(c) = l.cost_usd {
            crate::format::push_usd(&mut self.cell, c);
        }
        self.push_cell(COST, None);
        self.cell.clear();
        fmt::push_plan_progress(&mut self.cell, &l.plan);
        self.push_cell(5, if l.plan.failed > 0 { paint("31") } else { None });
        self.cell.clear();
        if l.model.is_empty() {
            self.cell.push('-');
        } else {
            self.cell.push_str(&sanitize::line(l.model));
        }
        self.push_cell(6, paint("2"));
        self.cell.clear();
        if let Some(src) = l.source {
            self.cell.push('[');
            self.cell.push_str(&sanitize::line(src));
            self.cell.push_str("] ");
        }
        if l.child() {
            self.cell.push_str("↳ ");
        }
        self.cell.push_str(&sanitize::line(l.display_title()));
        self.push_cell(TITLE, None);
        // One write per line, the newline with it.
        let end = self.line.trim_end().len();
        self.line.truncate(end);
        self.line.push('\n');
        out.bytes(self.line.as_bytes())
    }

    /// Appends `self.cell` as column `j`: padded, or cut to the room left for the title.
    fn push_cell(&mut self, j: usize, code: Option<&str>) {
        if j == COST && !self.cost {
            return;
        }
        let line = &mut self.line;
        if let Some(c) = code {
            line.push_str("\x1b[");
            line.push_str(c);
            line.push('m');
        }
        if j == TITLE {
            match self.room {
                Some(r) if fmt::width(&self.cell) > r => line.push_str(&fmt::cut(&self.cell, r)),
                _ => line.push_str(&self.cell),
            }
        } else {
            fmt::push_padded(line, &self.cell, self.widths[j], ALIGN[j]);
        }
        if code.is_some() {
            line.push_str("\x1b[0m");
        }
        if j != TITLE {
            line.push_str("  ");
        }
    }
}

const ALIGN: [Align; 7] = [
    Align::Left,
    Align::Left,
    Align::Right,
    Align::Right,
    Align::Right,
    Align::Left,
    Align::Left,
];

/// Prints the table of `items`: one line per session, cut to the terminal's width.
fn table(out: &mut Out, items: &[SessionSummary]) -> CmdResult {
    let now = now_ms();
    let id_len = fmt::short_id_len(items.iter().map(|s| s.id.as_str()));
    let longest_id = items
        .iter()
        .map(|s| s.id.chars().count())
        .max()
        .unwrap_or(0);
    let widths = widths(&ListBounds::of(items), longest_id.min(id_len), now);
    let mut w = RowWriter::new(out, widths, id_len, now);
    w.header(out)?;
    for s in items {
        w.row(out, &s.list_line())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Status;
    use proptest::prelude::*;

    fn line<'a>(text: &'a str, other: &'a str, n: u64, some: bool) -> ListLine<'a> {
        ListLine {
            id: other,
            title: text,
            first_prompt: "",
            created_at_ms: n as i64,
            updated_at_ms: (n / 2) as i64,
            provider: other,
            model: text,
            workdir: text,
            status: Status::Failed,
            parent_id: some.then_some(text),
            subagent_of: (!some).then_some(other),
            asset_count: n % 7,
            message_count: n,
            token_input_total: n / 3,
            token_output_total: u64::MAX - n,
            plan: PlanCounts {
                done: n % 5,
                failed: n % 3,
                total: n % 11,
            },
            source: some.then_some(other),
            branch: (!some).then_some(text),
            cost_usd: some.then_some(n as f64 / 1e4),
            profile: (!some).then_some(other),
        }
    }

    proptest! {
        /// The hand-written row is exactly what serde writes, escapes and all.
        #[test]
        fn the_written_row_is_serdes_row(
            text in "\\PC*|[\\x00-\\x7f]{0,40}|.*[\"\\\\\\n\\t\\x01\\x1f\\x7f\\u{2028}].*",
            other in ".{0,12}",
            n in any::<u64>(),
            some in any::<bool>(),
            workspace in proptest::option::of(".{0,12}"),
        ) {
            let l = line(&text, &other, n, some);
            let row = JsonRow::new(&l, workspace.as_deref());
            let mut fast = String::new();
            row.write_compact(&mut fast).unwrap();
            prop_assert_eq!(fast, serde_json::to_string(&row).unwrap());
        }
    }
}
