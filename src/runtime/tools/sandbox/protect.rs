//! The workspace's control files inside the namespace box (issue 34): what neocode and git
//! read as configuration is read-only to a command although the workspace is writable.
//!
//! - `<root>/.neocode` (when it is a folder or a file) is bound read-only onto itself: it can
//!   be neither written, removed, renamed nor replaced (a mount point cannot be renamed or
//!   removed). When it does not exist a command may create it: workspace trust then sees a
//!   declared file that was not trusted and asks again, so nothing the command put there
//!   takes effect without the user.
//! - `<root>/.git`, a folder, becomes a mount point of itself (still writable: objects, refs,
//!   the index, `HEAD` and logs are what `git add`/`commit` write), so `mv .git .git2 &&
//!   mkdir .git` fails at the first step. Its `config`, `config.worktree`, `commondir`,
//!   `hooks/` and `info/` are bound read-only; so are those of the repositories of its
//!   submodules (`.git/modules/…`) and the `commondir`/`config.worktree` of its linked
//!   worktrees (`.git/worktrees/*`). A `.git` *file* (`gitdir: …`) is bound read-only, and
//!   the folder it names gets the same protection when it lies inside the workspace.
//! - A control path that does not exist, or is a symlink, cannot be a mount point. It is put
//!   back after the command instead, by the namespace's PID 1 once every process of the box
//!   is dead: what the command created there is removed, a symlink it replaced is made
//!   again, and the result says so. (A `.neocode` that does not exist is left to workspace
//!   trust, since another neocode may create it meanwhile.)

use std::ffi::CString;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::fault::BoxError;
use super::mount_api::{
    AT_RECURSIVE, OPEN_TREE_CLOEXEC, OPEN_TREE_CLONE, move_onto, open_tree, set_read_only,
};

/// Repositories (the workspace's, its submodules') protected at most.
const MAX_REPOS: usize = 64;

/// What one command's box protects in its workspace.
#[derive(Debug, Default)]
pub(super) struct Protected {
    /// Folders made mount points of themselves (writable).
    pinned: Vec<PathBuf>,
    /// Paths bound read-only onto themselves.
    read_only: Vec<PathBuf>,
    /// Paths put back after the command: absent before (`None`) or a symlink to the target.
    restore: Vec<(PathBuf, Option<PathBuf>)>,
    /// `<root>/.git` when it did not exist before the command.
    no_repository: Option<PathBuf>,
}

/// A path's kind before the command, without following a symlink.
enum Kind {
    Missing,
    Link(PathBuf),
    Dir,
    File,
    Other,
}

fn kind(p: &Path) -> Kind {
    match std::fs::symlink_metadata(p) {
        Err(_) => Kind::Missing,
        Ok(m) if m.file_type().is_symlink() => {
            std::fs::read_link(p).map_or(Kind::Other, Kind::Link)
        }
        Ok(m) if m.is_dir() => Kind::Dir,
        Ok(m) if m.is_file() => Kind::File,
        Ok(_) => Kind::Other,
    }
}

impl Protected {
    /// The protection of the workspace `root` as it is now (before the command).
    pub(super) fn find(root: &Path) -> Protected {
        let mut p = Protected::default();
        let neocode = root.join(".neocode");
        if matches!(kind(&neocode), Kind::Dir | Kind::File) {
            p.read_only.push(neocode);
        }
        let git = root.join(".git");
        let mut repos = 0;
        match kind(&git) {
            Kind::Dir => {
                p.pinned.push(git.clone());
                p.repository(&git, &mut repos);
            }
            Kind::File => {
                p.read_only.push(git.clone());
                if let Some(dir) = gitdir_inside(root, &git) {
                    p.pinned.push(dir.clone());
                    p.repository(&dir, &mut repos);
                }
            }
            Kind::Link(target) => {
                if let Ok(dir) = git.canonicalize()
                    && dir.starts_with(root)
                    && dir.is_dir()
                {
                    p.pinned.push(dir.clone());
                    p.repository(&dir, &mut repos);
                }
                p.restore.push((git, Some(target)));
            }
            Kind::Missing => p.no_repository = Some(git),
            Kind::Other => {}
        }
        p
    }

    /// The control files of the repository folder `dir`, its submodules' repositories and
    /// its linked worktrees.
    fn repository(&mut self, dir: &Path, repos: &mut usize) {
        *repos += 1;
        for name in ["config", "config.worktree", "commondir", "hooks", "info"] {
            self.control(&dir.join(name));
        }
        if let Ok(worktrees) = std::fs::read_dir(dir.join("worktrees")) {
            for w in worktrees.flatten().take(MAX_REPOS) {
                if w.file_type().is_ok_and(|t| t.is_dir()) {
                    for name in ["commondir", "config.worktree"] {
                        self.control(&w.path().join(name));
                    }
                }
            }
        }
        self.modules(&dir.join("modules"), repos, 0);
    }

    /// Submodule repositories below `modules` (a folder holding `HEAD` is one; names may
    /// have slashes, so folders without one are looked into).
    fn modules(&mut self, modules: &Path, repos: &mut usize, depth: usize) {
        let Ok(entries) = std::fs::read_dir(modules) else {
            return;
        };
        for e in entries.flatten() {
            if *repos >= MAX_REPOS || depth > 8 {
                return;
            }
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let d = e.path();
            if d.join("HEAD").is_file() {
                self.repository(&d, repos);
            } else {
                self.modules(&d, repos, depth + 1);
            }
        }
    }

    fn control(&mut self, path: &Path) {
        match kind(path) {
            Kind::Dir | Kind::File => self.read_only.push(path.to_path_buf()),
            Kind::Missing => self.restore.push((path.to_path_buf(), None)),
            Kind::Link(target) => self.restore.push((path.to_path_buf(), Some(target))),
            Kind::Other => {}
        }
    }

    /// Whether anything must be looked at after the command.
    pub(super) fn needs_restore(&self) -> bool {
        !self.restore.is_empty() || self.no_repository.is_some()
    }

    /// Mounts the protection (in the box's mount namespace, before the command starts).
    pub(super) fn mount(&self) -> Result<(), BoxError> {
        for p in &self.pinned {
            bind_onto_itself(p, false)?;
        }
        for p in &self.read_only {
            bind_onto_itself(p, true)?;
        }
        Ok(())
    }

    /// Puts back what the command changed among the paths that could not be mounted (every
    /// process of the box is dead by now); one note per path, for the tool result.
    pub(super) fn restore(&self, root: &Path) -> Vec<String> {
        let rel = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
        let mut notes = Vec::new();
        for (path, before) in &self.restore {
            let now = kind(path);
            match (before, now) {
                (None, Kind::Missing) => {}
                (Some(t), Kind::Link(now)) if *t == now => {}
                (None, _) => {
                    remove(path);
                    notes.push(format!(
                        "the command created {}, which only the user may change: removed",
                        rel(path)
                    ));
                }
                (Some(target), _) => {
                    remove(path);
                    let _ = std::os::unix::fs::symlink(target, path);
                    notes.push(format!(
                        "the command replaced {}, which only the user may change: put back",
                        rel(path)
                    ));
                }
            }
        }
        if let Some(git) = &self.no_repository
            && !matches!(kind(git), Kind::Missing)
        {
            notes.push(
                "the command created a git repository (.git): its config and hooks are the command's, so review them before you run git there yourself".into(),
            );
        }
        notes
    }
}

/// The folder a `.git` file names (`gitdir: <path>`), when it lies inside the workspace.
fn gitdir_inside(root: &Path, file: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(file).ok()?;
    let named = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    let dir = root.join(named).canonicalize().ok()?;
    (dir.starts_with(root) && dir.is_dir()).then_some(dir)
}

/// Removes `path` whatever it is, without following a symlink.
fn remove(path: &Path) {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => {
            let _ = std::fs::remove_dir_all(path);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(path);
        }
        Err(_) => {}
    }
}

/// Binds `path` (a folder or a file, not a symlink) onto itself, read-only when asked, so it
/// becomes a mount point.
fn bind_onto_itself(path: &Path, read_only: bool) -> Result<(), BoxError> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| BoxError::NulPath(path.to_path_buf()))?;
    let tree = open_tree(
        &c,
        OPEN_TREE_CLONE
            | OPEN_TREE_CLOEXEC
            | AT_RECURSIVE
            | libc::AT_SYMLINK_NOFOLLOW as libc::c_uint,
    )
    .map_err(|e| BoxError::os(format!("open_tree {}", path.display()), e))?;
    if read_only {
        set_read_only(
            tree.as_raw_fd(),
            c"",
            libc::AT_EMPTY_PATH as libc::c_uint | AT_RECURSIVE,
        )
        .map_err(|e| BoxError::os(format!("mount_setattr (read-only) {}", path.display()), e))?;
    }
    // A final symlink at `path` is not followed.
    move_onto(&tree, &c)
        .map_err(|e| BoxError::os(format!("move_mount onto {}", path.display()), e))?;
    Ok(())
}
