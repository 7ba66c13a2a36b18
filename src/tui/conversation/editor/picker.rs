//! The `@` file picker. While the word at the end of the editor starts with `@`, the
//! workspace's files (listed once by the worker with an `ignore` walk, `.gitignore` respected,
//! then cached) are ranked against what follows the `@` by nucleo's fuzzy matcher and listed
//! above the editor; ↑↓ choose, Enter or Tab inserts `@path `, Esc closes the list. When the
//! message is sent, each `@path` naming a workspace file has the file's text attached after
//! the message (size-capped; the message says what was attached and what was cut).

use std::path::Path;

use super::Editor;
use crate::tui::conversation::commands::at_word;
use crate::tui::seam::{Ask, Ctx};
use crate::tui::worker::Request;

/// Bytes of one attached file sent at most.
pub(crate) const ATTACH_FILE_CAP: usize = 32 * 1024;
/// Bytes of all attached files of one message at most.
pub(crate) const ATTACH_TOTAL_CAP: usize = 128 * 1024;

impl Editor {
    /// Whether the picker lists files now (its keys come before the editor's).
    pub(crate) fn picker_open(&self) -> bool {
        self.picker && !self.path_matches.is_empty()
    }

    /// After an edit: the picker follows the `@word` being typed (the first one asks the
    /// worker for the files).
    pub(crate) fn refresh_picker(&mut self) -> Vec<Ask> {
        let text = self.composer.text();
        let Some(word) = at_word(&text) else {
            self.picker = false;
            self.path_matches.clear();
            return Vec::new();
        };
        let Some(files) = &self.files else {
            if self.files_asked {
                return Vec::new();
            }
            self.files_asked = true;
            self.picker = true;
            return vec![Ask::Request(Request::Files)];
        };
        // Ranked by the worker: the key draws at once, with the last matches until these.
        self.picker = true;
        vec![Ask::Request(Request::RankFiles {
            files: files.clone(),
            query: word.to_string(),
        })]
    }

    /// The worker's matches for `query`: shown if the `@word` being typed is still that.
    pub(crate) fn ranked(&mut self, query: &str, matches: Vec<String>) {
        let text = self.composer.text();
        if self.picker && at_word(&text) == Some(query) {
            self.path_matches = matches;
            self.path_sel = 0;
        }
    }

    /// A key while the picker is open: moving, choosing, closing; `None` for a key the
    /// editor takes.
    pub(crate) fn picker_key(&mut self, key: crossterm::event::KeyEvent) -> Option<Vec<Ask>> {
        use crossterm::event::{KeyCode, KeyModifiers};
        if !key.modifiers.difference(KeyModifiers::SHIFT).is_empty() {
            return None;
        }
        match key.code {
            KeyCode::Up => {
                self.path_sel = self.path_sel.saturating_sub(1);
                Some(Vec::new())
            }
            KeyCode::Down => {
                self.path_sel = (self.path_sel + 1).min(self.path_matches.len().saturating_sub(1));
                Some(Vec::new())
            }
            KeyCode::Enter | KeyCode::Tab => {
                let chosen = self.path_matches.get(self.path_sel)?.clone();
                let text = self.composer.text();
                let word = at_word(&text).unwrap_or("");
                let head = &text[..text.len() - word.len()];
                self.composer.set_text(&format!("{head}{chosen} "));
                self.picker = false;
                self.path_matches.clear();
                Some(Vec::new())
            }
            KeyCode::Esc => {
                self.picker = false;
                self.path_matches.clear();
                Some(Vec::new())
            }
            _ => None,
        }
    }

    /// The message with the text of each `@path` it names attached after it (workspace files
    /// only, each and all size-capped); what was attached, for the status line.
    pub(in crate::tui::conversation) fn attach_files(
        &self,
        text: String,
        ctx: &mut Ctx<'_>,
    ) -> String {
        let Some(files) = &self.files else {
            return text;
        };
        let mut named: Vec<String> = Vec::new();
        for w in text.split_whitespace() {
            if let Some(p) = w.strip_prefix('@')
                && files.iter().any(|f| f == p)
                && !named.iter().any(|n| n == p)
            {
                named.push(p.to_string());
            }
        }
        if named.is_empty() {
            return text;
        }
        let mut out = text;
        let mut left = ATTACH_TOTAL_CAP;
        let mut said = Vec::new();
        for p in named {
            let (block, note) = attachment(&self.root, &p, &mut left);
            out.push_str(&block);
            said.push(note);
        }
        ctx.say(format!("Attached {}.", said.join(", ")));
        out
    }
}

/// One file's attachment block and how it reads in the status line; `left` is the budget of
/// the whole message.
fn attachment(root: &Path, rel: &str, left: &mut usize) -> (String, String) {
    let bytes = match std::fs::read(root.join(rel)) {
        Ok(b) => b,
        Err(e) => {
            let why = crate::session::io_error(&e);
            return (
                crate::tui::attachment::not_attached(rel, &why),
                format!("@{rel} (not read: {why})"),
            );
        }
    };
    if bytes.contains(&0) {
        return (
            crate::tui::attachment::not_attached(rel, "a binary file"),
            format!("@{rel} (binary, not attached)"),
        );
    }
    let cap = ATTACH_FILE_CAP.min(*left);
    let mut n = bytes.len().min(cap);
    while n > 0 && std::str::from_utf8(&bytes[..n]).is_err() {
        n -= 1;
    }
    *left -= n;
    let body = String::from_utf8_lossy(&bytes[..n]);
    let size = size_text(bytes.len() as u64);
    let (head, note) = if n < bytes.len() {
        let kept = size_text(n as u64);
        (
            format!("@{rel} attached: the first {kept} of {size} (cut)"),
            format!("@{rel} ({kept} of {size}, cut)"),
        )
    } else {
        (
            format!("@{rel} attached ({size})"),
            format!("@{rel} ({size})"),
        )
    };
    (crate::tui::attachment::block(&head, &body), note)
}

/// `812 B`, `31.9 KiB`.
pub(in crate::tui::conversation) fn size_text(n: u64) -> String {
    if n < 1024 {
        format!("{n} B")
    } else {
        format!("{:.1} KiB", n as f64 / 1024.0)
    }
}
