//! Which calls ask the user first, when no permission rule or hook decided ([`super::gate`]
//! runs first). Reads and plan updates never ask; edits ask under `ask`; commands ask under
//! `ask` and `auto-edit`, and always when the kernel cannot enforce the sandbox (unless a
//! session grant names the tool). Mode `off` is the user's explicit choice and follows the
//! policy.

use crate::runtime::config::ApprovalPolicy;
use crate::runtime::tools::{SandboxSettings, ToolKind, sandbox};

/// The grant, kept among a session's "always" answers (`RuntimeLedger::approved_tools`), that
/// opens the network to its commands (`/approve network`). A colon never occurs in a tool
/// name, so it cannot be mistaken for one.
pub(crate) const NETWORK_GRANT: &str = "sandbox:network";

/// The sandbox a session's commands run under: the configured one, with the network open when
/// the config allows it or the user allowed it for this session.
pub(crate) fn session_sandbox(configured: &SandboxSettings, always: &[String]) -> SandboxSettings {
    let mut sb = configured.clone();
    sb.network |= always.iter().any(|t| t == NETWORK_GRANT);
    sb
}

/// Why the call must ask, or `None` when it may run.
pub(crate) fn needs_approval(
    kind: ToolKind,
    name: &str,
    policy: ApprovalPolicy,
    always: &[String],
    sandbox: &SandboxSettings,
) -> Option<String> {
    if always.iter().any(|t| t == name) {
        return None;
    }
    match kind {
        ToolKind::Read | ToolKind::Plan | ToolKind::Agent => None,
        ToolKind::Edit => match policy {
            ApprovalPolicy::Ask => Some("policy `ask`: file changes need approval".into()),
            ApprovalPolicy::AutoEdit | ApprovalPolicy::NeverAsk => None,
        },
        ToolKind::Command => {
            if sandbox::must_ask(sandbox) {
                return Some(format!(
                    "{}: every command needs approval",
                    sandbox::status(sandbox).describe()
                ));
            }
            match policy {
                ApprovalPolicy::Ask | ApprovalPolicy::AutoEdit => Some(format!(
                    "policy `{}`: commands need approval",
                    policy.as_str()
                )),
                ApprovalPolicy::NeverAsk => None,
            }
        }
        ToolKind::Fetch => match policy {
            ApprovalPolicy::Ask | ApprovalPolicy::AutoEdit => Some(format!(
                "policy `{}`: fetching a URL needs approval",
                policy.as_str()
            )),
            ApprovalPolicy::NeverAsk => None,
        },
    }
}

/// The weakest `--approve` policy under which a call of `kind` runs without asking, for
/// telling a non-interactive user which flag allows it.
pub(crate) fn policy_allowing(kind: ToolKind) -> &'static str {
    match kind {
        ToolKind::Read | ToolKind::Plan | ToolKind::Agent => "ask",
        ToolKind::Edit => "auto-edit",
        ToolKind::Command | ToolKind::Fetch => "never-ask",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_network_grant_opens_the_network_of_that_session_only() {
        let configured = SandboxSettings::default();
        assert!(!session_sandbox(&configured, &[]).network);
        assert!(!session_sandbox(&configured, &["run_command".into()]).network);
        assert!(session_sandbox(&configured, &[NETWORK_GRANT.into()]).network);
        let open = SandboxSettings {
            network: true,
            ..SandboxSettings::default()
        };
        assert!(session_sandbox(&open, &[]).network, "config still wins");
    }

    #[test]
    fn policy_table() {
        let sb = SandboxSettings {
            mode: crate::runtime::tools::SandboxMode::Off,
            ..SandboxSettings::default()
        };
        let ask = |k, p| needs_approval(k, "t", p, &[], &sb).is_some();
        use ApprovalPolicy::*;
        use ToolKind::*;
        assert!(!ask(Read, Ask) && !ask(Plan, Ask));
        assert!(ask(Edit, Ask) && !ask(Edit, AutoEdit) && !ask(Edit, NeverAsk));
        assert!(ask(Command, Ask) && ask(Command, AutoEdit) && !ask(Command, NeverAsk));
        assert!(ask(Fetch, Ask) && ask(Fetch, AutoEdit) && !ask(Fetch, NeverAsk));
        let off = SandboxSettings {
            simulate_unavailable: true,
            ..SandboxSettings::default()
        };
        assert!(needs_approval(Command, "run_command", NeverAsk, &[], &off).is_some());
        assert!(
            needs_approval(Command, "run_command", Ask, &["run_command".into()], &off).is_none()
        );
    }
}
