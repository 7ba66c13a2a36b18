//! The gate's view of a workspace's trust ([`crate::runtime::policy::gate::Admit`]): its
//! rules and hooks as far as the user trusts it, and neocode's own writes to its rule file
//! kept in the trust record.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::act::OwnWrite;
use super::admit::Admission;
use super::scan::RULES_FILE;
use crate::runtime::policy::gate::{Admit, Gate, GateError, KeepError, Loaded};
use crate::runtime::policy::permissions::{self, List, Rules, RulesError};

/// A workspace's trust, for its gate.
struct Admitted {
    home: PathBuf,
    root: PathBuf,
}

impl Admit for Admitted {
    fn load(&self) -> Result<Loaded, GateError> {
        let a = Admission::check(&self.home, &self.root);
        Ok(Loaded {
            rules: a.rules(&self.home)?,
            hooks: a.hooks(&self.home)?,
            left_out: a.left_out(),
        })
    }

    fn rules(&self) -> Result<Rules, RulesError> {
        Admission::check(&self.home, &self.root).rules(&self.home)
    }

    fn write_workspace_rules(&self, file: &Path, rules: &[String]) -> Result<bool, KeepError> {
        let own = OwnWrite::begin(&self.home, &self.root);
        permissions::append_rules(file, List::Allow, rules)?;
        let trusted = own.was_trusted();
        let refreshed = own
            .done(RULES_FILE)
            .map_err(|e| KeepError::Trust(e.to_string()))?;
        Ok(trusted && refreshed)
    }
}

/// The gate of session `session_id` in workspace `root`, with no rules or hooks until
/// [`Gate::load`] reads them as far as the workspace is trusted.
pub fn gate(home: &Path, root: &Path, session_id: &str) -> Gate {
    let admit = Arc::new(Admitted {
        home: home.to_path_buf(),
        root: root.to_path_buf(),
    });
    Gate::empty(home, root, session_id, admit)
}
