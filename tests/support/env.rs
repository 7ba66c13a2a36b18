//! The one throwaway environment the tests start from: a home and a workspace folder under
//! one temp dir, their [`Location`], and [`Sessions`] over them. Every harness extends it
//! rather than making a home and a workspace of its own: the agent's [`super::agent::Env`]
//! (a config for fast turns), the command line's [`super::cli::Ws`], the store's and crash
//! harnesses' helpers in [`super`], the bridge's and the TUI's harnesses in their suites.

use std::path::PathBuf;

use neocode::runtime::{Location, Sessions};

/// `tmp/home` and `tmp/ws`: the workspace is created, the home is left for neocode to make
/// (privately) unless [`Env::with_config`] writes a config into it.
pub(crate) struct Env {
    pub tmp: tempfile::TempDir,
    pub home: PathBuf,
    /// The workspace root, canonical (as the runtime records it).
    pub workdir: PathBuf,
}

impl Env {
    pub(crate) fn new() -> Env {
        let tmp = tempfile::tempdir().expect("temp dir");
        let loc = Location::scratch(tmp.path());
        let (home, workdir) = (loc.home.clone(), loc.root().to_path_buf());
        Env { tmp, home, workdir }
    }

    /// A home whose `config.toml` retries fast and times out a silent stream quickly;
    /// `config` follows its `[provider]` table (it may open other tables).
    pub(crate) fn with_config(config: &str) -> Env {
        let env = Env::new();
        std::fs::create_dir_all(&env.home).expect("creating the home");
        std::fs::write(
            env.home.join("config.toml"),
            format!("[provider]\nretry_backoff_ms = 10\nidle_timeout_secs = 5\n{config}"),
        )
        .expect("writing config.toml");
        env
    }

    pub(crate) fn location(&self) -> Location {
        Location::scratch(self.tmp.path())
    }

    /// A fresh sessions handle (its own connections), creating the store if needed.
    pub(crate) fn sessions(&self) -> Sessions {
        Sessions::open(&self.location()).expect("open the sessions")
    }
}
