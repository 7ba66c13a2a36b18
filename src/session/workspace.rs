//! Where a workspace's data lives: home, root, hash, database and asset folders.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::error::{Result, StoreError};

/// Why [`home_dir`] found no neocode home.
#[derive(Debug, thiserror::Error)]
pub enum HomeError {
    /// `$NEOCODE_HOME` is relative and the current directory cannot be read.
    #[error("cannot read the current directory: {0}")]
    CurrentDir(std::io::Error),
    /// Neither variable is set.
    #[error(
        "neither NEOCODE_HOME nor HOME is set; set NEOCODE_HOME to a folder for neocode's data"
    )]
    Unset,
}

/// Why [`workspace_root`] cannot resolve a directory to a workspace.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// The directory cannot be opened (missing, no permission, a dangling link).
    #[error("cannot open workspace {}: {source}", path.display())]
    Open {
        /// The directory given.
        path: PathBuf,
        /// What the file system said.
        source: std::io::Error,
    },
    /// The path names something other than a directory.
    #[error("workspace {} is not a directory", .0.display())]
    NotADirectory(PathBuf),
}

/// The neocode home: `$NEOCODE_HOME`, else `~/.neocode`.
pub fn home_dir() -> std::result::Result<PathBuf, HomeError> {
    if let Some(h) = std::env::var_os("NEOCODE_HOME").filter(|h| !h.is_empty()) {
        let p = PathBuf::from(h);
        return Ok(if p.is_absolute() {
            p
        } else {
            std::env::current_dir()
                .map_err(HomeError::CurrentDir)?
                .join(p)
        });
    }
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(h) => Ok(PathBuf::from(h).join(".neocode")),
        None => Err(HomeError::Unset),
    }
}

/// The workspace root for `dir`: absolute, symlinks resolved, and the top level of the git
/// work tree when inside one (found by walking up to a `.git` entry; no git binary needed).
pub fn workspace_root(dir: &Path) -> std::result::Result<PathBuf, WorkspaceError> {
    let canon = fs::canonicalize(dir).map_err(|source| WorkspaceError::Open {
        path: dir.to_path_buf(),
        source,
    })?;
    if !canon.is_dir() {
        return Err(WorkspaceError::NotADirectory(canon));
    }
    let mut cur = Some(canon.as_path());
    while let Some(d) = cur {
        if d.join(".git").exists() {
            return Ok(d.to_path_buf());
        }
        cur = d.parent();
    }
    Ok(canon)
}

/// First 16 hex characters of SHA-256 over the root path's bytes.
pub fn workspace_hash(root: &Path) -> String {
    let digest = Sha256::digest(root.as_os_str().as_encoded_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// The files of one workspace under a home.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspacePaths {
    /// The workspace root (canonical).
    pub root: PathBuf,
    /// `<home>/projects/<hash>`.
    pub dir: PathBuf,
}

impl WorkspacePaths {
    /// Paths for `root` (already canonical) under `home`.
    pub(crate) fn new(home: &Path, root: &Path) -> WorkspacePaths {
        WorkspacePaths {
            root: root.to_path_buf(),
            dir: home.join("projects").join(workspace_hash(root)),
        }
    }

    /// Resolves `dir` to its workspace root and returns that workspace's paths under `home`.
    pub fn resolve(home: &Path, dir: &Path) -> std::result::Result<WorkspacePaths, WorkspaceError> {
        Ok(WorkspacePaths::new(home, &workspace_root(dir)?))
    }

    /// `session.db`.
    pub fn db(&self) -> PathBuf {
        self.dir.join("session.db")
    }

    /// `assets/`.
    pub fn assets(&self) -> PathBuf {
        self.dir.join("assets")
    }

    /// `files/`: the before-images of the files sessions changed (content-addressed blobs).
    pub fn files(&self) -> PathBuf {
        self.dir.join("files")
    }

    /// Creates the folders with mode 0700.
    pub fn create_dirs(&self) -> Result<()> {
        for d in [
            self.dir.parent().unwrap_or(&self.dir),
            &self.dir,
            &self.assets(),
        ] {
            create_private_dir(d)?;
        }
        Ok(())
    }
}

/// Creates `dir` (and missing parents) with mode 0700; an existing folder keeps its mode
/// unless it is the neocode-owned leaf, which is tightened.
pub(crate) fn create_private_dir(dir: &Path) -> Result<()> {
    private_dir(dir).map_err(|e| StoreError::io(dir, e))
}

/// `create_private_dir` with a plain I/O error: every folder it creates is 0700 whatever
/// the umask (the mode is set explicitly, not left to `mkdir`), and `dir` itself is tightened
/// to 0700 when it is more open. Existing parents are left as they are.
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    let mut missing = Vec::new();
    let mut cur = Some(dir);
    while let Some(d) = cur {
        if d.as_os_str().is_empty() || fs::symlink_metadata(d).is_ok() {
            break;
        }
        missing.push(d.to_path_buf());
        cur = d.parent();
    }
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    for d in missing.iter().rev() {
        fs::set_permissions(d, fs::Permissions::from_mode(0o700))?;
    }
    let meta = fs::metadata(dir)?;
    if meta.permissions().mode() & 0o777 != 0o700 {
        // Ignore failure: a folder we can use but not chmod (not ours) is still usable.
        let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
    }
    Ok(())
}

/// Opens `path` for writing, creating it with mode 0600 whatever the umask; `create_new`
/// refuses an existing file. A file that exists already is made 0600 too (it is neocode's).
pub fn private_file(path: &Path, create_new: bool) -> std::io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut o = fs::OpenOptions::new();
    o.read(true).write(true).mode(0o600);
    if create_new {
        o.create_new(true);
    } else {
        o.create(true).truncate(false);
    }
    let f = o.open(path)?;
    f.set_permissions(fs::Permissions::from_mode(0o600))?;
    Ok(f)
}

/// Writes `data` to `dst` through the temp file `tmp` (mode 0600 whatever the umask, in
/// `dst`'s folder `dir`) renamed over it; when `durable`, the file and then `dir` are synced
/// first. A temp file left by a failure is removed.
pub(crate) fn replace_private_file(
    dir: &Path,
    tmp: &Path,
    dst: &Path,
    data: &[u8],
    durable: bool,
) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let write = || -> std::io::Result<()> {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(tmp)?;
        f.set_permissions(fs::Permissions::from_mode(0o600))?;
        f.write_all(data)?;
        if durable {
            f.sync_all()?;
        }
        fs::rename(tmp, dst)?;
        if durable {
            fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    };
    write().inspect_err(|_| {
        let _ = fs::remove_file(tmp);
    })
}

/// Every workspace folder under `home` (those holding a `session.db`).
pub(crate) fn all_workspace_dbs(home: &Path) -> Vec<PathBuf> {
    let Ok(rd) = fs::read_dir(home.join("projects")) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .filter_map(io::Result::ok)
        .map(|e| e.path().join("session.db"))
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_16_hex_of_sha256() {
        let h = workspace_hash(Path::new("/tmp/x"));
        assert_eq!(h.len(), 16);
        // sha256("/tmp/x") starts with these bytes (computed independently with sha256sum).
        let full = Sha256::digest(b"/tmp/x");
        let expect: String = full[..8].iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(h, expect);
    }

    #[test]
    fn subdirectory_and_symlink_share_the_git_root() {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("repo");
        fs::create_dir_all(repo.join(".git")).unwrap();
        fs::create_dir_all(repo.join("src/deep")).unwrap();
        std::os::unix::fs::symlink(&repo, t.path().join("link")).unwrap();
        let a = workspace_root(&repo.join("src/deep")).unwrap();
        let b = workspace_root(&t.path().join("link")).unwrap();
        assert_eq!(a, b);
        assert_eq!(a, fs::canonicalize(&repo).unwrap());
    }

    #[test]
    fn a_missing_or_non_directory_workspace_reads_as_one_line() {
        let t = tempfile::tempdir().unwrap();
        let gone = t.path().join("gone");
        let e = workspace_root(&gone).unwrap_err();
        assert!(matches!(e, WorkspaceError::Open { .. }));
        assert_eq!(
            e.to_string(),
            format!(
                "cannot open workspace {}: No such file or directory (os error 2)",
                gone.display()
            )
        );
        let file = t.path().join("f");
        fs::write(&file, "x").unwrap();
        let e = WorkspacePaths::resolve(t.path(), &file).unwrap_err();
        let canon = fs::canonicalize(&file).unwrap();
        assert_eq!(
            e.to_string(),
            format!("workspace {} is not a directory", canon.display())
        );
        assert_eq!(
            HomeError::Unset.to_string(),
            "neither NEOCODE_HOME nor HOME is set; set NEOCODE_HOME to a folder for neocode's data"
        );
    }
}
