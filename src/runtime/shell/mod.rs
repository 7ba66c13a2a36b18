//! Reading shell commands the way bash does (tree-sitter's bash grammar, with a lexer of its
//! own for what the grammar leaves out): the simple commands a command line runs, through
//! wrappers (`sudo`, `env`, `timeout` ...) and here-docs, and the bash-only syntax `sh` would
//! read differently. A leaf: the permission rules split commands with it, and `run_command`
//! refuses bash-only syntax under `sh` with it.

mod dialect;
mod lex;
mod parse;
mod words;
pub(crate) mod wrappers;

pub(crate) use parse::*;
