//! What a workspace declares, as files: nothing is walked when none of the declaring paths
//! exists (a `stat` each), else every file beneath them is read once and hashed (SHA-256).
//! The bytes of the two files neocode loads as settings (`hooks.json`, `permissions.toml`)
//! are kept, so what is used is exactly what was hashed.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::error::TrustError;

/// The paths under a workspace root whose files the workspace declares: neocode's own
/// folder, Claude Code's commands, agents and skills, and the MCP server list (the last two
/// for later features: declared, hashed and shown, not used yet).
pub(crate) const DECLARING: [&str; 5] = [
    ".neocode",
    ".claude/commands",
    ".claude/agents",
    ".claude/skills",
    ".mcp.json",
];

/// Paths under a declaring path that are state neocode itself writes, never read as settings:
/// the reference bridge client's session id and conversation (docs/bridge.md), its worktrees.
pub(crate) const NOT_DECLARED: [&str; 3] = [
    ".neocode/provider-session.id",
    ".neocode/provider-history.json",
    // The git worktrees neocode makes (sub-agents, `--worktree`, plan steps): checkouts of
    // the repository, whose settings are never read from there.
    ".neocode/worktrees",
];

/// `.neocode/hooks.json`, as the record names it.
pub(crate) const HOOKS_FILE: &str = ".neocode/hooks.json";
/// `.neocode/permissions.toml`, as the record names it.
pub(crate) const RULES_FILE: &str = ".neocode/permissions.toml";

/// At most this many files are reviewed; a workspace declaring more cannot be trusted.
pub(crate) const MAX_FILES: usize = 2000;
/// At most this many bytes are hashed in all; a workspace declaring more cannot be trusted.
pub(crate) const MAX_BYTES: u64 = 32 * 1024 * 1024;
/// Folders deeper than this beneath a declaring path are not entered (a symlink loop).
const MAX_DEPTH: usize = 16;

/// One declared file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredFile {
    /// Relative to the root, `/`-separated (`.neocode/hooks.json`).
    pub path: String,
    /// SHA-256 of its bytes, lower-case hex.
    pub sha256: String,
    /// Its size in bytes.
    pub size: u64,
    /// Where it points, when the path (or a folder above it, beneath the root) is a
    /// symlink: it was read through the link.
    pub link: Option<PathBuf>,
}

/// Every file a workspace declares, and the bytes of its settings files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Scan {
    /// Sorted by path.
    pub files: Vec<DeclaredFile>,
    /// `.neocode/hooks.json` as hashed, when it exists.
    pub hooks: Option<Vec<u8>>,
    /// `.neocode/permissions.toml` as hashed, when it exists.
    pub rules: Option<Vec<u8>>,
    /// `<root>/.neocode` is neocode's own home (a workspace at the home folder): its files
    /// are the user's, not declared by the workspace, and not walked.
    pub home_is_dot_neocode: bool,
}

impl Scan {
    /// Whether the workspace declares anything.
    pub(crate) fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The file at `path` (relative, as recorded).
    pub(crate) fn file(&self, path: &str) -> Option<&DeclaredFile> {
        self.files.iter().find(|f| f.path == path)
    }
}

/// `root` with its symlinks resolved (as it is when it cannot be).
pub(super) fn canonical(root: &Path) -> PathBuf {
    root.canonicalize().unwrap_or_else(|_| root.to_path_buf())
}

/// Whether any declaring path exists under `root`: one `stat` each, no walk.
pub(crate) fn anything_declared(root: &Path) -> bool {
    let exists = |rel: &str| std::fs::symlink_metadata(root.join(rel)).is_ok();
    if exists(".neocode") || exists(".mcp.json") {
        return true;
    }
    exists(".claude")
        && (exists(".claude/commands") || exists(".claude/agents") || exists(".claude/skills"))
}

/// Reads and hashes every declared file of `root` (canonical). `home` is neocode's home: a
/// `<root>/.neocode` that is the home is the user's own, not the workspace's.
pub(crate) fn scan(home: &Path, root: &Path) -> Result<Scan, TrustError> {
    let mut out = Scan::default();
    if !anything_declared(root) {
        return Ok(out);
    }
    let mut walk = Walk {
        root,
        files: Vec::new(),
        bytes: 0,
        seen: HashSet::new(),
    };
    for rel in DECLARING {
        let path = root.join(rel);
        if rel == ".neocode" && is_home(&path, home) {
            out.home_is_dot_neocode = true;
            out.hooks = std::fs::read(path.join("hooks.json")).ok();
            out.rules = std::fs::read(path.join("permissions.toml")).ok();
            continue;
        }
        walk.visit(&path, rel, None, 0)?;
    }
    let Walk { mut files, .. } = walk;
    files.sort_by(|a, b| a.0.path.cmp(&b.0.path));
    files.dedup_by(|a, b| a.0.path == b.0.path);
    for (f, bytes) in files {
        if !out.home_is_dot_neocode && f.path == HOOKS_FILE {
            out.hooks = Some(bytes);
        } else if !out.home_is_dot_neocode && f.path == RULES_FILE {
            out.rules = Some(bytes);
        }
        out.files.push(f);
    }
    Ok(out)
}

/// Whether `path` is the folder `home` (the same inode, however each is spelled).
fn is_home(path: &Path, home: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(path), std::fs::metadata(home)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// The walk's state: files kept with the bytes of the settings files, the bytes hashed so
/// far, the folders entered (by device and inode, so a symlink loop ends).
struct Walk<'a> {
    root: &'a Path,
    files: Vec<(DeclaredFile, Vec<u8>)>,
    bytes: u64,
    seen: HashSet<(u64, u64)>,
}

impl Walk<'_> {
    /// Visits `path` (`rel` under the root): a file is hashed, a folder entered; symlinks are
    /// followed (what neocode would load is what is hashed), a dangling one is recorded by
    /// its target. `link`: the first symlink on the way, beneath the declaring path.
    fn visit(
        &mut self,
        path: &Path,
        rel: &str,
        link: Option<PathBuf>,
        depth: usize,
    ) -> Result<(), TrustError> {
        if NOT_DECLARED.contains(&rel) {
            return Ok(());
        }
        let Ok(lmeta) = std::fs::symlink_metadata(path) else {
            return Ok(());
        };
        let link = match (link, lmeta.file_type().is_symlink()) {
            (Some(l), _) => Some(l),
            (None, true) => std::fs::read_link(path).ok(),
            (None, false) => None,
        };
        let Ok(meta) = std::fs::metadata(path) else {
            // A dangling link: recorded by where it points, so a change of it counts.
            let target = std::fs::read_link(path).unwrap_or_default();
            let hash = hex(&Sha256::digest(target.as_os_str().as_encoded_bytes()));
            return self.keep(rel, hash, 0, link, Vec::new());
        };
        if meta.is_dir() {
            if depth >= MAX_DEPTH {
                return Ok(());
            }
            use std::os::unix::fs::MetadataExt;
            if !self.seen.insert((meta.dev(), meta.ino())) {
                return Ok(());
            }
            let mut names: Vec<_> = match std::fs::read_dir(path) {
                Ok(rd) => rd.filter_map(|e| e.ok().map(|e| e.file_name())).collect(),
                Err(e) => return Err(TrustError::read(path, &e)),
            };
            names.sort();
            for name in names {
                let child_rel = format!("{rel}/{}", name.to_string_lossy());
                self.visit(&path.join(&name), &child_rel, link.clone(), depth + 1)?;
            }
            return Ok(());
        }
        if !meta.is_file() {
            // A socket, a device or a fifo: never opened (a fifo would block).
            let hash = hex(&Sha256::digest(format!("special {:?}", meta.file_type())));
            return self.keep(rel, hash, 0, link, Vec::new());
        }
        if self.bytes.saturating_add(meta.len()) > MAX_BYTES {
            return Err(too_large(self.root));
        }
        let bytes = std::fs::read(path).map_err(|e| TrustError::read(path, &e))?;
        self.bytes = self.bytes.saturating_add(bytes.len() as u64);
        let hash = hex(&Sha256::digest(&bytes));
        let keep = if rel == HOOKS_FILE || rel == RULES_FILE {
            bytes
        } else {
            Vec::new()
        };
        let size = meta.len();
        self.keep(rel, hash, size, link, keep)
    }

    fn keep(
        &mut self,
        rel: &str,
        sha256: String,
        size: u64,
        link: Option<PathBuf>,
        bytes: Vec<u8>,
    ) -> Result<(), TrustError> {
        if self.files.len() >= MAX_FILES {
            return Err(too_large(self.root));
        }
        self.files.push((
            DeclaredFile {
                path: rel.to_string(),
                sha256,
                size,
                link,
            },
            bytes,
        ));
        Ok(())
    }
}

fn too_large(root: &Path) -> TrustError {
    TrustError::TooLarge {
        root: root.to_path_buf(),
        max_files: MAX_FILES,
        max_mib: MAX_BYTES / (1024 * 1024),
    }
}

/// Lower-case hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn nothing_declared_is_found_without_a_walk_and_files_are_hashed() {
        let dir = tempfile::tempdir().unwrap();
        let (home, root) = (dir.path().join("home"), dir.path().join("ws"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(root.join(".claude")).unwrap();
        write(&root, ".claude/settings.json", "{}");
        assert!(!anything_declared(&root));
        assert!(scan(&home, &root).unwrap().is_empty());
        // The bridge client's own state is not a setting.
        write(&root, ".neocode/provider-session.id", "0192f3a1");
        assert!(scan(&home, &root).unwrap().is_empty());

        write(&root, ".neocode/hooks.json", "{\"hooks\":{}}");
        write(&root, ".neocode/skills/a/SKILL.md", "---\nname: a\n---\n");
        write(&root, ".mcp.json", "{}");
        write(&root, ".claude/commands/x.md", "hi");
        let s = scan(&home, &root).unwrap();
        let paths: Vec<&str> = s.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                ".claude/commands/x.md",
                ".mcp.json",
                ".neocode/hooks.json",
                ".neocode/skills/a/SKILL.md"
            ]
        );
        assert_eq!(s.hooks.as_deref(), Some(&b"{\"hooks\":{}}"[..]));
        assert!(s.rules.is_none());
        // SHA-256 of "hi".
        assert_eq!(
            s.file(".claude/commands/x.md").unwrap().sha256,
            "8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4"
        );
    }

    #[test]
    fn symlinks_are_followed_and_loops_end() {
        let dir = tempfile::tempdir().unwrap();
        let (home, root) = (dir.path().join("home"), dir.path().join("ws"));
        write(dir.path(), "outside/SKILL.md", "---\nname: out\n---\n");
        std::fs::create_dir_all(root.join(".neocode/skills")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("outside"), root.join(".neocode/skills/out"))
            .unwrap();
        std::os::unix::fs::symlink(root.join(".neocode"), root.join(".neocode/loop")).unwrap();
        std::os::unix::fs::symlink("/nonexistent/x", root.join(".neocode/dangling")).unwrap();
        let s = scan(&home, &root).unwrap();
        let f = s.file(".neocode/skills/out/SKILL.md").unwrap();
        assert_eq!(
            f.link.as_deref(),
            Some(dir.path().join("outside").as_path())
        );
        assert!(s.file(".neocode/dangling").is_some());
        assert!(s.files.len() < 10, "{:?}", s.files);
    }

    #[test]
    fn the_home_as_dot_neocode_is_not_declared() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let home = root.join(".neocode");
        write(&root, ".neocode/hooks.json", "{\"hooks\":{}}");
        write(&root, ".neocode/projects/x/session.db", "db");
        let s = scan(&home, &root).unwrap();
        assert!(s.is_empty(), "{:?}", s.files);
        assert!(s.home_is_dot_neocode);
        assert!(s.hooks.is_some());
    }
}
