//! The conversation view's message editor: a real multi-line editor (ratatui-textarea) with
//! the history of what was sent. Enter sends; Alt-Enter, Shift-Enter and Ctrl-J start a new
//! line; a paste keeps its line breaks; ↑ on the first line (or an empty editor) recalls
//! earlier messages, ↓ on the last line goes forward again.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::{Modifier, Style};
use ratatui_textarea::{CursorMove, TextArea, WrapMode};

/// What a key did to the composer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Send this text (the editor is now empty).
    Submit(String),
    /// The text or the cursor changed.
    Edited,
    /// Nothing to do (Enter on an empty editor).
    Ignored,
}

/// What an empty editor shows.
pub const PLACEHOLDER: &str =
    "Type a message… Enter sends, Alt-Enter starts a new line, ↑ recalls what you sent";

/// Most lines the editor grows to before it scrolls.
pub const MAX_ROWS: u16 = 8;

/// The editor and its history.
#[derive(Debug, Clone)]
pub struct Composer {
    area: TextArea<'static>,
    /// Sent messages, oldest first.
    history: Vec<String>,
    /// The history entry shown, when browsing it.
    browsing: Option<usize>,
    /// What was being written before browsing started.
    draft: String,
}

impl Default for Composer {
    fn default() -> Self {
        Composer::new()
    }
}

impl Composer {
    /// An empty editor.
    pub fn new() -> Composer {
        Composer {
            area: fresh(""),
            history: Vec::new(),
            browsing: None,
            draft: String::new(),
        }
    }

    /// The text, lines joined by newlines.
    pub fn text(&self) -> String {
        self.area.lines().join("\n")
    }

    /// Nothing written.
    pub fn is_empty(&self) -> bool {
        self.area.is_empty()
    }

    /// Lines of text (at least one).
    pub fn rows(&self) -> u16 {
        self.area.lines().len().max(1) as u16
    }

    /// Replaces the text (cursor at the end), leaving history browsing.
    pub fn set_text(&mut self, text: &str) {
        self.area = fresh(text);
        self.browsing = None;
    }

    /// Handles a key meant for the editor.
    pub fn key(&mut self, key: KeyEvent) -> Outcome {
        let mods = key.modifiers;
        let newline = match key.code {
            KeyCode::Enter => mods.intersects(KeyModifiers::ALT | KeyModifiers::SHIFT),
            KeyCode::Char('j') => mods == KeyModifiers::CONTROL,
            _ => false,
        };
        if newline {
            self.area.insert_newline();
            return Outcome::Edited;
        }
        match key.code {
            KeyCode::Enter => {
                let text = self.text();
                if text.trim().is_empty() {
                    return Outcome::Ignored;
                }
                if self.history.last() != Some(&text) {
                    self.history.push(text.clone());
                }
                self.set_text("");
                self.draft.clear();
                Outcome::Submit(text)
            }
            // Readline: Ctrl-U deletes to the start of the line (the editor's own binding
            // would undo instead).
            KeyCode::Char('u') if mods == KeyModifiers::CONTROL => {
                self.area.delete_line_by_head();
                Outcome::Edited
            }
            KeyCode::Up if mods.is_empty() && self.area.cursor().0 == 0 => {
                self.recall(-1);
                Outcome::Edited
            }
            KeyCode::Down
                if mods.is_empty()
                    && self.browsing.is_some()
                    && self.area.cursor().0 + 1 >= self.area.lines().len() =>
            {
                self.recall(1);
                Outcome::Edited
            }
            KeyCode::Char(c) if visible_form(c).is_some() => {
                // A typed control or bidi character goes in as its visible form: the editor
                // draws its text as it is.
                self.area.insert_str(visible_form(c).unwrap_or_default());
                Outcome::Edited
            }
            _ => {
                self.area.input(key);
                Outcome::Edited
            }
        }
    }

    /// Inserts pasted text with its line breaks; every other control character is made
    /// visible first (the editor draws its text as it is).
    pub fn paste(&mut self, text: &str) {
        let clean = crate::sanitize::text(text);
        self.area.insert_str(clean.as_ref());
    }

    /// The history read from the store, newest first (this session's messages, then the
    /// workspace's); messages sent here that it lacks stay the newest. Leaves history
    /// browsing.
    pub fn set_history(&mut self, newest_first: Vec<String>) {
        let mut h: Vec<String> = newest_first.into_iter().rev().collect();
        // Sent since it was read (not stored yet when it was): still the newest.
        for sent in std::mem::take(&mut self.history) {
            if !h.contains(&sent) {
                h.push(sent);
            }
        }
        self.history = h;
        self.browsing = None;
    }

    /// Moves through the history: -1 older, +1 newer (past the newest: the draft again).
    fn recall(&mut self, dir: i64) {
        if self.history.is_empty() {
            return;
        }
        let next = match (self.browsing, dir < 0) {
            (None, true) => {
                self.draft = self.text();
                Some(self.history.len() - 1)
            }
            (None, false) => return,
            (Some(0), true) => Some(0),
            (Some(i), true) => Some(i - 1),
            (Some(i), false) if i + 1 < self.history.len() => Some(i + 1),
            (Some(_), false) => None,
        };
        let text = match next {
            Some(i) => self.history[i].clone(),
            None => std::mem::take(&mut self.draft),
        };
        self.area = fresh(&text);
        self.browsing = next;
    }

    /// The editor, for drawing.
    pub fn area(&self) -> &TextArea<'static> {
        &self.area
    }
}

/// What a typed character must be shown as, when it may not reach the terminal itself.
fn visible_form(c: char) -> Option<String> {
    let mut buf = [0; 4];
    let raw = c.encode_utf8(&mut buf);
    match crate::sanitize::line(raw) {
        std::borrow::Cow::Borrowed(_) => None,
        std::borrow::Cow::Owned(shown) => Some(shown),
    }
}

fn fresh(text: &str) -> TextArea<'static> {
    let lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    let mut a = TextArea::new(lines);
    a.set_wrap_mode(WrapMode::WordOrGlyph);
    a.set_cursor_line_style(Style::default());
    a.set_placeholder_text(PLACEHOLDER);
    a.set_placeholder_style(Style::default().add_modifier(Modifier::DIM));
    a.move_cursor(CursorMove::Bottom);
    a.move_cursor(CursorMove::End);
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(code: KeyCode, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, m)
    }

    fn typed(c: &mut Composer, s: &str) {
        for ch in s.chars() {
            c.key(k(KeyCode::Char(ch), KeyModifiers::NONE));
        }
    }

    #[test]
    fn enter_sends_and_alt_or_shift_enter_break_lines() {
        let mut c = Composer::new();
        assert_eq!(
            c.key(k(KeyCode::Enter, KeyModifiers::NONE)),
            Outcome::Ignored
        );
        typed(&mut c, "one");
        c.key(k(KeyCode::Enter, KeyModifiers::ALT));
        typed(&mut c, "two");
        c.key(k(KeyCode::Enter, KeyModifiers::SHIFT));
        typed(&mut c, "three");
        assert_eq!(c.rows(), 3);
        assert_eq!(
            c.key(k(KeyCode::Enter, KeyModifiers::NONE)),
            Outcome::Submit("one\ntwo\nthree".into())
        );
        assert!(c.is_empty());
    }

    #[test]
    fn a_paste_keeps_its_lines_and_neutralises_escapes() {
        let mut c = Composer::new();
        c.paste("fn main() {\r\n\tx\x1b[2J\n}");
        assert_eq!(c.text(), "fn main() {\n    x^[[2J\n}");
    }

    #[test]
    fn typed_control_and_bidi_characters_go_in_visible() {
        let mut c = Composer::new();
        typed(&mut c, "a\u{202e}b\u{9b}");
        assert_eq!(c.text(), "a<U+202E>b<U+009B>");
    }

    #[test]
    fn ctrl_u_deletes_to_the_start_of_the_line() {
        let mut c = Composer::new();
        typed(&mut c, "first line");
        c.key(k(KeyCode::Enter, KeyModifiers::ALT));
        typed(&mut c, "second half");
        for _ in 0..5 {
            c.key(k(KeyCode::Left, KeyModifiers::NONE));
        }
        c.key(k(KeyCode::Char('u'), KeyModifiers::CONTROL));
        assert_eq!(
            c.text(),
            "first line
 half"
        );
    }

    #[test]
    fn up_recalls_history_and_down_returns_to_the_draft() {
        let mut c = Composer::new();
        for m in ["first", "second"] {
            typed(&mut c, m);
            c.key(k(KeyCode::Enter, KeyModifiers::NONE));
        }
        typed(&mut c, "draft");
        c.key(k(KeyCode::Up, KeyModifiers::NONE));
        assert_eq!(c.text(), "second");
        c.key(k(KeyCode::Up, KeyModifiers::NONE));
        assert_eq!(c.text(), "first");
        c.key(k(KeyCode::Up, KeyModifiers::NONE));
        assert_eq!(c.text(), "first");
        c.key(k(KeyCode::Down, KeyModifiers::NONE));
        assert_eq!(c.text(), "second");
        c.key(k(KeyCode::Down, KeyModifiers::NONE));
        assert_eq!(c.text(), "draft");
        // Inside a multi-line text, ↑ moves the cursor instead.
        c.set_text("a\nb");
        c.key(k(KeyCode::Up, KeyModifiers::NONE));
        assert_eq!(c.text(), "a\nb");
    }
}
