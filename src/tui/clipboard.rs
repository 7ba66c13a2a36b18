//! Copying to the clipboard the terminal's way: OSC 52 (`ESC ] 52 ; c ; <base64> BEL`), which
//! the terminal carries out, so it works over SSH and inside tmux (with `set-clipboard on`)
//! and needs no clipboard tool on this machine. Mouse reporting stays as it is, so the wheel
//! keeps scrolling. What is copied is neutralised first (no escape sequence survives into
//! a later paste) and capped, since terminals drop long OSC 52 payloads.

use base64::Engine;

use crate::session::{Message, Part, Role};

/// The most bytes of text one copy sends (about 100 KB once base64 encoded: what xterm,
/// kitty and tmux accept by default).
pub const COPY_MAX: usize = 74 * 1024;

/// The escape sequence that puts `text` on the system clipboard.
pub fn osc52(text: &str) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    format!("\x1b]52;c;{b64}\x07")
}

/// Text for the clipboard: SGR colours and every other escape or control character go
/// (tabs and newlines stay, so code pastes as it was), cut at [`COPY_MAX`] on a character
/// boundary; and whether it was cut.
pub fn clean(text: &str) -> (String, bool) {
    let mut out = String::with_capacity(text.len().min(COPY_MAX));
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        for (j, piece) in line.split('\t').enumerate() {
            if j > 0 {
                out.push('\t');
            }
            out.extend(
                crate::sanitize::text_without_sgr(piece)
                    .chars()
                    .filter(|c| !c.is_control()),
            );
        }
    }
    if out.len() <= COPY_MAX {
        return (out, false);
    }
    let mut end = COPY_MAX;
    while !out.is_char_boundary(end) {
        end -= 1;
    }
    out.truncate(end);
    (out, true)
}

/// A message as text to copy: its text (a tool result: its output), then each tool call it
/// makes as `name arguments`.
pub fn message_text(m: &Message) -> String {
    let mut out = m.text();
    for call in &m.tool_calls {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(&call.name);
        out.push(' ');
        out.push_str(&call.arguments);
    }
    if out.is_empty() {
        // A reply of reasoning only.
        for p in &m.parts {
            if let Part::Reasoning { text, .. } = p {
                out.push_str(text);
            }
        }
    }
    out
}

/// What a copied message is called on the status line.
pub fn message_kind(m: &Message) -> &'static str {
    match m.role {
        Role::Tool => "tool result",
        Role::User => "your message",
        Role::Assistant => "reply",
        Role::System => "system message",
    }
}

/// The fenced code blocks (```` ``` ```` or `~~~`) of a message's text, their bodies only.
pub fn code_blocks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut open: Option<(String, Vec<&str>)> = None;
    for line in text.lines() {
        let t = line.trim_start();
        match open.as_mut() {
            None => {
                for fence in ["```", "~~~"] {
                    if t.starts_with(fence) {
                        let n = t.chars().take_while(|c| fence.starts_with(*c)).count();
                        open = Some((fence[..1].repeat(n), Vec::new()));
                        break;
                    }
                }
            }
            Some((fence, body)) => {
                if t.starts_with(fence.as_str())
                    && t.trim_end().chars().all(|c| fence.starts_with(c))
                {
                    out.push(body.join("\n"));
                    open = None;
                } else {
                    body.push(line);
                }
            }
        }
    }
    // A block the message never closed (a reply cut off) is still a block.
    if let Some((_, body)) = open
        && !body.is_empty()
    {
        out.push(body.join("\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn osc52_is_base64_between_the_markers() {
        assert_eq!(osc52("hi"), "\x1b]52;c;aGk=\x07");
    }

    #[test]
    fn clean_drops_escapes_keeps_tabs_and_caps() {
        let (t, cut) = clean("\x1b[31mred\x1b[0m\tx\r\n\x1b]52;c;evil\x07y");
        assert!(!t.contains('\x1b') && !t.contains('\x07'), "{t:?}");
        assert!(t.starts_with("red\tx\n"), "{t:?}");
        assert!(!cut);
        let (t, cut) = clean(&"é".repeat(COPY_MAX));
        assert!(cut && t.len() <= COPY_MAX);
    }

    #[test]
    fn code_blocks_are_found_closed_or_not() {
        let text = "intro\n```rust\nfn a() {}\n```\nmid\n~~~\nls -l\n~~~\n```\nopen";
        assert_eq!(code_blocks(text), ["fn a() {}", "ls -l", "open"]);
    }
}
