//! How an `@path` attachment reads in a message: the file's text after what was typed, as a
//! block `[@path attached (size)]` and a fenced copy of the text (or `[@path not attached:
//! why]`). The model is sent the blocks; the transcript shows each as a one-line chip whose
//! text a expand shows, and the editor's ↑ history recalls only what was typed.

/// One attachment block of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Attachment<'a> {
    /// Its head without the brackets: `@src/big.rs attached (31.9 KiB)`.
    pub head: &'a str,
    /// The file's text as sent (`None`: not attached).
    pub body: Option<&'a str>,
}

/// The block a file's text is sent as, after the message.
pub(crate) fn block(head: &str, body: &str) -> String {
    format!("\n\n[{head}]\n```\n{body}\n```")
}

/// The block saying a file was not attached.
pub(crate) fn not_attached(rel: &str, why: &str) -> String {
    format!("\n\n[@{rel} not attached: {why}]")
}

/// Whether `line` is an attachment block's head (`[@path attached …]`, `[@path not attached:
/// …]`).
fn is_head(line: &str) -> bool {
    let Some(inner) = line.strip_prefix("[@").and_then(|l| l.strip_suffix(']')) else {
        return false;
    };
    let path_end = inner.find(' ').unwrap_or(inner.len());
    let rest = &inner[path_end..];
    path_end > 0 && (rest.starts_with(" attached") || rest.starts_with(" not attached:"))
}

/// Where each attachment block of `text` starts (the blank line before its head), in order.
fn starts(text: &str) -> Vec<usize> {
    text.match_indices("\n\n[@")
        .map(|(i, _)| i)
        .filter(|&i| {
            let line = text[i + 2..].lines().next().unwrap_or("");
            is_head(line)
        })
        .collect()
}

/// What was typed and the attachment blocks after it. A text without blocks is all typed.
pub(crate) fn split(text: &str) -> (&str, Vec<Attachment<'_>>) {
    let at = starts(text);
    let Some(&first) = at.first() else {
        return (text, Vec::new());
    };
    let mut out = Vec::new();
    for (k, &s) in at.iter().enumerate() {
        let end = at.get(k + 1).copied().unwrap_or(text.len());
        let block = &text[s + 2..end];
        let (head_line, rest) = block.split_once('\n').unwrap_or((block, ""));
        let head = &head_line[1..head_line.len() - 1];
        let body = rest
            .strip_prefix("```\n")
            .map(|b| b.strip_suffix("\n```").unwrap_or(b));
        out.push(Attachment { head, body });
    }
    (&text[..first], out)
}

/// What the person typed of a stored message's text (the editor's ↑ history).
pub(crate) fn typed(text: &str) -> &str {
    split(text).0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_splits_into_what_was_typed_and_its_blocks() {
        let text = format!(
            "look at @src/a.rs and @b.md{}{}{}",
            block("@src/a.rs attached (12 B)", "fn a() {}\n```\nnot the end"),
            not_attached("gone.txt", "no such file"),
            block("@b.md attached: the first 4 B of 9 B (cut)", "# Ti")
        );
        let (typed, blocks) = split(&text);
        assert_eq!(typed, "look at @src/a.rs and @b.md");
        assert_eq!(blocks.len(), 3);
        assert_eq!(blocks[0].head, "@src/a.rs attached (12 B)");
        assert_eq!(blocks[0].body, Some("fn a() {}\n```\nnot the end"));
        assert_eq!(blocks[1].head, "@gone.txt not attached: no such file");
        assert_eq!(blocks[1].body, None);
        assert_eq!(blocks[2].body, Some("# Ti"));
        assert_eq!(
            split("plain\n\n[@ not a head"),
            ("plain\n\n[@ not a head", vec![])
        );
    }
}
