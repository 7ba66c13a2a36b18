//! Installing a plugin from a folder or a git repository into `<home>/plugins/<name>/`, and
//! removing it. A plugin is copied without `.git` and without symbolic links (a link could
//! show the model a file outside the plugin); a clone runs no hook, no checkout filter and
//! no configured program of the user's or the system's git config.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::installed::plugins_dir;
use super::manifest::{MANIFEST, valid_name};
use super::manifest::{Plugin, PluginError};
use super::state::{Entry, State};

/// Files a plugin may hold.
const MAX_FILES: usize = 20_000;

/// Installs the plugin at `source` (a folder, or a git URL), disabled; an error leaves
/// nothing installed.
pub(crate) fn add(home: &Path, source: &str) -> Result<Plugin, PluginError> {
    let dir = plugins_dir(home);
    let io = |e: std::io::Error| {
        PluginError::Install(format!(
            "{}: {}",
            dir.display(),
            crate::session::io_error(&e)
        ))
    };
    std::fs::create_dir_all(&dir).map_err(io)?;
    let staging = dir.join(format!(".incoming-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let result = stage_and_move(home, source, &staging);
    let _ = std::fs::remove_dir_all(&staging);
    result
}

fn stage_and_move(home: &Path, source: &str, staging: &Path) -> Result<Plugin, PluginError> {
    let copy = staging.join("plugin");
    if is_git_url(source) {
        let clone = staging.join("clone");
        git_clone(source, &clone)?;
        // A bad manifest is named as the user knows it: below the URL.
        Plugin::read(&clone).map_err(|e| match e {
            PluginError::File { why, .. } => {
                PluginError::Install(format!("{source}: {MANIFEST}: {why}"))
            }
            PluginError::NotAPlugin { .. } => PluginError::Install(format!(
                "{source}: no {MANIFEST} (not a Claude Code plugin)"
            )),
            e => e,
        })?;
        copy_tree(&clone, &copy, &mut 0)?;
    } else {
        let from = Path::new(source);
        if !from.is_dir() {
            return Err(PluginError::Install(format!(
                "{source}: not a folder nor a git URL"
            )));
        }
        Plugin::read(from)?;
        copy_tree(from, &copy, &mut 0)?;
    }
    let plugin = Plugin::read(&copy)?;
    let dest = plugins_dir(home).join(&plugin.name);
    let mut state = State::load(home)?;
    if dest.exists() || state.plugins.contains_key(&plugin.name) {
        return Err(PluginError::Install(format!(
            "a plugin named {} is already installed (`neocode plugin remove {}` first)",
            plugin.name, plugin.name
        )));
    }
    std::fs::rename(&copy, &dest).map_err(|e| {
        PluginError::Install(format!(
            "{}: {}",
            dest.display(),
            crate::session::io_error(&e)
        ))
    })?;
    state.plugins.insert(
        plugin.name,
        Entry {
            enabled: false,
            source: source.to_string(),
        },
    );
    if let Err(e) = state.save(home) {
        let _ = std::fs::remove_dir_all(&dest);
        return Err(e);
    }
    Plugin::read(&dest)
}

/// Removes the installed plugin `name` (its folder and its record).
pub(crate) fn remove(home: &Path, name: &str) -> Result<(), PluginError> {
    let mut state = State::load(home)?;
    if !valid_name(name) || state.plugins.remove(name).is_none() {
        return Err(PluginError::Install(format!(
            "no plugin named {name} is installed (`neocode plugin list`)"
        )));
    }
    state.save(home)?;
    let dir = plugins_dir(home).join(name);
    match std::fs::remove_dir_all(&dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(PluginError::Install(format!(
            "{}: {}",
            dir.display(),
            crate::session::io_error(&e)
        ))),
        _ => Ok(()),
    }
}

/// A URL git clones (`https://`, `ssh://`, `git@host:…`, `file://`, or a `….git` that is
/// not a folder here).
pub(crate) fn is_git_url(source: &str) -> bool {
    ["https://", "http://", "ssh://", "git://", "file://", "git@"]
        .iter()
        .any(|p| source.starts_with(p))
        || (source.ends_with(".git") && !Path::new(source).is_dir())
}

/// `git clone --depth 1` of `url` into `dest`: no system or global config (so no filter,
/// credential program or URL rewrite of theirs), hooks off, no submodules, links checked out
/// as plain files, the `ext::` transport refused, never a prompt.
fn git_clone(url: &str, dest: &Path) -> Result<(), PluginError> {
    let git = crate::runtime::tools::git_snapshot::git_program()
        .ok_or_else(|| PluginError::Install("git is not installed (not on PATH)".into()))?;
    let mut c = Command::new(git);
    for k in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_CONFIG",
        "GIT_EXEC_PATH",
    ] {
        c.env_remove(k);
    }
    crate::runtime::policy::hooks::strip_keys(&mut c);
    c.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_NO_REPLACE_OBJECTS", "1")
        .env("LC_ALL", "C");
    for setting in [
        "core.hooksPath=/dev/null",
        "core.fsmonitor=false",
        "core.symlinks=false",
        "core.askPass=false",
        "protocol.ext.allow=never",
        "submodule.recurse=false",
    ] {
        c.arg("-c").arg(setting);
    }
    c.args([
        "clone",
        "--depth",
        "1",
        "--no-recurse-submodules",
        "--quiet",
        "--",
    ])
    .arg(url)
    .arg(dest)
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    let out = c.output().map_err(|e| {
        PluginError::Install(format!("cannot run git: {}", crate::session::io_error(&e)))
    })?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let mut lines = err.lines().map(str::trim).filter(|l| !l.is_empty());
    let why = err
        .lines()
        .find_map(|l| l.trim().strip_prefix("fatal: "))
        .or_else(|| lines.next())
        .unwrap_or("failed");
    Err(PluginError::Install(format!(
        "git clone {url}: {}",
        why.trim()
    )))
}

/// Copies the folder `from` to `to`: files (with their permissions) and folders, not `.git`
/// nor symbolic links.
fn copy_tree(from: &Path, to: &Path, count: &mut usize) -> Result<(), PluginError> {
    let io = |p: &Path, e: std::io::Error| {
        PluginError::Install(format!("{}: {}", p.display(), crate::session::io_error(&e)))
    };
    std::fs::create_dir_all(to).map_err(|e| io(to, e))?;
    let entries = std::fs::read_dir(from).map_err(|e| io(from, e))?;
    let mut paths: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        let Some(name) = path.file_name() else {
            continue;
        };
        if name == ".git" {
            continue;
        }
        let meta = std::fs::symlink_metadata(&path).map_err(|e| io(&path, e))?;
        *count += 1;
        if *count > MAX_FILES {
            return Err(PluginError::Install(format!(
                "{}: more than {MAX_FILES} files; not a plugin to copy",
                from.display()
            )));
        }
        let target = to.join(name);
        if meta.is_dir() {
            copy_tree(&path, &target, count)?;
        } else if meta.is_file() {
            std::fs::copy(&path, &target).map_err(|e| io(&path, e))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_folders_are_told_apart() {
        assert!(is_git_url("https://example.com/x.git"));
        assert!(is_git_url("git@host:me/kit.git"));
        assert!(is_git_url("file:///tmp/kit"));
        assert!(!is_git_url("./kit"));
        assert!(!is_git_url("/tmp/kit"));
    }

    #[test]
    fn links_and_git_are_not_copied() {
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("from");
        std::fs::create_dir_all(from.join(".git")).unwrap();
        std::fs::create_dir_all(from.join("commands")).unwrap();
        std::fs::write(from.join("commands/a.md"), "A").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", from.join("commands/b.md")).unwrap();
        let to = dir.path().join("to");
        copy_tree(&from, &to, &mut 0).unwrap();
        assert!(to.join("commands/a.md").is_file());
        assert!(!to.join("commands/b.md").exists());
        assert!(!to.join(".git").exists());
    }
}
