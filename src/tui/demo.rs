//! `neocode demo`: a throwaway home and workspace filled from the session files shipped in
//! `assets/demo/`, so a newcomer (and the screenshots) see a living app.

use std::path::PathBuf;

use crate::runtime::Location;

/// A prepared demo: where its data lives. The folder is removed when this is dropped unless
/// `keep` is set.
#[derive(Debug)]
pub struct Demo {
    /// Home and workspace of the demo.
    pub location: Location,
    /// The throwaway folder holding both.
    pub dir: PathBuf,
    /// Leave the folder on disk when dropped.
    pub keep: bool,
}

impl Drop for Demo {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Creates the throwaway home + workspace under the system temp folder and imports every
/// shipped demo session.
pub fn prepare(keep: bool) -> anyhow::Result<Demo> {
    let _ = keep;
    anyhow::bail!("the demo is not built yet")
}
