//! nonoka's protocol contract: the version and capabilities neocode speaks, the check of
//! the provider's contract on each request, and the request's flat limit fields in the
//! ledger's terms.

use serde::Deserialize;
use serde_json::Value;

use crate::session::RuntimeLimits;

/// The contract version this bridge speaks (its major must match the provider's).
pub(crate) const VERSION: &str = "1.1";

/// The capabilities neocode honours, advertised in `protocol_ack`: results (and receipts) of
/// the host's own tools, limits stored with the session, `finish.termination`, approvals
/// across processes, and typed verification receipts (the host's are validated, stored and
/// summarised for the model; `run_command`'s checks carry one in `tool_result.result`).
pub(crate) const CAPABILITIES: &[&str] = &[
    "external_tool_receipts",
    "persistent_runtime_limits",
    "termination_reasons",
    "tool_approval_resume",
    "typed_verification_receipts",
];

/// What the provider requires of the bridge for one request.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct Contract {
    pub version: String,
    #[serde(default)]
    pub required_capabilities: Vec<String>,
    #[serde(default)]
    pub provider_version: Option<String>,
}

/// nonoka's limit and policy fields, flat on the request.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub(crate) struct FlatLimits {
    #[serde(default)]
    pub max_turns: Option<u64>,
    #[serde(default)]
    pub tool_budget: Option<u64>,
    #[serde(default)]
    pub wall_timeout_seconds: Option<f64>,
    #[serde(default)]
    pub timeout_seconds: Option<f64>,
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default)]
    pub max_context_bytes: Option<u64>,
    #[serde(default)]
    pub max_external_result_bytes: Option<u64>,
    #[serde(default)]
    pub require_workspace_mutation: Option<bool>,
    #[serde(default)]
    pub require_observed_effect: Option<bool>,
    #[serde(default)]
    pub require_focused_verification: Option<bool>,
    #[serde(default)]
    pub verification_enforcement: Option<String>,
    #[serde(default)]
    pub max_completion_corrections: Option<u64>,
}

/// A refused contract: the `error` event's code, message and details.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Refused {
    pub code: &'static str,
    pub message: String,
    pub details: Value,
}

/// Checks the provider's contract: present, the same major version, and every required
/// capability one neocode honours.
pub(crate) fn check_contract(c: Option<&Contract>) -> Result<(), Refused> {
    let Some(c) = c else {
        return Err(Refused {
            code: "protocol_contract_required",
            message: "the provider did not declare a bridge protocol contract (`protocol`)".into(),
            details: serde_json::json!({"supported_version": VERSION}),
        });
    };
    let major = |v: &str| v.split('.').next().unwrap_or_default().to_string();
    let mut missing: Vec<&str> = c
        .required_capabilities
        .iter()
        .map(String::as_str)
        .filter(|r| !CAPABILITIES.contains(r))
        .collect();
    missing.sort_unstable();
    missing.dedup();
    if major(&c.version) == major(VERSION) && missing.is_empty() {
        return Ok(());
    }
    let message = if missing.is_empty() {
        format!(
            "bridge protocol {} is not compatible with neocode's {VERSION}",
            crate::sanitize::line(&c.version)
        )
    } else {
        format!(
            "neocode does not support {} (it supports {})",
            missing
                .iter()
                .map(|m| crate::sanitize::line(m).into_owned())
                .collect::<Vec<_>>()
                .join(", "),
            CAPABILITIES.join(", ")
        )
    };
    Err(Refused {
        code: "protocol_incompatible",
        message,
        details: serde_json::json!({
            "requested_version": c.version,
            "supported_version": VERSION,
            "missing_capabilities": missing,
            "supported_capabilities": CAPABILITIES,
        }),
    })
}

/// The ledger limits the request's flat fields mean, and the names of the fields set that
/// have no ledger counterpart (ignored).
pub(crate) fn limits(f: &FlatLimits) -> (Option<RuntimeLimits>, Vec<&'static str>) {
    let l = RuntimeLimits {
        max_turns: f.max_turns,
        max_tool_calls: f.tool_budget,
        max_wall_secs: f
            .wall_timeout_seconds
            .filter(|s| s.is_finite() && *s > 0.0)
            .map(|s| s.ceil() as u64),
        ..RuntimeLimits::default()
    };
    let mut ignored = Vec::new();
    let mut note = |set: bool, name| {
        if set {
            ignored.push(name);
        }
    };
    note(f.timeout_seconds.is_some(), "timeout_seconds");
    note(f.temperature.is_some(), "temperature");
    note(f.max_context_bytes.is_some(), "max_context_bytes");
    note(
        f.max_external_result_bytes.is_some(),
        "max_external_result_bytes",
    );
    note(
        f.require_workspace_mutation == Some(true),
        "require_workspace_mutation",
    );
    note(
        f.require_observed_effect == Some(true),
        "require_observed_effect",
    );
    note(
        f.require_focused_verification == Some(true),
        "require_focused_verification",
    );
    // The enforcement mode and the correction count only mean something with a completion
    // requirement; set with one (or to a value other than nonoka's default), they are named.
    let required = f.require_workspace_mutation == Some(true)
        || f.require_observed_effect == Some(true)
        || f.require_focused_verification == Some(true);
    note(
        f.verification_enforcement
            .as_deref()
            .is_some_and(|v| required || v != "strict"),
        "verification_enforcement",
    );
    note(
        f.max_completion_corrections
            .is_some_and(|n| required || n != 1),
        "max_completion_corrections",
    );
    let any = l != RuntimeLimits::default();
    (any.then_some(l), ignored)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn contracts_are_checked() {
        let c = |v: &str, caps: &[&str]| Contract {
            version: v.into(),
            required_capabilities: caps.iter().map(ToString::to_string).collect(),
            provider_version: None,
        };
        assert_eq!(
            check_contract(None).unwrap_err().code,
            "protocol_contract_required"
        );
        assert!(check_contract(Some(&c("1.0", &["termination_reasons"]))).is_ok());
        let e = check_contract(Some(&c("2.0", &[]))).unwrap_err();
        assert_eq!(e.code, "protocol_incompatible");
        assert!(check_contract(Some(&c("1.1", &["typed_verification_receipts"]))).is_ok());
        let e = check_contract(Some(&c("1.1", &["telepathy"]))).unwrap_err();
        assert!(e.message.contains("telepathy"), "{e:?}");
        assert_eq!(e.details["missing_capabilities"], json!(["telepathy"]));
    }

    #[test]
    fn flat_limits_map_onto_the_ledger() {
        let (l, ignored) = limits(&FlatLimits {
            max_turns: Some(4),
            tool_budget: Some(9),
            wall_timeout_seconds: Some(59.5),
            temperature: Some(0.0),
            max_context_bytes: Some(1),
            ..FlatLimits::default()
        });
        let l = l.unwrap();
        assert_eq!(
            (l.max_turns, l.max_tool_calls, l.max_wall_secs),
            (Some(4), Some(9), Some(60))
        );
        assert_eq!(ignored, ["temperature", "max_context_bytes"]);
        let (_, ignored) = limits(&FlatLimits {
            require_focused_verification: Some(true),
            verification_enforcement: Some("strict".into()),
            max_completion_corrections: Some(1),
            ..FlatLimits::default()
        });
        assert_eq!(
            ignored,
            [
                "require_focused_verification",
                "verification_enforcement",
                "max_completion_corrections"
            ]
        );
        let (_, ignored) = limits(&FlatLimits {
            verification_enforcement: Some("strict".into()),
            max_completion_corrections: Some(1),
            ..FlatLimits::default()
        });
        assert!(
            ignored.is_empty(),
            "nonoka's defaults without a requirement"
        );
        assert_eq!(limits(&FlatLimits::default()), (None, vec![]));
    }
}
