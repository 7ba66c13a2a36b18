//! `neocode bridge`: the protocol and chained turns.

mod bridge;
mod bridge_chain;
