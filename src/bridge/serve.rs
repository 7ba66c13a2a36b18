//! Starting a bridge process in the dialect it was asked for.

use std::io::{Read, Write};

use super::core;
use super::native::Native;
use super::nonoka;
use super::port::BridgeOptions;

/// The wire format a bridge process speaks (`neocode bridge --dialect`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Dialect {
    /// neocode's own protocol, `docs/bridge.md`.
    #[default]
    Native,
    /// nonoka's NDJSON bridge, as its OpenCode provider speaks it ([`nonoka`]).
    Nonoka,
}

/// Serves requests from `input` until it ends (and the running turn, if any, finished).
/// Returns `Err` only when `output` could not be written.
pub fn serve(
    opts: BridgeOptions,
    input: impl Read + Send + 'static,
    output: &mut dyn Write,
) -> std::io::Result<()> {
    serve_dialect(opts, Dialect::Native, input, output)
}

/// [`serve`] in the given dialect. The nonoka dialect also records the running turn as
/// cancelled on SIGTERM or SIGINT, and returns at once after a turn paused for an approval
/// (its call stays stored without a result; the next process answers it).
pub(crate) fn serve_dialect(
    opts: BridgeOptions,
    dialect: Dialect,
    input: impl Read + Send + 'static,
    output: &mut dyn Write,
) -> std::io::Result<()> {
    match dialect {
        Dialect::Native => core::run(opts, Native, input, output),
        Dialect::Nonoka => core::run(opts, nonoka::State::default(), input, output),
    }
}
