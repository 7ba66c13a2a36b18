//! What the file tools never touch inside the workspace (issue 34): the control files only
//! the user changes — `.neocode/` (neocode's hooks, rules, skills), `.git` (git's config,
//! hooks and attributes; a `.git` file that names a repository elsewhere), at any depth —
//! and neocode's home (its configuration with MCP tokens, every session database), which
//! they neither write nor read even when it lies inside the workspace.
//!
//! Each check is made twice, like the confinement of [`super::path`]: on the path (for the
//! message) and on the open folder's descriptor, walking `..` up to the root, so a folder
//! swapped for a link after the first check is caught too.

use std::os::fd::OwnedFd;
use std::path::{Component, Path};

use super::path::{Beneath, FileId, PathError, Refusal, file_id, refuse_under, stat_at};

/// The control folders at the workspace root, with whose they are.
const CONTROL: [(&str, &str); 2] = [(".git", "git"), (".neocode", "neocode")];

/// Whose control file `rel` (a path relative to the root) is: `git` or `neocode` when a
/// component is `.git` or `.neocode` (in any case: `.GIT` is `.git` on a file system that
/// ignores case).
pub(crate) fn owner(rel: &str) -> Option<&'static str> {
    Path::new(rel).components().find_map(|c| match c {
        Component::Normal(n) => CONTROL
            .iter()
            .find(|(name, _)| n.to_str().is_some_and(|n| n.eq_ignore_ascii_case(name)))
            .map(|(_, who)| *who),
        _ => None,
    })
}

/// Refuses writing `rel` (relative to the root) when it is a control file.
pub(crate) fn refuse_write(rel: &str) -> Result<(), PathError> {
    match owner(rel) {
        Some(who) => Err(Refusal::ControlFile {
            rel: rel.into(),
            who,
        }
        .into()),
        None => Ok(()),
    }
}

/// Refuses writing into the folder `dir` (opened beneath the root) when it is, or lies
/// inside, neocode's home or the root's `.git` or `.neocode` folder.
pub(crate) fn refuse_write_dir(
    b: &Beneath,
    dir: &OwnedFd,
    home: Option<&Path>,
    rel: &str,
) -> Result<(), PathError> {
    let mut protected: Vec<(FileId, Refusal)> = Vec::new();
    if let Some(h) = home
        && let Some(id) = file_id(h)
    {
        protected.push((
            id,
            Refusal::HomeWrite {
                home: h.to_path_buf(),
            },
        ));
    }
    for (name, who) in CONTROL {
        if let Some(st) = stat_at(b.root_fd(), name)
            && st.st_mode & libc::S_IFMT == libc::S_IFDIR
        {
            protected.push((
                (st.st_dev, st.st_ino),
                Refusal::ControlFile {
                    rel: rel.into(),
                    who,
                },
            ));
        }
    }
    refuse_under(b, dir, &protected)
}

/// neocode's home, when it lies inside the workspace `root` (only then do the reading tools
/// have to keep out of it).
pub(crate) fn home_inside<'a>(root: &Path, home: Option<&'a Path>) -> Option<&'a Path> {
    let home = home?;
    let canon = home.canonicalize().ok()?;
    let root = root.canonicalize().ok()?;
    (canon.starts_with(&root) && canon != root).then_some(home)
}

/// Refuses reading `abs` (resolved) when neocode's home lies inside the workspace and
/// `abs` inside the home.
pub(crate) fn refuse_read(root: &Path, abs: &Path, home: Option<&Path>) -> Result<(), PathError> {
    let Some(home) = home_inside(root, home) else {
        return Ok(());
    };
    let canon = home.canonicalize().unwrap_or_else(|_| home.to_path_buf());
    if abs.starts_with(&canon) {
        return Err(Refusal::HomeRead {
            home: home.to_path_buf(),
        }
        .into());
    }
    Ok(())
}

/// Refuses reading in the folder `dir` (opened beneath the root) when it is, or lies inside,
/// neocode's home.
pub(crate) fn refuse_read_dir(
    b: &Beneath,
    root: &Path,
    dir: &OwnedFd,
    home: Option<&Path>,
) -> Result<(), PathError> {
    let Some(home) = home_inside(root, home) else {
        return Ok(());
    };
    let Some(id) = file_id(home) else {
        return Ok(());
    };
    let why = Refusal::HomeRead {
        home: home.to_path_buf(),
    };
    refuse_under(b, dir, &[(id, why)])
}

/// [`refuse_read_dir`] for the folder of `rel` (itself when it is one), opened beneath the
/// root; nothing to check when the home is not inside the workspace or `rel` does not exist.
pub(crate) fn refuse_read_folder(
    b: &Beneath,
    root: &Path,
    rel: &str,
    home: Option<&Path>,
) -> Result<(), PathError> {
    if home_inside(root, home).is_none() {
        return Ok(());
    }
    let dir = b
        .dir(rel, false)
        .or_else(|_| b.dir(&super::path::split(rel).0, false));
    match dir {
        Ok(d) => refuse_read_dir(b, root, &d, home),
        Err(_) => Ok(()),
    }
}

/// The identity of neocode's home when the walking tools (`grep`, `list_dir`) must skip it.
pub(crate) fn skipped_home(root: &Path, home: Option<&Path>) -> Option<FileId> {
    home_inside(root, home).and_then(file_id)
}

/// Whether a walked entry is the folder `id` (neocode's home, from [`skipped_home`]).
pub(crate) fn is(entry: &ignore::DirEntry, id: Option<FileId>) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Some(id) = id else { return false };
    entry.file_type().is_some_and(|t| t.is_dir())
        && entry.metadata().is_ok_and(|m| (m.dev(), m.ino()) == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_files_are_named_at_any_depth() {
        assert_eq!(owner(".git"), Some("git"));
        assert_eq!(owner(".git/hooks/pre-commit"), Some("git"));
        assert_eq!(owner("vendor/lib/.git/config"), Some("git"));
        assert_eq!(owner(".neocode/hooks.json"), Some("neocode"));
        assert_eq!(owner(".GIT/config"), Some("git"));
        assert_eq!(owner(".gitignore"), None);
        assert_eq!(owner("src/git/.neocoderc"), None);
        assert!(
            refuse_write(".neocode/hooks.json")
                .unwrap_err()
                .to_string()
                .contains("is neocode's control file: only the user changes it")
        );
    }
}
