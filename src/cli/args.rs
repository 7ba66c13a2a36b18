//! clap definitions of the command line.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use super::value::at_least_one;

const MAIN_EXAMPLES: &str = "\
Examples:
  neocode                           open the full-screen TUI for this workspace
  neocode --list                    print this workspace's sessions, newest first
  neocode --list --json --limit 5   the five most recent sessions as JSON
  neocode --list --all-workspaces   sessions of every workspace under the home
  neocode --resume 0192f3a1         continue a session in the TUI (id prefix)
  neocode --continue                continue the most recently active session
  neocode --workdir ~/src/app --list

<ID> is a full session id, a unique prefix of one, or `last`.
Exit codes: 0 ok, 1 runtime failure, 2 bad usage or unknown/ambiguous id.";

/// A terminal coding agent whose sessions are first-class.
#[derive(Debug, Parser)]
#[command(
    name = "neocode",
    version,
    about,
    long_about = None,
    after_help = MAIN_EXAMPLES
)]
pub struct Cli {
    /// Act on the workspace of this directory instead of the current one.
    #[arg(long, global = true, value_name = "DIR")]
    pub workdir: Option<PathBuf>,

    /// Trust this workspace as it is now: its hooks, rules and skills are used (`neocode
    /// trust` shows them), and commands may run although it is / or your home folder.
    /// Remembered under neocode's home with a hash of each file; a change asks again.
    #[arg(long, global = true)]
    pub trust_workspace: bool,

    /// Open the TUI inside this session (full id, unique prefix, or `last`).
    #[arg(long, value_name = "ID", conflicts_with_all = ["continue", "list"])]
    pub resume: Option<String>,

    /// Open the TUI inside the most recently active session.
    #[arg(long = "continue", conflicts_with = "list")]
    pub r#continue: bool,

    /// Open the TUI with a fresh git worktree of the workspace's HEAD (on a branch
    /// `neocode/run-…` under `.neocode/worktrees/`) as its workspace: its new sessions work
    /// there. Said on stderr before the screen opens; at exit its changes are committed on
    /// the branch and the branch and folder printed.
    #[arg(long, conflicts_with_all = ["resume", "continue", "list"])]
    pub worktree: bool,

    /// Print the workspace's sessions, newest activity first, and exit.
    #[arg(long)]
    pub list: bool,

    /// With --list: print a stable JSON array instead of a table.
    #[arg(long, requires = "list")]
    pub json: bool,

    /// With --list: at most N sessions (per workspace).
    #[arg(long, value_name = "N", requires = "list", value_parser = at_least_one)]
    pub limit: Option<usize>,

    /// With --list: only the sessions started on this git branch.
    #[arg(long, value_name = "NAME", requires = "list")]
    pub branch: Option<String>,

    /// With --list: every workspace under the home, each with its root path.
    #[arg(long, requires = "list")]
    pub all_workspaces: bool,

    /// The command; none opens the full-screen TUI.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Formats of `export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// The lossless session file (re-importable).
    Json,
    /// A readable transcript.
    Markdown,
}

/// Tools whose history `import --from` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImportSource {
    /// Claude Code transcripts (~/.claude/projects).
    ClaudeCode,
    /// Codex CLI rollouts (~/.codex/sessions).
    Codex,
}

/// Wire formats of `bridge`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BridgeDialect {
    /// neocode's bridge protocol, version 1.
    Neocode,
    /// nonoka's NDJSON bridge, as `nonoka-opencode-provider` speaks it.
    Nonoka,
}

/// One-shot commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show one session: header, tokens, plan, assets and the last messages.
    #[command(after_help = "Examples:\n  neocode show last\n  neocode show 0192f3a1 --json")]
    Show {
        /// Session: full id, unique prefix, or `last`.
        id: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Write one session as a session file (JSON) or a markdown transcript.
    #[command(
        after_help = "Examples:\n  neocode export last -o session.json\n  neocode export 0192f3a1 --format markdown > transcript.md"
    )]
    Export {
        /// Session: full id, unique prefix, or `last`.
        id: String,
        /// Output format.
        #[arg(long, value_enum, default_value = "json")]
        format: ExportFormat,
        /// Write to this file instead of standard output (markdown: images go next to it).
        /// The file is created with your umask (0644 under the usual 022), unlike neocode's
        /// own data, which is private (0600): it is yours to share.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Replace the output file if it exists.
        #[arg(long, requires = "output")]
        force: bool,
        /// Also carry the file changes and the snapshots of the files the session's tools
        /// changed (JSON only), so `neocode rewind` works after `import`.
        #[arg(long)]
        with_files: bool,
    },
    /// Read a session file into this workspace and print the session's id; with --from,
    /// import Claude Code or Codex history.
    #[command(
        after_help = "Examples:\n  neocode import session.json\n  neocode import --new-id - < session.json\n  neocode import --from claude-code            this workspace's Claude Code sessions\n  neocode import --from codex ~/old/rollouts   those files or folders\n  neocode import --from codex --all-workspaces every session, each into its own workspace\n\nSessions are found under $CLAUDE_CONFIG_DIR (default ~/.claude) and $CODEX_HOME\n(default ~/.codex), which are only read. Re-running updates sessions that grew and skips\nunchanged ones."
    )]
    Import {
        /// Session file, or `-` for standard input; with --from, transcript files or folders
        /// (none: discover this workspace's sessions).
        #[arg(value_name = "PATH")]
        paths: Vec<PathBuf>,
        /// Give the imported session a fresh id (to import a copy of an existing one).
        #[arg(long, conflicts_with = "from")]
        new_id: bool,
        /// Largest session file accepted, in MiB (images and `--with-files` snapshots are
        /// inside it).
        #[arg(long, value_name = "MIB", default_value_t = 256, conflicts_with = "from", value_parser = clap::value_parser!(u64).range(1..=65536))]
        max_size: u64,
        /// Import another tool's history instead of a session file.
        #[arg(long, value_enum, value_name = "TOOL")]
        from: Option<ImportSource>,
        /// With --from: file each session into the workspace of its own directory.
        #[arg(long, requires = "from")]
        all_workspaces: bool,
    },
    /// Copy a session (up to a message) into a new session and print the new id.
    #[command(after_help = "Examples:\n  neocode fork last\n  neocode fork 0192f3a1 --at 12")]
    Fork {
        /// Session: full id, unique prefix, or `last`.
        id: String,
        /// Keep messages up to and including this seq (default: all).
        #[arg(long, value_name = "SEQ")]
        at: Option<i64>,
    },
    /// Go back to a user message: a new session forked just before it, and the files the
    /// session changed from then on put back as they were (the original stays as it is).
    #[command(after_help = super::rewind::REWIND_HELP)]
    Rewind(super::rewind::RewindArgs),
    /// Give a session a new title.
    #[command(after_help = "Example:\n  neocode rename last \"Fix the flaky login test\"")]
    Rename {
        /// Session: full id, unique prefix, or `last`.
        id: String,
        /// The new title.
        title: String,
    },
    /// Delete a session and its assets (asks first; --yes when not on a terminal).
    #[command(after_help = "Examples:\n  neocode delete 0192f3a1\n  neocode delete last --yes")]
    Delete {
        /// Session: full id, unique prefix, or `last`.
        id: String,
        /// Do not ask.
        #[arg(short, long)]
        yes: bool,
    },
    /// Full-text search of the workspace's messages.
    #[command(
        after_help = "Examples:\n  neocode search \"borrow checker\"\n  neocode search migration --json --limit 50"
    )]
    Search {
        /// Words to find.
        query: String,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// At most N matches.
        #[arg(long, value_name = "N", default_value_t = 20, value_parser = at_least_one)]
        limit: usize,
    },
    /// Print a shell completion script.
    #[command(
        after_help = "Examples:\n  neocode completions bash > ~/.local/share/bash-completion/completions/neocode\n  neocode completions zsh > ~/.zfunc/_neocode"
    )]
    Completions {
        /// Shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Serve other front ends: JSON requests on stdin, events on stdout (docs/bridge.md).
    #[command(
        after_help = "Examples:\n  echo '{\"type\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}' | neocode bridge\n  cargo run --example bridge_client -- \"explain src/main.rs\"\n  neocode bridge --dialect nonoka      as nonoka's OpenCode provider's serverCommand"
    )]
    Bridge {
        /// The wire format: neocode's own (docs/bridge.md) or nonoka's NDJSON bridge.
        #[arg(long, value_enum, default_value = "neocode")]
        dialect: BridgeDialect,
        /// Longest request line accepted, in MiB; a longer line is skipped with a
        /// `line_too_long` error.
        #[arg(long, value_name = "MIB", default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=1024))]
        max_line_mib: u64,
    },
    /// Serve editors: an Agent Client Protocol agent on stdin/stdout (Zed, JetBrains, Neovim,
    /// Emacs); see the README's "Editors (ACP)".
    #[command(
        after_help = "Example (Zed settings.json):\n  \"agent_servers\": { \"neocode\": { \"command\": \"neocode\", \"args\": [\"acp\"] } }"
    )]
    Acp,
    /// MCP servers of `<home>/config.toml` (`[mcp_servers.NAME]`).
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Language servers (`[lsp]`): which are installed, and with `--start` whether they start.
    #[command(subcommand)]
    Lsp(LspCommand),
    /// Skills of `<workspace>/.neocode/skills/` and `<home>/skills/` (the TUI's `/skill`).
    #[command(subcommand)]
    Skill(SkillCommand),
    /// Agent profiles the model's `task` tool runs (`.neocode/agents/`, `.claude/agents/`,
    /// `<home>/agents/`).
    #[command(subcommand)]
    Agents(AgentsCommand),
    /// Git worktrees neocode made here (sub-agents, `run --worktree`, plan steps): list them
    /// with their session and state; prune the stale ones a crash left behind.
    #[command(subcommand)]
    Worktree(WorktreeCommand),
    /// Claude Code plugins in `<home>/plugins/`: add (from a folder or a git URL), list,
    /// enable, disable, remove.
    #[command(subcommand)]
    Plugin(super::plugin::PluginCommand),
    /// Permission rules: what runs without asking (docs/RULES.md).
    #[command(subcommand)]
    Rules(super::rules::RulesCommand),
    /// Hooks: your commands around session events, in Claude Code's format (docs/RULES.md).
    #[command(subcommand)]
    Hooks(super::hooks::HooksCommand),
    /// What this workspace declares (hooks, rules, skills, other settings files) and whether
    /// you trust it; --yes trusts it, --revoke forgets it.
    Trust(super::trust::TrustArgs),
    /// Run one agent turn without the TUI: answer text on stdout, tool activity on stderr.
    #[command(after_help = super::run::RUN_EXAMPLES)]
    Run(Box<super::run::RunArgs>),
    /// Check the session databases (SQLite integrity check), show the provider settings,
    /// probe the configured server (streaming usage, tool calls, parallel calls, reasoning
    /// round trip, prompt caching, its window) and what confines commands; exit 1 when a
    /// database is damaged or the probe fails.
    #[command(
        after_help = "Examples:\n  neocode doctor\n  neocode doctor --no-probe  skip the three small model calls of the provider probe\n  neocode doctor --recover   write a recovered copy of a damaged database (the damaged file is kept beside it)"
    )]
    Doctor {
        /// Recover each damaged database: a copy through VACUUM INTO (or a row-by-row
        /// salvage) replaces it; the damaged file is kept as session.db.damaged-<time>.
        // The doc comment is the --help text, where `<time>` reads as meant.
        #[allow(rustdoc::invalid_html_tags)]
        #[arg(long)]
        recover: bool,
        /// Do not probe the configured provider (no model calls).
        #[arg(long)]
        no_probe: bool,
    },
    /// Summarise a session's transcript now: the summary becomes its task state and the
    /// transcript becomes summary + recent messages (needs a configured provider).
    #[command(after_help = "Example:\n  neocode compact last")]
    Compact {
        /// Session: full id, unique prefix, or `last`.
        id: String,
    },
    /// Open the TUI on a throwaway workspace filled with demo sessions (its own folder under
    /// the system temp folder; --workdir does not apply).
    #[command(after_help = "Examples:\n  neocode demo\n  neocode demo --keep")]
    Demo {
        /// Keep the demo folder on disk afterwards and print how to reopen it.
        #[arg(long)]
        keep: bool,
    },
}

/// `neocode mcp ...`.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Start every configured server, then print each one's state and tools.
    #[command(after_help = "Examples:\n  neocode mcp list\n  neocode mcp list --json")]
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Log in to an OAuth server (`oauth = true`): opens the browser (or prints the address
    /// over SSH) and receives the redirect on 127.0.0.1; tokens go to
    /// `<home>/mcp-tokens/NAME.json`.
    #[command(
        after_help = "Examples:\n  neocode mcp login linear\n  neocode mcp login linear --paste   # paste the address the browser ends on"
    )]
    Login {
        /// The server's table name (`[mcp_servers.NAME]`).
        name: String,
        /// Print the address and read the redirected address (or the code) from stdin.
        #[arg(long)]
        paste: bool,
    },
    /// Delete the tokens `login` saved for a server.
    #[command(after_help = "Example:\n  neocode mcp logout linear")]
    Logout {
        /// The server's table name.
        name: String,
    },
}

/// `neocode lsp ...`.
#[derive(Debug, Subcommand)]
pub enum LspCommand {
    /// Every configured language server: the files it serves, its command, and whether it
    /// is installed (with `--start`: started on the workspace, ready or why not).
    #[command(after_help = "Examples:\n  neocode lsp list\n  neocode lsp list --start --json")]
    List {
        /// Start each installed server on the workspace and report its state.
        #[arg(long)]
        start: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// `neocode agents ...`.
#[derive(Debug, Subcommand)]
pub enum AgentsCommand {
    /// The profiles found, where each comes from and whether it is used.
    #[command(after_help = "Examples:\n  neocode agents list\n  neocode agents list --json")]
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// `neocode worktree ...`.
#[derive(Debug, Subcommand)]
pub enum WorktreeCommand {
    /// Each worktree: its state (running, or stale when its session's process is gone), branch,
    /// session and folder.
    #[command(after_help = "Examples:\n  neocode worktree list\n  neocode worktree list --json")]
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Removes the stale worktrees whose session completed (their changes committed on their
    /// branch first; branches stay); keeps the others and says why.
    #[command(after_help = "Examples:\n  neocode worktree prune\n  neocode worktree prune --all")]
    Prune {
        /// Also remove stale worktrees whose session failed, was cancelled or did not finish.
        #[arg(long)]
        all: bool,
    },
}

/// `neocode skill ...`.
#[derive(Debug, Subcommand)]
pub enum SkillCommand {
    /// The skills found, with a session's active ones marked; skipped files are named.
    #[command(
        after_help = "Examples:\n  neocode skill list\n  neocode skill list --session last --json"
    )]
    List {
        /// Mark the skills active in this session (id, prefix, or `last`).
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Activate a skill in a session: its body joins the context of the session's next turns.
    #[command(after_help = "Examples:\n  neocode skill activate last deploy")]
    Activate {
        /// Session: full id, unique prefix, or `last`.
        id: String,
        /// The skill's name.
        name: String,
    },
}

#[cfg(test)]
mod value_tests {
    use super::*;

    #[test]
    fn refused_values_keep_their_words() {
        assert_eq!(
            at_least_one("0").unwrap_err().to_string(),
            "must be at least 1"
        );
        assert_eq!(
            at_least_one("x").unwrap_err().to_string(),
            "'x' is not a whole number"
        );
        assert_eq!(at_least_one("3").unwrap(), 3);
        let e = Cli::try_parse_from(["neocode", "--list", "--limit", "0"]).unwrap_err();
        assert!(e.to_string().contains("must be at least 1"), "{e}");
    }
}
