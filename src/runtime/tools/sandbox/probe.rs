//! Probing once per process what the kernel enforces (the helper in probe mode) and what
//! that means for a command: [`status`], [`walls`], [`must_ask`].

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::env::not_dumpable;
use super::report::{SandboxStatus, Walls};
use super::{HELPER_SUBCOMMAND, helper};
use crate::runtime::tools::{SandboxMode, SandboxSettings};

/// Probe results by helper path and user-namespace switch (the kernel does not change while we
/// run).
type Probed = (PathBuf, bool, SandboxStatus, Walls);
static PROBED: Mutex<Vec<Probed>> = Mutex::new(Vec::new());

/// What confines commands under `settings` (probes the kernel once per process).
pub fn status(settings: &SandboxSettings) -> SandboxStatus {
    probed(settings).0
}

/// Exactly which walls stand around a command under `settings` (for `neocode doctor`, the
/// status line and tests); its `Display` is one line.
pub fn walls(settings: &SandboxSettings) -> Walls {
    let mut w = probed(settings).1;
    w.not_dumpable = not_dumpable();
    w.net_ns &= !settings.network;
    w.home_hidden &= settings.home.is_some();
    w.unix_sockets_closed = w.seccomp && !settings.network;
    w.set_id_refused = w.seccomp;
    w
}

/// Whether commands run in the namespace box (else the fallback, or nothing).
pub fn namespaced(settings: &SandboxSettings) -> bool {
    walls(settings).mount_ns
}

fn probed(settings: &SandboxSettings) -> (SandboxStatus, Walls) {
    let plain = |status: SandboxStatus| {
        let w = Walls {
            status: status.code(),
            ..Walls::default()
        };
        (status, w)
    };
    match settings.mode {
        SandboxMode::Off => return plain(SandboxStatus::Off),
        SandboxMode::WorkspaceWrite | SandboxMode::ReadOnly => {}
    }
    if settings.simulate_unavailable {
        return plain(SandboxStatus::Unavailable {
            reason: "simulated by configuration (sandbox.simulate_unavailable)".to_string(),
        });
    }
    let helper = match helper() {
        Ok(h) => h,
        Err(reason) => return plain(SandboxStatus::Unavailable { reason }),
    };
    let no_userns = settings.simulate_no_userns;
    if let Ok(cache) = PROBED.lock()
        && let Some((_, _, s, w)) = cache
            .iter()
            .find(|(p, n, _, _)| *p == helper && *n == no_userns)
    {
        return (s.clone(), w.clone());
    }
    let probed = probe(&helper, no_userns);
    if let Ok(mut cache) = PROBED.lock() {
        cache.push((helper, no_userns, probed.0.clone(), probed.1.clone()));
    }
    probed
}

/// Whether a command must ask the user whatever the approval policy: the sandbox is not
/// fully enforced (or simulated unavailable). Mode `off` is the user's explicit choice and
/// follows the policy.
pub fn must_ask(settings: &SandboxSettings) -> bool {
    match status(settings) {
        SandboxStatus::Enforced { .. } | SandboxStatus::Off => false,
        SandboxStatus::Partial { .. } | SandboxStatus::Unavailable { .. } => true,
    }
}

fn probe(helper: &Path, no_userns: bool) -> (SandboxStatus, Walls) {
    let mut cmd = std::process::Command::new(helper);
    cmd.arg(HELPER_SUBCOMMAND).arg("--probe");
    if no_userns {
        cmd.arg("--no-userns");
    }
    let out = cmd.env_clear().stdin(std::process::Stdio::null()).output();
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            let s = SandboxStatus::Unavailable {
                reason: format!("cannot run the sandbox helper {}: {e}", helper.display()),
            };
            let w = Walls {
                status: s.code(),
                ..Walls::default()
            };
            return (s, w);
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let status = parse_probe(lines.next().unwrap_or("").trim()).unwrap_or_else(|| {
        SandboxStatus::Unavailable {
            reason: format!(
                "the sandbox helper answered unexpectedly: {}{}",
                text.trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        }
    });
    let mut walls = parse_walls(lines.next().unwrap_or(""));
    walls.status = status.code();
    (status, walls)
}

/// `walls userns=1 mountns=1 ... landlock=7 seccomp=1 subreaper=1`.
fn parse_walls(line: &str) -> Walls {
    let mut w = Walls::default();
    let Some(rest) = line.strip_prefix("walls ") else {
        return w;
    };
    for kv in rest.split_whitespace() {
        let Some((k, v)) = kv.split_once('=') else {
            continue;
        };
        let on = v == "1";
        match k {
            "userns" => w.user_ns = on,
            "mountns" => w.mount_ns = on,
            "pidns" => w.pid_ns = on,
            "netns" => w.net_ns = on,
            "roroot" => w.ro_root = on,
            "proc" => w.fresh_proc = on,
            "home" => w.home_hidden = on,
            "protect" => w.control_files = on,
            "landlock" => w.landlock_abi = v.parse().unwrap_or(0),
            "seccomp" => w.seccomp = on,
            "subreaper" => w.subreaper = on,
            _ => {}
        }
    }
    w
}

fn parse_probe(line: &str) -> Option<SandboxStatus> {
    let mut it = line.splitn(3, ' ');
    match it.next()? {
        "enforced" => Some(SandboxStatus::Enforced {
            abi: it.next()?.parse().ok()?,
        }),
        "partial" => Some(SandboxStatus::Partial {
            abi: it.next()?.parse().ok()?,
            detail: it.next().unwrap_or("").to_string(),
        }),
        "unavailable" => {
            let rest: Vec<&str> = it.collect();
            Some(SandboxStatus::Unavailable {
                reason: rest.join(" "),
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walls_lines_parse_and_print() {
        let w = parse_walls(
            "walls userns=1 mountns=1 pidns=1 netns=0 roroot=1 proc=1 home=1 protect=1 landlock=7 seccomp=1 subreaper=1",
        );
        assert!(w.user_ns && w.mount_ns && w.pid_ns && !w.net_ns && w.ro_root);
        assert_eq!(w.landlock_abi, 7);
        let text = Walls {
            status: "enforced",
            ..w
        }
        .to_string();
        assert_eq!(
            text,
            "sandbox enforced: namespaces: user mount pid; read-only root: yes; fresh /proc: yes; home hidden: yes; control files read-only: yes; landlock: ABI 7; seccomp: yes; unix sockets closed: no; set-id bits refused: no; subreaper: yes; cgroup kill: no; neocode not dumpable: no"
        );
        assert_eq!(parse_walls("garbage"), Walls::default());
    }

    #[test]
    fn probe_lines_parse() {
        assert_eq!(
            parse_probe("enforced 7"),
            Some(SandboxStatus::Enforced { abi: 7 })
        );
        assert_eq!(
            parse_probe("partial 3 the kernel lacks x"),
            Some(SandboxStatus::Partial {
                abi: 3,
                detail: "the kernel lacks x".into()
            })
        );
        assert!(matches!(
            parse_probe("unavailable no Landlock here"),
            Some(SandboxStatus::Unavailable { .. })
        ));
        assert_eq!(parse_probe("garbage"), None);
    }
}
