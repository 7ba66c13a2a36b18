//! The public answer types of the permission rules and the tool lists they use.

use std::fmt;
use std::path::PathBuf;

/// The file a session grant's [`RuleRef`] names: the grant lives in the session, not a file.
pub const SESSION_SOURCE: &str = "this session";

/// Tools whose pattern is a path glob.
pub(super) const PATH_TOOLS: &[&str] =
    &["read_file", "list_dir", "grep", "write_file", "edit_file"];
/// Tools of neocode's own (MCP tools are `mcp__server__tool`).
pub(super) const OWN_TOOLS: &[&str] = &[
    "read_file",
    "list_dir",
    "grep",
    "write_file",
    "edit_file",
    "run_command",
    "web_fetch",
    "update_plan",
];

/// The three lists of a rule file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum List {
    Deny,
    Ask,
    Allow,
}

impl List {
    /// `allow`, `ask` or `deny`.
    pub(crate) fn key(self) -> &'static str {
        match self {
            List::Allow => "allow",
            List::Ask => "ask",
            List::Deny => "deny",
        }
    }

    /// Parses `allow`, `ask`, `deny`.
    pub(crate) fn parse(s: &str) -> Option<List> {
        match s {
            "allow" => Some(List::Allow),
            "ask" => Some(List::Ask),
            "deny" => Some(List::Deny),
            _ => None,
        }
    }
}

/// What the rules say about a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Runs without asking.
    Allow,
    /// Always asks, even when the approval policy would not.
    Ask,
    /// Never runs.
    Deny,
    /// No rule applies: the approval policy decides.
    Default,
}

impl Verdict {
    /// `allow`, `ask`, `deny`, `default`.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Ask => "ask",
            Verdict::Deny => "deny",
            Verdict::Default => "default",
        }
    }
}

/// The rule that made a decision: its text and where it is written.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RuleRef {
    /// The rule as written (`run_command(git diff *)`).
    pub text: String,
    /// The file it is in.
    pub file: PathBuf,
    /// Its line (1-based).
    pub line: usize,
}

impl fmt::Display for RuleRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}:{})", self.text, self.file.display(), self.line)
    }
}

/// A decision about one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub verdict: Verdict,
    /// The rule behind an allow, ask or deny; `None` for [`Verdict::Default`] and for an ask
    /// because a part of a command could not be accounted for (see `reason`).
    pub rule: Option<RuleRef>,
    /// Why, in words, when no rule says it (a part of the command the shell splitter could
    /// not account for).
    pub reason: Option<String>,
}

impl Decision {
    pub(super) fn default_() -> Decision {
        Decision {
            verdict: Verdict::Default,
            rule: None,
            reason: None,
        }
    }
}

/// A malformed rule file (or one that cannot be read or written).
pub type RulesError = crate::runtime::policy::file_error::PolicyFileError;
