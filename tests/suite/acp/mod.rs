//! `neocode acp`: the real binary driven over stdio with JSON-RPC lines, as an editor does.

mod acp_process;
