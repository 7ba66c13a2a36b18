//! Permission rules (issue 27): what runs without asking, what always asks, what never runs.
//!
//! Rules come from `<workspace>/.neocode/permissions.toml` (top-level `allow`, `ask`, `deny`
//! lists, meant to be committed) and the `[permissions]` table of `<home>/config.toml`
//! (personal). A rule is `tool` or `tool(pattern)`: a tool name (`read_file`, `list_dir`,
//! `grep`, `write_file`, `edit_file`, `run_command`, `update_plan`, `mcp__server__tool`, `*`
//! for any tool; `*` inside an MCP name is a wildcard, `mcp__github__*`), with a command
//! pattern for `run_command` ([`pattern::CommandPattern`]) or a path glob for the file tools
//! ([`pattern::PathPattern`]). Syntax and examples: docs/RULES.md.
//!
//! [`Rules::decide`] takes a tool call and answers deny > ask > allow > the approval policy's
//! default, whatever file each rule comes from (the workspace file cannot lift a personal
//! deny, nor the reverse). A command is split with the bash grammar ([`crate::runtime::shell`]) and allowed
//! only when every simple command in it is; a part the splitter cannot account for asks.
//! A `read_file(...)` deny also denies `grep` and `list_dir` on the paths it covers.

mod derive;
mod files;
pub(crate) mod pattern;
mod rule;
mod rules;
mod types;

pub(crate) use derive::append_rules;
pub(crate) use rule::{RuleError, parse_rule};
pub(crate) use rules::{Rules, WorkspaceRules, rule_entries};
pub use types::{Decision, List, RuleRef, RulesError, SESSION_SOURCE, Verdict};

#[cfg(test)]
mod tests;
