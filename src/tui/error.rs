//! The TUI's errors: what a failed action says on the status line, in one line.

/// A failure the TUI only shows (the status line, a notice, the transcript): its words,
/// one line, already worded for the user. Nothing branches on it, so it carries no kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Failure(String);

impl Failure {
    /// A failure saying `words`.
    pub fn new(words: impl Into<String>) -> Failure {
        Failure(words.into())
    }

    /// Its words.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Failure {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<String> for Failure {
    fn from(words: String) -> Failure {
        Failure(words)
    }
}

impl From<&str> for Failure {
    fn from(words: &str) -> Failure {
        Failure(words.to_string())
    }
}

impl From<Failure> for String {
    fn from(failure: Failure) -> String {
        failure.0
    }
}

/// A [`Failure`] worded like `format!`.
macro_rules! failed {
    ($($words:tt)*) => {
        $crate::tui::error::Failure::new(format!($($words)*))
    };
}
pub(crate) use failed;

#[cfg(test)]
mod tests {
    /// The error type of every `Result<T, E>` written in `text` (nested generics matched).
    fn error_types(text: &str) -> Vec<String> {
        let mut found = Vec::new();
        for (at, _) in text.match_indices("Result<") {
            let rest = &text[at + "Result<".len()..];
            let (mut depth, mut comma) = (0usize, None);
            for (i, c) in rest.char_indices() {
                match c {
                    '<' | '(' => depth += 1,
                    ')' => depth = depth.saturating_sub(1),
                    ',' if depth == 0 => comma = Some(i),
                    '>' if depth == 0 => {
                        if let Some(k) = comma {
                            found.push(rest[k + 1..i].trim().to_string());
                        }
                        break;
                    }
                    '>' => depth -= 1,
                    _ => {}
                }
            }
        }
        found
    }

    fn sources(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    #[test]
    fn no_tui_function_outside_tests_fails_with_a_bare_string() {
        assert_eq!(
            error_types("fn a() -> Result<(bool, Vec<u8>, String), String> {}"),
            ["String"]
        );
        let mut files = Vec::new();
        sources(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tui"),
            &mut files,
        );
        assert!(files.len() > 20, "{files:?}");
        let mut bare = Vec::new();
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            if error_types(code).iter().any(|e| e == "String") {
                bare.push(f.display().to_string());
            }
        }
        assert!(bare.is_empty(), "Result<_, String> in {bare:?}");
    }
}
