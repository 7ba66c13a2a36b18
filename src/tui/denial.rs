//! How a call that never ran because it was denied reads, in the live cards and the
//! transcript alike: marked `⊘ denied` (not `✗ error`), whether the user, a permission rule or
//! a `PreToolUse` hook denied it, and said once.

use std::borrow::Cow;

use crate::runtime::agent::Permission;

/// What the runtime's result of a hook's denial starts with when the hook gave no reason of
/// its own (its stderr was empty): the reason is then the hook's name and command.
const HOOK_NO_REASON: &str = "Denied by a PreToolUse hook: blocked by PreToolUse hook `";

/// Whether a tool result tells of a call denied before it ran.
pub(crate) fn is_denial(text: &str) -> bool {
    text.starts_with("The user denied this call")
        || text.starts_with("Denied by the permission rule")
        || text.starts_with("Denied by a PreToolUse hook")
}

/// A result as shown: a hook's denial without a reason of its own does not repeat the hook's
/// command (the hook's run is listed with the result).
pub(crate) fn shown(text: &str) -> Cow<'_, str> {
    if text.starts_with(HOOK_NO_REASON) {
        Cow::Borrowed("Denied by a PreToolUse hook (it gave no reason).")
    } else {
        Cow::Borrowed(text)
    }
}

/// Whether the line naming what decided a call would repeat its result: a hook's denial
/// (the result says so, the hook's run says which).
pub(crate) fn decision_repeats(p: &Permission) -> bool {
    p.decision != "allow" && p.by == "hook"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denials_of_every_kind_are_told_once() {
        for t in [
            "The user denied this call.",
            "Denied by the permission rule `run_command(rm *)`.",
            "Denied by a PreToolUse hook: no force pushes",
        ] {
            assert!(is_denial(t), "{t}");
        }
        assert!(!is_denial("error: no such file"));
        assert_eq!(
            shown("Denied by a PreToolUse hook: blocked by PreToolUse hook `./guard.sh`"),
            "Denied by a PreToolUse hook (it gave no reason)."
        );
        assert_eq!(
            shown("Denied by a PreToolUse hook: no force pushes"),
            "Denied by a PreToolUse hook: no force pushes"
        );
    }
}
