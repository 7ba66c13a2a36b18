//! The extensions' view of a workspace's trust ([`Admitted`]): whether its declared settings
//! are in use, and its skills as far as the user trusts it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::admit::Admission;
use crate::runtime::extensions::commands::CustomCommands;
use crate::runtime::extensions::project::Admitted;
use crate::runtime::extensions::project_context::Skills;

/// A workspace's trust, for its extensions (each answer reads the record afresh).
struct ForExtensions {
    home: PathBuf,
    root: PathBuf,
}

impl Admitted for ForExtensions {
    fn uses_workspace(&self) -> bool {
        Admission::check(&self.home, &self.root).uses_workspace()
    }

    fn skills(&self) -> Skills {
        Admission::check(&self.home, &self.root).skills(&self.home)
    }
}

/// What workspace `root`'s trust (recorded under `home`) lets its extensions use.
pub fn admitted(home: &Path, root: &Path) -> Arc<dyn Admitted> {
    Arc::new(ForExtensions {
        home: home.to_path_buf(),
        root: root.to_path_buf(),
    })
}

/// The custom slash commands of the home and of workspace `root` (its own only while the
/// user trusts it), less those named like one of `built_in`: what the TUI's completion
/// offers and `run /name` expands.
pub fn custom_commands(home: &Path, root: &Path, built_in: &[&str]) -> CustomCommands {
    let trusted = Admission::check(home, root).uses_workspace();
    CustomCommands::load(home, root, trusted, built_in)
}
