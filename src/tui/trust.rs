//! The trust screen (issue 34): asked once, before anything else, when the workspace
//! declares settings (hooks, rules, skills, other settings files) it is not trusted with, or
//! that changed since it was. It lists exactly what the workspace declares (for a change,
//! what changed first) and offers: trust it (recorded with a hash of each file), open
//! without its settings (this process only), or quit. Everything it shows is the
//! repository's own text, sanitised line by line.

use crossterm::event::{
    self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEventKind,
};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Wrap};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use crate::runtime::trust::Review;
use crate::sanitize;
use crate::tui::theme::Theme;

/// What the user chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustChoice {
    /// Trust the workspace as it is (recorded).
    Trust,
    /// Use none of its settings, this time only (nothing recorded).
    OpenWithout,
    /// Leave neocode.
    Quit,
}

/// Below this size the screen is one wrapped paragraph with the three keys.
const COMPACT: (u16, u16) = (40, 10);

/// How a row of the list looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Headline,
    Title,
    Danger,
    Item,
    Note,
    Blank,
}

/// The screen's state: what it shows (sanitised once) and how far it is scrolled.
#[derive(Debug, Clone)]
pub struct TrustScreen {
    root: String,
    rows: Vec<(Kind, String)>,
    trustable: bool,
    scroll: usize,
    theme: Theme,
}

impl TrustScreen {
    /// The screen for `review`.
    pub fn new(review: &Review, theme: Theme) -> TrustScreen {
        let l = |s: &str| sanitize::line(s).into_owned();
        let mut rows = vec![(Kind::Headline, l(&review.headline()))];
        for s in review.sections() {
            rows.push((Kind::Blank, String::new()));
            let kind = if s.danger { Kind::Danger } else { Kind::Title };
            rows.push((kind, l(&s.title)));
            rows.extend(s.items.iter().map(|i| (Kind::Item, l(i))));
        }
        rows.push((Kind::Blank, String::new()));
        rows.push((
            Kind::Note,
            "Trusting records a hash of each of these files under neocode's home: a change asks \
             again. Opening without them uses none of its hooks, allow rules or skills (its deny \
             and ask rules still apply), this time only."
                .into(),
        ));
        TrustScreen {
            root: l(&review.root.display().to_string()),
            rows,
            trustable: !matches!(
                review.state,
                crate::runtime::trust::TrustState::Unreviewable(_)
            ),
            scroll: 0,
            theme,
        }
    }

    /// A key: `t` trusts, `o` opens without the settings, `q`, Esc or Ctrl-C quits; the
    /// arrows, PgUp/PgDn, Home/End scroll.
    pub fn key(&mut self, k: KeyEvent) -> Option<TrustChoice> {
        if k.kind == KeyEventKind::Release {
            return None;
        }
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        match k.code {
            KeyCode::Char('c') if ctrl => Some(TrustChoice::Quit),
            KeyCode::Char('t' | 'T') if self.trustable => Some(TrustChoice::Trust),
            KeyCode::Char('o' | 'O') => Some(TrustChoice::OpenWithout),
            KeyCode::Char('q' | 'Q') | KeyCode::Esc => Some(TrustChoice::Quit),
            KeyCode::Down | KeyCode::Char('j') => self.scroll_by(1),
            KeyCode::Up | KeyCode::Char('k') => self.scroll_by(-1),
            KeyCode::PageDown | KeyCode::Char(' ') => self.scroll_by(10),
            KeyCode::PageUp => self.scroll_by(-10),
            KeyCode::Home | KeyCode::Char('g') => {
                self.scroll = 0;
                None
            }
            KeyCode::End | KeyCode::Char('G') => self.scroll_by(isize::MAX / 2),
            _ => None,
        }
    }

    fn scroll_by(&mut self, n: isize) -> Option<TrustChoice> {
        self.scroll = self
            .scroll
            .saturating_add_signed(n)
            .min(self.rows.len() * 4);
        None
    }

    /// Draws the screen over the whole frame.
    pub fn draw(&self, frame: &mut Frame<'_>) {
        let area = frame.area();
        let t = &self.theme;
        if area.width < COMPACT.0 || area.height < COMPACT.1 {
            let text = format!(
                "{}o open without · q quit — this workspace declares settings it is not trusted with (a bigger terminal lists them)",
                if self.trustable { "t trust · " } else { "" }
            );
            frame.render_widget(Paragraph::new(text).wrap(Wrap { trim: true }), area);
            return;
        }
        let title = Line::from(vec![
            Span::styled(" neocode ", t.bold().patch(t.accent())),
            Span::raw(" "),
            Span::raw(self.root.clone()),
            Span::styled("  ·  workspace trust", t.dim()),
        ]);
        frame.render_widget(
            Paragraph::new(title).style(t.title_bar()),
            Rect { height: 1, ..area },
        );
        let body = Rect {
            y: area.y + 1,
            height: area.height.saturating_sub(2),
            ..area
        };
        let block = Block::bordered()
            .border_style(t.accent())
            .title(Span::styled(
                " Do you trust this workspace? ",
                t.bold().patch(t.warn()),
            ));
        let inner = block.inner(body);
        frame.render_widget(block, body);
        let lines = self.wrapped(inner.width.saturating_sub(1) as usize);
        let height = inner.height as usize;
        let max = lines.len().saturating_sub(height);
        let top = self.scroll.min(max);
        let shown: Vec<Line<'_>> = lines.into_iter().skip(top).take(height).collect();
        let text_area = Rect {
            x: inner.x + 1,
            width: inner.width.saturating_sub(1),
            ..inner
        };
        frame.render_widget(Paragraph::new(shown), text_area);
        if max > 0 {
            let more = format!(" {}/{} ↑↓ ", (top + height).min(max + height), max + height);
            let w = more.chars().count() as u16;
            if body.width > w + 2 {
                frame.render_widget(
                    Paragraph::new(Span::styled(more, t.dim())),
                    Rect {
                        x: body.right() - w - 1,
                        y: body.bottom() - 1,
                        width: w,
                        height: 1,
                    },
                );
            }
        }
        let mut keys = Vec::new();
        if self.trustable {
            keys.push(("t", "trust it (recorded)"));
        }
        keys.push(("o", "open without its settings (this time)"));
        keys.push(("q", "quit"));
        let mut spans = Vec::new();
        for (k, what) in keys {
            spans.push(Span::styled(format!(" {k}"), t.accent().patch(t.bold())));
            spans.push(Span::raw(format!(" {what}  ")));
        }
        frame.render_widget(
            Paragraph::new(Line::from(spans)),
            Rect {
                y: area.bottom() - 1,
                height: 1,
                ..area
            },
        );
    }

    /// The rows cut to `width` columns: a long item goes on under itself, indented.
    fn wrapped(&self, width: usize) -> Vec<Line<'static>> {
        let t = &self.theme;
        let mut out = Vec::new();
        for (kind, text) in &self.rows {
            let (style, indent) = match kind {
                Kind::Headline => (t.bold(), 0),
                Kind::Title => (t.bold(), 0),
                Kind::Danger => (t.bold().patch(t.warn()), 0),
                Kind::Item => (t.text(), 2),
                Kind::Note => (t.dim(), 0),
                Kind::Blank => {
                    out.push(Line::default());
                    continue;
                }
            };
            // An item goes on under itself, indented; prose wraps flush.
            let hang = if matches!(kind, Kind::Item) { 4 } else { 0 };
            for (i, piece) in cut(text, width.saturating_sub(indent).max(8), hang)
                .into_iter()
                .enumerate()
            {
                let pad = indent + if i > 0 { hang } else { 0 };
                out.push(Line::from(vec![
                    Span::raw(" ".repeat(pad)),
                    Span::styled(piece, style),
                ]));
            }
        }
        out
    }
}

/// `s` in pieces of at most `width` columns, every piece after the first `indent` narrower.
/// Lines break between words; a word wider than the line is cut where the line ends.
fn cut(s: &str, width: usize, indent: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut w = 0;
    let mut limit = width.max(1);
    let next = |out: &mut Vec<String>, cur: &mut String, w: &mut usize, limit: &mut usize| {
        out.push(cur.trim_end().to_string());
        cur.clear();
        *w = 0;
        *limit = width.saturating_sub(indent).max(4);
    };
    for word in s.split_inclusive(' ') {
        let ww = word.trim_end().width();
        if w > 0 && w + ww > limit {
            next(&mut out, &mut cur, &mut w, &mut limit);
        }
        for c in word.chars() {
            let cw = c.width().unwrap_or(0);
            if w + cw > limit && w > 0 && c != ' ' {
                next(&mut out, &mut cur, &mut w, &mut limit);
            }
            if c == ' ' && w == 0 {
                continue;
            }
            cur.push(c);
            w += cw;
        }
    }
    if !cur.trim_end().is_empty() || out.is_empty() {
        out.push(cur.trim_end().to_string());
    }
    out
}

/// Shows the screen on `terminal` until the user chooses (a resize redraws it).
pub(crate) fn ask<B: ratatui::backend::Backend>(
    terminal: &mut ratatui::Terminal<B>,
    review: &Review,
    theme: Theme,
) -> anyhow::Result<TrustChoice> {
    let mut screen = TrustScreen::new(review, theme);
    loop {
        terminal
            .draw(|f| screen.draw(f))
            .map_err(|e| anyhow::anyhow!("cannot draw the trust screen: {e}"))?;
        let ev = event::read().map_err(|e| anyhow::anyhow!("cannot read the terminal: {e}"))?;
        let choice = match ev {
            Event::Key(k) => screen.key(k),
            Event::Mouse(m) => match m.kind {
                MouseEventKind::ScrollDown => screen.scroll_by(3),
                MouseEventKind::ScrollUp => screen.scroll_by(-3),
                _ => None,
            },
            _ => None,
        };
        if let Some(c) = choice {
            return Ok(c);
        }
    }
}

/// The status line after the choice (`failed`: why trusting could not be recorded), and
/// whether it is an error.
pub(crate) fn outcome_status(
    choice: TrustChoice,
    failed: Option<&crate::runtime::trust::TrustError>,
) -> (String, bool) {
    match (choice, failed) {
        (TrustChoice::Trust, None) => (
            "Trusted this workspace: its hooks, rules and skills are used (`neocode trust --revoke` forgets it).".into(),
            false,
        ),
        (TrustChoice::Trust, Some(e)) => (
            format!(
                "Could not record the trust ({}); opened without this workspace's settings.",
                sanitize::line(&e.to_string())
            ),
            true,
        ),
        _ => (
            "Opened without this workspace's hooks, allow rules and skills; `neocode trust` reviews them.".into(),
            false,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::cut;

    #[test]
    fn prose_breaks_between_words_and_a_long_word_is_cut() {
        assert_eq!(
            cut("Opening without them uses none of its hooks", 20, 0),
            vec!["Opening without them", "uses none of its", "hooks"]
        );
        assert_eq!(
            cut("touch abcdefghijklmnopqrstuvwxyz", 12, 4),
            vec!["touch", "abcdefgh", "ijklmnop", "qrstuvwx", "yz"]
        );
        assert_eq!(cut("", 10, 0), vec![""]);
    }
}
