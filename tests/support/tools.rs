//! Shared by tests/tools.rs and tests/sandbox.rs: a workspace with a sibling folder outside
//! it, a tool context, and the real neocode binary as the sandbox helper.

use std::path::{Path, PathBuf};
use std::sync::Once;
use std::time::Duration;

use neocode::runtime::tools::{self, SandboxSettings, ToolContext, ToolOutput};
use serde_json::{Value, json};

static INIT: Once = Once::new();

/// Secrets the parent holds; commands must not see them.
pub(crate) const SECRETS: &[(&str, &str)] = &[
    ("NEOCODE_API_KEY", "sk-neocode-secret"),
    ("OPENAI_API_KEY", "sk-openai-secret"),
    ("FOO_TOKEN", "foo-token-secret"),
];

/// Addresses of local servers the parent holds (a tmux server, the session bus, Docker):
/// commands must not see them either.
pub(crate) const SIDE_DOORS: &[(&str, &str)] = &[
    ("TMUX", "/tmp/tmux-1000/default,4242,0"),
    ("TMUX_PANE", "%7"),
    ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/1000/bus"),
    ("DOCKER_HOST", "unix:///var/run/docker.sock"),
    ("XDG_RUNTIME_DIR", "/run/user/1000"),
    ("WAYLAND_DISPLAY", "wayland-0"),
    ("DISPLAY", ":0"),
];

/// Once per test binary, before any test goes on: the helper is the built binary and the
/// secrets and side doors are in the environment.
pub(crate) fn init() {
    INIT.call_once(|| {
        tools::sandbox::set_helper(env!("CARGO_BIN_EXE_neocode"));
        for (k, v) in SECRETS.iter().chain(SIDE_DOORS) {
            // SAFETY: every test calls init() first and waits on the Once, so nothing reads
            // the environment while it is set.
            unsafe { std::env::set_var(k, v) };
        }
        // SAFETY: as above, inside the same Once.
        unsafe { std::env::set_var("NEOCODE_TEST_VISIBLE", "visible-value") };
    });
}

/// `tmp/ws` (the workspace root) and `tmp/outside` (a folder beside it).
pub(crate) struct Space {
    pub tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub outside: PathBuf,
}

impl Space {
    pub(crate) fn new() -> Space {
        init();
        let tmp = tempfile::tempdir().expect("temp dir");
        let base = tmp.path().canonicalize().unwrap();
        let root = base.join("ws");
        let outside = base.join("outside");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        Space { tmp, root, outside }
    }

    pub(crate) fn ctx(&self) -> ToolContext {
        let mut ctx = ToolContext::new(&self.root);
        ctx.command_timeout = Duration::from_secs(60);
        ctx
    }

    pub(crate) fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
        p
    }

    pub(crate) fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root.join(rel)).unwrap()
    }
}

/// The sandbox modes the attacks run in: the namespace box (user namespaces available) and
/// the fallback (user namespaces pretended unavailable: Landlock, seccomp, a subreaper).
pub(crate) fn modes() -> Vec<(&'static str, SandboxSettings)> {
    vec![
        ("namespaces", SandboxSettings::default()),
        (
            "fallback",
            SandboxSettings {
                simulate_no_userns: true,
                ..SandboxSettings::default()
            },
        ),
    ]
}

/// Whether `name` confines with namespaces here (else the fallback claims are checked).
pub(crate) fn namespaced(name: &str) -> bool {
    name == "namespaces" && tools::sandbox::walls(&SandboxSettings::default()).mount_ns
}

/// A tool context in `s` with `settings`.
pub(crate) fn ctx_in(s: &Space, settings: &SandboxSettings) -> ToolContext {
    let mut ctx = s.ctx();
    ctx.sandbox = settings.clone();
    ctx
}

/// Runs a tool with JSON arguments.
pub(crate) fn call(ctx: &ToolContext, name: &str, args: Value) -> ToolOutput {
    tools::run(name, &args.to_string(), ctx)
}

/// Runs a command.
pub(crate) fn sh(ctx: &ToolContext, command: &str) -> ToolOutput {
    call(ctx, "run_command", json!({ "command": command }))
}

/// Runs a command, the user cancelling it after `after` (from another thread).
pub(crate) fn sh_cancelled_after(ctx: &ToolContext, command: &str, after: Duration) -> ToolOutput {
    let flag = ctx.cancel.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(after);
        flag.cancel();
    });
    let out = sh(ctx, command);
    canceller.join().unwrap();
    out
}

/// Asserts the tool refused the call (an error result) saying `says`.
#[track_caller]
pub(crate) fn assert_refused(out: &ToolOutput, says: &str) {
    assert!(out.is_error && out.text.contains(says), "{}", out.text);
}

/// Waits up to `secs` for `f` to be true.
pub(crate) fn eventually(secs: u64, mut f: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + Duration::from_secs(secs);
    while std::time::Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    f()
}

pub(crate) fn exists(p: &Path) -> bool {
    p.symlink_metadata().is_ok()
}

/// Ok when none of `files` grows over 1.5 s (nothing writes them any more). Commands may run
/// in a PID namespace, where the pids they print mean nothing outside: tests watch what a
/// process does instead.
pub(crate) fn stopped_growing(files: &[PathBuf]) -> Result<(), String> {
    let size = |p: &PathBuf| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let before: Vec<u64> = files.iter().map(size).collect();
    std::thread::sleep(Duration::from_millis(1500));
    let after: Vec<u64> = files.iter().map(size).collect();
    if before == after {
        Ok(())
    } else {
        Err(format!("still written: {files:?} {before:?} -> {after:?}"))
    }
}

/// A shell loop appending the date to `log` every 0.2 s.
pub(crate) fn writer_loop(log: &str) -> String {
    format!("while :; do date >> {log}; sleep 0.2; done")
}

/// This test binary, set to run only the ignored test `name` in `module` (a stand-in for
/// neocode that the caller kills), with its output dropped.
pub(crate) fn stand_in(module: &str, name: &str) -> std::process::Command {
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        &crate::support::rerun::test_name(module, name),
        "--nocapture",
        "--ignored",
    ])
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null());
    cmd
}
