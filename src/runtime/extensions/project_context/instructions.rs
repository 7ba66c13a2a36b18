//! Project instructions: `AGENTS.md` (or `CLAUDE.md` where a folder has no `AGENTS.md`) at the
//! workspace root and in the folders on the way to files the agent works in, plus the user's
//! personal `<home>/AGENTS.md`. They go into the system prompt, capped in size; what was used
//! (and what was cut) is kept so the views can show it.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

use super::beneath;
use crate::runtime::extensions::front_matter::{self, Skipped};
use crate::runtime::policy::permissions::Rules;

/// Bytes of instructions kept in the system prompt, over all files (Codex keeps 32 KiB too).
pub(crate) const DEFAULT_CAP: usize = 32 * 1024;

/// File names looked for in each folder, first found wins.
const NAMES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// Where an instruction file comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// `<home>/AGENTS.md`: the user's own rules, for every workspace.
    Personal,
    /// A file inside the workspace.
    Project,
}

impl Scope {
    /// Lower-case name for views and JSON.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Scope::Personal => "personal",
            Scope::Project => "project",
        }
    }
}

/// One instruction file that entered the context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InstructionFile {
    /// Absolute path.
    pub path: PathBuf,
    /// Personal or project.
    pub scope: Scope,
    /// Size of the file in bytes.
    pub size: usize,
    /// The part that entered the prompt (all of it unless `truncated`).
    pub text: String,
    /// The cap cut the file (or left none of it).
    pub truncated: bool,
}

/// The instruction files for one turn, in prompt order: personal first, then the workspace
/// root, then deeper folders (the more specific rule comes last, so it reads as the override).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Instructions {
    /// Files used, in prompt order.
    pub files: Vec<InstructionFile>,
    /// Files that exist but could not be read, with the reason (shown as warnings).
    pub unreadable: Vec<(PathBuf, String)>,
    /// Workspace files left out, with why: a link out of the workspace, a read denial.
    pub skipped: Vec<Skipped>,
}

impl Instructions {
    /// Collects the instruction files: `<home>/AGENTS.md`, the root's, and those of every folder
    /// between `root` and each of `touched` (files or folders the agent worked in). Paths
    /// outside `root` are ignored. The first `cap` bytes over all files are kept; a file cut
    /// short says so in the prompt. Workspace files are read beneath the root, as the file
    /// tools read: one that links outside it, or that a `read_file(...)` deny rule of the
    /// workspace's rule files covers, is skipped (see [`Instructions::skipped`]).
    pub(crate) fn load(home: &Path, root: &Path, touched: &[PathBuf], cap: usize) -> Instructions {
        let rules = beneath::read_rules(home, root);
        Instructions::load_with(home, root, touched, cap, rules.as_ref())
    }

    /// [`Instructions::load`] with the rules whose read denials apply.
    pub(crate) fn load_with(
        home: &Path,
        root: &Path,
        touched: &[PathBuf],
        cap: usize,
        rules: Option<&Rules>,
    ) -> Instructions {
        let mut out = Instructions::default();
        let mut left = cap;
        if let Some(p) = existing(&home.join("AGENTS.md")) {
            match std::fs::read(&p) {
                Ok(bytes) => {
                    let size = bytes.len() as u64;
                    left -= out.push(p, Scope::Personal, &bytes, size, left);
                }
                Err(e) => out.unreadable.push((p, e.to_string())),
            }
        }
        for dir in folders(root, touched) {
            for name in NAMES {
                let path = dir.join(name);
                // A few bytes over the cap, so the cut falls on a character boundary.
                match beneath::read(root, &path, left as u64 + 4, rules) {
                    Ok(None) => continue,
                    Ok(Some(c)) => left -= out.push(path, Scope::Project, &c.bytes, c.size, left),
                    Err(beneath::Skip::Unreadable(e)) => out.unreadable.push((path, e)),
                    Err(skip) => out.skipped.push(Skipped {
                        path,
                        reason: skip.to_string(),
                    }),
                }
                break;
            }
        }
        out
    }

    /// Adds a file of `size` bytes whose first `bytes` were read, keeping at most `left` of
    /// them; returns how many it kept.
    fn push(&mut self, path: PathBuf, scope: Scope, bytes: &[u8], size: u64, left: usize) -> usize {
        let text = String::from_utf8_lossy(bytes);
        let kept = text.floor_char_boundary(left);
        let truncated = kept < text.len() || (size as usize) > bytes.len();
        self.files.push(InstructionFile {
            path,
            scope,
            size: size as usize,
            text: text[..kept].to_string(),
            truncated,
        });
        kept
    }

    /// Skipped files not yet reported by this process (each is reported once, not on every
    /// turn that finds it again).
    pub(crate) fn unreported_skips(&self) -> Vec<Skipped> {
        static REPORTED: Mutex<Option<HashSet<Skipped>>> = Mutex::new(None);
        front_matter::unreported(&REPORTED, &self.skipped)
    }

    /// Whether any file entered the context.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The system prompt section; empty when there are no files. Each file is introduced by its
    /// path so the model knows which folder a rule belongs to.
    pub(crate) fn prompt_section(&self, root: &Path) -> String {
        if self.files.is_empty() {
            return String::new();
        }
        let mut s = String::from(
            "# Instructions\n\nThe user and the project left these instructions. Follow them; \
             a file in a deeper folder takes precedence for files under that folder.\n",
        );
        for f in &self.files {
            let shown = display_path(&f.path, root);
            s.push_str(&format!("\n## {shown} ({})\n\n", f.scope.as_str()));
            s.push_str(f.text.trim_end());
            s.push('\n');
            if f.truncated {
                s.push_str(&format!(
                    "\n[{shown} was cut here: {} of {} bytes kept (instruction size cap). Read the file for the rest.]\n",
                    f.text.len(),
                    f.size
                ));
            }
        }
        s
    }
}

/// A path as the user reads it: relative to the workspace root when inside it.
pub(crate) fn display_path(path: &Path, root: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => path.display().to_string(),
    }
}

fn existing(p: &Path) -> Option<PathBuf> {
    p.is_file().then(|| p.to_path_buf())
}

/// The root, then each folder on the way from the root to every touched path, once each, in
/// breadth order (shallower first). Touched paths are taken relative to the root; anything
/// that leaves it (`..`, another absolute path) is skipped.
fn folders(root: &Path, touched: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = vec![root.to_path_buf()];
    for t in touched {
        let rel = if t.is_absolute() {
            match t.strip_prefix(root) {
                Ok(r) => r.to_path_buf(),
                Err(_) => continue,
            }
        } else {
            t.clone()
        };
        if rel
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
        {
            continue;
        }
        // A touched file contributes its parent folders; a touched folder itself too.
        let full = root.join(&rel);
        let upto = if full.is_dir() {
            rel.clone()
        } else {
            rel.parent().map(Path::to_path_buf).unwrap_or_default()
        };
        let mut cur = root.to_path_buf();
        for c in upto.components() {
            if let Component::Normal(n) = c {
                cur.push(n);
                if !dirs.contains(&cur) {
                    dirs.push(cur.clone());
                }
            }
        }
    }
    dirs.sort_by_key(|d| d.components().count());
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let root = t.path().join("ws");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(root.join("crates/core/src")).unwrap();
        (t, home, root)
    }

    #[test]
    fn personal_root_and_nested_files_in_order() {
        let (_t, home, root) = setup();
        std::fs::write(home.join("AGENTS.md"), "personal rule").unwrap();
        std::fs::write(root.join("AGENTS.md"), "root rule").unwrap();
        std::fs::write(root.join("CLAUDE.md"), "ignored: AGENTS.md exists").unwrap();
        std::fs::write(root.join("crates/CLAUDE.md"), "crates rule").unwrap();
        std::fs::write(root.join("crates/core/AGENTS.md"), "core rule").unwrap();
        std::fs::write(root.join("crates/core/src/lib.rs"), "").unwrap();
        let ins = Instructions::load(
            &home,
            &root,
            &[PathBuf::from("crates/core/src/lib.rs")],
            DEFAULT_CAP,
        );
        let names: Vec<_> = ins
            .files
            .iter()
            .map(|f| display_path(&f.path, &root))
            .collect();
        assert_eq!(
            names,
            vec![
                home.join("AGENTS.md").display().to_string(),
                "AGENTS.md".to_string(),
                "crates/CLAUDE.md".to_string(),
                "crates/core/AGENTS.md".to_string()
            ]
        );
        let p = ins.prompt_section(&root);
        assert!(p.contains("personal rule") && p.contains("root rule") && p.contains("core rule"));
        assert!(!p.contains("ignored"));
        assert!(p.find("root rule").unwrap() < p.find("core rule").unwrap());
    }

    #[test]
    fn nested_files_only_for_touched_paths_and_never_outside_root() {
        let (t, home, root) = setup();
        std::fs::write(root.join("crates/core/AGENTS.md"), "core rule").unwrap();
        std::fs::write(t.path().join("AGENTS.md"), "outside").unwrap();
        let ins = Instructions::load(&home, &root, &[], DEFAULT_CAP);
        assert!(ins.is_empty());
        let ins = Instructions::load(
            &home,
            &root,
            &[PathBuf::from("../AGENTS.md"), t.path().join("x")],
            DEFAULT_CAP,
        );
        assert!(ins.is_empty(), "{ins:?}");
        let ins = Instructions::load(&home, &root, &[root.join("crates/core")], DEFAULT_CAP);
        assert_eq!(ins.files.len(), 1);
    }

    #[test]
    fn cap_cuts_and_says_so() {
        let (_t, home, root) = setup();
        std::fs::write(root.join("AGENTS.md"), "é".repeat(100)).unwrap();
        std::fs::write(root.join("crates/AGENTS.md"), "second").unwrap();
        let ins = Instructions::load(&home, &root, &[root.join("crates/x.rs")], 51);
        assert_eq!(ins.files.len(), 2);
        assert!(ins.files[0].truncated);
        assert_eq!(ins.files[0].text.len(), 50, "cut on a char boundary");
        assert_eq!(ins.files[0].size, 200);
        assert!(ins.files[1].truncated);
        assert_eq!(ins.files[1].text, "s");
        let p = ins.prompt_section(&root);
        assert!(
            p.contains("[AGENTS.md was cut here: 50 of 200 bytes kept"),
            "{p}"
        );
    }
}
