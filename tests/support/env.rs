//! The one throwaway environment the tests start from: a home and a workspace folder under
//! one temp dir, their [`Location`], and [`Sessions`] over them. The harnesses extend it (the
//! agent's [`super::agent::Env`], the store's and command line's helpers in [`super`]).

use std::path::PathBuf;

use neocode::runtime::{Location, Sessions};

/// `tmp/home` and `tmp/ws` (created; `workdir` is its canonical root).
pub struct Env {
    pub tmp: tempfile::TempDir,
    pub home: PathBuf,
    /// The workspace root, canonical (as the runtime records it).
    pub workdir: PathBuf,
}

impl Env {
    pub fn new() -> Env {
        let tmp = tempfile::tempdir().expect("temp dir");
        let loc = Location::scratch(tmp.path());
        let (home, workdir) = (loc.home.clone(), loc.root().to_path_buf());
        Env { tmp, home, workdir }
    }

    pub fn location(&self) -> Location {
        Location::scratch(self.tmp.path())
    }

    /// A fresh sessions handle (its own connections), creating the store if needed.
    pub fn sessions(&self) -> Sessions {
        Sessions::open(&self.location()).expect("open the sessions")
    }
}
