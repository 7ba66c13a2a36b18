//! What one prompt may spend on its own, as configured: the caps and their defaults. The
//! ledger (`runtime::agent::ledger`) checks them against what a prompt has spent.

use crate::session::RuntimeLimits;

/// Tool calls one prompt (or one resume) may make when nothing else is configured.
pub(crate) const DEFAULT_TOOL_CALLS_PER_PROMPT: u64 = 200;
/// Model calls one prompt (or one resume) may make when nothing else is configured.
pub(crate) const DEFAULT_TURNS_PER_PROMPT: u64 = 100;

/// Caps on what one prompt (one `neocode run`, one message in the TUI, one resume) may
/// spend, on top of the session's budgets: a model looping on tools stops by itself, paused.
/// Counted from what the session had spent when the prompt started; `None` is no cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromptCaps {
    /// Tool calls per prompt (`max_tool_calls_per_prompt`).
    pub tool_calls: Option<u64>,
    /// Model calls per prompt (`max_turns_per_prompt`).
    pub turns: Option<u64>,
}

impl Default for PromptCaps {
    fn default() -> PromptCaps {
        PromptCaps {
            tool_calls: Some(DEFAULT_TOOL_CALLS_PER_PROMPT),
            turns: Some(DEFAULT_TURNS_PER_PROMPT),
        }
    }
}

impl PromptCaps {
    /// These caps for a run whose user set session limits explicitly (`set`, the flags): a
    /// limit the user gave replaces the cap of the same kind for this run.
    pub(crate) fn for_run(self, set: &RuntimeLimits) -> PromptCaps {
        PromptCaps {
            tool_calls: if set.max_tool_calls.is_some() {
                None
            } else {
                self.tool_calls
            },
            turns: if set.max_turns.is_some() {
                None
            } else {
                self.turns
            },
        }
    }
}
