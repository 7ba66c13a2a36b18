//! Assertions on text a test read back (a screen, an output, a file): a failure names the
//! needle and shows the whole text, at the caller's line.

/// Asserts that `text` holds `needle`.
#[track_caller]
pub(crate) fn has(text: &str, needle: &str) {
    assert!(text.contains(needle), "{needle:?} is not in:\n{text}");
}

/// Asserts that `text` starts with `prefix`.
#[track_caller]
pub(crate) fn starts(text: &str, prefix: &str) {
    assert!(
        text.starts_with(prefix),
        "does not start with {prefix:?}:\n{text}"
    );
}
