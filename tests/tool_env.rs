//! The tools and the sandbox in a binary of their own: `support::tools::init` puts secrets
//! into this process's environment (commands must not see them) and points the sandbox at
//! the real binary, which no other test may inherit.
// Tests, benchmarks and examples may unwrap: a failure there is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support {
    pub(crate) mod process;
    pub(crate) mod rerun;
    pub(crate) mod text;
    pub(crate) mod tools;
}

mod suite {
    mod tools;
}
