//! What confines commands, as neocode reports it: the [`SandboxStatus`] and the [`Walls`].

/// What confines commands on this machine with these settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxStatus {
    /// Every rule is enforced by the kernel.
    Enforced {
        /// Landlock ABI version in use.
        abi: i32,
    },
    /// Landlock works but cannot enforce every rule (older kernel): commands still run
    /// confined as far as the kernel allows, and every command asks.
    Partial {
        /// Landlock ABI version in use.
        abi: i32,
        /// What is not enforced.
        detail: String,
    },
    /// No confinement is possible; every command asks.
    Unavailable {
        /// Why (kernel without Landlock, helper not found, simulated by config ...).
        reason: String,
    },
    /// The user turned the sandbox off (mode `off`).
    Off,
}

impl SandboxStatus {
    /// Whether the kernel enforces every rule.
    pub fn is_enforced(&self) -> bool {
        matches!(self, SandboxStatus::Enforced { .. })
    }

    /// Short text for the status line: `sandbox` when enforced, `sandbox off` otherwise
    /// (the TUI shows `Off` in red).
    pub fn label(&self) -> &'static str {
        match self {
            SandboxStatus::Enforced { .. } => "sandbox",
            SandboxStatus::Partial { .. }
            | SandboxStatus::Unavailable { .. }
            | SandboxStatus::Off => "sandbox off",
        }
    }

    /// Stable machine-readable name: `enforced`, `partial`, `unavailable`, `off`.
    pub fn code(&self) -> &'static str {
        match self {
            SandboxStatus::Enforced { .. } => "enforced",
            SandboxStatus::Partial { .. } => "partial",
            SandboxStatus::Unavailable { .. } => "unavailable",
            SandboxStatus::Off => "off",
        }
    }

    /// One sentence for the user.
    pub fn describe(&self) -> String {
        match self {
            SandboxStatus::Enforced { abi } => {
                format!("sandbox enforced (Landlock ABI {abi})")
            }
            SandboxStatus::Partial { abi, detail } => format!(
                "sandbox only partially enforced (Landlock ABI {abi}: {detail}); every command asks"
            ),
            SandboxStatus::Unavailable { reason } => {
                format!("sandbox unavailable ({reason}); every command asks")
            }
            SandboxStatus::Off => "sandbox off (mode off): commands run unconfined".to_string(),
        }
    }

    /// The warning to show once when a session starts, if any.
    pub fn warning(&self) -> Option<String> {
        match self {
            SandboxStatus::Enforced { .. } => None,
            SandboxStatus::Partial { .. }
            | SandboxStatus::Unavailable { .. }
            | SandboxStatus::Off => Some(self.describe()),
        }
    }
}

/// Which walls stand around a command on this machine with these settings (see
/// docs/SECURITY.md). Meant for `neocode doctor` and the status line
/// ([`walls`](super::probe::walls)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Walls {
    /// The confinement in use: `enforced`, `partial`, `unavailable` or `off`.
    pub status: &'static str,
    /// A user namespace (the command has no capabilities over anything outside).
    pub user_ns: bool,
    /// A mount namespace of its own (the mounts below).
    pub mount_ns: bool,
    /// A PID namespace with neocode's helper as PID 1: no other process is visible in `/proc`,
    /// and everything dies when the command ends.
    pub pid_ns: bool,
    /// A network namespace of its own when the network is denied (no loopback, no abstract
    /// UNIX sockets of the host).
    pub net_ns: bool,
    /// Everything outside the workspace and `$TMPDIR` is mounted read-only (contents and
    /// metadata).
    pub ro_root: bool,
    /// A fresh `/proc` for the command's PID namespace.
    pub fresh_proc: bool,
    /// neocode's home is hidden (an empty read-only folder in its place).
    pub home_hidden: bool,
    /// The workspace's control files (`.neocode/`, `.git`'s config, hooks and the like) are
    /// read-only to commands, and `.git` cannot be renamed or replaced.
    pub control_files: bool,
    /// Landlock ABI in use (0: none).
    pub landlock_abi: i32,
    /// The seccomp filter can be installed.
    pub seccomp: bool,
    /// No unix socket outside the box can be reached (seccomp, while the network is denied).
    pub unix_sockets_closed: bool,
    /// Set-uid and set-gid bits cannot be set (seccomp).
    pub set_id_refused: bool,
    /// The helper is a subreaper and kills every descendant when the command ends.
    pub subreaper: bool,
    /// A cgroup with `cgroup.kill` (not used yet: the PID namespace or the subreaper kills).
    pub cgroup_kill: bool,
    /// neocode's own process is not dumpable (`PR_SET_DUMPABLE` 0): other processes of the
    /// user cannot read its memory or environment through `/proc`.
    pub not_dumpable: bool,
}

impl std::fmt::Display for Walls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let yn = |v: bool| if v { "yes" } else { "no" };
        let mut ns = Vec::new();
        for (on, name) in [
            (self.user_ns, "user"),
            (self.mount_ns, "mount"),
            (self.pid_ns, "pid"),
            (self.net_ns, "net"),
        ] {
            if on {
                ns.push(name);
            }
        }
        let ns = if ns.is_empty() {
            "none".to_string()
        } else {
            ns.join(" ")
        };
        let landlock = if self.landlock_abi > 0 {
            format!("ABI {}", self.landlock_abi)
        } else {
            "no".to_string()
        };
        write!(
            f,
            "sandbox {}: namespaces: {ns}; read-only root: {}; fresh /proc: {}; home hidden: {}; control files read-only: {}; landlock: {landlock}; seccomp: {}; unix sockets closed: {}; set-id bits refused: {}; subreaper: {}; cgroup kill: {}; neocode not dumpable: {}",
            self.status,
            yn(self.ro_root),
            yn(self.fresh_proc),
            yn(self.home_hidden),
            yn(self.control_files),
            yn(self.seccomp),
            yn(self.unix_sockets_closed),
            yn(self.set_id_refused),
            yn(self.subreaper),
            yn(self.cgroup_kill),
            yn(self.not_dumpable),
        )
    }
}
