//! Reading rule files: the home folder, optional files and TOML error positions.

use std::path::{Path, PathBuf};

use super::types::RulesError;

pub(super) fn line_of(src: &str, offset: usize) -> usize {
    src.as_bytes()[..offset.min(src.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

pub(super) fn user_home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

pub(super) use crate::runtime::policy::file_error::read_optional;

pub(super) fn toml_error(file: &Path, src: &str, e: &toml::de::Error) -> RulesError {
    let line = e.span().map(|s| line_of(src, s.start)).unwrap_or(0);
    RulesError {
        file: file.to_path_buf(),
        line,
        message: e.message().trim().to_string(),
    }
}
