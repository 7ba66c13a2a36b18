//! A [`Review`] in words, for the TUI's trust screen and `neocode trust`: a headline and
//! sections of one line per entry. The text is the workspace's own (hook commands, rule
//! texts, file names): front ends sanitise every line before it reaches a terminal.

use super::act::Review;
use super::review::TrustState;
use super::scan::{HOOKS_FILE, RULES_FILE};

/// One part of what a workspace declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Section {
    /// The part's heading.
    pub title: String,
    /// One line per entry.
    pub items: Vec<String>,
    /// Whether the part runs code or lets calls run without asking (shown as a warning).
    pub danger: bool,
}

impl Review {
    /// One line: where the workspace stands.
    pub(crate) fn headline(&self) -> String {
        match &self.state {
            TrustState::NothingDeclared => {
                "This workspace declares no hooks, rules, skills or other settings.".to_string()
            }
            TrustState::Trusted { trusted_at_ms } => format!(
                "Trusted on {}: its settings are used.",
                crate::format::timestamp(*trusted_at_ms)
            ),
            TrustState::Untrusted {
                record_problem: None,
            } => "This workspace is not trusted: its settings are not used until you trust it."
                .to_string(),
            TrustState::Untrusted {
                record_problem: Some(p),
            } => format!("This workspace is not trusted ({p})."),
            TrustState::Changed(c) => format!(
                "This workspace changed since you trusted it on {}: its settings are not used until you trust it again.",
                crate::format::timestamp(c.trusted_at_ms)
            ),
            TrustState::Unreviewable(why) => format!("This workspace cannot be trusted: {why}."),
        }
    }

    /// What the workspace declares (and, when it changed, what changed first), part by
    /// part; parts with nothing in them are left out.
    pub(crate) fn sections(&self) -> Vec<Section> {
        let d = &self.declared;
        let mut out = Vec::new();
        if let TrustState::Changed(c) = &self.state {
            let mut items: Vec<String> = Vec::new();
            items.extend(c.modified.iter().map(|p| format!("modified  {p}")));
            items.extend(c.added.iter().map(|p| format!("added     {p}")));
            items.extend(c.removed.iter().map(|p| format!("removed   {p}")));
            items.extend(c.new_entries.iter().map(|e| format!("new       {e}")));
            out.push(Section {
                title: "What changed".into(),
                items,
                danger: true,
            });
        }
        let mut push = |title: String, items: Vec<String>, danger: bool| {
            if !items.is_empty() {
                out.push(Section {
                    title,
                    items,
                    danger,
                });
            }
        };
        push(
            format!("Hooks ({HOOKS_FILE}): commands run as you, outside the sandbox"),
            d.hooks
                .iter()
                .map(|h| format!("{}  {}  {}", h.event, h.matcher, h.command))
                .collect(),
            true,
        );
        push(
            format!("Permission rules ({RULES_FILE})"),
            d.rules
                .iter()
                .map(|r| format!("{:<5}  {}  (line {})", r.list.key(), r.text, r.line))
                .collect(),
            d.rules.iter().any(|r| r.list.key() == "allow"),
        );
        push(
            "Skills (instructions the model may load)".into(),
            d.skills
                .iter()
                .map(|s| format!("{}  ({})", s.name, s.file))
                .collect(),
            false,
        );
        push(
            "Other files (not used by neocode yet)".into(),
            d.other.clone(),
            false,
        );
        push(
            "Files that do not parse".into(),
            d.problems
                .iter()
                .map(|(p, why)| format!("{p}: {why}"))
                .collect(),
            false,
        );
        if let Some(what) = &self.folder {
            push(
                "Folder".into(),
                vec![format!(
                    "this workspace is {what}: trusting it also lets commands write there{}",
                    if self.folder_trusted {
                        " (already allowed)"
                    } else {
                        ""
                    }
                )],
                true,
            );
        }
        out
    }
}
