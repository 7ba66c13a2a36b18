//! What a process uses of a workspace's settings: the [`Admission`] of one check. Trusted
//! (or declaring nothing): everything, read from the bytes that were hashed. Otherwise: none
//! of its hooks, none of its skills, and of its rules only `deny` and `ask`.

use std::path::{Path, PathBuf};

use super::review::{self, Declared, TrustState};
use super::scan::{self, HOOKS_FILE, RULES_FILE, Scan, canonical};
use crate::runtime::extensions::project_context::Skills;
use crate::runtime::policy::hooks::{Hooks, HooksError};
use crate::runtime::policy::permissions::{Rules, RulesError, WorkspaceRules};
use crate::runtime::tools::sandbox::trust::TRUST_FLAG;

/// One look at a workspace's declared files against the trust record.
#[derive(Debug, Clone)]
pub struct Admission {
    root: PathBuf,
    /// Where the workspace stands.
    pub state: TrustState,
    scan: Scan,
}

impl Admission {
    /// Checks `root` against the record under `home`. A workspace without any declaring
    /// path costs a `stat` or three and no read of the record; an unreadable record or file
    /// makes the workspace untrusted, never trusted.
    pub fn check(home: &Path, root: &Path) -> Admission {
        let root = canonical(root);
        match scan::scan(home, &root) {
            Ok(scan) => {
                let state = if scan.is_empty() {
                    TrustState::NothingDeclared
                } else {
                    let rec = review::recorded(home, &root);
                    review::state_of(&scan, &root, rec.as_ref().map(Option::as_ref))
                };
                Admission { root, state, scan }
            }
            Err(e) => {
                // Its deny and ask rules still count: they only make neocode more careful.
                let scan = Scan {
                    rules: std::fs::read(root.join(RULES_FILE)).ok(),
                    ..Scan::default()
                };
                Admission {
                    root,
                    state: TrustState::Unreviewable(e.to_string()),
                    scan,
                }
            }
        }
    }

    /// The workspace root (canonical).
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// What was found and hashed.
    pub(crate) fn scan(&self) -> &Scan {
        &self.scan
    }

    /// Whether the workspace's hooks, allow rules and skills are used.
    pub fn uses_workspace(&self) -> bool {
        self.state.uses_workspace()
    }

    /// The rules of the home and, of the workspace, all of them when it is trusted, else
    /// only its `deny` and `ask` rules ([`Rules::ignored`] lists the allow rules left out).
    pub fn rules(&self, home: &Path) -> Result<Rules, RulesError> {
        let file = Rules::workspace_file(&self.root);
        let text = match &self.scan.rules {
            None => None,
            Some(b) => Some(std::str::from_utf8(b).map_err(|_| RulesError {
                file: file.clone(),
                line: 0,
                message: "not UTF-8 text".into(),
            })?),
        };
        let ws = match text {
            None => WorkspaceRules::Absent,
            Some(t) if self.scan.home_is_dot_neocode || self.uses_workspace() => {
                WorkspaceRules::All(t)
            }
            Some(t) => WorkspaceRules::DenyAndAsk(t),
        };
        Rules::load_from(home, &self.root, ws)
    }

    /// The hooks of the home, of the enabled plugins and, when the workspace is trusted, its
    /// own.
    pub fn hooks(&self, home: &Path) -> Result<Hooks, HooksError> {
        let bytes = self
            .scan
            .hooks
            .as_ref()
            // `<root>/.neocode` that is the home: its hooks.json is the home's, read as such.
            .filter(|_| self.uses_workspace() && !self.scan.home_is_dot_neocode);
        let text = match bytes {
            None => None,
            Some(b) => Some(std::str::from_utf8(b).map_err(|_| HooksError {
                file: Hooks::workspace_file(&self.root),
                line: 0,
                message: "not UTF-8 text".into(),
            })?),
        };
        let mut hooks = Hooks::load_from(home, &self.root, text)?;
        for plugin in crate::runtime::extensions::plugins::enabled(home) {
            for (file, src) in plugin.brings().hooks_file() {
                hooks.add(&src, &file)?;
            }
        }
        Ok(hooks)
    }

    /// The personal skills and, when the workspace is trusted, its own (else
    /// [`Skills::workspace_left_out`] says why they are not there).
    pub(crate) fn skills(&self, home: &Path) -> Skills {
        // Only a folder that was seen (and hashed) is read: none when nothing is declared,
        // nor when `<root>/.neocode` is the home (its skills are the personal ones).
        let declares = self.declares_skills();
        let mut s = Skills::discover_with(home, &self.root, declares && self.uses_workspace());
        if declares && !self.uses_workspace() {
            s.workspace_left_out = self.left_out();
        }
        s
    }

    fn declares_skills(&self) -> bool {
        self.scan
            .files
            .iter()
            .any(|f| f.path.starts_with(".neocode/skills/"))
    }

    /// Whether the workspace declares hooks (a `hooks.json` of its own).
    pub(crate) fn declares_hooks(&self) -> bool {
        self.scan.file(HOOKS_FILE).is_some()
    }

    /// What it declares, entry by entry.
    pub(crate) fn declared(&self) -> Declared {
        Declared::of(&self.scan, &self.root)
    }

    /// One line saying that the workspace's settings are not used and why, with what to do;
    /// `None` when they are used (or there are none).
    pub(crate) fn left_out(&self) -> Option<String> {
        let why = match &self.state {
            TrustState::NothingDeclared | TrustState::Trusted { .. } => return None,
            TrustState::Untrusted {
                record_problem: None,
            } => format!(
                "it is not trusted (it declares {})",
                self.declared().summary()
            ),
            TrustState::Untrusted {
                record_problem: Some(p),
            } => format!("it is not trusted ({p})"),
            TrustState::Changed(c) => {
                let mut s = format!("it changed since you trusted it ({}", c.summary());
                if !c.new_entries.is_empty() {
                    let new: Vec<String> = c.new_entries.iter().map(|e| cut(e, 160)).collect();
                    s.push_str(&format!("; new: {}", new.join("; ")));
                }
                s.push(')');
                s
            }
            TrustState::Unreviewable(e) => e.clone(),
        };
        Some(format!(
            "this workspace's hooks, allow rules and skills are not used: {why}. Review them with \
             `neocode trust`; to use them, trust the workspace with `neocode trust --yes` or \
             {TRUST_FLAG}"
        ))
    }
}

/// `s` cut to `max` characters, with `…` when it was longer.
fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max).collect();
    t.push('…');
    t
}
