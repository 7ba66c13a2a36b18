//! The full-screen TUI. It consumes the runtime only; it never opens the database or an asset
//! file itself.

use crate::runtime::Location;

pub mod demo;

/// How the TUI starts.
#[derive(Debug, Clone)]
pub struct TuiOptions {
    /// Home and workspace to act on.
    pub location: Location,
    /// Open directly in the conversation view of this session (a full, resolved id):
    /// `--resume <ID>` and `--continue`.
    pub resume: Option<String>,
}

/// Runs the TUI until the user quits. Restores the terminal on every exit path, panics
/// included.
pub fn run(opts: TuiOptions) -> anyhow::Result<()> {
    let _ = opts;
    anyhow::bail!("the full-screen TUI is not built yet")
}
