//! Confinement of the file tools' paths to the workspace root.
//!
//! A path is refused when, lexically or through any symlink on the way, it leaves the root.
//! Relative paths are taken from the root; absolute paths are accepted only when they lie
//! inside it. `..` is folded lexically first (so `a/../../x` is refused before touching the
//! disk), then the longest existing prefix is resolved with `canonicalize` (which follows
//! every symlink) and must still be inside the root. A dangling symlink cannot be checked
//! and is refused.
//!
//! There is a window between this check and the open: something else writing symlinks into
//! the workspace at that moment could win the race. Commands cannot (their process group is
//! gone before a file tool runs); see docs/SECURITY.md.

use std::path::{Component, Path, PathBuf};

/// A path checked to be inside the root.
#[derive(Debug, Clone)]
pub(crate) struct Confined {
    /// Absolute path to operate on (symlinks of the existing part resolved).
    pub abs: PathBuf,
    /// The path relative to the root, `/`-separated, for messages and metadata (`.` for the
    /// root itself).
    pub rel: String,
}

/// Checks `user` (as the model wrote it) against `root`.
pub(crate) fn confine(root: &Path, user: &str) -> Result<Confined, String> {
    if user.contains('\0') {
        return Err("path contains a NUL byte".into());
    }
    let root = root
        .canonicalize()
        .map_err(|e| format!("cannot resolve the workspace root {}: {e}", root.display()))?;
    let given = Path::new(user);
    let joined = if given.is_absolute() {
        given.to_path_buf()
    } else {
        root.join(given)
    };
    let lexical = fold(&joined);
    if !lexical.starts_with(&root) {
        return Err(outside(user, &root));
    }
    // Walk up to the longest prefix that exists on disk; what lies below it does not exist
    // yet, so it cannot be a symlink.
    let mut existing = lexical.clone();
    let mut tail: Vec<std::ffi::OsString> = Vec::new();
    loop {
        match std::fs::symlink_metadata(&existing) {
            Ok(_) => break,
            Err(_) => {
                let Some(name) = existing.file_name().map(|n| n.to_os_string()) else {
                    return Err(format!("cannot resolve {user}"));
                };
                tail.push(name);
                if !existing.pop() {
                    return Err(format!("cannot resolve {user}"));
                }
            }
        }
    }
    let resolved = existing.canonicalize().map_err(|e| {
        if existing
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
        {
            format!("refused: {user} is a symlink whose target does not exist (cannot check it stays inside the workspace)")
        } else {
            format!("cannot resolve {user}: {e}")
        }
    })?;
    if !resolved.starts_with(&root) {
        return Err(format!(
            "refused: {user} leads outside the workspace through a symlink (to {}); tools only work inside {}",
            resolved.display(),
            root.display()
        ));
    }
    let mut abs = resolved;
    for name in tail.iter().rev() {
        abs.push(name);
    }
    let rel = match abs.strip_prefix(&root) {
        Ok(r) if r.as_os_str().is_empty() => ".".to_string(),
        Ok(r) => r.to_string_lossy().into_owned(),
        Err(_) => return Err(outside(user, &root)),
    };
    Ok(Confined { abs, rel })
}

fn outside(user: &str, root: &Path) -> String {
    format!(
        "refused: {user} is outside the workspace; tools only work inside {} (use a path relative to it)",
        root.display()
    )
}

/// Folds `.` and `..` without touching the disk; `..` at the top stays at `/`.
fn fold(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Prefix(x) => out.push(x.as_os_str()),
            Component::RootDir => out.push("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folding_keeps_inner_dotdot_and_refuses_escapes() {
        let dir = std::env::temp_dir().join(format!("neocode-path-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("a")).unwrap();
        let root = dir.canonicalize().unwrap();
        assert_eq!(confine(&root, "a/../b").unwrap().rel, "b");
        assert_eq!(confine(&root, ".").unwrap().rel, ".");
        assert!(confine(&root, "a/../../x").is_err());
        assert!(confine(&root, "/etc/passwd").is_err());
        let inside = root.join("a/new.txt");
        assert_eq!(
            confine(&root, inside.to_str().unwrap()).unwrap().rel,
            "a/new.txt"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
