//! `neocode bridge`: the protocol and chained turns.

mod bridge_chain;
mod bridge_process;
mod nonoka;
