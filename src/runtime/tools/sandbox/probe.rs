//! Probing what the kernel enforces (the helper in probe mode) and what that means for a
//! command: [`status`], [`walls`], [`must_ask`].
//!
//! The probe starts the helper, which tries every namespace and mount of the box and the
//! Landlock and seccomp rules (15-25 ms, once on the path of a process's first turn). Its
//! answer is kept once per process, and on disk in neocode's home (`sandbox-probe`) keyed by
//! everything it depends on: the boot (`/proc/sys/kernel/random/boot_id`), the helper
//! binary (device, inode, size, modification time), the user, the user-namespace switch and
//! the kernel settings that allow or refuse user namespaces. A stale answer cannot weaken the
//! box: a helper told `--require-full` refuses to run a command it cannot confine fully.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::abi::HELPER_SUBCOMMAND;
use super::env::not_dumpable;
use super::helper;
use super::report::{SandboxStatus, Walls};
use crate::runtime::tools::spec::{SandboxMode, SandboxSettings};

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
        Err(e) => {
            return plain(SandboxStatus::Unavailable {
                reason: e.to_string(),
            });
        }
    };
    let no_userns = settings.simulate_no_userns;
    if let Ok(cache) = PROBED.lock()
        && let Some((_, _, s, w)) = cache
            .iter()
            .find(|(p, n, _, _)| *p == helper && *n == no_userns)
    {
        return (s.clone(), w.clone());
    }
    let key = probe_key(&helper, no_userns);
    let file = settings.home.as_ref().map(|h| h.join(PROBE_FILE));
    let probed = match (&key, &file) {
        (Some(k), Some(f)) => match read_cached(f, k) {
            Some(p) => p,
            None => {
                let p = probe(&helper, no_userns);
                write_cached(f, k, &p);
                p
            }
        },
        _ => probe(&helper, no_userns),
    };
    if let Ok(mut cache) = PROBED.lock() {
        cache.push((helper, no_userns, probed.0.clone(), probed.1.clone()));
    }
    probed
}

/// Forgets the probe's answer (in this process and on disk): the helper refused to run a
/// command it was told it could confine, so the kernel changed since it was probed.
pub fn forget_probe(settings: &SandboxSettings) {
    if let Ok(mut cache) = PROBED.lock() {
        cache.clear();
    }
    if let Some(h) = &settings.home {
        let _ = std::fs::remove_file(h.join(PROBE_FILE));
    }
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

/// The probe's answer on disk, in neocode's home.
const PROBE_FILE: &str = "sandbox-probe";

/// What the probe's answer depends on, as one line (`None`: something cannot be read, so no
/// answer is kept).
fn probe_key(helper: &Path, no_userns: bool) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let bin = std::fs::metadata(helper).ok()?;
    let switches: Vec<String> = [
        "/proc/sys/user/max_user_namespaces",
        "/proc/sys/kernel/unprivileged_userns_clone",
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
    ]
    .iter()
    .map(|f| std::fs::read_to_string(f).map_or("-".into(), |v| v.trim().to_string()))
    .collect();
    // SAFETY: plain syscall.
    let uid = unsafe { libc::geteuid() };
    Some(format!(
        "v1 boot={} bin={}:{}:{}:{}.{} uid={uid} no_userns={} userns={}",
        boot.trim(),
        bin.dev(),
        bin.ino(),
        bin.size(),
        bin.mtime(),
        bin.mtime_nsec(),
        u8::from(no_userns),
        switches.join(",")
    ))
}

/// The probe's answer kept in `file` under `key`, if it is there.
fn read_cached(file: &Path, key: &str) -> Option<(SandboxStatus, Walls)> {
    let text = std::fs::read_to_string(file).ok()?;
    let mut lines = text.lines();
    if lines.next()? != key {
        return None;
    }
    let status = parse_probe(lines.next()?.trim())?;
    let mut walls = parse_walls(lines.next().unwrap_or(""));
    walls.status = status.code();
    Some((status, walls))
}

/// Keeps the probe's answer in `file` under `key` (best effort: written beside, then renamed).
fn write_cached(file: &Path, key: &str, (status, walls): &(SandboxStatus, Walls)) {
    let status_line = match status {
        SandboxStatus::Enforced { abi } => format!("enforced {abi}"),
        SandboxStatus::Partial { abi, detail } => format!("partial {abi} {detail}"),
        // Not kept: the helper could not run, which may be over next time.
        SandboxStatus::Unavailable { .. } | SandboxStatus::Off => return,
    };
    let b = |v: bool| u8::from(v);
    let w = walls;
    let text = format!(
        "{key}\n{status_line}\nwalls userns={} mountns={} pidns={} netns={} roroot={} proc={} home={} protect={} landlock={} seccomp={} subreaper={}\n",
        b(w.user_ns),
        b(w.mount_ns),
        b(w.pid_ns),
        b(w.net_ns),
        b(w.ro_root),
        b(w.fresh_proc),
        b(w.home_hidden),
        b(w.control_files),
        w.landlock_abi,
        b(w.seccomp),
        b(w.subreaper),
    );
    let Some(dir) = file.parent() else { return };
    if !dir.is_dir() {
        return;
    }
    // Private like everything under the home (0600), written beside, then renamed.
    let tmp = dir.join(format!(".{PROBE_FILE}.{}", std::process::id()));
    let written = {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut f| f.write_all(text.as_bytes()))
    };
    if written.is_err() || std::fs::rename(&tmp, file).is_err() {
        let _ = std::fs::remove_file(&tmp);
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
    fn a_kept_answer_is_used_only_under_its_own_key() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(PROBE_FILE);
        let w = parse_walls(
            "walls userns=1 mountns=1 pidns=1 netns=1 roroot=1 proc=1 home=1 protect=1 landlock=6 seccomp=1 subreaper=1",
        );
        let answer = (SandboxStatus::Enforced { abi: 6 }, w);
        write_cached(&file, "key one", &answer);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let (status, walls) = read_cached(&file, "key one").unwrap();
        assert_eq!(status, answer.0);
        assert_eq!(
            walls,
            Walls {
                status: "enforced",
                ..answer.1
            }
        );
        assert!(read_cached(&file, "key two").is_none());
        // An answer saying the helper could not run is never kept.
        write_cached(
            &file,
            "key three",
            &(
                SandboxStatus::Unavailable { reason: "x".into() },
                Walls::default(),
            ),
        );
        assert!(read_cached(&file, "key three").is_none());
        // The key changes with the helper binary.
        let bin = dir.path().join("helper");
        std::fs::write(&bin, "a").unwrap();
        let k1 = probe_key(&bin, false).unwrap();
        assert_ne!(k1, probe_key(&bin, true).unwrap());
        std::fs::write(&bin, "ab").unwrap();
        assert_ne!(k1, probe_key(&bin, false).unwrap());
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
