//! Standard output of the one-shot commands: buffered, colour only on a terminal without
//! `NO_COLOR`, and a closed pipe (`neocode --list | head -1`) treated as success.

use std::io::{self, BufWriter, IsTerminal, StdoutLock, Write};

use super::common::Failure;

/// Buffered standard output with what the commands need to know about it.
pub(crate) struct Out {
    w: BufWriter<StdoutLock<'static>>,
    /// Colour may be used.
    pub color: bool,
    /// Columns available on the terminal (`None` when piped: print in full).
    pub width: Option<usize>,
}

impl Out {
    /// Standard output.
    pub(crate) fn stdout() -> Out {
        let stdout = io::stdout();
        let tty = stdout.is_terminal();
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let width = if tty {
            crossterm::terminal::size()
                .ok()
                .map(|(w, _)| w as usize)
                .filter(|w| *w > 0)
                .or(Some(80))
        } else {
            None
        };
        Out {
            w: BufWriter::with_capacity(64 * 1024, stdout.lock()),
            color: tty && !no_color,
            width,
        }
    }

    /// Writes one line.
    pub(crate) fn line(&mut self, s: &str) -> Result<(), Failure> {
        self.w.write_all(s.as_bytes()).map_err(write_failure)?;
        self.w.write_all(b"\n").map_err(write_failure)
    }

    /// Writes raw bytes (already safe).
    pub(crate) fn bytes(&mut self, b: &[u8]) -> Result<(), Failure> {
        self.w.write_all(b).map_err(write_failure)
    }

    /// Writes `rows` as a pretty JSON array (streamed, safe to print) and a newline.
    pub(crate) fn json_array<T: serde::Serialize>(
        &mut self,
        rows: impl IntoIterator<Item = T>,
    ) -> Result<(), Failure> {
        super::fmt::write_json_array(&mut self.w, rows).map_err(write_failure)
    }

    /// Wraps `s` in an SGR colour when colour is on.
    pub(crate) fn paint(&self, sgr: &str, s: &str) -> String {
        if self.color && !s.is_empty() {
            format!("\x1b[{sgr}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }

    /// Writes out what is buffered so far (before a question asked on the terminal).
    pub(crate) fn flush(&mut self) -> Result<(), Failure> {
        self.w.flush().map_err(write_failure)
    }

    /// Flushes; a closed pipe is success.
    pub(crate) fn finish(mut self) -> Result<(), Failure> {
        self.w.flush().map_err(write_failure)
    }
}

/// A failed write to stdout: a closed pipe ends the command quietly with success.
pub(crate) fn write_failure(e: io::Error) -> Failure {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Failure::quiet()
    } else {
        Failure::runtime(format!("cannot write to standard output: {e}"))
    }
}
