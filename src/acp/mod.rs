//! `neocode acp`: neocode as an Agent Client Protocol agent over stdin/stdout, for editors
//! (Zed, JetBrains, Neovim, Emacs). Each ACP request is one more front end submitting `Op`s
//! to the runtime's agent; sessions are the workspace's neocode sessions.

mod editor;
mod error;
mod files;
mod hub;
mod mcp;
mod model;
mod server;
mod stdio;
mod terminal;
mod turn;
mod updates;

pub(crate) use server::serve;
