//! The shell `run_command` runs a command line with: bash, whose grammar the permission
//! rules parse, wherever it is installed; else `/bin/sh`, and then a line using syntax that
//! `sh` reads otherwise than bash (`&>`, `N&>`, `>&file`, `<<-`, …) is refused, so a rule
//! never judges one command while another runs (docs/RULES.md).

use std::cell::Cell;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::runtime::shell;

/// Where bash is looked for (never through `PATH`: a workspace may put a `bash` there).
const BASH: &[&str] = &["/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash"];

thread_local! {
    static FORCE_POSIX: Cell<bool> = const { Cell::new(false) };
}

/// Makes `run_command` on this thread behave as where only `/bin/sh` exists (tests prove
/// the refusal of bash-only syntax with it).
#[doc(hidden)]
pub fn force_posix(on: bool) {
    FORCE_POSIX.with(|f| f.set(on));
}

/// The shell commands run with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Interpreter {
    /// bash: the grammar the rules parse.
    Bash(PathBuf),
    /// A POSIX `sh` (dash, busybox ash): bash-only syntax is refused.
    Posix(PathBuf),
}

impl Interpreter {
    /// The one found on this machine (looked up once per process).
    pub(crate) fn detect() -> &'static Interpreter {
        static FOUND: OnceLock<Interpreter> = OnceLock::new();
        static POSIX: OnceLock<Interpreter> = OnceLock::new();
        if FORCE_POSIX.with(Cell::get) {
            return POSIX.get_or_init(|| Interpreter::find(&[]));
        }
        FOUND.get_or_init(|| Interpreter::find(BASH))
    }

    /// The first of `candidates` that is an executable file, as bash; else `/bin/sh`.
    pub(crate) fn find(candidates: &[&str]) -> Interpreter {
        use std::os::unix::fs::PermissionsExt;
        candidates
            .iter()
            .map(Path::new)
            .find(|p| {
                std::fs::metadata(p)
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
            .map_or_else(
                || Interpreter::Posix(PathBuf::from("/bin/sh")),
                |p| Interpreter::Bash(p.to_path_buf()),
            )
    }

    /// The program and its arguments that run `command`.
    pub(crate) fn argv(&self, command: &str) -> Vec<OsString> {
        let program = match self {
            Interpreter::Bash(p) | Interpreter::Posix(p) => p.as_os_str().to_os_string(),
        };
        vec![program, OsString::from("-c"), OsString::from(command)]
    }

    /// Why `command` is not run with this shell: `None` with bash, or when `sh` reads it as
    /// bash does.
    pub(crate) fn refusal(&self, command: &str) -> Option<String> {
        let Interpreter::Posix(sh) = self else {
            return None;
        };
        let found = shell::sh_differences(command);
        let first = found.first()?;
        Some(format!(
            "run_command: not run: this system has no bash, and {} reads this line otherwise than bash, against which permission rules are checked: {}. Rewrite the line for POSIX sh.",
            sh.display(),
            first.explain()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_bash_only_posix_lines_run() {
        let sh = Interpreter::find(&["/nonexistent/bash"]);
        assert_eq!(sh, Interpreter::Posix(PathBuf::from("/bin/sh")));
        let why = sh
            .refusal("cargo test &>/dev/null rm -rf x")
            .unwrap_or_default();
        assert!(why.contains("not run") && why.contains("`&>`"), "{why}");
        assert_eq!(sh.refusal("cargo test >/dev/null 2>&1"), None);
        let bash = Interpreter::Bash(PathBuf::from("/bin/bash"));
        assert_eq!(bash.refusal("cargo test &>/dev/null rm -rf x"), None);
        assert_eq!(bash.argv("ls")[1], OsString::from("-c"));
    }
}
