//! The prompt of `neocode run`: the argument, `-` (all of standard input), `--prompt-file`,
//! and text piped in beside a prompt (`git diff | neocode run "review this"`), capped.

use std::io::Read;
use std::path::Path;

use crate::cli::common::Failure;

/// Piped text beyond this many bytes is cut (with a note in the prompt and on stderr).
pub(crate) const STDIN_CAP: usize = 256 * 1024;

/// The prompt and, when piped text was cut, the note saying so.
pub(super) struct Prompt {
    pub(super) text: Option<String>,
    pub(super) cut_note: Option<String>,
}

/// The prompt from the argument or `--prompt-file`, with piped standard input added.
pub(super) fn read(arg: Option<&str>, file: Option<&Path>) -> Result<Prompt, Failure> {
    let base = match (arg, file) {
        (Some("-"), _) => return whole_stdin(),
        (_, Some(path)) => Some(std::fs::read_to_string(path).map_err(|e| {
            Failure::usage(format!(
                "cannot read the prompt file {}: {e}",
                path.display()
            ))
        })?),
        (Some(s), None) => Some(s.to_string()),
        (None, None) => None,
    };
    if let Some(b) = &base
        && b.trim().is_empty()
    {
        return Err(Failure::usage(match file {
            Some(p) => format!("the prompt file {} is empty", p.display()),
            None => "the prompt is empty".to_string(),
        }));
    }
    let Some(base) = base else {
        return Ok(Prompt {
            text: None,
            cut_note: None,
        });
    };
    if !stdin_is_data() {
        return Ok(Prompt {
            text: Some(base),
            cut_note: None,
        });
    }
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .map_err(|e| Failure::usage(format!("cannot read standard input: {e}")))?;
    Ok(with_piped(base, &bytes))
}

fn whole_stdin() -> Result<Prompt, Failure> {
    let mut s = String::new();
    std::io::stdin()
        .read_to_string(&mut s)
        .map_err(|e| Failure::usage(format!("cannot read the prompt from standard input: {e}")))?;
    if s.trim().is_empty() {
        return Err(Failure::usage("the prompt on standard input is empty"));
    }
    Ok(Prompt {
        text: Some(s),
        cut_note: None,
    })
}

/// Standard input is a pipe or a file (not a terminal, not /dev/null): what it holds is
/// meant for the prompt.
fn stdin_is_data() -> bool {
    use std::os::unix::fs::FileTypeExt;
    let fd = std::os::fd::AsFd::as_fd(&std::io::stdin())
        .try_clone_to_owned()
        .ok();
    fd.map(std::fs::File::from)
        .and_then(|f| f.metadata().ok())
        .is_some_and(|m| m.file_type().is_fifo() || m.file_type().is_file())
}

/// `prompt` followed by the piped text in a fenced block; text over [`STDIN_CAP`] is cut
/// at a character boundary and the cut said in the prompt.
pub(super) fn with_piped(prompt: String, bytes: &[u8]) -> Prompt {
    let text = String::from_utf8_lossy(bytes);
    if text.trim().is_empty() {
        return Prompt {
            text: Some(prompt),
            cut_note: None,
        };
    }
    let (kept, cut_note) = if text.len() > STDIN_CAP {
        let mut end = STDIN_CAP;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let note = format!(
            "standard input was cut to its first {} KiB of {} bytes",
            STDIN_CAP / 1024,
            text.len()
        );
        (&text[..end], Some(note))
    } else {
        (&*text, None)
    };
    let mut out = format!("{prompt}\n\nStandard input:\n<stdin>\n{kept}");
    if !kept.ends_with('\n') {
        out.push('\n');
    }
    out.push_str("</stdin>");
    if let Some(n) = &cut_note {
        out.push_str(&format!("\n[{n}; the rest was left out]"));
    }
    Prompt {
        text: Some(out),
        cut_note,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn piped_text_is_fenced_after_the_prompt() {
        let p = with_piped("review this".into(), b"diff --git a b\n+x\n");
        assert_eq!(
            p.text.as_deref(),
            Some("review this\n\nStandard input:\n<stdin>\ndiff --git a b\n+x\n</stdin>")
        );
        assert!(p.cut_note.is_none());
    }

    #[test]
    fn long_piped_text_is_cut_at_a_char_boundary_and_said() {
        let big = "é".repeat(STDIN_CAP); // two bytes each
        let p = with_piped("x".into(), big.as_bytes());
        let t = p.text.unwrap_or_default();
        assert!(t.contains("[standard input was cut to its first 256 KiB of 524288 bytes"));
        assert!(t.len() < STDIN_CAP + 200, "{}", t.len());
        assert!(p.cut_note.is_some());
    }

    #[test]
    fn blank_piped_text_leaves_the_prompt_alone() {
        let p = with_piped("hi".into(), b"\n  \n");
        assert_eq!(p.text.as_deref(), Some("hi"));
    }
}
