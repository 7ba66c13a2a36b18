//! The flags of `neocode run` and the parsers of their values.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::cli::value::ValueError;
use crate::runtime::config::{Api, ApprovalPolicy};

/// Arguments of `neocode run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The prompt; `-` reads it from standard input. May be left out with --resume or
    /// --continue to answer what is pending (interrupted tool calls).
    pub prompt: Option<String>,
    /// Continue this session (full id, unique prefix, or `last`).
    #[arg(long, value_name = "ID", conflicts_with = "continue")]
    pub resume: Option<String>,
    /// Continue the most recently active session.
    #[arg(long = "continue")]
    pub r#continue: bool,
    /// Print one JSON event per line on stdout instead of text (the bridge's turn events,
    /// as before `--output-format`; see docs/headless.md).
    #[arg(long, conflicts_with = "output_format")]
    pub json: bool,
    /// What stdout carries: `text` (the answer as it streams), `json` (only the final result
    /// object), `stream-json` (one versioned JSON event per line, ending with the result).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub output_format: Option<OutputFormat>,
    /// Write the final answer to FILE as well.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Nothing on stderr but a failure's own lines (no tool activity, no warnings).
    #[arg(short, long)]
    pub quiet: bool,
    /// Read the prompt from FILE (piped standard input is added after it).
    #[arg(long, value_name = "FILE", conflicts_with = "prompt")]
    pub prompt_file: Option<PathBuf>,
    /// The final answer must be a JSON document valid against this JSON Schema: validated,
    /// asked once to fix, else exit 1 with the validation error.
    #[arg(long, value_name = "FILE", conflicts_with = "plan")]
    pub output_schema: Option<PathBuf>,
    /// Approval policy for this run: ask, auto-edit, never-ask.
    #[arg(long, value_name = "POLICY", value_parser = parse_policy)]
    pub approve: Option<ApprovalPolicy>,
    /// Model for this run only (overrides the session's own model, NEOCODE_MODEL and the
    /// config; a session switched with /model keeps its model otherwise).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// OpenAI-compatible base URL ending in /v1 (overrides NEOCODE_BASE_URL and the config).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Wire API for this run: chat, responses, anthropic (overrides NEOCODE_API and the
    /// config).
    #[arg(long, value_name = "API", value_parser = parse_api)]
    pub api: Option<Api>,
    /// A `[providers.NAME]` profile of config.toml for this run (overrides NEOCODE_PROVIDER).
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// Limit of model calls in the session (sets the stored limit).
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u64>,
    /// Limit of tool calls in the session.
    #[arg(long, value_name = "N")]
    pub max_tool_calls: Option<u64>,
    /// Limit of input tokens in the session.
    #[arg(long, value_name = "N")]
    pub max_input_tokens: Option<u64>,
    /// Limit of output tokens in the session.
    #[arg(long, value_name = "N")]
    pub max_output_tokens: Option<u64>,
    /// Wall-clock limit in seconds since the session's runtime started.
    #[arg(long, value_name = "SECS")]
    pub max_wall_secs: Option<u64>,
    /// Spending limit of the session in dollars (model calls with a price; see `[prices]`).
    #[arg(long, value_name = "USD", value_parser = parse_cost)]
    pub max_cost: Option<f64>,
    /// Plan run: the model drafts a plan for the prompt (the goal), you approve it, its steps
    /// run layer by layer. With --resume, a plan run goes on where it stopped.
    #[arg(long)]
    pub plan: bool,
    /// Plan run: run the drafted plan without asking.
    #[arg(long)]
    pub yes: bool,
    /// Plan run: steps of one layer that may run at once.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub width: usize,
    /// Plan run: run failed steps again on resume (skipped and interrupted ones always are).
    #[arg(long)]
    pub retry_failed: bool,
    /// Queue this message into the session (--resume or --continue) instead of running a
    /// turn: the process running the session sends it after its turn (the TUI, or the next
    /// resume).
    #[arg(long, value_name = "TEXT", conflicts_with_all = ["prompt", "plan"])]
    pub queue: Option<String>,
    /// With --queue: send it at the running turn's next tool boundary instead (steer).
    #[arg(long, requires = "queue")]
    pub steer: bool,
    /// Run in a fresh git worktree of the workspace's HEAD (uncommitted changes are not in
    /// it) on a branch of its own; at the end its changes are committed on that branch, and
    /// the branch and the worktree's folder are printed on stderr.
    #[arg(long, conflicts_with_all = ["resume", "continue", "plan", "queue"])]
    pub worktree: bool,
}

/// What `neocode run` prints on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// The answer as it streams.
    Text,
    /// Only the final result object.
    Json,
    /// One JSON event per line, ending with the result object.
    StreamJson,
}

fn parse_cost(s: &str) -> Result<f64, ValueError> {
    match s.trim().trim_start_matches('$').parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(ValueError::NotDollars(s.to_string())),
    }
}

fn parse_api(s: &str) -> Result<Api, ValueError> {
    Api::parse(s).ok_or_else(|| ValueError::NotApi(s.to_string()))
}

fn parse_policy(s: &str) -> Result<ApprovalPolicy, ValueError> {
    ApprovalPolicy::parse(s).ok_or_else(|| ValueError::NotPolicy(s.to_string()))
}

/// Help text of `neocode run`.
pub(crate) const RUN_EXAMPLES: &str = "\
Examples:
  neocode run \"explain src/main.rs\"
  git diff | neocode run -                      prompt from standard input
  git diff | neocode run \"review this\"           piped text added to the prompt
  neocode run --prompt-file task.md -o answer.md --quiet
  neocode run --output-format stream-json \"fix the build\" | jq -c .
  neocode run --output-format json --output-schema schema.json \"list the TODOs\"
  neocode run --continue \"now add a test\"
  neocode run --resume 0192f3a1 --max-turns 40   raise a limit and go on
  neocode run --json --approve auto-edit \"fix the typo in README.md\"
  neocode run --resume 0192f3a1 --queue \"then add a test\"   queue into a running session

Settings: NEOCODE_API, NEOCODE_BASE_URL, NEOCODE_MODEL, NEOCODE_API_KEY (or OPENAI_API_KEY /
ANTHROPIC_API_KEY), <home>/config.toml.
Exit codes: 0 done, 1 provider or tool failure (or an answer invalid against --output-schema),
2 bad usage, 3 a limit stopped the turn, 130 cancelled. See docs/headless.md.";
