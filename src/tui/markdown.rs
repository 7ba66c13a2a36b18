//! Markdown to wrapped, styled lines for a width. Input must already be sanitised
//! (`sanitize::text`): the only control character left is the newline.

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

use super::theme::Theme;

/// Wraps styled pieces into lines of at most `width` columns; continuation lines start with
/// `indent`.
pub(crate) fn wrap(
    pieces: &[(String, Style)],
    width: usize,
    first: &str,
    indent: &str,
) -> Vec<Line<'static>> {
    let width = width.max(4);
    let mut lines = Vec::new();
    let mut cur: Vec<Span<'static>> = vec![Span::raw(first.to_string())];
    let mut cur_w = first.width();
    let indent_w = indent.width();
    for (text, style) in pieces {
        for word in split_words(text) {
            let w = word.width();
            if cur_w + w > width && cur_w > indent_w {
                lines.push(Line::from(std::mem::take(&mut cur)));
                cur.push(Span::raw(indent.to_string()));
                cur_w = indent_w;
                let trimmed = word.trim_start();
                if trimmed.is_empty() {
                    continue;
                }
                push_hard(
                    &mut lines, &mut cur, &mut cur_w, trimmed, *style, width, indent,
                );
            } else {
                push_hard(
                    &mut lines, &mut cur, &mut cur_w, word, *style, width, indent,
                );
            }
        }
    }
    lines.push(Line::from(cur));
    lines
}

/// Pushes a word, splitting it by characters when it is wider than a line.
fn push_hard(
    lines: &mut Vec<Line<'static>>,
    cur: &mut Vec<Span<'static>>,
    cur_w: &mut usize,
    word: &str,
    style: Style,
    width: usize,
    indent: &str,
) {
    if *cur_w + word.width() <= width {
        cur.push(Span::styled(word.to_string(), style));
        *cur_w += word.width();
        return;
    }
    let mut piece = String::new();
    for c in word.chars() {
        let cw = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if *cur_w + cw > width {
            cur.push(Span::styled(std::mem::take(&mut piece), style));
            lines.push(Line::from(std::mem::take(cur)));
            cur.push(Span::raw(indent.to_string()));
            *cur_w = indent.width();
        }
        piece.push(c);
        *cur_w += cw;
    }
    if !piece.is_empty() {
        cur.push(Span::styled(piece, style));
    }
}

/// Splits text into words that keep their leading whitespace.
fn split_words(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_space = true;
    for (i, c) in s.char_indices() {
        let space = c == ' ';
        if space && !in_space && i > start {
            out.push(&s[start..i]);
            start = i;
        }
        in_space = space;
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

/// Plain (non-markdown) text, line by line, wrapped, with a prefix on each line.
pub(crate) fn plain(text: &str, width: usize, prefix: &str, style: Style) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for l in text.split('\n') {
        out.extend(wrap(&[(l.to_string(), style)], width, prefix, prefix));
    }
    out
}

/// Renders markdown into lines for `width` columns.
#[cfg(test)]
pub(crate) fn render(text: &str, width: usize, theme: Theme) -> Vec<Line<'static>> {
    render_with(text, width, theme, theme.text(), false)
}

/// Renders markdown with `base` as the style of plain text; `keep_breaks` keeps every line
/// break of the source (a person's message, where a newline is meant as one).
pub(crate) fn render_with(
    text: &str,
    width: usize,
    theme: Theme,
    base: Style,
    keep_breaks: bool,
) -> Vec<Line<'static>> {
    let mut r = Renderer {
        theme,
        base,
        keep_breaks,
        table: None,
        width,
        out: Vec::new(),
        cur: Vec::new(),
        bold: 0,
        italic: 0,
        heading: false,
        code_block: false,
        lists: Vec::new(),
        item_prefix: None,
        quote: 0,
    };
    let opts = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES;
    for ev in Parser::new_ext(text, opts) {
        r.event(ev);
    }
    r.flush();
    while r.out.last().is_some_and(|l| l.width() == 0) {
        r.out.pop();
    }
    r.out
}

/// A table being collected: its cells are laid out once all rows are known.
struct Table {
    aligns: Vec<pulldown_cmark::Alignment>,
    rows: Vec<Vec<Vec<(String, Style)>>>,
    row: Vec<Vec<(String, Style)>>,
}

struct Renderer {
    theme: Theme,
    base: Style,
    keep_breaks: bool,
    table: Option<Table>,
    width: usize,
    out: Vec<Line<'static>>,
    cur: Vec<(String, Style)>,
    bold: u32,
    italic: u32,
    heading: bool,
    code_block: bool,
    lists: Vec<Option<u64>>,
    item_prefix: Option<String>,
    quote: u32,
}

impl Renderer {
    fn style(&self) -> Style {
        let mut s = self.base;
        if self.bold > 0 || self.heading {
            s = s.add_modifier(Modifier::BOLD);
        }
        if self.heading {
            s = s.patch(self.theme.accent());
        }
        if self.italic > 0 {
            s = s.add_modifier(Modifier::ITALIC);
        }
        s
    }

    fn indent(&self) -> String {
        let mut s = "│ ".repeat(self.quote as usize);
        s.push_str(&"  ".repeat(self.lists.len().saturating_sub(1)));
        s
    }

    fn flush(&mut self) {
        if self.cur.is_empty() && self.item_prefix.is_none() {
            return;
        }
        let base = self.indent();
        let (first, rest) = match self.item_prefix.take() {
            Some(p) => {
                let pad = " ".repeat(p.width());
                (format!("{base}{p}"), format!("{base}{pad}"))
            }
            None => (base.clone(), base),
        };
        let pieces = std::mem::take(&mut self.cur);
        self.out.extend(wrap(&pieces, self.width, &first, &rest));
    }

    fn blank(&mut self) {
        if self.out.last().is_some_and(|l| l.width() > 0) {
            self.out.push(Line::default());
        }
    }

    /// Lays out a table: aligned columns when they fit the width, else one block per row
    /// with each cell under its column's heading.
    fn table(&mut self, t: Table) {
        use pulldown_cmark::Alignment;
        let text_of = |cell: &[(String, Style)]| -> String {
            cell.iter().map(|(s, _)| s.as_str()).collect::<String>()
        };
        let cols = t.rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut widths = vec![0usize; cols];
        for row in &t.rows {
            for (i, cell) in row.iter().enumerate() {
                widths[i] = widths[i].max(text_of(cell).width());
            }
        }
        let base = self.indent();
        let total = base.width() + widths.iter().sum::<usize>() + 3 * cols.saturating_sub(1);
        let sep = self.theme.dim();
        if total <= self.width {
            for (r, row) in t.rows.iter().enumerate() {
                let mut spans = vec![Span::raw(base.clone())];
                for (i, w) in widths.iter().enumerate() {
                    if i > 0 {
                        spans.push(Span::styled(" │ ", sep));
                    }
                    let cell = row.get(i).map(Vec::as_slice).unwrap_or(&[]);
                    let pad = w - text_of(cell).width();
                    let (left, right) = match t.aligns.get(i) {
                        Some(Alignment::Right) => (pad, 0),
                        Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                        _ => (0, pad),
                    };
                    spans.push(Span::raw(" ".repeat(left)));
                    for (s, st) in cell {
                        let st = if r == 0 {
                            st.add_modifier(Modifier::BOLD)
                        } else {
                            *st
                        };
                        spans.push(Span::styled(s.clone(), st));
                    }
                    // The last column needs no padding on the right.
                    if i + 1 < cols {
                        spans.push(Span::raw(" ".repeat(right)));
                    }
                }
                self.out.push(Line::from(spans));
                if r == 0 {
                    let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                    self.out.push(Line::from(Span::styled(
                        format!("{base}{}", rule.join("─┼─")),
                        sep,
                    )));
                }
            }
            return;
        }
        // Too wide: each row becomes a small record, "heading: value".
        let head: Vec<String> = t
            .rows
            .first()
            .map(|h| h.iter().map(|c| text_of(c)).collect())
            .unwrap_or_default();
        for row in t.rows.iter().skip(1) {
            self.blank();
            for (i, cell) in row.iter().enumerate() {
                let name = head.get(i).cloned().unwrap_or_default();
                let mut pieces =
                    vec![(format!("{name}: "), self.base.add_modifier(Modifier::BOLD))];
                pieces.extend(cell.iter().cloned());
                let first = base.clone();
                let rest = format!("{base}  ");
                self.out.extend(wrap(&pieces, self.width, &first, &rest));
            }
        }
    }

    /// A block or an inline style opens.
    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => {}
            Tag::Heading { .. } => {
                self.flush();
                self.heading = true;
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.quote += 1;
            }
            Tag::CodeBlock(kind) => {
                self.flush();
                self.code_block = true;
                let lang = match kind {
                    CodeBlockKind::Fenced(l) if !l.is_empty() => l.to_string(),
                    _ => String::new(),
                };
                self.out.push(Line::from(Span::styled(
                    format!("{}┌─ {lang}", self.indent()),
                    self.theme.dim(),
                )));
            }
            Tag::List(start) => {
                self.flush();
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let p = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let p = format!("{n}. ");
                        *n += 1;
                        p
                    }
                    _ => "• ".to_string(),
                };
                self.item_prefix = Some(p);
            }
            Tag::Emphasis => self.italic += 1,
            Tag::Strong => self.bold += 1,
            Tag::Table(aligns) => {
                self.flush();
                self.table = Some(Table {
                    aligns,
                    rows: Vec::new(),
                    row: Vec::new(),
                });
            }
            Tag::Link { .. }
            | Tag::Image { .. }
            | Tag::Strikethrough
            | Tag::TableHead
            | Tag::TableRow
            | Tag::TableCell
            | Tag::FootnoteDefinition(_)
            | Tag::HtmlBlock
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::Superscript
            | Tag::Subscript
            | Tag::MetadataBlock(_) => {}
        }
    }

    /// A block or an inline style closes.
    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => {
                self.flush();
                if self.lists.is_empty() {
                    self.blank();
                }
            }
            TagEnd::Heading(_) => {
                self.flush();
                self.heading = false;
                self.blank();
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.quote = self.quote.saturating_sub(1);
                self.blank();
            }
            TagEnd::CodeBlock => {
                self.code_block = false;
                self.out.push(Line::from(Span::styled(
                    format!("{}└─", self.indent()),
                    self.theme.dim(),
                )));
                self.blank();
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.blank();
                }
            }
            TagEnd::Item => self.flush(),
            TagEnd::Emphasis => self.italic = self.italic.saturating_sub(1),
            TagEnd::Strong => self.bold = self.bold.saturating_sub(1),
            TagEnd::TableRow | TagEnd::TableHead => {
                if let Some(t) = &mut self.table {
                    let row = std::mem::take(&mut t.row);
                    t.rows.push(row);
                }
            }
            TagEnd::TableCell => {
                let cell = std::mem::take(&mut self.cur);
                match &mut self.table {
                    Some(t) => t.row.push(cell),
                    None => self.cur = cell,
                }
            }
            TagEnd::Table => {
                if let Some(t) = self.table.take() {
                    self.table(t);
                }
                self.blank();
            }
            _ => {}
        }
    }

    fn event(&mut self, ev: Event<'_>) {
        match ev {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => {
                if self.code_block {
                    let base = self.indent();
                    for l in t.trim_end_matches('\n').split('\n') {
                        let prefix = format!("{base}│ ");
                        self.out.extend(wrap(
                            &[(l.to_string(), self.theme.code())],
                            self.width,
                            &prefix,
                            &prefix,
                        ));
                    }
                } else {
                    let st = self.style();
                    self.cur.push((t.to_string(), st));
                }
            }
            Event::Code(t) => self.cur.push((t.to_string(), self.theme.code())),
            Event::SoftBreak if self.keep_breaks => self.flush(),
            Event::SoftBreak => self.cur.push((" ".into(), self.style())),
            Event::HardBreak => self.flush(),
            Event::Rule => {
                self.flush();
                self.out.push(Line::from(Span::styled(
                    "─".repeat(self.width.min(40)),
                    self.theme.dim(),
                )));
            }
            Event::TaskListMarker(done) => {
                self.cur
                    .push((if done { "[x] " } else { "[ ] " }.into(), self.style()));
            }
            Event::Html(t) | Event::InlineHtml(t) => self.cur.push((t.to_string(), self.style())),
            Event::FootnoteReference(t) => self.cur.push((format!("[{t}]"), self.style())),
            Event::InlineMath(t) | Event::DisplayMath(t) => {
                self.cur.push((t.to_string(), self.theme.code()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn wraps_words_and_code_blocks() {
        let t = Theme::new(false);
        let out = text(&render(
            "Some **bold** words that wrap here\n\n```rust\nfn main() {}\n```\n- one\n- two",
            16,
            t,
        ));
        assert_eq!(
            out,
            [
                "Some bold words",
                "that wrap here",
                "",
                "┌─ rust",
                "│ fn main() {}",
                "└─",
                "",
                "• one",
                "• two"
            ]
        );
    }

    #[test]
    fn tables_line_up_or_fall_back_to_records() {
        let t = Theme::new(false);
        let md = "| name | n |\n|------|--:|\n| alpha | 1 |\n| b | 22 |\n\nafter";
        let out = text(&render(md, 40, t));
        assert_eq!(
            out,
            [
                "name  │  n",
                "──────┼───",
                "alpha │  1",
                "b     │ 22",
                "",
                "after"
            ]
        );
        let narrow = text(&render(md, 8, t));
        assert_eq!(
            narrow,
            [
                "name: ", "  alpha", "n: 1", "", "name: b", "n: 22", "", "after"
            ]
        );
    }

    #[test]
    fn kept_breaks_stay_lines() {
        let t = Theme::new(false);
        let out = text(&render_with("one\ntwo\n\nthree", 40, t, t.text(), true));
        assert_eq!(out, ["one", "two", "", "three"]);
        let joined = text(&render("one\ntwo", 40, t));
        assert_eq!(joined, ["one two"]);
    }
}
