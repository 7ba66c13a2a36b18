//! `neocode acp`: the real binary driven over stdio with JSON-RPC lines, as an editor does,
//! and by ACP clients nobody here wrote.

mod acp_clients;
mod acp_editor;
mod acp_process;
mod acp_terminal;
