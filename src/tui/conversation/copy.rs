//! Copying a message to the clipboard with OSC 52: the terminal (also over SSH, and in tmux
//! with `set-clipboard`) puts it on the system clipboard, so no clipboard tool is needed and
//! mouse scrolling stays the TUI's.

use base64::Engine;

use super::Conversation;
use super::ctx::{Ask, Ctx};

/// Bytes copied at most (terminals drop longer OSC 52 payloads).
pub const COPY_CAP: usize = 100_000;

/// The OSC 52 sequence that puts `text` on the clipboard.
pub fn osc52(text: &str) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    format!("\x1b]52;c;{b64}\x07")
}

impl Conversation {
    /// Alt-C: the selected message (else the last one) goes to the clipboard; the loop
    /// writes the sequence before the next frame.
    pub(super) fn copy_message(&mut self, ctx: &mut Ctx<'_>) -> Vec<Ask> {
        let Some(t) = ctx.detail().and_then(|d| d.transcript.as_ref()) else {
            ctx.fail("Nothing to copy: no session is open.");
            return Vec::new();
        };
        let seq = t.selected.unwrap_or(t.last_seq);
        let Some(m) = t.msgs.get(&seq) else {
            ctx.fail("Nothing to copy: the message is not loaded yet.");
            return Vec::new();
        };
        let mut text = m.text();
        if text.trim().is_empty() {
            ctx.fail(format!("Message #{seq} has no text to copy."));
            return Vec::new();
        }
        let mut note = String::new();
        if text.len() > COPY_CAP {
            let mut n = COPY_CAP;
            while !text.is_char_boundary(n) {
                n -= 1;
            }
            text.truncate(n);
            note = " (cut at 100 KB)".into();
        }
        let chars = text.chars().count();
        self.copy = Some(text);
        ctx.say(format!(
            "Copied message #{seq} ({chars} characters{note}) to the clipboard (OSC 52)."
        ));
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_sequence_carries_the_text_in_base64() {
        assert_eq!(super::osc52("hi"), "\x1b]52;c;aGk=\x07");
    }
}
