//! clap definitions of the command line.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// A terminal coding agent whose sessions are first-class.
#[derive(Debug, Parser)]
#[command(name = "neocode", version, about, long_about = None)]
pub struct Cli {
    /// Act on the workspace of this directory instead of the current one.
    #[arg(long, global = true, value_name = "DIR")]
    pub workdir: Option<PathBuf>,

    /// Open the TUI inside this session (full id, unique prefix, or `last`).
    #[arg(long, value_name = "ID", conflicts_with = "continue")]
    pub resume: Option<String>,

    /// Open the TUI inside the most recently active session.
    #[arg(long = "continue")]
    pub r#continue: bool,

    /// The command; none opens the full-screen TUI.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// One-shot commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Open the TUI on a throwaway workspace filled with demo sessions.
    Demo {
        /// Keep the demo folder on disk afterwards.
        #[arg(long)]
        keep: bool,
    },
}
