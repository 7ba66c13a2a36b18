//! The conversation view's message editor: a real multi-line editor (ratatui-textarea) with
//! the history of what was sent. Enter sends; Shift-Enter, Ctrl-J (and Alt-Enter while no turn
//! runs) start a new line; a paste keeps its line breaks (a terminal's CR and CRLF become LF)
//! and a big one shows as a chip (`[pasted 5,000 lines · 324 KB]`) whose text goes with the
//! message; ↑ on the first line (or an empty editor) recalls earlier messages, ↓ on the last
//! line goes forward again; Ctrl-Z undoes.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::{Modifier, Style};
use ratatui_textarea::{CursorMove, TextArea, WrapMode};

/// What a key did to the composer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Send this text (chips expanded; the editor is now empty).
    Submit(String),
    /// The text or the cursor changed.
    Edited,
    /// Nothing to do (Enter on an empty editor).
    Ignored,
}

/// What an empty editor shows.
pub(crate) const PLACEHOLDER: &str =
    "Type a message… Enter sends, Ctrl-J starts a new line, ↑ recalls what you sent";

/// What an empty editor shows while a turn runs (Alt-Enter steers then).
pub(crate) const PLACEHOLDER_TURN: &str =
    "Type a message… Enter queues it, Alt-Enter steers the turn, Ctrl-J starts a new line";

/// Most lines the editor grows to before it scrolls.
pub(crate) const MAX_ROWS: u16 = 8;

/// A paste of more lines than this shows as a chip (more than the editor shows at once).
pub(crate) const CHIP_LINES: usize = MAX_ROWS as usize;
/// A paste of more bytes than this shows as a chip, however few its lines.
pub(crate) const CHIP_BYTES: usize = 4_000;

/// A big paste: the chip the editor shows and the text it stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Paste {
    /// `[pasted 5,000 lines · 324 KB]` (` #2` before the `]` when the same label is there).
    pub chip: String,
    /// The pasted text (line breaks as LF, control characters made visible).
    pub text: String,
}

/// What is written: the editor's text (chips as their labels) and the pastes they stand for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Draft {
    pub shown: String,
    pub pastes: Vec<Paste>,
}

impl Draft {
    /// A draft of plain text (no chips).
    pub(crate) fn plain(text: &str) -> Draft {
        Draft {
            shown: text.to_string(),
            pastes: Vec::new(),
        }
    }

    /// The message it makes: each chip still in the text replaced by its paste.
    pub(crate) fn message(&self) -> String {
        let mut out = self.shown.clone();
        for p in &self.pastes {
            if let Some(at) = out.find(&p.chip) {
                out.replace_range(at..at + p.chip.len(), &p.text);
            }
        }
        out
    }
}

/// The editor and its history.
#[derive(Debug, Clone)]
pub struct Composer {
    area: TextArea<'static>,
    /// Big pastes shown as chips in the text (kept until the editor is emptied, so an undo
    /// brings a chip back whole).
    pastes: Vec<Paste>,
    /// Sent (or cleared) messages, oldest first, as they were written.
    history: Vec<Draft>,
    /// The history entry shown, when browsing it.
    browsing: Option<usize>,
    /// What was being written before browsing started.
    draft: Draft,
}

impl Default for Composer {
    fn default() -> Self {
        Composer::new()
    }
}

impl Composer {
    /// An empty editor.
    pub(crate) fn new() -> Composer {
        Composer {
            area: fresh(""),
            pastes: Vec::new(),
            history: Vec::new(),
            browsing: None,
            draft: Draft::default(),
        }
    }

    /// The editor's text, lines joined by newlines; a big paste reads as its chip.
    pub fn text(&self) -> String {
        self.area.lines().join("\n")
    }

    /// The message the text makes: chips expanded to what was pasted.
    pub(crate) fn message(&self) -> String {
        self.draft_now().message()
    }

    /// The text and the pastes its chips stand for (to keep a draft whole).
    pub(crate) fn draft_now(&self) -> Draft {
        let shown = self.text();
        let pastes = self
            .pastes
            .iter()
            .filter(|p| shown.contains(&p.chip))
            .cloned()
            .collect();
        Draft { shown, pastes }
    }

    /// Nothing written.
    pub(crate) fn is_empty(&self) -> bool {
        self.area.is_empty()
    }

    /// Lines of text (at least one).
    pub(crate) fn rows(&self) -> u16 {
        self.area.lines().len().max(1) as u16
    }

    /// Replaces the text (cursor at the end), leaving history browsing. Chips still in it
    /// keep standing for their pastes.
    pub(crate) fn set_text(&mut self, text: &str) {
        self.area = fresh(text);
        if text.is_empty() {
            self.pastes.clear();
        }
        self.browsing = None;
    }

    /// Puts a kept draft back (chips and all).
    pub(crate) fn set_draft(&mut self, draft: &Draft) {
        self.area = fresh(&draft.shown);
        self.pastes = draft.pastes.clone();
        self.browsing = None;
    }

    /// Ctrl-C with text written: the editor is emptied and what it held becomes the newest
    /// history entry (↑ brings it back; Ctrl-Z undoes the clearing too). Whether there was
    /// anything to clear.
    pub(crate) fn clear_to_history(&mut self) -> bool {
        if self.text().trim().is_empty() {
            return false;
        }
        let d = self.draft_now();
        if self.history.last() != Some(&d) {
            self.history.push(d);
        }
        self.area.select_all();
        self.area.delete_char();
        self.browsing = None;
        self.draft = Draft::default();
        true
    }

    /// Handles a key meant for the editor.
    pub(crate) fn key(&mut self, key: KeyEvent) -> Outcome {
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
                let d = self.draft_now();
                let text = d.message();
                if text.trim().is_empty() {
                    return Outcome::Ignored;
                }
                if self.history.last() != Some(&d) {
                    self.history.push(d);
                }
                self.set_text("");
                self.draft = Draft::default();
                Outcome::Submit(text)
            }
            // Readline: Ctrl-U deletes to the start of the line (the editor's own binding
            // would undo instead).
            KeyCode::Char('u') if mods == KeyModifiers::CONTROL => {
                self.area.delete_line_by_head();
                Outcome::Edited
            }
            KeyCode::Char('z') if mods == KeyModifiers::CONTROL => {
                self.area.undo();
                Outcome::Edited
            }
            // A chip goes whole: half a chip would be sent as its label.
            KeyCode::Backspace if mods.is_empty() && self.delete_chip_before_cursor() => {
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

    /// Deletes the chip that ends at the cursor, if one does.
    fn delete_chip_before_cursor(&mut self) -> bool {
        let (row, col) = (self.area.cursor().0, self.area.cursor().1);
        let Some(line) = self.area.lines().get(row) else {
            return false;
        };
        let before: String = line.chars().take(col).collect();
        let Some(p) = self.pastes.iter().find(|p| before.ends_with(&p.chip)) else {
            return false;
        };
        let n = p.chip.chars().count();
        for _ in 0..n {
            self.area.delete_char();
        }
        true
    }

    /// Replaces the text with `text` as it is (line breaks normalised, control characters
    /// made visible; never a chip): what `$EDITOR` left.
    pub(crate) fn put(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        self.set_text(&crate::sanitize::text(&text));
    }

    /// Inserts pasted text with its line breaks: CR and CRLF (what terminals send for a
    /// newline in a bracketed paste) become LF, every other control character is made visible
    /// (the editor draws its text as it is). A big paste goes in as a chip.
    pub(crate) fn paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let clean = crate::sanitize::text(&text).into_owned();
        let lines = clean.lines().count();
        if lines <= CHIP_LINES && clean.len() <= CHIP_BYTES {
            self.area.insert_str(&clean);
            return;
        }
        let base = format!(
            "pasted {} line{} · {}",
            crate::format::thousands(lines as u64),
            if lines == 1 { "" } else { "s" },
            crate::format::size_si(clean.len() as u64)
        );
        let shown = self.text();
        let mut chip = format!("[{base}]");
        let mut n = 1;
        while shown.contains(&chip) || self.pastes.iter().any(|p| p.chip == chip) {
            n += 1;
            chip = format!("[{base} #{n}]");
        }
        self.area.insert_str(&chip);
        self.pastes.push(Paste { chip, text: clean });
    }

    /// The history read from the store, newest first (this session's messages, then the
    /// workspace's); messages sent here that it lacks stay the newest (as they were written,
    /// chips included). Leaves history browsing.
    pub(crate) fn set_history(&mut self, newest_first: Vec<String>) {
        let mut h: Vec<Draft> = newest_first
            .into_iter()
            .rev()
            .map(|t| Draft::plain(&t))
            .collect();
        for sent in std::mem::take(&mut self.history) {
            // Written here with chips: it stands in place of the stored text it expands to.
            if !sent.pastes.is_empty() {
                let message = sent.message();
                if let Some(d) = h
                    .iter_mut()
                    .find(|d| d.pastes.is_empty() && d.shown == message)
                {
                    *d = sent;
                    continue;
                }
            }
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
                self.draft = self.draft_now();
                Some(self.history.len() - 1)
            }
            (None, false) => return,
            (Some(0), true) => Some(0),
            (Some(i), true) => Some(i - 1),
            (Some(i), false) if i + 1 < self.history.len() => Some(i + 1),
            (Some(_), false) => None,
        };
        let d = match next {
            Some(i) => self.history[i].clone(),
            None => std::mem::take(&mut self.draft),
        };
        self.area = fresh(&d.shown);
        self.pastes = d.pastes;
        self.browsing = next;
    }

    /// The editor for drawing, with `placeholder` shown while it is empty (only an empty
    /// editor is copied for it).
    pub(crate) fn area_with(&self, placeholder: &str) -> std::borrow::Cow<'_, TextArea<'static>> {
        if !self.is_empty() || placeholder == PLACEHOLDER {
            return std::borrow::Cow::Borrowed(&self.area);
        }
        let mut a = self.area.clone();
        a.set_placeholder_text(placeholder);
        std::borrow::Cow::Owned(a)
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
    fn a_terminal_paste_with_cr_line_breaks_keeps_its_lines() {
        // tmux, xterm, VTE, Alacritty and Windows Terminal send CR for a newline.
        let mut c = Composer::new();
        c.paste("alpha\rbeta\rgamma");
        assert_eq!(c.text(), "alpha\nbeta\ngamma");
        assert_eq!(c.rows(), 3);
        let mut c = Composer::new();
        c.paste("one\r\ntwo\r\n");
        assert_eq!(c.text(), "one\ntwo\n");
    }

    #[test]
    fn a_big_paste_is_a_chip_whose_text_is_sent() {
        let mut c = Composer::new();
        typed(&mut c, "look: ");
        let big: String = (0..5000)
            .map(|i| format!("line {i:05} of the log\r"))
            .collect();
        c.paste(&big);
        assert_eq!(c.text(), "look: [pasted 5,000 lines · 110 KB]");
        assert_eq!(c.rows(), 1);
        typed(&mut c, " why?");
        let Outcome::Submit(sent) = c.key(k(KeyCode::Enter, KeyModifiers::NONE)) else {
            panic!("not sent");
        };
        assert!(sent.starts_with("look: line 00000 of the log\nline 00001"));
        assert!(
            sent.ends_with("line 04999 of the log\n why?"),
            "{}",
            &sent[sent.len() - 40..]
        );
        assert_eq!(sent.lines().count(), 5001);
        // ↑ brings the message back as it was written: chip and all.
        c.key(k(KeyCode::Up, KeyModifiers::NONE));
        assert_eq!(c.text(), "look: [pasted 5,000 lines · 110 KB] why?");
        assert_eq!(c.message(), sent);
    }

    #[test]
    fn backspace_takes_a_chip_whole_and_two_alike_are_told_apart() {
        let mut c = Composer::new();
        let block = "x\n".repeat(20);
        c.paste(&block);
        c.paste(&block);
        assert_eq!(
            c.text(),
            "[pasted 20 lines · 40 B][pasted 20 lines · 40 B #2]"
        );
        assert_eq!(c.message(), format!("{block}{block}"));
        c.key(k(KeyCode::Backspace, KeyModifiers::NONE));
        assert_eq!(c.text(), "[pasted 20 lines · 40 B]");
        assert_eq!(c.message(), block);
        c.key(k(KeyCode::Backspace, KeyModifiers::NONE));
        assert!(c.is_empty());
    }

    #[test]
    fn a_cleared_draft_comes_back_with_up_or_ctrl_z() {
        let mut c = Composer::new();
        typed(&mut c, "a long thought");
        assert!(c.clear_to_history());
        assert!(c.is_empty());
        assert!(!c.clear_to_history(), "nothing left to clear");
        c.key(k(KeyCode::Char('z'), KeyModifiers::CONTROL));
        assert_eq!(c.text(), "a long thought");
        c.set_text("");
        c.key(k(KeyCode::Up, KeyModifiers::NONE));
        assert_eq!(c.text(), "a long thought");
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
