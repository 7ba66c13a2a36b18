//! The front matter of the Markdown files neocode reads as settings (skills, agent profiles,
//! custom slash commands): a `---` line, YAML-like `key: value` lines, a closing `---` line,
//! then the body. One reader for all of them, so a file means the same thing everywhere.
//! Beside it, what their loaders share: the size-capped read of a file and the record of a
//! file left out (with the instruction files), reported once per process, and the walk that
//! finds the `*.md` files of a commands folder (and a plugin's commands and agents).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// Bytes of an agent profile or a custom command read at most.
pub(crate) const MAX_BYTES: u64 = 256 * 1024;

/// Why a settings file cannot be read (one line, said with the file's path).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FileError {
    #[error("cannot read: {0}")]
    Read(String),
    #[error("larger than {MAX_BYTES} bytes")]
    TooLarge,
}

/// `read(path)` when the file is at most [`MAX_BYTES`] long.
pub(crate) fn read_capped<T>(
    path: &Path,
    read: impl FnOnce(&Path) -> std::io::Result<T>,
) -> Result<T, FileError> {
    let size = std::fs::metadata(path)
        .map_err(|e| FileError::Read(crate::session::io_error(&e)))?
        .len();
    if size > MAX_BYTES {
        return Err(FileError::TooLarge);
    }
    read(path).map_err(|e| FileError::Read(crate::session::io_error(&e)))
}

/// A file left out (a profile, a skill, an instruction file), and why in words.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

/// Those of `skipped` not yet in `reported`, which then holds them: a file left out is
/// reported once by a process, not on every turn that finds it again.
pub(crate) fn unreported(
    reported: &Mutex<Option<HashSet<Skipped>>>,
    skipped: &[Skipped],
) -> Vec<Skipped> {
    let mut g = reported.lock().unwrap_or_else(PoisonError::into_inner);
    let set = g.get_or_insert_with(HashSet::new);
    skipped
        .iter()
        .filter(|s| set.insert((*s).clone()))
        .cloned()
        .collect()
}

/// Why a file's front matter cannot be read (one line, said with the file's path).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FrontMatterError {
    /// The first line is not `---`.
    #[error("no YAML front matter (the file must start with a `---` line)")]
    Missing,
    /// No `---` line closes it.
    #[error("the front matter has no closing `---` line")]
    Unclosed,
    /// A line that is not `key: value` (nor a continuation, comment or nested value).
    #[error("front matter line {line} is not `key: value`: {text:?}")]
    NotKeyValue { line: usize, text: String },
    /// A quoted value that does not end.
    #[error("`{0}` has an unterminated quoted value")]
    Unterminated(String),
}

/// A file split into its front matter's top-level fields and its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Document<'a> {
    /// Key and value, in the file's order.
    pub fields: Vec<(String, String)>,
    /// Everything after the closing `---` line, as it is.
    pub body: &'a str,
}

impl Document<'_> {
    /// The value of `key`, trimmed (may be empty); the first when it is given twice.
    pub(crate) fn get(&self, key: &str) -> Option<String> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.trim().to_string())
    }

    /// The value of `key` when it is given and not blank.
    pub(crate) fn value(&self, key: &str) -> Option<String> {
        self.get(key).filter(|v| !v.is_empty())
    }
}

/// Splits `text` (a leading byte-order mark ignored, `\n` or `\r\n` lines) into its front
/// matter and body.
pub(crate) fn read(text: &str) -> Result<Document<'_>, FrontMatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().ok_or(FrontMatterError::Missing)?;
    if first.trim_end() != "---" {
        return Err(FrontMatterError::Missing);
    }
    let mut consumed = first.len();
    let mut fm: Vec<&str> = Vec::new();
    let mut closed = false;
    for line in lines {
        consumed += line.len();
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        fm.push(line.trim_end_matches(['\n', '\r']));
    }
    if !closed {
        return Err(FrontMatterError::Unclosed);
    }
    Ok(Document {
        fields: parse_fields(&fm)?,
        body: &text[consumed..],
    })
}

/// A small reader for the top-level scalar keys of YAML front matter: plain, quoted, folded
/// (`>`) and literal (`|`) values, with continuation lines. Nested values of other keys
/// (`metadata:` maps, lists) are skipped; a line that is none of these is an error.
fn parse_fields(lines: &[&str]) -> Result<Vec<(String, String)>, FrontMatterError> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            // Belongs to a key we skip (nested map or list).
            continue;
        }
        let Some((key, rest)) = line.split_once(':') else {
            return Err(FrontMatterError::NotKeyValue {
                line: i,
                text: t.to_string(),
            });
        };
        let key = key.trim().to_string();
        let rest = rest.trim();
        // Continuation lines: indented, or blank inside a block.
        let mut cont: Vec<&str> = Vec::new();
        while i < lines.len() && (lines[i].starts_with([' ', '\t']) || lines[i].trim().is_empty()) {
            cont.push(lines[i]);
            i += 1;
        }
        while cont.last().is_some_and(|l| l.trim().is_empty()) {
            cont.pop();
        }
        let value = if let Some(style) = rest.strip_prefix(['|', '>']).map(|_| rest.as_bytes()[0]) {
            let indent = cont
                .iter()
                .filter(|l| !l.trim().is_empty())
                .map(|l| l.len() - l.trim_start().len())
                .min()
                .unwrap_or(0);
            let body: Vec<&str> = cont
                .iter()
                // Indents of unequal whitespace characters: never cut inside one.
                .map(|l| l.get(indent..).unwrap_or_else(|| l.trim_start()))
                .collect();
            if style == b'|' {
                body.join("\n")
            } else {
                fold(&body)
            }
        } else if rest.starts_with('"') || rest.starts_with('\'') {
            let joined = std::iter::once(rest)
                .chain(cont.iter().map(|l| l.trim()))
                .collect::<Vec<_>>()
                .join(" ");
            unquote(&joined).ok_or_else(|| FrontMatterError::Unterminated(key.clone()))?
        } else {
            let mut parts = vec![strip_comment(rest)];
            parts.extend(cont.iter().map(|l| l.trim()));
            parts.retain(|p| !p.is_empty());
            parts.join(" ")
        };
        out.push((key, value));
    }
    Ok(out)
}

/// YAML folding: lines join with a space, an empty line is a newline.
fn fold(lines: &[&str]) -> String {
    let mut s = String::new();
    for l in lines {
        if l.trim().is_empty() {
            s.push('\n');
        } else {
            if !s.is_empty() && !s.ends_with('\n') {
                s.push(' ');
            }
            s.push_str(l.trim_end());
        }
    }
    s
}

fn unquote(s: &str) -> Option<String> {
    let q = s.chars().next()?;
    let inner = s.strip_prefix(q)?;
    let end = inner.rfind(q)?;
    let inner = &inner[..end];
    Some(if q == '\'' {
        inner.replace("''", "'")
    } else {
        inner
            .replace("\\\"", "\"")
            .replace("\\n", "\n")
            .replace("\\\\", "\\")
    })
}

fn strip_comment(s: &str) -> &str {
    match s.find(" #") {
        Some(i) => s[..i].trim_end(),
        None => s,
    }
}

/// Folders below a commands folder that are entered (`a/b/c.md` is `/a:b:c`).
const MAX_DEPTH: usize = 4;

/// The `*.md` files below `dir` with their command names (folders joined with `:`), sorted
/// by path (custom commands and plugins' commands and agents). A symbolic link is never
/// followed: a file planted as a link to `~/.ssh/id_rsa` is not read into a prompt.
pub(crate) fn md_files(top: &Path, dir: &Path, depth: usize, out: &mut Vec<(PathBuf, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            if depth < MAX_DEPTH {
                md_files(top, &path, depth + 1, out);
            }
        } else if path.extension().is_some_and(|x| x == "md") && meta.is_file() {
            let rel = path.strip_prefix(top).unwrap_or(&path).with_extension("");
            let name: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            out.push((path, name.join(":")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_fields_and_body() {
        let doc = read("\u{feff}---\r\ndescription: Review it\r\nargument-hint: [file] [focus]\r\n---\r\nBody $ARGUMENTS\n").unwrap();
        assert_eq!(doc.value("description").as_deref(), Some("Review it"));
        assert_eq!(
            doc.value("argument-hint").as_deref(),
            Some("[file] [focus]")
        );
        assert_eq!(doc.body, "Body $ARGUMENTS\n");
        assert_eq!(read("no header"), Err(FrontMatterError::Missing));
        assert_eq!(read("---\na: b\n"), Err(FrontMatterError::Unclosed));
        assert_eq!(read(""), Err(FrontMatterError::Missing));
    }
}
