//! What the transcript's lines share: the cancel mark it recognises and how long a
//! collapsed tool result is.

/// What the runtime appends to the output of a command the user's cancel killed.
pub(crate) const CANCELLED_MARK: &str = "[cancelled by the user;";
/// Lines of a collapsed tool result.
pub(super) const COLLAPSED_LINES: usize = 4;
