//! Processes the tests run to their end: [`Succeeds`] runs one and asserts it exited 0.

use std::process::{Command, Output};

/// A process run to its end that must have succeeded.
pub(crate) trait Succeeds {
    /// Runs it to its end and asserts it exited 0 (saying the command and its stderr if not).
    fn succeeds(&mut self) -> Output;
}

impl Succeeds for Command {
    fn succeeds(&mut self) -> Output {
        let out = self.output().unwrap();
        assert!(
            out.status.success(),
            "{self:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }
}
