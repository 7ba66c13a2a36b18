//! `/permissions` (issue 35): every permission rule in force for the open session, with where
//! it comes from — the session's own ("always" for this session), the workspace's
//! `.neocode/permissions.toml`, the home's `config.toml` — and the session's own revoked with
//! `d`. The dialog's state and rows are here; its view is `views/permissions.rs`, its keys
//! `app/permissions.rs`.

use std::path::Path;

use crate::runtime::agent::RulesInForce;
use crate::runtime::policy::approval::NETWORK_GRANT;
use crate::sanitize;

/// One row of the dialog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Row {
    /// A group's heading: where the rules under it come from.
    Heading(String),
    /// A rule (or the network grant), one line.
    Rule {
        /// `allow`, `ask`, `deny`, or `network`.
        list: &'static str,
        /// The rule (sanitised).
        text: String,
        /// `:LINE` in its file; empty for the session's own.
        line: String,
        /// The session's own grant as stored: what `d` revokes (`None` for a file's rule).
        grant: Option<String>,
    },
    /// A line of explanation (no rules in a group, a file that does not load).
    Note(String),
}

/// The `/permissions` dialog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionsDialog {
    /// The session whose own rules are listed (`None`: a new session, none yet).
    pub session_id: Option<String>,
    pub rows: Vec<Row>,
    /// Index in `rows` of the selected rule (always a [`Row::Rule`] when there is one).
    pub selected: usize,
}

impl PermissionsDialog {
    /// The dialog for `rules`, `root` the workspace (its files are named relative to it),
    /// `home_dir` the user's home (shown as `~`).
    pub(crate) fn new(
        session_id: Option<String>,
        rules: &RulesInForce,
        root: &Path,
        home_dir: Option<&Path>,
    ) -> PermissionsDialog {
        let mut rows = vec![Row::Heading(
            "This session (\"always\" for this session; d revokes)".into(),
        )];
        if rules.session.is_empty() {
            rows.push(Row::Note(if session_id.is_some() {
                "none: answering \"always\" for this session adds them".into()
            } else {
                "none yet: the session starts with your first message".into()
            }));
        }
        for g in &rules.session {
            rows.push(if g == NETWORK_GRANT {
                Row::Rule {
                    list: "network",
                    text: "its commands may use the network (/approve network)".into(),
                    line: String::new(),
                    grant: Some(g.clone()),
                }
            } else {
                Row::Rule {
                    list: "allow",
                    text: sanitize::line(g).into_owned(),
                    line: String::new(),
                    grant: Some(g.clone()),
                }
            });
        }
        for file in [&rules.workspace_file, &rules.home_file] {
            let shown = shown_path(file, root, home_dir);
            let mine: Vec<_> = rules
                .files
                .iter()
                .filter(|(_, r)| &r.file == file)
                .collect();
            let suffix = if file == &rules.home_file {
                " [permissions], everywhere"
            } else {
                ", this workspace"
            };
            rows.push(Row::Heading(format!("{shown}{suffix}")));
            if mine.is_empty() {
                rows.push(Row::Note(if rules.problem.is_some() {
                    "not read (below)".into()
                } else {
                    "no rules".into()
                }));
            }
            for (list, r) in mine {
                rows.push(Row::Rule {
                    list: list.key(),
                    text: sanitize::line(&r.text).into_owned(),
                    line: format!(":{}", r.line),
                    grant: None,
                });
            }
        }
        if let Some(p) = &rules.problem {
            rows.push(Row::Note(format!(
                "A rule file does not load: {}",
                sanitize::line(p)
            )));
        }
        let selected = rows
            .iter()
            .position(|r| matches!(r, Row::Rule { .. }))
            .unwrap_or(0);
        PermissionsDialog {
            session_id,
            rows,
            selected,
        }
    }

    /// How many rules it lists.
    pub(crate) fn count(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| matches!(r, Row::Rule { .. }))
            .count()
    }

    /// Moves the selection to the next rule up (`up`) or down.
    pub(crate) fn step(&mut self, up: bool) {
        let rules: Vec<usize> = self
            .rows
            .iter()
            .enumerate()
            .filter(|(_, r)| matches!(r, Row::Rule { .. }))
            .map(|(i, _)| i)
            .collect();
        let next = if up {
            rules.iter().rev().find(|i| **i < self.selected)
        } else {
            rules.iter().find(|i| **i > self.selected)
        };
        if let Some(i) = next {
            self.selected = *i;
        }
    }

    /// The selected row.
    pub(crate) fn selected_row(&self) -> Option<&Row> {
        self.rows.get(self.selected)
    }
}

/// `file` as the dialog names it: relative to the workspace, `~/…` under the home, else whole.
fn shown_path(file: &Path, root: &Path, home_dir: Option<&Path>) -> String {
    let s = if let Ok(rel) = file.strip_prefix(root) {
        rel.display().to_string()
    } else if let Some(rel) = home_dir.and_then(|h| file.strip_prefix(h).ok()) {
        format!("~/{}", rel.display())
    } else {
        file.display().to_string()
    };
    sanitize::line(&s).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::policy::permissions::{List, RuleRef};

    #[test]
    fn rows_group_the_rules_by_source_and_select_only_rules() {
        let root = Path::new("/ws");
        let rules = RulesInForce {
            session: vec!["run_command(git mv *)".into(), NETWORK_GRANT.into()],
            files: vec![
                (
                    List::Allow,
                    RuleRef {
                        text: "run_command(cargo test *)".into(),
                        file: root.join(".neocode/permissions.toml"),
                        line: 2,
                    },
                ),
                (
                    List::Deny,
                    RuleRef {
                        text: "read_file(.env)".into(),
                        file: "/home/u/.neocode/config.toml".into(),
                        line: 7,
                    },
                ),
            ],
            workspace_file: root.join(".neocode/permissions.toml"),
            home_file: "/home/u/.neocode/config.toml".into(),
            ..RulesInForce::default()
        };
        let mut d =
            PermissionsDialog::new(Some("s1".into()), &rules, root, Some(Path::new("/home/u")));
        assert_eq!(d.count(), 4);
        assert_eq!(d.selected, 1);
        assert!(d.rows.contains(&Row::Heading(
            ".neocode/permissions.toml, this workspace".into()
        )));
        assert!(d.rows.contains(&Row::Heading(
            "~/.neocode/config.toml [permissions], everywhere".into()
        )));
        d.step(true);
        assert_eq!(d.selected, 1, "nothing above the first rule");
        d.step(false);
        d.step(false);
        assert!(matches!(
            d.selected_row(),
            Some(Row::Rule { grant: None, line, .. }) if line == ":2"
        ));
    }
}
