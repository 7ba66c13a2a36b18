//! Where neocode keeps a workspace's sessions: the home and the workspace of a directory.

use std::path::{Path, PathBuf};

use crate::session::WorkspacePaths;

/// Why [`Location::resolve`] found no home or workspace: one line for the user.
#[derive(Debug, thiserror::Error)]
pub enum LocationError {
    /// The neocode home cannot be found.
    #[error("{0}")]
    Home(crate::session::HomeError),
    /// The current directory cannot be read.
    #[error("cannot read the current directory: {0}")]
    CurrentDir(std::io::Error),
    /// The workspace of the directory cannot be resolved.
    #[error("{0}")]
    Workspace(crate::session::WorkspaceError),
}

/// Where neocode keeps data and which workspace it acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The neocode home.
    pub home: PathBuf,
    /// The workspace's paths under the home.
    pub paths: WorkspacePaths,
}

impl Location {
    /// Resolves the home (`$NEOCODE_HOME`, else `~/.neocode`) and the workspace of `workdir`
    /// (or the current directory).
    pub fn resolve(workdir: Option<&Path>) -> std::result::Result<Location, LocationError> {
        let home = crate::session::home_dir().map_err(LocationError::Home)?;
        let dir = match workdir {
            Some(d) => d.to_path_buf(),
            None => std::env::current_dir().map_err(LocationError::CurrentDir)?,
        };
        let paths = WorkspacePaths::resolve(&home, &dir).map_err(LocationError::Workspace)?;
        Ok(Location { home, paths })
    }

    /// Workspace root, for messages.
    pub fn root(&self) -> &Path {
        &self.paths.root
    }

    /// A home (`<dir>/home`) and a workspace folder (`<dir>/ws`, created) under a scratch
    /// folder: the one way tests, benchmarks and the demo generator make a workspace.
    #[cfg(any(test, feature = "testkit"))]
    #[expect(
        clippy::expect_used,
        reason = "test scaffolding: a scratch folder that cannot be made is a broken machine"
    )]
    pub fn scratch(dir: &Path) -> Location {
        let home = dir.join("home");
        let ws = dir.join("ws");
        std::fs::create_dir_all(&ws).expect("creating a scratch workspace");
        let paths = WorkspacePaths::resolve(&home, &ws).expect("resolving a scratch workspace");
        Location { home, paths }
    }
}
