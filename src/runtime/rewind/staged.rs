//! A rewind puts files back, not git's index: the files of a rewind that are staged (the
//! model's `git add`, `git mv`) are named in its preview, with the command that unstages
//! them, so `git status` after a rewind holds no surprise.

use std::path::Path;

use super::types::Plan;
use crate::runtime::tools::git_snapshot;

/// The plan's files that are staged in the workspace's git index (empty outside git).
pub(crate) fn staged_files(root: &Path, plan: &Plan) -> Vec<String> {
    if plan.files.is_empty() {
        return Vec::new();
    }
    let staged = git_snapshot::staged(root);
    plan.files
        .iter()
        .filter(|f| staged.contains(&f.path))
        .map(|f| f.path.clone())
        .collect()
}

/// The warning for `staged` files (`None` when there are none), one line.
pub(crate) fn staged_note(staged: &[String]) -> Option<String> {
    let (first, rest) = staged.split_first()?;
    let (names, verb) = if rest.is_empty() {
        (first.clone(), "is")
    } else {
        (staged.join(", "), "are")
    };
    let quoted: Vec<String> = staged.iter().map(|p| shell_word(p)).collect();
    Some(format!(
        "git: {names} {verb} staged (git add): a rewind puts the files back, not git's index; `git restore --staged -- {}` unstages {}",
        quoted.join(" "),
        if rest.is_empty() { "it" } else { "them" }
    ))
}

/// `p` as one shell word (quoted when it needs to be).
fn shell_word(p: &str) -> String {
    if p.chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-' | '+'))
    {
        p.to_string()
    } else {
        format!("'{}'", p.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_note_names_the_files_and_the_command() {
        assert_eq!(staged_note(&[]), None);
        assert_eq!(
            staged_note(&["a.txt".into()]).unwrap_or_default(),
            "git: a.txt is staged (git add): a rewind puts the files back, not git's index; `git restore --staged -- a.txt` unstages it"
        );
        let two = staged_note(&["a.txt".into(), "my file".into()]).unwrap_or_default();
        assert!(two.contains("a.txt, my file are staged"), "{two}");
        assert!(two.contains("-- a.txt 'my file'` unstages them"), "{two}");
    }
}
