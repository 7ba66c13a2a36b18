//! Ctrl-G: the message being written opens in `$VISUAL` (else `$EDITOR`). The TUI hands the
//! terminal over (its input thread stops reading keys, the screen and modes are restored),
//! runs the editor on a temporary file holding the draft, then takes the terminal back and
//! the file's text becomes the draft.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::terminal::Guard;

/// Why Ctrl-G left the draft as it was (each one line, shown on the status line).
#[derive(Debug, thiserror::Error)]
pub(crate) enum EditorError {
    /// Neither `$VISUAL` nor `$EDITOR` is set.
    #[error("Ctrl-G opens $VISUAL or $EDITOR: neither is set (e.g. export EDITOR=vim)")]
    Unset,
    /// The draft could not be written to its temporary file.
    #[error("cannot write the draft for the editor: {0}")]
    WriteDraft(std::io::Error),
    /// The terminal could not be taken back after the editor.
    #[error("{0}")]
    Terminal(String),
    /// The editor ran and failed (the draft is kept).
    #[error("the editor ({editor}) exited with {status}; the message is as it was")]
    Exited {
        /// The editor command, sanitised.
        editor: String,
        /// How it exited.
        status: std::process::ExitStatus,
    },
    /// The editor could not be started.
    #[error("cannot run the editor ({editor}): {reason}")]
    Run {
        /// The editor command, sanitised.
        editor: String,
        /// Why, worded by `session::io_error`.
        reason: String,
    },
    /// The edited file could not be read back.
    #[error("cannot read the edited draft: {0}")]
    ReadDraft(String),
}

/// Stops the input thread reading the terminal while another program has it.
#[derive(Debug, Clone, Default)]
pub(crate) struct InputPause {
    /// Asked: stop reading.
    pub paused: Arc<AtomicBool>,
    /// The input thread stopped (it sets this once it saw `paused`).
    pub idle: Arc<AtomicBool>,
}

impl InputPause {
    /// Asks the input thread to stop reading and waits (briefly) until it did.
    fn pause(&self) {
        self.paused.store(true, Ordering::SeqCst);
        let until = Instant::now() + Duration::from_millis(500);
        while !self.idle.load(Ordering::SeqCst) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn resume(&self) {
        self.idle.store(false, Ordering::SeqCst);
        self.paused.store(false, Ordering::SeqCst);
    }
}

/// The editor command: `$VISUAL`, else `$EDITOR` (either may carry arguments, `code -w`).
fn editor_command() -> Result<String, EditorError> {
    ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .find(|v| !v.trim().is_empty())
        .ok_or(EditorError::Unset)
}

/// A new private file holding `text`.
fn draft_file(text: &str) -> Result<PathBuf, EditorError> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let path = std::env::temp_dir().join(format!(
        "neocode-draft-{}-{nanos:08x}.md",
        std::process::id()
    ));
    let mut f = crate::session::private_file(&path, true).map_err(EditorError::WriteDraft)?;
    f.write_all(text.as_bytes())
        .map_err(EditorError::WriteDraft)?;
    Ok(path)
}

/// Runs the editor on `text`; the edited text (one trailing newline dropped), or why not.
pub(crate) fn edit(
    guard: &mut Guard,
    input: &InputPause,
    text: &str,
) -> Result<String, EditorError> {
    let cmd = editor_command()?;
    let path = draft_file(text)?;
    input.pause();
    guard.suspend();
    // Through the shell, so `$EDITOR` may carry arguments; the file is `$1`.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{cmd} \"$1\""))
        .arg("sh")
        .arg(&path)
        .status();
    let back = guard.resume();
    input.resume();
    let edited = std::fs::read_to_string(&path);
    let _ = std::fs::remove_file(&path);
    back.map_err(|e| EditorError::Terminal(e.to_string()))?;
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => {
            return Err(EditorError::Exited {
                editor: crate::sanitize::line(&cmd).into_owned(),
                status: s,
            });
        }
        Err(e) => {
            return Err(EditorError::Run {
                editor: crate::sanitize::line(&cmd).into_owned(),
                reason: crate::session::io_error(&e),
            });
        }
    }
    let edited = edited.map_err(|e| EditorError::ReadDraft(crate::session::io_error(&e)))?;
    Ok(edited.strip_suffix('\n').unwrap_or(&edited).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn editor_errors_read_as_one_line_saying_what_to_do() {
        assert_eq!(
            EditorError::Unset.to_string(),
            "Ctrl-G opens $VISUAL or $EDITOR: neither is set (e.g. export EDITOR=vim)"
        );
        let exited = EditorError::Exited {
            editor: "vim".into(),
            status: std::process::ExitStatus::from_raw(1 << 8),
        };
        assert_eq!(
            exited.to_string(),
            "the editor (vim) exited with exit status: 1; the message is as it was"
        );
        let run = EditorError::Run {
            editor: "nano -w".into(),
            reason: "no such file or folder".into(),
        };
        assert_eq!(
            run.to_string(),
            "cannot run the editor (nano -w): no such file or folder"
        );
        assert_eq!(
            EditorError::ReadDraft("permission denied".into()).to_string(),
            "cannot read the edited draft: permission denied"
        );
    }
}
