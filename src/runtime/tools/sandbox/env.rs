//! Environment hygiene: neocode's own process hidden from others (not dumpable, initial
//! environment wiped), and secret-looking variables and the addresses of local servers that
//! run commands (tmux, D-Bus, Docker, editors, terminals) scrubbed from what commands get.

use std::ffi::OsString;

/// Whether this process is not dumpable (see [`protect_process`]).
pub(super) fn not_dumpable() -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: plain prctl query.
        unsafe { libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// Defence in depth for neocode itself (called first thing by `neocode` but not by the
/// helper): not dumpable, so processes of the same user cannot read its memory or
/// `/proc/<pid>/environ` (root still can), and the initial environment block (what
/// `/proc/<pid>/environ` shows) wiped after the variables were copied to the heap.
///
/// # Safety
/// Call it before any other thread exists: it rewrites the process environment.
pub(crate) unsafe fn protect_process() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: plain prctl on this process.
        unsafe {
            libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        }
        wipe_initial_environment();
    }
}

/// Copies every variable to the heap (setenv replaces the pointers into the initial block),
/// then zeroes the initial block the kernel shows as `/proc/<pid>/environ`.
#[cfg(target_os = "linux")]
fn wipe_initial_environment() {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return;
    };
    // Fields after the command name; env_start and env_end are fields 50 and 51.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3.
    let (Some(start), Some(end)) = (
        fields.get(50 - 3).and_then(|v| v.parse::<usize>().ok()),
        fields.get(51 - 3).and_then(|v| v.parse::<usize>().ok()),
    ) else {
        return;
    };
    if end <= start || end - start > 16 << 20 {
        return;
    }
    let vars: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    for (k, v) in &vars {
        // SAFETY: the caller guarantees a single thread.
        unsafe { std::env::remove_var(k) };
        // SAFETY: as above.
        unsafe { std::env::set_var(k, v) };
    }
    // Only when no variable still points into the block.
    let inside = |p: *const libc::c_char| (p as usize) >= start && (p as usize) < end;
    // SAFETY: `environ` is the C environment array, NULL-terminated.
    unsafe {
        unsafe extern "C" {
            static environ: *const *const libc::c_char;
        }
        let mut p = environ;
        while !p.is_null() && !(*p).is_null() {
            if inside(*p) {
                return;
            }
            p = p.add(1);
        }
        std::ptr::write_bytes(start as *mut u8, 0, end - start);
    }
}

/// Whether an environment variable name looks like a secret (`*_KEY`, `*_TOKEN`,
/// `*_SECRET`, `*_PASSWORD`, ... in any segment), so commands do not see it.
pub(crate) fn is_secret_name(name: &str) -> bool {
    const WORDS: &[&str] = &[
        "KEY",
        "APIKEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIALS",
        "PRIVATE",
        // SSH_AUTH_SOCK, NPM_CONFIG__AUTH: the SSH agent signs with the user's keys.
        "AUTH",
    ];
    let upper = name.to_ascii_uppercase();
    upper.split('_').any(|seg| WORDS.contains(&seg))
}

/// Variables naming a socket (or the key to one) of a local server that can be asked to run
/// a program or act as the user: a terminal multiplexer, the desktop and session buses, a
/// container engine, an editor's or a terminal's remote control, the SSH and GPG agents.
const SIDE_DOORS: &[&str] = &[
    "TMUX",
    "TMUX_PANE",
    "TMUX_TMPDIR",
    "STY",
    "ZELLIJ",
    "ZELLIJ_SESSION_NAME",
    "XDG_RUNTIME_DIR",
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "SSH_ASKPASS",
    "GPG_AGENT_INFO",
    "WAYLAND_DISPLAY",
    "WAYLAND_SOCKET",
    "DISPLAY",
    "XAUTHORITY",
    "SESSION_MANAGER",
    "NOTIFY_SOCKET",
    "CONTAINER_HOST",
    "CONTAINERD_ADDRESS",
    "BUILDKIT_HOST",
    "PODMAN_HOST",
    "PULSE_SERVER",
    "PIPEWIRE_REMOTE",
    "SWAYSOCK",
    "I3SOCK",
    "NIRI_SOCKET",
    "HYPRLAND_INSTANCE_SIGNATURE",
    "KITTY_LISTEN_ON",
    "WEZTERM_UNIX_SOCKET",
    "ALACRITTY_SOCKET",
    "NVIM",
    "NVIM_LISTEN_ADDRESS",
    "EMACS_SOCKET_NAME",
];

/// Name prefixes of such variables.
const SIDE_DOOR_PREFIXES: &[&str] = &[
    "DBUS_",
    "DOCKER_",
    "KONSOLE_DBUS_",
    "TERMINATOR_DBUS",
    "VSCODE_IPC_",
    "VSCODE_GIT_IPC_",
    "GNOME_KEYRING_",
    "AT_SPI_",
];

/// Whether an environment variable names a local server's socket through which a command
/// could get something run outside the sandbox (`TMUX`, `DBUS_SESSION_BUS_ADDRESS`,
/// `DOCKER_HOST`, `XDG_RUNTIME_DIR`, `DISPLAY`, ...), so commands do not see it.
pub(crate) fn is_side_door(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SIDE_DOORS.contains(&upper.as_str()) || SIDE_DOOR_PREFIXES.iter().any(|p| upper.starts_with(p))
}

/// The environment a command gets: neocode's own minus secret-looking names and side doors
/// (unless allowed by name in `allow`).
pub(crate) fn scrubbed_env(allow: &[String]) -> Vec<(OsString, OsString)> {
    std::env::vars_os()
        .filter(|(k, _)| {
            let name = k.to_string_lossy();
            !(is_secret_name(&name) || is_side_door(&name))
                || allow.iter().any(|a| a == name.as_ref())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names() {
        for n in [
            "NEOCODE_API_KEY",
            "OPENAI_API_KEY",
            "FOO_TOKEN",
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "DB_PASSWORD",
            "api_key",
            "SSH_AUTH_SOCK",
        ] {
            assert!(is_secret_name(n), "{n}");
        }
        for n in [
            "PATH",
            "HOME",
            "KEYBOARD",
            "TOKENIZERS_PARALLELISM_X",
            "LANG",
        ] {
            assert!(!is_secret_name(n), "{n}");
        }
    }

    #[test]
    fn side_doors() {
        for n in [
            "TMUX",
            "TMUX_PANE",
            "DBUS_SESSION_BUS_ADDRESS",
            "DBUS_SYSTEM_BUS_ADDRESS",
            "DOCKER_HOST",
            "XDG_RUNTIME_DIR",
            "SSH_AUTH_SOCK",
            "WAYLAND_DISPLAY",
            "DISPLAY",
            "KITTY_LISTEN_ON",
            "VSCODE_IPC_HOOK_CLI",
            "NVIM",
        ] {
            assert!(is_side_door(n), "{n}");
        }
        for n in [
            "PATH",
            "HOME",
            "TERM",
            "TMUXINATOR_CONFIG",
            "DISPLAY_NAME",
            "LANG",
        ] {
            assert!(!is_side_door(n), "{n}");
        }
    }
}
