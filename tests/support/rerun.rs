//! Tests that re-run one test of their own binary in a child process (to kill it, or to
//! stand in for neocode) name it as libtest does: by its path below the crate root.

/// `name` in `module` (a `module_path!()`), as `--exact` matches it: `suite::tools::tools::x`.
pub(crate) fn test_name(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_, path)) => format!("{path}::{name}"),
        None => name.to_string(),
    }
}
