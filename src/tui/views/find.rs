//! The transcript search as drawn: its matches highlighted in the lines on screen (only
//! those: the transcript lays out what is visible and nothing else).

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::tui::app::App;
use crate::tui::pane::Find;

/// The words the open search highlights, lower case, as characters (empty: none).
pub(super) fn needles(app: &App) -> Vec<Vec<char>> {
    app.find()
        .map(Find::needles)
        .unwrap_or_default()
        .into_iter()
        .map(|w| w.chars().collect())
        .collect()
}

fn lower(c: char) -> char {
    c.to_lowercase().next().unwrap_or(c)
}

/// `line` with every case-insensitive occurrence of a needle inside one span in `style`
/// (patched over the span's own).
pub(super) fn highlight(line: Line<'static>, needles: &[Vec<char>], style: Style) -> Line<'static> {
    if needles.is_empty() {
        return line;
    }
    let mut spans: Vec<Span<'static>> = Vec::with_capacity(line.spans.len());
    for span in line.spans {
        let chars: Vec<char> = span.content.chars().collect();
        let mut marks = vec![false; chars.len()];
        let mut any = false;
        for n in needles.iter().filter(|n| !n.is_empty()) {
            if n.len() > chars.len() {
                continue;
            }
            for i in 0..=chars.len() - n.len() {
                if chars[i..i + n.len()]
                    .iter()
                    .zip(n)
                    .all(|(a, b)| lower(*a) == *b)
                {
                    marks[i..i + n.len()].iter_mut().for_each(|m| *m = true);
                    any = true;
                }
            }
        }
        if !any {
            spans.push(span);
            continue;
        }
        let mut run = String::new();
        let mut on = marks.first().copied().unwrap_or(false);
        for (c, m) in chars.into_iter().zip(marks) {
            if m != on && !run.is_empty() {
                let st = if on {
                    span.style.patch(style)
                } else {
                    span.style
                };
                spans.push(Span::styled(std::mem::take(&mut run), st));
            }
            on = m;
            run.push(c);
        }
        if !run.is_empty() {
            let st = if on {
                span.style.patch(style)
            } else {
                span.style
            };
            spans.push(Span::styled(run, st));
        }
    }
    Line { spans, ..line }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::Modifier;

    #[test]
    fn matches_are_split_out_and_styled() {
        let hl = Style::new().add_modifier(Modifier::REVERSED);
        let line = Line::from(vec![Span::raw("Fix the parser, parse"), Span::raw(" ok")]);
        let out = highlight(line, &["parse".chars().collect()], hl);
        let texts: Vec<(&str, bool)> = out
            .spans
            .iter()
            .map(|s| (s.content.as_ref(), s.style == hl))
            .collect();
        assert_eq!(
            texts,
            [
                ("Fix the ", false),
                ("parse", true),
                ("r, ", false),
                ("parse", true),
                (" ok", false)
            ]
        );
    }
}
