//! Processes the tests run to their end: [`Succeeds`] runs one and asserts it exited 0.

use std::process::{Command, Output};

/// Asserts `o` ended as a usage error (exit code 2) whose standard error says `says`.
#[track_caller]
pub(crate) fn assert_usage_error(o: &Output, says: &str) {
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(says), "{err}");
}

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
