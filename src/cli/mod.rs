//! The command line: clap definitions, dispatch, and the one-shot commands that print.
//!
//! `main.rs` only calls [`main`]. Every command reports errors as one line
//! `neocode: <message>` on stderr with exit code 1 (runtime failure) or 2 (bad usage, unknown
//! or ambiguous id).

pub mod args;

use std::process::ExitCode;

use clap::Parser;

use crate::runtime::{Location, Runtime};
use crate::sanitize;
use crate::session::StoreError;
use crate::tui::{self, TuiOptions};

use args::{Cli, Command};

/// A failure with its exit code and the lines to print on stderr.
#[derive(Debug)]
pub struct Failure {
    /// 1 runtime failure, 2 bad usage.
    pub code: u8,
    /// First line (prefixed with `neocode: `), then any further lines printed as they are.
    pub lines: Vec<String>,
}

impl Failure {
    /// A bad-usage failure (exit 2).
    pub fn usage(msg: impl Into<String>) -> Failure {
        Failure {
            code: 2,
            lines: vec![msg.into()],
        }
    }

    /// A runtime failure (exit 1).
    pub fn runtime(msg: impl Into<String>) -> Failure {
        Failure {
            code: 1,
            lines: vec![msg.into()],
        }
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Failure {
        let code = if e.is_usage() { 2 } else { 1 };
        let mut lines = vec![sanitize::line(&e.to_string()).into_owned()];
        if let StoreError::Ambiguous { candidates, .. } = &e {
            for (id, title) in candidates {
                lines.push(format!(
                    "  {}  {}",
                    sanitize::line(id),
                    sanitize::line(title)
                ));
            }
        }
        Failure { code, lines }
    }
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Failure {
        Failure::runtime(sanitize::line(&format!("{e:#}")).into_owned())
    }
}

/// Result of a command.
pub type CmdResult = Result<(), Failure>;

/// Parses the process arguments, runs the command and returns the exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            let mut it = f.lines.iter();
            if let Some(first) = it.next() {
                eprintln!("neocode: {first}");
            }
            for l in it {
                eprintln!("{l}");
            }
            ExitCode::from(f.code)
        }
    }
}

fn location(cli: &Cli) -> Result<Location, Failure> {
    Location::resolve(cli.workdir.as_deref()).map_err(|e| Failure::usage(sanitize::line(&e)))
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> CmdResult {
    match &cli.command {
        Some(Command::Demo { keep }) => {
            let demo = tui::demo::prepare(*keep)?;
            tui::run(TuiOptions {
                location: demo.location.clone(),
                resume: None,
            })?;
            Ok(())
        }
        None => {
            let loc = location(&cli)?;
            let resume = if let Some(key) = &cli.resume {
                Some(resolve_existing(&loc, key)?)
            } else if cli.r#continue {
                Some(resolve_existing(&loc, "last")?)
            } else {
                None
            };
            tui::run(TuiOptions {
                location: loc,
                resume,
            })?;
            Ok(())
        }
    }
}

/// Resolves an id in a workspace without creating its database.
fn resolve_existing(loc: &Location, key: &str) -> Result<String, Failure> {
    match Runtime::open_existing(loc)? {
        Some(rt) => Ok(rt.resolve(key)?),
        None => Err(StoreError::NotFound {
            what: "session",
            key: key.to_string(),
            scope: loc.root().display().to_string(),
        }
        .into()),
    }
}
