//! One rule: its tool and pattern parts, and [`parse_rule`] for a rule's text.

use std::path::Path;

use super::pattern::{CommandPattern, PathPattern};
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
    pub fn tool(&self) -> &str {
        match &self.tool {
            ToolPat::Any => "*",
            ToolPat::Exact(t) | ToolPat::Glob(t) => t,
        }
    }
}

/// Parses one rule's text; `Err` says what is wrong with it.
pub fn parse_rule(
    text: &str,
    root: &Path,
    home_dir: Option<&Path>,
) -> Result<(String, Option<String>), String> {
    let t = text.trim();
    let (name, pat) = match t.find('(') {
        Some(i) => {
            let Some(inner) = t[i + 1..].strip_suffix(')') else {
                return Err(format!("rule `{t}` opens `(` but does not end with `)`"));
            };
            (t[..i].trim(), Some(inner.trim().to_string()))
        }
        None => (t, None),
    };
    if name.is_empty() {
        return Err(format!("rule `{t}` has no tool name"));
    }
    let known = name == "*"
        || OWN_TOOLS.contains(&name)
        || (name.starts_with("mcp__")
            && name.len() > 5
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '*')));
    if !known {
        return Err(format!(
            "rule `{t}`: unknown tool `{name}` (tools: {}, mcp__server__tool, *)",
            OWN_TOOLS.join(", ")
        ));
    }
    if let Some(p) = &pat {
        if p.is_empty() {
            return Err(format!("rule `{t}` has an empty pattern"));
        }
        if name == "run_command" {
            if CommandPattern::parse(p).is_none() {
                return Err(format!("rule `{t}`: an empty command pattern"));
            }
        } else if PATH_TOOLS.contains(&name) {
            PathPattern::parse(p, root, home_dir).map_err(|e| format!("rule `{t}`: {e}"))?;
        } else {
            return Err(format!(
                "rule `{t}`: only run_command and the file tools ({}) take a pattern",
                PATH_TOOLS.join(", ")
            ));
        }
    }
    Ok((name.to_string(), pat))
}
