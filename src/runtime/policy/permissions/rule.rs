//! One rule: its tool and pattern parts, and [`parse_rule`] for a rule's text.

use std::path::Path;

use super::pattern::{CommandPattern, PathPattern, PatternError};
use super::types::{List, OWN_TOOLS, PATH_TOOLS, RuleRef};

#[derive(Debug, Clone)]
pub(super) enum ToolPat {
    Any,
    Exact(String),
    /// An MCP name with `*` wildcards.
    Glob(String),
}

impl ToolPat {
    pub(super) fn matches(&self, tool: &str) -> bool {
        match self {
            ToolPat::Any => true,
            ToolPat::Exact(t) => t == tool,
            ToolPat::Glob(g) => pattern_word_match(g, tool),
        }
    }
}

fn pattern_word_match(p: &str, w: &str) -> bool {
    CommandPattern::parse(p).is_some_and(|c| c.matches(&[w.to_string()]))
}

#[derive(Debug, Clone)]
pub(super) enum Pat {
    None,
    Command(CommandPattern),
    Path(PathPattern),
    /// `web_fetch(domain:example.com)`: the host and its subdomains.
    Domain(String),
}

/// The host a `web_fetch` rule names: `domain:example.com` (Claude Code's form) or
/// `example.com`, lowercased; `None` when it names none.
pub(super) fn domain_pattern(p: &str) -> Option<String> {
    let d = p.trim();
    let d = d.strip_prefix("domain:").unwrap_or(d).trim();
    let d = d.strip_prefix("*.").unwrap_or(d);
    let ok = !d.is_empty()
        && d.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
    ok.then(|| d.to_ascii_lowercase())
}

/// Whether `host` is `domain` or one of its subdomains.
pub(super) fn domain_matches(domain: &str, host: &str) -> bool {
    let host = host.to_ascii_lowercase();
    host == domain
        || host
            .strip_suffix(domain)
            .is_some_and(|rest| rest.ends_with('.'))
}

/// One parsed rule.
#[derive(Debug, Clone)]
pub struct Rule {
    pub list: List,
    pub at: RuleRef,
    pub(super) tool: ToolPat,
    pub(super) pat: Pat,
}

impl Rule {
    /// The tool name part (`*` for any).
    pub(crate) fn tool(&self) -> &str {
        match &self.tool {
            ToolPat::Any => "*",
            ToolPat::Exact(t) | ToolPat::Glob(t) => t,
        }
    }
}

/// What is wrong with a rule's text (each names the rule as written).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// `tool(pattern` without the closing `)`.
    #[error("rule `{0}` opens `(` but does not end with `)`")]
    Unclosed(String),
    /// `(pattern)` alone.
    #[error("rule `{0}` has no tool name")]
    NoTool(String),
    /// Neither one of neocode's tools, an `mcp__` name nor `*`.
    #[error("rule `{rule}`: unknown tool `{tool}` (tools: {}, mcp__server__tool, *)", OWN_TOOLS.join(", "))]
    UnknownTool { rule: String, tool: String },
    /// `tool()`.
    #[error("rule `{0}` has an empty pattern")]
    EmptyPattern(String),
    /// `run_command( )` and the like.
    #[error("rule `{0}`: an empty command pattern")]
    EmptyCommand(String),
    /// The path pattern of a file tool does not compile.
    #[error("rule `{rule}`: {source}")]
    Path { rule: String, source: PatternError },
    /// A pattern on a tool that takes none.
    #[error("rule `{rule}`: only run_command, web_fetch and the file tools ({}) take a pattern", PATH_TOOLS.join(", "))]
    NoPatternTaken { rule: String },
    /// `web_fetch(...)` naming no host.
    #[error("rule `{0}`: web_fetch takes a host: web_fetch(domain:example.com)")]
    BadDomain(String),
}

/// Why a rule's text does not compile into a [`Rule`]: the syntax, or a pattern the
/// syntax check lets through.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum CompileError {
    #[error("{0}")]
    Rule(#[from] RuleError),
    #[error("an empty command pattern")]
    EmptyCommand,
    #[error("{0}")]
    Path(#[from] PatternError),
}

/// Parses one rule's text; `Err` says what is wrong with it.
pub(crate) fn parse_rule(
    text: &str,
    root: &Path,
    home_dir: Option<&Path>,
) -> Result<(String, Option<String>), RuleError> {
    let t = text.trim();
    let rule = || t.to_string();
    let (name, pat) = match t.find('(') {
        Some(i) => {
            let Some(inner) = t[i + 1..].strip_suffix(')') else {
                return Err(RuleError::Unclosed(rule()));
            };
            (t[..i].trim(), Some(inner.trim().to_string()))
        }
        None => (t, None),
    };
    if name.is_empty() {
        return Err(RuleError::NoTool(rule()));
    }
    let known = name == "*"
        || OWN_TOOLS.contains(&name)
        || (name.starts_with("mcp__")
            && name.len() > 5
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '*')));
    if !known {
        return Err(RuleError::UnknownTool {
            rule: rule(),
            tool: name.to_string(),
        });
    }
    if let Some(p) = &pat {
        if p.is_empty() {
            return Err(RuleError::EmptyPattern(rule()));
        }
        if name == "run_command" {
            if CommandPattern::parse(p).is_none() {
                return Err(RuleError::EmptyCommand(rule()));
            }
        } else if name == "web_fetch" {
            if domain_pattern(p).is_none() {
                return Err(RuleError::BadDomain(rule()));
            }
        } else if PATH_TOOLS.contains(&name) {
            PathPattern::parse(p, root, home_dir).map_err(|source| RuleError::Path {
                rule: rule(),
                source,
            })?;
        } else {
            return Err(RuleError::NoPatternTaken { rule: rule() });
        }
    }
    Ok((name.to_string(), pat))
}
