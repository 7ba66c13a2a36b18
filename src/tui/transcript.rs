//! A session's transcript as the TUI holds it: a window of messages loaded by seq around the
//! viewport, each laid out into lines for a width on demand and cached, so only what is
//! visible is ever laid out.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::markdown;
use super::theme::Theme;
use crate::format;
use crate::sanitize;
use crate::session::{Message, Part, Role};

/// What the runtime appends to the output of a command the user's cancel killed.
pub const CANCELLED_MARK: &str = "[cancelled by the user;";

/// Messages per loaded chunk.
pub const CHUNK: i64 = 128;
/// Chunks kept in memory before far ones are dropped.
const MAX_CHUNKS: usize = 24;
/// Lines of a collapsed tool result.
const COLLAPSED_LINES: usize = 4;

/// Where a chunk stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkState {
    /// Asked for with this token.
    Requested(u64),
    /// Loaded.
    Loaded,
}

type Laid = Rc<Vec<Line<'static>>>;

/// One session's transcript window.
#[derive(Debug, Default)]
pub struct Transcript {
    /// Session id.
    pub id: String,
    /// Highest seq of the session (0 = empty).
    pub last_seq: i64,
    /// Loaded messages by seq.
    pub msgs: BTreeMap<i64, Message>,
    /// Chunk index → state.
    pub chunks: HashMap<i64, ChunkState>,
    /// The selected message.
    pub selected: Option<i64>,
    /// First visible message and lines of it scrolled past.
    pub top: (i64, usize),
    /// Stick to the end (the conversation view, `G`).
    pub follow_end: bool,
    /// Messages whose tool details are expanded.
    pub expanded: HashSet<i64>,
    /// Tool call id → tool name, from loaded assistant messages.
    pub tool_names: HashMap<String, String>,
    cache: RefCell<HashMap<i64, (usize, bool, Laid)>>,
}

/// The chunk holding `seq`.
pub fn chunk_of(seq: i64) -> i64 {
    (seq.max(1) - 1) / CHUNK
}

/// First and last seq of a chunk.
pub fn chunk_range(c: i64) -> (i64, i64) {
    (c * CHUNK + 1, (c + 1) * CHUNK)
}

impl Transcript {
    /// An empty window over session `id` whose highest seq is `last_seq`.
    pub fn new(id: &str, last_seq: i64, follow_end: bool) -> Transcript {
        Transcript {
            id: id.to_string(),
            last_seq,
            top: (1, 0),
            follow_end,
            ..Transcript::default()
        }
    }

    /// Chunks needed for a viewport of `height` lines that are neither loaded nor asked for.
    pub fn wanted_chunks(&self, height: usize) -> Vec<i64> {
        if self.last_seq == 0 {
            return Vec::new();
        }
        let h = height as i64 + 8;
        let (from, to) = if self.follow_end {
            (self.last_seq - h, self.last_seq)
        } else {
            let anchor = self.selected.unwrap_or(self.top.0).min(self.top.0);
            (anchor - 8, self.top.0.max(self.selected.unwrap_or(0)) + h)
        };
        let (from, to) = (from.max(1), to.min(self.last_seq).max(1));
        (chunk_of(from)..=chunk_of(to))
            .filter(|c| !self.chunks.contains_key(c))
            .collect()
    }

    /// Marks a chunk requested.
    pub fn requested(&mut self, chunk: i64, token: u64) {
        self.chunks.insert(chunk, ChunkState::Requested(token));
    }

    /// Takes a loaded chunk if it is the answer still awaited.
    pub fn loaded(&mut self, token: u64, from: i64, messages: Vec<Message>) -> bool {
        let c = chunk_of(from);
        if self.chunks.get(&c) != Some(&ChunkState::Requested(token)) {
            return false;
        }
        self.chunks.insert(c, ChunkState::Loaded);
        for m in messages {
            for call in &m.tool_calls {
                self.tool_names.insert(call.id.clone(), call.name.clone());
            }
            self.cache.borrow_mut().remove(&m.seq);
            self.msgs.insert(m.seq, m);
        }
        self.evict(c);
        true
    }

    /// Drops the chunks farthest from `keep` when too many are loaded.
    fn evict(&mut self, keep: i64) {
        if self.chunks.len() <= MAX_CHUNKS {
            return;
        }
        let mut loaded: Vec<i64> = self.chunks.keys().copied().collect();
        loaded.sort_by_key(|c| std::cmp::Reverse((c - keep).abs()));
        for c in loaded.into_iter().take(self.chunks.len() - MAX_CHUNKS) {
            self.chunks.remove(&c);
            let (a, b) = chunk_range(c);
            let seqs: Vec<i64> = self.msgs.range(a..=b).map(|(s, _)| *s).collect();
            let mut cache = self.cache.borrow_mut();
            for s in seqs {
                self.msgs.remove(&s);
                cache.remove(&s);
            }
        }
    }

    /// Whether a seq's chunk is loaded (a missing message there is a gap, not pending).
    fn is_loaded(&self, seq: i64) -> bool {
        self.chunks.get(&chunk_of(seq)) == Some(&ChunkState::Loaded)
    }

    /// The lines of message `seq` for `width` columns (cached).
    pub fn lines(&self, seq: i64, width: usize, theme: &Theme) -> Laid {
        let expanded = self.expanded.contains(&seq);
        if let Some((w, e, l)) = self.cache.borrow().get(&seq)
            && *w == width
            && *e == expanded
        {
            return l.clone();
        }
        let laid: Laid = match self.msgs.get(&seq) {
            Some(m) => Rc::new(message_lines(m, width, expanded, &self.tool_names, theme)),
            None if self.is_loaded(seq) => Rc::new(Vec::new()),
            None => Rc::new(vec![Line::from(Span::styled(
                format!("  … loading message {seq}"),
                theme.dim(),
            ))]),
        };
        if self.msgs.contains_key(&seq) {
            self.cache
                .borrow_mut()
                .insert(seq, (width, expanded, laid.clone()));
        }
        laid
    }

    fn height(&self, seq: i64, width: usize, theme: &Theme) -> usize {
        self.lines(seq, width, theme).len()
    }

    /// The visible lines for a viewport, each with the seq it belongs to.
    pub fn visible(&self, width: usize, height: usize, theme: &Theme) -> Vec<(i64, Line<'static>)> {
        if self.last_seq == 0 || height == 0 {
            return Vec::new();
        }
        if self.follow_end {
            let mut out: Vec<(i64, Line<'static>)> = Vec::new();
            let mut seq = self.last_seq;
            while seq >= 1 && out.len() < height {
                let l = self.lines(seq, width, theme);
                let mut chunk: Vec<(i64, Line<'static>)> =
                    l.iter().cloned().map(|x| (seq, x)).collect();
                chunk.append(&mut out);
                out = chunk;
                seq -= 1;
            }
            let skip = out.len().saturating_sub(height);
            return out.split_off(skip);
        }
        let mut out = Vec::new();
        let (mut seq, mut skip) = self.top;
        while seq <= self.last_seq && out.len() < height {
            let l = self.lines(seq, width, theme);
            for line in l.iter().skip(skip) {
                if out.len() == height {
                    break;
                }
                out.push((seq, line.clone()));
            }
            skip = 0;
            seq += 1;
        }
        out
    }

    /// Pins the view (leaves follow-end) at what is currently shown at the top.
    fn unfollow(&mut self, width: usize, height: usize, theme: &Theme) {
        if self.follow_end {
            // What is shown now, measured while still following the end.
            let vis = self.visible(width, height, theme);
            self.follow_end = false;
            if let Some((seq, _)) = vis.first() {
                let before = vis.iter().take_while(|(s, _)| s == seq).count();
                let total = self.height(*seq, width, theme);
                self.top = (*seq, total.saturating_sub(before));
            }
        }
    }

    /// Scrolls by `delta` lines.
    pub fn scroll(&mut self, delta: i64, width: usize, height: usize, theme: &Theme) {
        if self.last_seq == 0 {
            return;
        }
        self.unfollow(width, height, theme);
        let (mut seq, mut off) = self.top;
        // The offset was taken at another width: a narrower or wider layout changes every
        // message's height, so keep it inside the message it points into.
        off = off.min(self.height(seq, width, theme).saturating_sub(1));
        if delta > 0 {
            let mut left = delta as usize;
            while left > 0 {
                let h = self.height(seq, width, theme);
                if off + left < h {
                    off += left;
                    left = 0;
                } else if seq < self.last_seq {
                    left -= h - off;
                    seq += 1;
                    off = 0;
                } else {
                    off = h.saturating_sub(1);
                    left = 0;
                }
            }
        } else {
            let mut left = (-delta) as usize;
            while left > 0 {
                if off >= left {
                    off -= left;
                    left = 0;
                } else if seq > 1 {
                    left -= off;
                    seq -= 1;
                    off = self.height(seq, width, theme);
                } else {
                    off = 0;
                    left = 0;
                }
            }
        }
        self.top = (seq, off);
        if self.at_end(width, height, theme) {
            self.follow_end = true;
        }
    }

    fn at_end(&self, width: usize, height: usize, theme: &Theme) -> bool {
        let mut lines = 0usize;
        let (mut seq, off) = self.top;
        lines += self.height(seq, width, theme).saturating_sub(off);
        while seq < self.last_seq && lines <= height {
            seq += 1;
            lines += self.height(seq, width, theme);
        }
        lines <= height
    }

    /// Moves the selection by `delta` messages (skipping gaps) and brings it into view.
    pub fn select_by(&mut self, delta: i64, width: usize, height: usize, theme: &Theme) {
        if self.last_seq == 0 {
            return;
        }
        let cur = match self.selected {
            Some(s) => s,
            None => {
                let vis = self.visible(width, height, theme);
                let first = vis.first().map(|(s, _)| *s).unwrap_or(1);
                let last = vis.last().map(|(s, _)| *s).unwrap_or(self.last_seq);
                self.selected = Some(if delta < 0 { last } else { first });
                self.reveal(width, height, theme);
                return;
            }
        };
        let mut s = cur;
        let step = delta.signum();
        for _ in 0..delta.abs() {
            let mut n = s + step;
            while n >= 1 && n <= self.last_seq && self.is_loaded(n) && !self.msgs.contains_key(&n) {
                n += step;
            }
            if n < 1 || n > self.last_seq {
                break;
            }
            s = n;
        }
        self.select(s, width, height, theme);
    }

    /// Selects `seq` and brings it into view.
    pub fn select(&mut self, seq: i64, width: usize, height: usize, theme: &Theme) {
        self.selected = Some(seq.clamp(1, self.last_seq.max(1)));
        self.reveal(width, height, theme);
    }

    /// Scrolls so the selected message is visible.
    fn reveal(&mut self, width: usize, height: usize, theme: &Theme) {
        let Some(sel) = self.selected else { return };
        let vis = self.visible(width, height, theme);
        let shown = vis.iter().filter(|(s, _)| *s == sel).count();
        let full = self.height(sel, width, theme);
        if shown == full.min(height) && shown > 0 {
            return;
        }
        self.follow_end = false;
        let top_seq = vis.first().map(|(s, _)| *s).unwrap_or(self.top.0);
        if sel <= top_seq || full >= height {
            self.top = (sel, 0);
        } else {
            // Bottom-align the selected message.
            let mut lines = full;
            let mut seq = sel;
            while seq > 1 {
                let h = self.height(seq - 1, width, theme);
                if lines + h > height {
                    self.top = (seq - 1, lines + h - height);
                    return;
                }
                lines += h;
                seq -= 1;
            }
            self.top = (1, 0);
        }
    }

    /// Goes to the start.
    pub fn home(&mut self) {
        self.follow_end = false;
        self.top = (1, 0);
        if self.selected.is_some() {
            self.selected = Some(1);
        }
    }

    /// Goes to the end.
    pub fn end(&mut self) {
        self.follow_end = true;
        if self.selected.is_some() {
            self.selected = Some(self.last_seq);
        }
    }

    /// Forgets the layout cache (the theme or a tool name changed).
    pub fn clear_cache(&self) {
        self.cache.borrow_mut().clear();
    }
}

/// Role label and style.
fn role_label(m: &Message, tools: &HashMap<String, String>, theme: &Theme) -> (String, Style) {
    match m.role {
        Role::User => ("You".into(), theme.user()),
        Role::Assistant => ("Assistant".into(), theme.assistant()),
        Role::System if is_plan_instructions(m) => (
            "Plan-drafting instructions (neocode to the model)".into(),
            theme.dim(),
        ),
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

/// Fields that best say what a tool call does, in order of preference.
const TELLING: [&str; 7] = ["command", "cmd", "path", "file", "pattern", "query", "url"];

/// A one-line summary of a tool call's JSON arguments: the first line of the most telling
/// field, else the compact JSON (` …` marks that there is more).
pub fn args_summary(arguments: &str) -> String {
    summary(arguments).0
}

/// The summary, and the field it shows in full (single-line) so the rows can leave it out.
fn summary(arguments: &str) -> (String, Option<&'static str>) {
    let first_line = |s: &str| -> (String, bool) {
        let mut it = s.trim_end().split('\n');
        let first = sanitize::line(it.next().unwrap_or("")).into_owned();
        (first, it.next().is_some())
    };
    let v: serde_json::Value = match serde_json::from_str(arguments) {
        Ok(v) => v,
        Err(_) => {
            let (mut s, more) = first_line(arguments);
            if more {
                s.push_str(" …");
            }
            return (s, None);
        }
    };
    if let Some(obj) = v.as_object() {
        for k in TELLING {
            if let Some(s) = obj.get(k).and_then(|x| x.as_str()) {
                let (mut out, more) = first_line(s);
                if more || obj.len() > 1 {
                    out.push_str(" …");
                }
                return (out, (!more).then_some(k));
            }
        }
    }
    let compact: String = first_line(&v.to_string()).0.chars().take(120).collect();
    (compact, None)
}

/// A tool call's arguments as text lines, one field after another; string values keep their
/// line breaks (a file being written reads as the file). `skip` leaves out a field the
/// summary already shows.
fn args_rows(arguments: &str, skip: Option<&str>) -> Vec<String> {
    let mut rows = Vec::new();
    let block = |rows: &mut Vec<String>, head: String, body: &str| {
        let body = body.trim_end_matches('\n');
        if body.contains('\n') {
            rows.push(head);
            rows.extend(body.split('\n').map(|l| format!("  {l}")));
        } else {
            rows.push(format!("{head} {body}"));
        }
    };
    match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(serde_json::Value::Object(obj)) => {
            for (k, v) in &obj {
                if Some(k.as_str()) == skip {
                    continue;
                }
                let body = match v {
                    serde_json::Value::String(s) => s.clone(),
                    v => serde_json::to_string_pretty(v).unwrap_or_default(),
                };
                block(&mut rows, format!("{k}:"), &body);
            }
        }
        Ok(v) => rows.extend(
            serde_json::to_string_pretty(&v)
                .unwrap_or_default()
                .split('\n')
                .map(str::to_string),
        ),
        Err(_) => rows.extend(arguments.trim_end().split('\n').map(str::to_string)),
    }
    rows
}

/// At most `COLLAPSED_LINES` rows unless expanded, then how many more lines there are.
/// `lines` holds each line of the text as the rows it wraps into: what is left is counted in
/// lines, not rows (a long line wraps into several).
fn capped(
    lines: Vec<Vec<Line<'static>>>,
    expanded: bool,
    prefix: &str,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let rows: usize = lines.iter().map(Vec::len).sum();
    if expanded || rows <= COLLAPSED_LINES + 1 {
        return lines.into_iter().flatten().collect();
    }
    let total = lines.len();
    let mut out: Vec<Line<'static>> = Vec::new();
    let mut whole = 0;
    let mut cut = false;
    for l in lines {
        let room = COLLAPSED_LINES - out.len();
        if l.len() <= room {
            out.extend(l);
            whole += 1;
        } else {
            // A first line too long for the room shows its beginning.
            if out.is_empty() {
                out.extend(l.into_iter().take(room));
                cut = true;
            }
            break;
        }
    }
    let more = total - whole;
    let note = if cut && more == 1 {
        "… the line goes on".to_string()
    } else {
        format!("… {more} more line{}", if more == 1 { "" } else { "s" })
    };
    out.push(Line::from(Span::styled(
        format!("{prefix}{note}"),
        theme.dim(),
    )));
    out
}

/// Tool output laid out with its SGR colours as styles (every other escape neutralised).
fn output_lines(
    text: &str,
    width: usize,
    prefix: &str,
    base: Style,
    theme: &Theme,
) -> Vec<Vec<Line<'static>>> {
    let mut lines: Vec<Vec<(String, Style)>> = vec![Vec::new()];
    for (sgr, t) in sanitize::sgr_runs(text) {
        let st = theme.sgr(base, &sgr);
        for (i, piece) in t.split('\n').enumerate() {
            if i > 0 {
                lines.push(Vec::new());
            }
            if !piece.is_empty()
                && let Some(l) = lines.last_mut()
            {
                l.push((piece.to_string(), st));
            }
        }
    }
    while lines.len() > 1
        && lines
            .last()
            .is_some_and(|l| l.iter().all(|(t, _)| t.trim().is_empty()))
    {
        lines.pop();
    }
    lines
        .iter()
        .map(|l| markdown::wrap(l, width, prefix, prefix))
        .collect()
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
pub fn message_lines(
    m: &Message,
    width: usize,
    expanded: bool,
    tools: &HashMap<String, String>,
    theme: &Theme,
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
    let body_w = width.saturating_sub(2);
    for p in &m.parts {
        match p {
            Part::Text { text } => {
                let clean = sanitize::text_without_sgr(text);
                match m.role {
                    Role::Tool => {
                        let style = if m.is_error {
                            theme.error()
                        } else {
                            theme.text()
                        };
                        let rows = output_lines(text, width, "  │ ", style, theme);
                        out.extend(capped(rows, expanded, "  │ ", theme));
                    }
                    Role::User | Role::Assistant | Role::System => {
                        let keep_breaks = m.role == Role::User;
                        let rendered =
                            markdown::render_with(&clean, body_w, theme, theme.text(), keep_breaks);
                        for l in rendered {
                            let mut spans = vec![Span::raw("  ")];
                            spans.extend(l.spans);
                            out.push(Line::from(spans));
                        }
                    }
                }
            }
            Part::Reasoning { text } => {
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
    for call in &m.tool_calls {
        out.extend(call_lines(call, width, expanded, theme));
    }
    if expanded && let Some(meta) = &m.tool_metadata {
        out.push(Line::from(Span::styled(
            format!("  meta {}", sanitize::line(&meta.to_string())),
            theme.dim(),
        )));
    }
    out.push(Line::default());
    out
}

/// A message's head line: who wrote it, its marks (cancelled, denied, error, injected), its
/// seq and its tokens.
fn message_head(m: &Message, tools: &HashMap<String, String>, theme: &Theme) -> Line<'static> {
    let (label, style) = role_label(m, tools, theme);
    let mut head = vec![Span::styled(label, style)];
    if m.role == Role::Tool && !m.is_error && m.text().contains(CANCELLED_MARK) {
        head.push(Span::styled("  ⊘ cancelled", theme.dim()));
    }
    if m.is_error {
        // The runtime's words for calls that never ran: the same states the live cards show.
        let text = m.text();
        let (mark, style) = if m.role == Role::Tool && text.starts_with("The user denied this call")
        {
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

/// A tool call of a message: its name and summary, then its change (collapsed) or its
/// arguments.
fn call_lines(
    call: &crate::session::ToolCall,
    width: usize,
    expanded: bool,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let (summary, shown) = summary(&call.arguments);
    let mut out = markdown::wrap(
        &[
            (sanitize::line(&call.name).into_owned(), theme.tool()),
            ("  ".into(), theme.text()),
            (summary, theme.code()),
        ],
        width,
        "  ⚙ ",
        "    ",
    );
    // Collapsed, an edit or a write shows its change as a coloured diff.
    let diff = if expanded {
        Vec::new()
    } else {
        super::diff::diff_lines(call, width, "    ", COLLAPSED_LINES, theme)
    };
    if !diff.is_empty() {
        out.extend(diff);
        return out;
    }
    let skip = if expanded { None } else { shown };
    let rows: Vec<Vec<Line<'static>>> = args_rows(&call.arguments, skip)
        .iter()
        .map(|r| markdown::plain(&sanitize::text(r), width, "    ", theme.code()))
        .collect();
    out.extend(capped(rows, expanded, "    ", theme));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{ToolCall, Usage};
    use ratatui::style::{Color, Modifier};

    fn msg(role: Role, parts: Vec<Part>, tool_calls: Vec<ToolCall>) -> Message {
        Message {
            seq: 3,
            role,
            parts,
            tool_calls,
            tool_call_id: None,
            is_error: false,
            tool_metadata: None,
            created_at_ms: 0,
            usage: Usage::default(),
            extra: Default::default(),
        }
    }

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
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
        let shown = text(&message_lines(&m, 80, false, &HashMap::new(), &t));
        assert!(
            shown[0].starts_with("Plan-drafting instructions (neocode to the model)  #3"),
            "{shown:#?}"
        );
        assert!(!shown[0].starts_with("System"), "{shown:#?}");
        assert!(
            !shown.iter().any(|l| l.contains("update_plan")),
            "{shown:#?}"
        );
        let open = text(&message_lines(&m, 80, true, &HashMap::new(), &t));
        assert!(open.iter().any(|l| l.contains("update_plan")), "{open:#?}");
    }

    #[test]
    fn more_lines_counts_lines_not_the_rows_they_wrap_into() {
        let t = Theme::new(false);
        let long = |i: usize| format!("line {i} {}", "word ".repeat(8));
        let out: String = (0..6).map(|i| long(i) + "\n").collect();
        let mut m = msg(Role::Tool, vec![Part::text(out)], vec![]);
        m.tool_call_id = Some("c1".into());
        let shown = text(&message_lines(&m, 40, false, &HashMap::new(), &t));
        // Each line wraps into two rows: two whole lines fit, four are left.
        assert!(
            shown.iter().any(|l| l.contains("… 4 more lines")),
            "{shown:#?}"
        );
        let expanded = text(&message_lines(&m, 40, true, &HashMap::new(), &t));
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
        let head = message_lines(&m, 60, false, &tools, &t).remove(0);
        assert!(!head.to_string().contains("injected"), "{head}");
        m.extra.injected = true;
        let head = message_lines(&m, 60, false, &tools, &t).remove(0);
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
        let collapsed = text(&message_lines(&m, 80, false, &HashMap::new(), &t));
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
        let expanded = text(&message_lines(&m, 80, true, &HashMap::new(), &t));
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
        let lines = message_lines(&m, 80, false, &HashMap::new(), &t);
        assert_eq!(lines[1].to_string(), "  │ cyan plain ^[[2Jafter");
        let cyan = lines[1].spans.iter().find(|s| s.content == "cyan").unwrap();
        assert_eq!(cyan.style.fg, Some(Color::Indexed(6)));
        // Without colour the attributes stay and the colour goes.
        let plain = message_lines(&m, 80, false, &HashMap::new(), &Theme::new(false));
        assert!(plain[1].spans.iter().all(|s| s.style.fg.is_none()));
    }

    #[test]
    fn reasoning_is_markdown_and_marked() {
        let t = Theme::new(false);
        let m = msg(
            Role::Assistant,
            vec![
                Part::Reasoning {
                    text: "Think **hard**".into(),
                },
                Part::Text {
                    text: "Answer".into(),
                },
            ],
            Vec::new(),
        );
        let lines = message_lines(&m, 60, false, &HashMap::new(), &t);
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
        let lines = text(&message_lines(&m, 60, false, &HashMap::new(), &t));
        assert_eq!(&lines[1..3], ["  first", "  second"]);
    }
}

#[cfg(test)]
mod paging {
    use super::*;
    use crate::session::Usage;

    fn session(n: i64) -> Transcript {
        let mut t = Transcript::new("s", n, true);
        for c in 0..=chunk_of(n) {
            let (a, b) = chunk_range(c);
            t.requested(c, c as u64);
            let msgs = (a..=b.min(n))
                .map(|seq| Message {
                    seq,
                    role: Role::User,
                    parts: vec![Part::Text {
                        text: format!("message {seq}\nsecond line"),
                    }],
                    tool_calls: Vec::new(),
                    tool_call_id: None,
                    is_error: false,
                    tool_metadata: None,
                    created_at_ms: 0,
                    usage: Usage::default(),
                    extra: Default::default(),
                })
                .collect();
            assert!(t.loaded(c as u64, a, msgs));
        }
        t
    }

    fn first_shown(t: &Transcript, theme: &Theme) -> i64 {
        t.visible(60, 20, theme)[0].0
    }

    #[test]
    fn paging_moves_one_page_each_way() {
        let th = Theme::new(false);
        let mut t = session(300);
        let at_end = first_shown(&t, &th);
        assert!(at_end > 290, "{at_end}");
        t.scroll(-18, 60, 20, &th);
        let up = first_shown(&t, &th);
        assert!((at_end - 6..at_end).contains(&up), "{at_end} -> {up}");
        t.scroll(18, 60, 20, &th);
        assert_eq!(first_shown(&t, &th), at_end);
        // Paging down at the end stays at the end (the last line stays on screen).
        t.scroll(18, 60, 20, &th);
        let vis = t.visible(60, 20, &th);
        assert_eq!(vis.len(), 20);
        assert_eq!(vis.last().map(|(s, _)| *s), Some(300));
    }
}
