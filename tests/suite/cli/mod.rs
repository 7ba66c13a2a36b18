//! The command line: listing, sessions, a real terminal, terminal safety.

mod cli_commands;
mod cli_list_stream;
mod cli_sessions;
mod cli_tty;
mod doctor_probe;
mod rewind;
mod rules_hooks;
mod terminal_safety;
