//! What the sandbox and its helper process agree on: the hidden subcommand the helper runs
//! under and the exit code it refuses with.

/// Name of the hidden subcommand the helper runs under.
pub const HELPER_SUBCOMMAND: &str = "__sandbox-exec";

/// Exit code of the helper when it refuses to run a command it cannot confine.
pub const REFUSED_EXIT: i32 = 125;
