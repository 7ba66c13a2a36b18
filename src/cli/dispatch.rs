//! Parsing the process arguments and sending each command to the file that runs it.

use std::process::ExitCode;

use clap::Parser;

use super::args::{self, Cli, Command};
use super::common::{CmdResult, Failure, open_for_id};
use super::run as run_cmd;
use super::{
    agents, doctor, hooks, import_from, list, lsp, manage, mcp, out, plugin, rewind, rules, search,
    show, skill, transfer, trust, worktree,
};
use crate::runtime::tools::sandbox;
use crate::runtime::{Location, Sessions};
use crate::sanitize;
use crate::tui::{self, TuiOptions};

/// Parses the process arguments, runs the command and returns the exit code.
pub fn main() -> ExitCode {
    // The sandbox helper runs before anything looks at the workspace or the home.
    let mut argv = std::env::args_os().skip(1);
    if argv.next().is_some_and(|a| a == sandbox::HELPER_SUBCOMMAND) {
        return sandbox_exec(argv);
    }
    // SAFETY: first thing in main, before any thread exists.
    unsafe { sandbox::protect_process() };
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) if !e.use_stderr() => {
            // --help and --version: clap prints them; a closed pipe is fine.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("neocode: {}", clap_message(&e));
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

/// clap's whole error without its `error: ` prefix: the first line says what is wrong, the
/// next ones name the argument, suggest a similar subcommand and show the usage.
fn clap_message(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let text = text.trim_end();
    let text = text.strip_prefix("error: ").unwrap_or(text);
    if text.is_empty() {
        "invalid arguments (see neocode --help)".to_string()
    } else {
        text.to_string()
    }
}

fn location(cli: &Cli) -> Result<Location, Failure> {
    Location::resolve(cli.workdir.as_deref())
        .map_err(|e| Failure::usage(sanitize::line(&e.to_string())))
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> CmdResult {
    check_global_flags(&cli)?;
    match &cli.command {
        Some(Command::Demo { keep }) => demo(&cli, *keep),
        Some(Command::Show { id, json }) => show::run(&location(&cli)?, id, *json),
        Some(Command::Export {
            id,
            format,
            output,
            force,
            with_files,
        }) => transfer::export(
            &location(&cli)?,
            id,
            *format,
            output.as_deref(),
            (*force, *with_files),
        ),
        Some(Command::Import {
            paths,
            new_id,
            max_size,
            from,
            all_workspaces,
        }) => match from {
            Some(tool) => import_from::run(&location(&cli)?, *tool, paths, *all_workspaces),
            None => match paths.as_slice() {
                [file] => transfer::import(&location(&cli)?, file, *new_id, *max_size),
                [] => Err(Failure::usage(
                    "import needs a session file, or --from claude-code|codex (see neocode import --help)",
                )),
                _ => Err(Failure::usage(
                    "import reads one session file at a time (several paths need --from)",
                )),
            },
        },
        Some(Command::Fork { id, at }) => manage::fork(&location(&cli)?, id, *at),
        Some(Command::Rename { id, title }) => manage::rename(&location(&cli)?, id, title),
        Some(Command::Rewind(args)) => rewind::run(&location(&cli)?, args),
        Some(Command::Delete { id, yes }) => manage::delete(&location(&cli)?, id, *yes),
        Some(Command::Search { query, json, limit }) => {
            search::run(&location(&cli)?, query, *json, *limit)
        }
        Some(Command::Completions { shell }) => completions(*shell),
        Some(Command::Mcp(args::McpCommand::List { json })) => mcp::list(&location(&cli)?, *json),
        Some(Command::Mcp(args::McpCommand::Login { name, paste })) => {
            mcp::login(&location(&cli)?, name, *paste)
        }
        Some(Command::Mcp(args::McpCommand::Logout { name })) => {
            mcp::logout(&location(&cli)?, name)
        }
        Some(Command::Lsp(args::LspCommand::List { start, json })) => {
            lsp::list(&location(&cli)?, *start, *json)
        }
        Some(Command::Skill(args::SkillCommand::List { session, json })) => {
            skill::list(&location(&cli)?, session.as_deref(), *json)
        }
        Some(Command::Agents(args::AgentsCommand::List { json })) => {
            agents::list(&location(&cli)?, *json)
        }
        Some(Command::Worktree(args::WorktreeCommand::List { json })) => {
            worktree::list(&location(&cli)?, *json)
        }
        Some(Command::Worktree(args::WorktreeCommand::Prune { all })) => {
            worktree::prune(&location(&cli)?, *all)
        }
        Some(Command::Skill(args::SkillCommand::Activate { id, name })) => {
            skill::activate(&location(&cli)?, id, name)
        }
        Some(Command::Plugin(c)) => plugin::run(&location(&cli)?, c),
        Some(Command::Rules(c)) => rules::run(&location(&cli)?, c),
        Some(Command::Hooks(c)) => hooks::run(&location(&cli)?, c),
        Some(Command::Run(args)) => run_cmd::run(&location(&cli)?, args),
        Some(Command::Trust(args)) => trust::run(&location(&cli)?, args),
        Some(Command::Compact { id }) => run_cmd::compact(&location(&cli)?, id),
        Some(Command::Doctor { recover, no_probe }) => {
            doctor::run(&location(&cli)?, *recover, !*no_probe)
        }
        Some(Command::Bridge {
            dialect,
            max_line_mib,
        }) => bridge_cmd(&cli, *dialect, *max_line_mib),
        Some(Command::Acp) => crate::acp::serve()
            .map_err(|e| Failure::runtime(sanitize::line(&e.to_string()).into_owned())),
        None if cli.list => list_sessions(&cli),
        None => open_tui(&cli),
    }
}

/// `--trust-workspace` (recorded before any command reads the workspace) and the flags that
/// go with no subcommand.
fn check_global_flags(cli: &Cli) -> CmdResult {
    if cli.trust_workspace && !matches!(&cli.command, Some(Command::Trust(t)) if t.revoke) {
        let loc = location(cli)?;
        crate::runtime::trust::trust(&loc.home, loc.root()).map_err(|e| {
            Failure::runtime(format!(
                "cannot record that this workspace is trusted: {}",
                sanitize::line(&e.to_string())
            ))
        })?;
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
    Ok(())
}

/// `neocode demo [--keep]`: the TUI on a throwaway workspace.
fn demo(cli: &Cli, keep: bool) -> CmdResult {
    if cli.workdir.is_some() {
        return Err(Failure::usage(
            "demo makes its own throwaway workspace; --workdir does not apply to it",
        ));
    }
    let demo = tui::demo::prepare(keep)?;
    let run = tui::run(TuiOptions {
        location: demo.location.clone(),
        resume: None,
        sessions: None,
        demo: true,
    });
    if keep {
        // Said even when the TUI could not start: the folder is there either way.
        let mut out = out::Out::stdout();
        for line in demo_kept(&demo) {
            out.line(&line)?;
        }
        out.finish()?;
    }
    run?;
    Ok(())
}

/// `neocode --list`: this workspace's sessions, or every workspace's.
fn list_sessions(cli: &Cli) -> CmdResult {
    let opts = list::ListOptions {
        json: cli.json,
        limit: cli.limit.unwrap_or(0),
        branch: cli.branch.clone(),
    };
    if cli.all_workspaces {
        let home = crate::session::home_dir()
            .map_err(|e| Failure::usage(sanitize::line(&e.to_string())))?;
        list::run_all(&home, opts)
    } else {
        list::run(&location(cli)?, opts)
    }
}

/// `neocode` (the TUI), `--resume ID` or `--continue`.
fn open_tui(cli: &Cli) -> CmdResult {
    let loc = location(cli)?;
    // The store opened to resolve the id is the one the TUI uses: opened once.
    let key = match &cli.resume {
        Some(key) => Some(key.as_str()),
        None => cli.r#continue.then_some("last"),
    };
    let (sessions, resume) = match key {
        Some(key) => {
            let (sessions, id) = open_for_id(&loc, key).map_err(|f| match key {
                "last" => no_sessions_yet(&loc, f),
                _ => f,
            })?;
            (Some(sessions), Some(id))
        }
        None => (None, None),
    };
    let (sessions, worktree) = if cli.worktree {
        tui_worktree(&loc)?
    } else {
        (sessions, None)
    };
    // A kept demo reopened keeps its demo model.
    let demo = tui::demo::is_demo_home(&loc.home);
    let ran = tui::run(TuiOptions {
        location: loc,
        resume,
        sessions,
        demo,
    });
    if let Some(wt) = &worktree {
        run_cmd::report_worktree(wt, None);
    }
    ran?;
    Ok(())
}

/// `neocode --worktree`: the TUI's sessions in a fresh worktree, said on stderr before the
/// screen opens (refused first when there is no terminal, so no worktree is made for nothing).
fn tui_worktree(
    loc: &Location,
) -> Result<
    (
        Option<Sessions>,
        Option<crate::runtime::tools::worktree::Worktree>,
    ),
    Failure,
> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(Failure::usage(
            "--worktree opens the full-screen TUI, which needs a terminal; for scripts use `neocode run --worktree`",
        ));
    }
    let (sessions, wt) = run_cmd::enter_worktree(Sessions::open(loc)?, true)?;
    if let Some(wt) = &wt {
        eprintln!(
            "neocode: new sessions work in the worktree {} on branch {}",
            sanitize::line(&wt.path.display().to_string()),
            sanitize::line(&wt.branch)
        );
    }
    Ok((Some(sessions), wt))
}

/// `neocode __sandbox-exec`: confines itself, then execs the command (returns only when it
/// did not).
fn sandbox_exec(argv: impl Iterator<Item = std::ffi::OsString>) -> ExitCode {
    let args = match sandbox::HelperArgs::parse(argv) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("neocode sandbox: {e}");
            return ExitCode::from(2);
        }
    };
    let code = sandbox::helper_main(args);
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// Where a kept demo is and the command that reopens it.
fn demo_kept(demo: &tui::demo::Demo) -> Vec<String> {
    let home = sanitize::line(&demo.location.home.to_string_lossy()).into_owned();
    let ws = sanitize::line(&demo.location.root().to_string_lossy()).into_owned();
    vec![
        format!(
            "The demo is kept in {}",
            sanitize::line(&demo.dir.to_string_lossy())
        ),
        format!("Reopen it with: NEOCODE_HOME={home} neocode --workdir {ws}"),
    ]
}

/// `--continue` where nothing resolves because the workspace has no session at all.
fn no_sessions_yet(loc: &Location, f: Failure) -> Failure {
    let empty = match Sessions::open_existing(loc) {
        Ok(Some(sessions)) => sessions.resolve("last").is_err(),
        Ok(None) => true,
        Err(_) => false,
    };
    if empty {
        Failure::usage(format!(
            "there are no sessions in {} yet; run `neocode` to start one",
            sanitize::line(&loc.root().to_string_lossy())
        ))
    } else {
        f
    }
}

fn cmd_name(cmd: &Command) -> &'static str {
    match cmd {
        Command::Show { .. } => "show",
        Command::Export { .. } => "export",
        Command::Import { .. } => "import",
        Command::Fork { .. } => "fork",
        Command::Rename { .. } => "rename",
        Command::Rewind(_) => "rewind",
        Command::Delete { .. } => "delete",
        Command::Search { .. } => "search",
        Command::Completions { .. } => "completions",
        Command::Demo { .. } => "demo",
        Command::Mcp(_) => "mcp",
        Command::Lsp(_) => "lsp",
        Command::Skill(_) => "skill",
        Command::Agents(_) => "agents",
        Command::Worktree(_) => "worktree",
        Command::Plugin(_) => "plugin",
        Command::Rules(_) => "rules",
        Command::Hooks(_) => "hooks",
        Command::Run(_) => "run",
        Command::Trust(_) => "trust",
        Command::Compact { .. } => "compact",
        Command::Doctor { .. } => "doctor",
        Command::Bridge { .. } => "bridge",
        Command::Acp => "acp",
    }
}

/// `neocode bridge`: serves until stdin ends; only a closed stdout is a failure.
fn bridge_cmd(cli: &Cli, dialect: args::BridgeDialect, max_line_mib: u64) -> CmdResult {
    let home =
        crate::session::home_dir().map_err(|e| Failure::usage(sanitize::line(&e.to_string())))?;
    let opts = crate::bridge::BridgeOptions {
        home: home.clone(),
        workdir: cli.workdir.clone(),
        runner: crate::bridge::agent_runner(home),
        max_line_bytes: usize::try_from(max_line_mib.saturating_mul(1 << 20)).unwrap_or(usize::MAX),
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let dialect = match dialect {
        args::BridgeDialect::Neocode => crate::bridge::Dialect::Native,
        args::BridgeDialect::Nonoka => crate::bridge::Dialect::Nonoka,
    };
    match crate::bridge::serve_dialect(opts, dialect, std::io::stdin(), &mut out) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(Failure::quiet()),
        Err(e) => Err(Failure::runtime(format!("writing events: {e}"))),
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
