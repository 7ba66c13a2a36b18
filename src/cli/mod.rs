//! The command line: clap definitions, dispatch, and the one-shot commands that print.
//!
//! `main.rs` only calls [`main`]. Every command reports errors as one line
//! `neocode: <message>` on stderr with exit code 1 (runtime failure) or 2 (bad usage, unknown
//! or ambiguous id).

pub mod args;
pub mod fmt;
mod list;
mod manage;
mod mcp;
pub mod out;
pub mod run;
mod search;
mod show;
mod skill;
pub mod transfer;

use std::process::ExitCode;

use clap::Parser;

use crate::runtime::tools::sandbox;
use crate::runtime::{Location, Sessions};
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

    /// Ends the command quietly with success (stdout was closed: `| head`).
    pub fn quiet() -> Failure {
        Failure {
            code: 0,
            lines: Vec::new(),
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
        Err(e) if !e.use_stderr() => {
            // --help and --version: clap prints them; a closed pipe is fine.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("neocode: {} (see neocode --help)", clap_message(&e));
            return ExitCode::from(2);
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) if f.code == 0 => ExitCode::SUCCESS,
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

/// clap's error as one line, without its `error: ` prefix and usage block.
fn clap_message(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let first = text.lines().next().unwrap_or("invalid arguments");
    first.strip_prefix("error: ").unwrap_or(first).to_string()
}

fn location(cli: &Cli) -> Result<Location, Failure> {
    Location::resolve(cli.workdir.as_deref()).map_err(|e| Failure::usage(sanitize::line(&e)))
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> CmdResult {
    // The sandbox helper runs before anything looks at the workspace or the home.
    if let Some(Command::SandboxExec {
        probe,
        root,
        tmp,
        read_only,
        network,
        require_full,
        command,
    }) = cli.command
    {
        return sandbox_exec(sandbox::HelperArgs {
            probe,
            root,
            tmp,
            read_only,
            network,
            require_full,
            command,
        });
    }
    if let Some(cmd) = &cli.command {
        let flag = if cli.list {
            Some("--list")
        } else if cli.resume.is_some() {
            Some("--resume")
        } else if cli.r#continue {
            Some("--continue")
        } else {
            None
        };
        if let Some(flag) = flag {
            let name = cmd_name(cmd);
            return Err(Failure::usage(format!(
                "{flag} cannot be used with the '{name}' command (see neocode --help)"
            )));
        }
    }
    match &cli.command {
        Some(Command::Demo { keep }) => {
            let demo = tui::demo::prepare(*keep)?;
            tui::run(TuiOptions {
                location: demo.location.clone(),
                resume: None,
            })?;
            Ok(())
        }
        Some(Command::Show { id, json }) => show::run(&location(&cli)?, id, *json),
        Some(Command::Export { id, format, output }) => {
            transfer::export(&location(&cli)?, id, *format, output.as_deref())
        }
        Some(Command::Import { file, new_id }) => transfer::import(&location(&cli)?, file, *new_id),
        Some(Command::Fork { id, at }) => manage::fork(&location(&cli)?, id, *at),
        Some(Command::Rename { id, title }) => manage::rename(&location(&cli)?, id, title),
        Some(Command::Delete { id, yes }) => manage::delete(&location(&cli)?, id, *yes),
        Some(Command::Search { query, json, limit }) => {
            search::run(&location(&cli)?, query, *json, *limit)
        }
        Some(Command::Completions { shell }) => completions(*shell),
        Some(Command::Mcp(args::McpCommand::List { json })) => mcp::list(&location(&cli)?, *json),
        Some(Command::Skill(args::SkillCommand::List { session, json })) => {
            skill::list(&location(&cli)?, session.as_deref(), *json)
        }
        Some(Command::Skill(args::SkillCommand::Activate { id, name })) => {
            skill::activate(&location(&cli)?, id, name)
        }
        Some(Command::Run(args)) => run::run(&location(&cli)?, args),
        Some(Command::Compact { id }) => run::compact(&location(&cli)?, id),
        Some(Command::SandboxExec { .. }) => Ok(()),
        None if cli.list => {
            let opts = list::ListOptions {
                json: cli.json,
                limit: cli.limit.unwrap_or(0),
            };
            if cli.all_workspaces {
                let home =
                    crate::session::home_dir().map_err(|e| Failure::usage(sanitize::line(&e)))?;
                list::run_all(&home, opts)
            } else {
                list::run(&location(&cli)?, opts)
            }
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

/// `neocode __sandbox-exec`: confines itself, then execs the command (returns only when it
/// did not).
fn sandbox_exec(args: sandbox::HelperArgs) -> CmdResult {
    let code = sandbox::helper_main(args);
    match u8::try_from(code) {
        Ok(0) => Ok(()),
        Ok(c) => Err(Failure {
            code: c,
            lines: Vec::new(),
        }),
        Err(_) => Err(Failure {
            code: 1,
            lines: Vec::new(),
        }),
    }
}

fn cmd_name(cmd: &Command) -> &'static str {
    match cmd {
        Command::Show { .. } => "show",
        Command::Export { .. } => "export",
        Command::Import { .. } => "import",
        Command::Fork { .. } => "fork",
        Command::Rename { .. } => "rename",
        Command::Delete { .. } => "delete",
        Command::Search { .. } => "search",
        Command::Completions { .. } => "completions",
        Command::Demo { .. } => "demo",
        Command::Mcp(_) => "mcp",
        Command::Skill(_) => "skill",
        Command::Run(_) => "run",
        Command::Compact { .. } => "compact",
        Command::SandboxExec { .. } => "__sandbox-exec",
    }
}

/// `neocode completions <SHELL>`: generated into memory first, so a closed pipe is handled
/// like every other write.
fn completions(shell: clap_complete::Shell) -> CmdResult {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "neocode", &mut buf);
    let mut out = out::Out::stdout();
    out.bytes(&buf)?;
    out.finish()
}

/// Opens an existing workspace and resolves `key` in it; a workspace without a database has
/// no sessions, and nothing is created.
pub(crate) fn open_for_id(loc: &Location, key: &str) -> Result<(Sessions, String), Failure> {
    match Sessions::open_existing(loc)? {
        Some(rt) => {
            let id = rt.resolve(key)?;
            Ok((rt, id))
        }
        None => Err(not_found(loc, key)),
    }
}

fn not_found(loc: &Location, key: &str) -> Failure {
    StoreError::NotFound {
        what: "session",
        key: key.to_string(),
        scope: loc.root().display().to_string(),
    }
    .into()
}

/// Resolves an id in a workspace without creating its database.
fn resolve_existing(loc: &Location, key: &str) -> Result<String, Failure> {
    open_for_id(loc, key).map(|(_, id)| id)
}
