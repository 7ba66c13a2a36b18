//! A one-line text input.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Text and a cursor (in characters).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Input {
    /// The text.
    pub text: String,
    /// Cursor position in characters.
    pub cursor: usize,
}

impl Input {
    /// An input holding `text`, cursor at the end.
    pub(crate) fn with(text: &str) -> Input {
        Input {
            text: text.to_string(),
            cursor: text.chars().count(),
        }
    }

    fn byte(&self, ch: usize) -> usize {
        self.text
            .char_indices()
            .nth(ch)
            .map(|(i, _)| i)
            .unwrap_or(self.text.len())
    }

    /// Applies an editing key; returns whether the text changed (`None` if the key is not an
    /// editing key).
    pub(crate) fn key(&mut self, key: &KeyEvent) -> Option<bool> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('u') if ctrl => {
                let changed = !self.text.is_empty();
                self.text.clear();
                self.cursor = 0;
                Some(changed)
            }
            KeyCode::Char(c) if !ctrl && !c.is_control() => {
                let at = self.byte(self.cursor);
                self.text.insert(at, c);
                self.cursor += 1;
                Some(true)
            }
            KeyCode::Backspace if self.cursor > 0 => {
                let at = self.byte(self.cursor - 1);
                self.text.remove(at);
                self.cursor -= 1;
                Some(true)
            }
            KeyCode::Delete if self.cursor < self.text.chars().count() => {
                let at = self.byte(self.cursor);
                self.text.remove(at);
                Some(true)
            }
            KeyCode::Left => {
                self.cursor = self.cursor.saturating_sub(1);
                Some(false)
            }
            KeyCode::Right => {
                self.cursor = (self.cursor + 1).min(self.text.chars().count());
                Some(false)
            }
            KeyCode::Home => {
                self.cursor = 0;
                Some(false)
            }
            KeyCode::End => {
                self.cursor = self.text.chars().count();
                Some(false)
            }
            KeyCode::Backspace | KeyCode::Delete => Some(false),
            _ => None,
        }
    }

    /// Inserts pasted text (newlines become spaces).
    pub(crate) fn paste(&mut self, s: &str) {
        for c in s.chars() {
            let c = if c == '\n' || c == '\r' || c == '\t' {
                ' '
            } else {
                c
            };
            if c.is_control() {
                continue;
            }
            let at = self.byte(self.cursor);
            self.text.insert(at, c);
            self.cursor += 1;
        }
    }
}
