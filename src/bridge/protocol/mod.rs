//! The bridge's wire format, version [`PROTOCOL_VERSION`]: one JSON object per line in each
//! direction, each with a `type` field. `docs/bridge.md` is the contract; these types are its
//! only implementation, so the two cannot drift apart silently (the tests parse the examples
//! of the document).

#[cfg(test)]
mod tests;
mod turn;
mod wire;

pub(crate) use turn::turn_lines;
pub(crate) use wire::*;
