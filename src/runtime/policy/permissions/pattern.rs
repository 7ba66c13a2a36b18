//! The two kinds of rule pattern: command patterns (`run_command(git diff *)`) and path
//! globs (`edit_file(src/**)`).

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};

/// A command pattern: words separated by spaces, matched word by word against one simple
/// command (after quote removal, without `NAME=value` prefixes).
///
/// - A word without `*` matches that word exactly.
/// - `*` inside a word matches any characters within that one word (`test_*.py`).
/// - A last word that is exactly `*` matches the rest of the command: any further words,
///   or none (`git diff *` matches `git diff` and `git diff --stat`, not `git difftool`).
/// - A last word ending in `*` matches a word starting that way, then any further words
///   (`git diff*` matches `git diff`, `git diff --stat` and also `git difftool`).
/// - Otherwise the command must have exactly as many words as the pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommandPattern {
    words: Vec<String>,
    rest: bool,
}

impl CommandPattern {
    /// Parses a pattern; `None` when it has no word.
    pub(crate) fn parse(text: &str) -> Option<CommandPattern> {
        let mut words: Vec<String> = text.split_whitespace().map(str::to_string).collect();
        if words.is_empty() {
            return None;
        }
        let mut rest = false;
        if let Some(last) = words.last_mut() {
            if last == "*" {
                words.pop();
                rest = true;
            } else if last.ends_with('*') {
                rest = true;
            }
        }
        if words.is_empty() {
            // `run_command(*)`: any command.
            return Some(CommandPattern { words, rest: true });
        }
        Some(CommandPattern { words, rest })
    }

    /// Whether the simple command `cmd` (its words) matches, as written: what an allow
    /// rule asks.
    pub(crate) fn matches(&self, cmd: &[String]) -> bool {
        if cmd.len() < self.words.len() || (!self.rest && cmd.len() != self.words.len()) {
            return false;
        }
        self.words
            .iter()
            .zip(cmd)
            .all(|(p, w)| word_glob(p.as_bytes(), w.as_bytes()))
    }

    /// Whether `cmd` may be a command this pattern covers, as a deny or ask rule reads it:
    /// the command word by its program name (`/bin/rm` and `./rm` are `rm`) unless the
    /// pattern's first word is a path, and a word `computed` when the command runs
    /// (`$X`, `$(…)`, a glob) taken for any word: from the first such word on, the rest of
    /// the pattern is taken to match.
    pub(crate) fn may_match(&self, cmd: &[String], computed: &[bool]) -> bool {
        let word_ok = |i: usize, p: &String, w: &String| {
            let w = if i == 0 && !p.contains('/') {
                w.rsplit('/').next().unwrap_or(w)
            } else {
                w.as_str()
            };
            word_glob(p.as_bytes(), w.as_bytes())
        };
        let first_computed = computed.iter().position(|c| *c).unwrap_or(cmd.len());
        if first_computed < self.words.len() && first_computed <= cmd.len() {
            return self
                .words
                .iter()
                .zip(cmd)
                .take(first_computed)
                .enumerate()
                .all(|(i, (p, w))| word_ok(i, p, w));
        }
        if cmd.len() < self.words.len() || (!self.rest && cmd.len() != self.words.len()) {
            return false;
        }
        self.words
            .iter()
            .zip(cmd)
            .enumerate()
            .all(|(i, (p, w))| word_ok(i, p, w))
    }
}

/// `*` matches any run of bytes; everything else is literal.
fn word_glob(p: &[u8], w: &[u8]) -> bool {
    let (mut pi, mut wi) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while wi < w.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some(pi);
            mark = wi;
            pi += 1;
        } else if pi < p.len() && p[pi] == w[wi] {
            pi += 1;
            wi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            wi = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// A path glob (globset syntax: `*` within a path component, `**` across components,
/// `?`, `[abc]`, `{a,b}`).
///
/// - A pattern starting with `/` is absolute; `~/` is the user's home folder.
/// - Any other pattern containing a `/` is relative to the workspace root (`src/**`).
/// - A pattern without `/` matches a file name at any depth (`.env` matches `.env` and
///   `config/.env`; `*.pem` every PEM file), in the workspace or outside it.
/// - `dir/**` matches everything under `dir` and, for `list_dir` and `grep`, `dir` itself.
#[derive(Debug, Clone)]
pub(crate) struct PathPattern {
    matcher: GlobMatcher,
    /// `dir` of a `dir/**` pattern, absolute.
    dir: Option<PathBuf>,
}

/// Why a path pattern does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    /// Nothing but spaces.
    #[error("an empty path pattern")]
    Empty,
    /// `~/…` with no home folder to put in front.
    #[error("`~/` used but the home folder is unknown")]
    NoHome,
    /// Not a glob (the glob parser's words).
    #[error("bad path pattern `{text}`: {kind}")]
    Bad { text: String, kind: String },
}

impl PathPattern {
    /// Compiles `text` for the workspace `root` and the user's `home_dir` (for `~/`).
    pub(crate) fn parse(
        text: &str,
        root: &Path,
        home_dir: Option<&Path>,
    ) -> Result<PathPattern, PatternError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(PatternError::Empty);
        }
        let full: String = if let Some(rest) = text.strip_prefix("~/") {
            let home = home_dir.ok_or(PatternError::NoHome)?;
            format!("{}/{}", glob_escape(&home.to_string_lossy()), rest)
        } else if text.starts_with('/') {
            text.to_string()
        } else if text.contains('/') {
            let rel = text.strip_prefix("./").unwrap_or(text);
            format!("{}/{}", glob_escape(&root.to_string_lossy()), rel)
        } else {
            format!("**/{text}")
        };
        let matcher = GlobBuilder::new(&full)
            .literal_separator(true)
            .build()
            .map_err(|e| PatternError::Bad {
                text: text.to_string(),
                kind: e.kind().to_string(),
            })?
            .compile_matcher();
        let dir = full
            .strip_suffix("/**")
            .filter(|d| !d.contains(['*', '?', '[', '{']))
            .map(PathBuf::from);
        Ok(PathPattern { matcher, dir })
    }

    /// Whether the absolute, normalised `path` matches; `as_dir` also matches the folder of
    /// a `dir/**` pattern.
    pub(crate) fn matches(&self, path: &Path, as_dir: bool) -> bool {
        if self.matcher.is_match(path) {
            return true;
        }
        as_dir && self.dir.as_deref().is_some_and(|d| d == path)
    }
}

pub(super) fn glob_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}') {
            out.push('[');
            out.push(c);
            out.push(']');
        } else {
            out.push(c);
        }
    }
    out
}

/// `path` made absolute against `root` and normalised lexically (`.` and `..` removed).
pub(crate) fn absolute(root: &Path, path: &str, home_dir: Option<&Path>) -> PathBuf {
    let p = match (path.strip_prefix("~/"), home_dir) {
        (Some(rest), Some(h)) => h.join(rest),
        _ => root.join(path),
    };
    crate::runtime::tools::path::fold(&p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn star_word_and_star_suffix_differ() {
        let spaced = CommandPattern::parse("git diff *").unwrap_or_else(|| unreachable!());
        assert!(spaced.matches(&cmd("git diff")));
        assert!(spaced.matches(&cmd("git diff --stat HEAD")));
        assert!(!spaced.matches(&cmd("git difftool")));
        assert!(!spaced.matches(&cmd("git")));
        let glued = CommandPattern::parse("git diff*").unwrap_or_else(|| unreachable!());
        assert!(glued.matches(&cmd("git diff")));
        assert!(glued.matches(&cmd("git difftool -y")));
        let exact = CommandPattern::parse("git status").unwrap_or_else(|| unreachable!());
        assert!(exact.matches(&cmd("git status")));
        assert!(!exact.matches(&cmd("git status --short")));
        let inner = CommandPattern::parse("python3 test_*.py").unwrap_or_else(|| unreachable!());
        assert!(inner.matches(&cmd("python3 test_stats.py")));
        assert!(!inner.matches(&cmd("python3 evil.py")));
        assert!(!inner.matches(&cmd("python3 test_a.py extra")));
        let any = CommandPattern::parse("*").unwrap_or_else(|| unreachable!());
        assert!(any.matches(&cmd("rm -rf /")));
    }

    #[test]
    fn deny_reading_sees_program_names_and_computed_words() {
        let rm = CommandPattern::parse("rm *").unwrap_or_else(|| unreachable!());
        let none = |s: &str| vec![false; cmd(s).len()];
        for c in ["/bin/rm -rf x", "./rm x", "rm"] {
            assert!(rm.may_match(&cmd(c), &none(c)), "{c}");
            assert!(!rm.matches(&cmd(c)) || c == "rm", "{c}");
        }
        let by_path = CommandPattern::parse("/bin/rm *").unwrap_or_else(|| unreachable!());
        assert!(!by_path.may_match(&cmd("/usr/bin/rm x"), &none("/usr/bin/rm x")));
        let push = CommandPattern::parse("git push *").unwrap_or_else(|| unreachable!());
        assert!(push.may_match(&cmd("git $X origin"), &[false, true, false]));
        assert!(!push.may_match(&cmd("git log $X"), &[false, false, true]));
        assert!(!push.matches(&cmd("git $X origin")));
    }

    #[test]
    fn path_globs_anchor_as_documented() {
        let root = Path::new("/ws");
        let home = Path::new("/home/u");
        let p = |t: &str| PathPattern::parse(t, root, Some(home)).unwrap_or_else(|e| panic!("{e}"));
        let src = p("src/**");
        assert!(src.matches(Path::new("/ws/src/a/b.rs"), false));
        assert!(!src.matches(Path::new("/ws/tests/a.rs"), false));
        assert!(!src.matches(Path::new("/ws/src"), false));
        assert!(src.matches(Path::new("/ws/src"), true));
        let env = p(".env");
        assert!(env.matches(Path::new("/ws/.env"), false));
        assert!(env.matches(Path::new("/ws/config/.env"), false));
        assert!(!env.matches(Path::new("/ws/.envrc"), false));
        let ssh = p("~/.ssh/**");
        assert!(ssh.matches(Path::new("/home/u/.ssh/id_ed25519"), false));
        assert!(p("/etc/**").matches(Path::new("/etc/passwd"), false));
        assert!(PathPattern::parse("src/[", root, None).is_err());
        assert_eq!(
            absolute(root, "src/../.env", None),
            PathBuf::from("/ws/.env")
        );
        assert_eq!(
            absolute(root, "~/.ssh/x", Some(home)),
            PathBuf::from("/home/u/.ssh/x")
        );
    }
}
