//! Workspace trust (issue 34): nothing a workspace declares takes effect until its user has
//! trusted it after seeing exactly what it declares.
//!
//! A workspace *declares* every file under `<root>/.neocode/` (hooks, rules, skills), Claude
//! Code's `<root>/.claude/{commands,agents,skills}` and `<root>/.mcp.json` ([`scan`]). The
//! user trusts it with the TUI's trust screen, `neocode trust --yes` or `--trust-workspace`;
//! the [`record`] (under neocode's home, never in the workspace) keeps the SHA-256 of every
//! declared file then. A file added, removed or changed since makes the workspace
//! [`TrustState::Changed`]: asked again, naming what changed.
//!
//! Until then an [`Admission`] gives the turns and the commands that show settings none of
//! the workspace's hooks and skills and, of its rules, only `deny` and `ask` (they can only
//! make neocode more careful). What is used is read from the bytes that were hashed. Base
//! URLs and keys never come from a workspace at all (the settings are the home's).
//!
//! The older folder trust (`trusted-workspaces`, for a workspace of `/` or the home folder:
//! [`crate::runtime::tools::sandbox::trust`]) is kept in step: trusting records both,
//! revoking removes both.

mod act;
mod admit;
mod describe;
mod error;
mod extensions;
mod gate;
pub(crate) mod record;
pub mod review;
pub(crate) mod scan;

pub use act::{OwnWrite, Review, review, review_of, revoke, trust, trust_as_shown};
pub use admit::Admission;
pub(crate) use error::TrustError;
pub use extensions::{admitted, custom_commands};
pub use gate::gate;
pub use review::{Changes, Declared, DeclaredHook, DeclaredRule, DeclaredSkill, TrustState};

/// The flag that trusts the current workspace.
pub(crate) const TRUST_FLAG: &str = crate::runtime::tools::sandbox::trust::TRUST_FLAG;

#[cfg(test)]
mod tests;
