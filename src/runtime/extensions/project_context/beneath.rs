//! Reading a workspace's instruction and skill files as the file tools read files: beneath
//! the root (no symlink out, a link swapped in on the way is refused by the kernel) and not
//! when a `read_file(...)` deny rule covers them. A committed `AGENTS.md ->
//! ~/.ssh/id_ed25519` is skipped, and the views say so, instead of entering every request.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use crate::runtime::policy::permissions::Rules;
use crate::runtime::tools::path::{anchor, confine, fstat};

/// Why a workspace file was not read (one line for the views and the turn's warning).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Skip {
    /// It is, or goes through, a symlink out of the workspace (or one whose target is gone).
    #[error("it links outside the workspace{0}; files there are never read into the context")]
    Outside(String),
    /// A `read_file` deny rule covers it.
    #[error("the rule `{0}` denies reading it")]
    Denied(String),
    /// It could not be read.
    #[error("cannot read it: {0}")]
    Unreadable(String),
}

/// The read denials of a workspace (both rule files; deny rules only ever make neocode more
/// careful). A malformed file gives none here: the turn fails on it at its start anyway.
pub(crate) fn read_rules(home: &Path, root: &Path) -> Option<Rules> {
    Rules::load(home, root).ok()
}

/// A workspace file read: its first bytes and its size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Contents {
    /// At most the `cap` asked for.
    pub bytes: Vec<u8>,
    /// The whole file's size.
    pub size: u64,
}

/// Reads at most `cap` bytes of `path` (a file under `root`) beneath the root. `Ok(None)`:
/// there is no regular file there.
pub(crate) fn read(
    root: &Path,
    path: &Path,
    cap: u64,
    rules: Option<&Rules>,
) -> Result<Option<Contents>, Skip> {
    let Ok(rel) = path.strip_prefix(root) else {
        return Err(Skip::Outside(String::new()));
    };
    let rel = rel.to_string_lossy();
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(None);
    }
    let p = confine(root, &rel).map_err(|_| {
        let to = std::fs::canonicalize(path)
            .map(|t| format!(" (to {})", t.display()))
            .unwrap_or_else(|_| " (to a target that does not exist)".to_string());
        Skip::Outside(to)
    })?;
    if let Some(r) = rules {
        let lexical = crate::runtime::policy::permissions::pattern::absolute(root, &rel, None);
        let resolved: PathBuf = root.join(&p.rel);
        if let Some(rule) = r.read_denied(&lexical).or_else(|| r.read_denied(&resolved)) {
            return Err(Skip::Denied(rule.text));
        }
    }
    let b = anchor(root).map_err(|e| Skip::Unreadable(e.to_string()))?;
    let file = match b.open_rel(&p.rel, libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK) {
        Ok(fd) => std::fs::File::from(fd),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EXDEV | libc::ELOOP)) => {
            return Err(Skip::Outside(String::new()));
        }
        Err(e) => return Err(Skip::Unreadable(crate::session::io_error(&e))),
    };
    let st = fstat(file.as_raw_fd()).map_err(|e| Skip::Unreadable(crate::session::io_error(&e)))?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    file.take(cap)
        .read_to_end(&mut bytes)
        .map_err(|e| Skip::Unreadable(crate::session::io_error(&e)))?;
    Ok(Some(Contents {
        bytes,
        size: st.st_size as u64,
    }))
}
