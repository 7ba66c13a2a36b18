//! The test suite, as one binary: `tests/suite/<group>/<file>.rs` hold the tests,
//! `tests/support/` what they share. Only a test whose process is part of what it checks has
//! its own binary: `tests/mcp.rs` (the binary is the MCP server it starts) and
//! `tests/tool_env.rs` (commands must not see the secrets its environment holds).
// Tests, benchmarks and examples may unwrap: a failure there is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
mod support;
