//! What a command restricts itself with: the Landlock ruleset (writes and TCP), plus the
//! seccomp filter of `seccomp.rs` (sockets, set-id modes, foreign architectures).

use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, AccessNet, LandlockStatus, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, Scope, path_beneath_rules,
};

use super::fault::BoxError;
use super::seccomp;

/// Devices every command may write to.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// The Landlock ABI whose rights we ask for: V5 covers truncate (V3), TCP (V4) and
/// device ioctls (V5). A kernel below it enforces only part of the rules.
const DEFAULT_TARGET: ABI = ABI::V5;

pub(super) enum Outcome {
    Full { abi: i32 },
    Partial { abi: i32, detail: String },
    None { reason: String },
}

impl Outcome {
    pub(super) fn probe_line(&self) -> String {
        match self {
            Outcome::Full { abi } => format!("enforced {abi}"),
            Outcome::Partial { abi, detail } => format!("partial {abi} {detail}"),
            Outcome::None { reason } => format!("unavailable {reason}"),
        }
    }
}

pub(super) fn restrict(writable: &[PathBuf], network: bool, target: Option<i32>) -> Outcome {
    let target = target.map_or(DEFAULT_TARGET, ABI::from);
    let landlock = landlock(writable, network, target);
    let seccomp = seccomp::install(network);
    match (landlock, seccomp) {
        (Err(reason), _) => Outcome::None {
            reason: reason.to_string(),
        },
        (Ok((abi, true)), Ok(())) => Outcome::Full { abi },
        (Ok((abi, true)), Err(e)) => Outcome::Partial {
            abi,
            detail: format!("the seccomp filter could not be installed: {e}"),
        },
        (Ok((abi, false)), _) => Outcome::Partial {
            abi,
            detail: format!("the kernel lacks rights of Landlock ABI {}", target as i32),
        },
    }
}

/// Applies the ruleset; `Ok((abi, fully_enforced))`.
fn landlock(writable: &[PathBuf], network: bool, target: ABI) -> Result<(i32, bool), BoxError> {
    let refused = |e: &dyn std::fmt::Display| BoxError::Landlock {
        rule: false,
        detail: e.to_string(),
    };
    let rule_refused = |e: &dyn std::fmt::Display| BoxError::Landlock {
        rule: true,
        detail: e.to_string(),
    };
    let write = AccessFs::from_all(target) & !AccessFs::from_read(target);
    let mut ruleset = Ruleset::default()
        .handle_access(write)
        .map_err(|e| refused(&e))?;
    let net = AccessNet::from_all(target);
    if !network && !net.is_empty() {
        ruleset = ruleset.handle_access(net).map_err(|e| refused(&e))?;
    }
    // Signals and abstract UNIX sockets that leave the sandbox (ABI 6): a command cannot
    // kill neocode or talk to a desktop bus. Asked only where the kernel has them, so an
    // ABI 5 kernel still counts as fully enforced.
    if kernel_abi() >= 6 {
        ruleset = ruleset
            .scope(Scope::from_all(ABI::V6))
            .map_err(|e| refused(&e))?;
    }
    let status = ruleset
        .create()
        .map_err(|e| refused(&e))?
        .add_rules(path_beneath_rules(writable, write))
        .map_err(|e| rule_refused(&e))?
        .add_rules(path_beneath_rules(DEVICES, write))
        .map_err(|e| rule_refused(&e))?
        .restrict_self()
        .map_err(|e| refused(&e))?;
    let abi = match status.landlock {
        LandlockStatus::Available { effective_abi, .. } => effective_abi as i32,
        LandlockStatus::NotEnabled => {
            return Err(BoxError::Lacks(
                "Landlock is not enabled in this kernel (lsm= boot parameter)",
            ));
        }
        LandlockStatus::NotImplemented => {
            return Err(BoxError::Lacks(
                "this kernel has no Landlock (CONFIG_SECURITY_LANDLOCK)",
            ));
        }
    };
    match status.ruleset {
        RulesetStatus::FullyEnforced => Ok((abi, true)),
        RulesetStatus::PartiallyEnforced => Ok((abi, false)),
        RulesetStatus::NotEnforced => Err(BoxError::NotEnforced(abi)),
    }
}

/// The kernel's Landlock ABI version (0 without Landlock).
fn kernel_abi() -> i64 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the documented version query: no ruleset, size 0, only the flag.
    let r = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    r.max(0)
}
