//! Folder trust (issue #22): a workspace of `/`, of the user's home folder or of a folder
//! above it makes all of that writable to commands, so its first command asks once. The
//! answer is remembered under neocode's home (`trusted-workspaces`, one path per line), never
//! in the workspace, where a command could write it.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The file under neocode's home that lists trusted workspaces.
pub(crate) const TRUST_FILE: &str = "trusted-workspaces";

/// The flag that trusts the current workspace.
pub(crate) const TRUST_FLAG: &str = "--trust-workspace";

/// What makes `root` a workspace that must be trusted first, if anything: it is `/`, the
/// user's home folder (`$HOME`) or a folder above it.
pub(crate) fn needs_trust(root: &Path) -> Option<String> {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    if root == Path::new("/") {
        return Some("the whole file system (/)".to_string());
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())?;
    let home = home.canonicalize().unwrap_or(home);
    if root == home {
        Some(format!("your home folder ({})", root.display()))
    } else if home.starts_with(&root) {
        Some(format!(
            "a folder above your home folder ({})",
            root.display()
        ))
    } else {
        None
    }
}

/// Whether the user trusted `root` (recorded under `neocode_home`).
pub(crate) fn is_trusted(neocode_home: &Path, root: &Path) -> bool {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let Ok(text) = std::fs::read_to_string(neocode_home.join(TRUST_FILE)) else {
        return false;
    };
    text.lines().any(|l| Path::new(l) == root)
}

/// Records that the user trusts `root`.
pub fn trust(neocode_home: &Path, root: &Path) -> std::io::Result<()> {
    if is_trusted(neocode_home, root) {
        return Ok(());
    }
    let root = root.canonicalize()?;
    let Some(line) = root.to_str().filter(|s| !s.contains('\n')) else {
        return Err(std::io::Error::other(
            "the workspace path is not valid UTF-8 or holds a line break",
        ));
    };
    std::fs::create_dir_all(neocode_home)?;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(neocode_home.join(TRUST_FILE))?;
    writeln!(f, "{line}")
}

/// Forgets that the user trusted `root`; whether it was listed. The file is rewritten whole
/// (a temporary file renamed over it).
pub(crate) fn revoke(neocode_home: &Path, root: &Path) -> std::io::Result<bool> {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let file = neocode_home.join(TRUST_FILE);
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let kept: Vec<&str> = text.lines().filter(|l| Path::new(l) != root).collect();
    if kept.len() == text.lines().count() {
        return Ok(false);
    }
    let tmp = neocode_home.join(format!(".{TRUST_FILE}.{}.tmp", std::process::id()));
    let mut body = kept.join("\n");
    if !body.is_empty() {
        body.push('\n');
    }
    std::fs::write(&tmp, body)?;
    std::fs::rename(&tmp, &file)?;
    Ok(true)
}

/// Why a command may not run yet in `root`, with what to do, or `None`.
pub(crate) fn refusal(neocode_home: Option<&Path>, root: &Path) -> Option<String> {
    let what = needs_trust(root)?;
    if neocode_home.is_some_and(|h| is_trusted(h, root)) {
        return None;
    }
    Some(format!(
        "run_command: not run: this workspace is {what}, so commands could change all of it. \
         If that is what you want, trust it once (remembered under neocode's home): start neocode \
         with {TRUST_FLAG} (e.g. `neocode {TRUST_FLAG} run ...`, or `neocode {TRUST_FLAG}` for the \
         TUI); otherwise run neocode in a project folder."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_is_remembered_per_workspace() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        assert!(!is_trusted(home.path(), ws.path()));
        trust(home.path(), ws.path()).unwrap();
        trust(home.path(), ws.path()).unwrap();
        assert!(is_trusted(home.path(), ws.path()));
        let text = std::fs::read_to_string(home.path().join(TRUST_FILE)).unwrap();
        assert_eq!(text.lines().count(), 1);
        let other = tempfile::tempdir().unwrap();
        assert!(!is_trusted(home.path(), other.path()));
        trust(home.path(), other.path()).unwrap();
        assert!(revoke(home.path(), ws.path()).unwrap());
        assert!(!revoke(home.path(), ws.path()).unwrap());
        assert!(!is_trusted(home.path(), ws.path()));
        assert!(is_trusted(home.path(), other.path()));
    }

    #[test]
    fn the_root_needs_trust_and_a_project_does_not() {
        assert!(needs_trust(Path::new("/")).is_some());
        let ws = tempfile::tempdir().unwrap();
        assert!(needs_trust(ws.path()).is_none());
        let home = tempfile::tempdir().unwrap();
        let r = refusal(Some(home.path()), Path::new("/")).unwrap();
        assert!(r.contains("--trust-workspace"), "{r}");
        trust(home.path(), Path::new("/")).unwrap();
        assert!(refusal(Some(home.path()), Path::new("/")).is_none());
    }
}
