//! Copying a message, a tool result or a code block of the open transcript to the clipboard
//! (OSC 52, see [`crate::tui::clipboard`]): the selected message, else the last one.

use super::App;
use super::state::{Focus, Screen, Tab};
use crate::tui::clipboard;
use crate::tui::effect::Effect;

impl App {
    /// `y` / Alt-C (`code`: `Y` / Alt-K, a code block, the next one on each press).
    pub(super) fn copy_selected(&mut self, code: bool) -> Vec<Effect> {
        if self.screen == Screen::Browse
            && self.focus == Focus::Detail
            && self.tab != Tab::Transcript
        {
            self.say("Copy works on the transcript: ] or [ to the Transcript tab.");
            return Vec::new();
        }
        let Some(t) = self.browse.transcript_mut() else {
            self.say("Nothing to copy yet.");
            return Vec::new();
        };
        let seq = t.selected.unwrap_or(t.last_seq);
        let Some(m) = t.msgs.get(&seq) else {
            self.say("Nothing to copy: no message is selected (Alt-↑ selects one).");
            return Vec::new();
        };
        let kind = clipboard::message_kind(m);
        let (text, what) = if code {
            let blocks = clipboard::code_blocks(&m.text());
            if blocks.is_empty() {
                self.say(format!(
                    "Message #{seq} has no code block; y / Alt-C copies all of it."
                ));
                return Vec::new();
            }
            let n = match t.code_copied {
                Some((s, i)) if s == seq => (i + 1) % blocks.len(),
                _ => 0,
            };
            t.code_copied = Some((seq, n));
            let total = blocks.len();
            let text = blocks.into_iter().nth(n).unwrap_or_default();
            (
                text,
                format!("code block {}/{total} of message #{seq}", n + 1),
            )
        } else {
            (clipboard::message_text(m), format!("{kind} #{seq}"))
        };
        let (clean, cut) = clipboard::clean(&text);
        let lines = clean.lines().count().max(1);
        let size = match clean.len() {
            n if n < 1024 => format!("{n} B"),
            n => format!("{:.1} KB", n as f64 / 1024.0),
        };
        self.say(format!(
            "Copied {what} ({lines} line{}, {size}{}) to the clipboard (OSC 52).",
            if lines == 1 { "" } else { "s" },
            if cut {
                ", cut to fit what terminals accept"
            } else {
                ""
            }
        ));
        vec![Effect::Clipboard(clipboard::osc52(&clean))]
    }
}

impl App {
    /// The terminal did not take the copy's bytes.
    pub(crate) fn copy_failed(&mut self) {
        self.fail("Could not write to the terminal: nothing was copied.");
    }
}
