//! `neocode run`: one agent turn without the TUI. Streamed text to stdout, tool activity as
//! one-line summaries on stderr; `--json` prints the event lines the bridge uses. SIGINT
//! cancels. Exit 0 done, 1 provider or tool failure, 2 bad usage, 3 a limit stopped the turn,
//! 130 cancelled.
//!
//! `neocode compact`: summarise a session's transcript now.

use std::io::{BufRead, IsTerminal, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use clap::Args;

use super::Failure;
use super::args::ValueError;
use super::out::Out;
use crate::runtime::agent::{
    Agent, Commands, FailCode, FinishReason, Lease, LeaseError, Op, OpError, OpOutcome, Permission,
    PlanRequest, RuleScope, Sink, StartCode, StartError, Target, TurnCommand, TurnEvent,
    TurnRequest, TurnSink, plan_goal,
};
use crate::runtime::config::{Api, ApprovalPolicy, Overrides, ProviderStatus, Settings};
use crate::runtime::policy::approval;
use crate::runtime::tools;
use crate::runtime::{Location, Sessions};
use crate::sanitize;
use crate::session::RuntimeLimits;

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
    /// Print one JSON event per line on stdout instead of text.
    #[arg(long)]
    pub json: bool,
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
pub const RUN_EXAMPLES: &str = "\
Examples:
  neocode run \"explain src/main.rs\"
  git diff | neocode run -                      prompt from standard input
  neocode run --continue \"now add a test\"
  neocode run --resume 0192f3a1 --max-turns 40   raise a limit and go on
  neocode run --json --approve auto-edit \"fix the typo in README.md\"
  neocode run --resume 0192f3a1 --queue \"then add a test\"   queue into a running session

Settings: NEOCODE_API, NEOCODE_BASE_URL, NEOCODE_MODEL, NEOCODE_API_KEY (or OPENAI_API_KEY /
ANTHROPIC_API_KEY), <home>/config.toml.
Exit codes: 0 done, 1 provider or tool failure, 2 bad usage, 3 a limit stopped the turn, 130 cancelled.";

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

fn install_sigint() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(
            libc::SIGINT,
            on_sigint as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
}

fn restore_sigint() {
    // SAFETY: resetting a signal's disposition to the default.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
    }
}

fn op_failure(e: OpError) -> Failure {
    match e {
        OpError::Start(e) => start_failure(e),
        OpError::Config(_) | OpError::NoSession => {
            Failure::usage(sanitize::line(&e.to_string()).into_owned())
        }
        _ => Failure::runtime(sanitize::line(&e.to_string()).into_owned()),
    }
}

fn start_failure(e: StartError) -> Failure {
    let msg = sanitize::line(&e.message).into_owned();
    match e.code {
        StartCode::Config | StartCode::Usage | StartCode::NotFound => Failure::usage(msg),
        _ => Failure::runtime(msg),
    }
}

fn read_prompt(p: Option<&str>) -> Result<Option<String>, Failure> {
    match p {
        None => Ok(None),
        Some("-") => {
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s).map_err(|e| {
                Failure::usage(format!("cannot read the prompt from standard input: {e}"))
            })?;
            if s.trim().is_empty() {
                return Err(Failure::usage("the prompt on standard input is empty"));
            }
            Ok(Some(s))
        }
        Some(s) if s.trim().is_empty() => Err(Failure::usage("the prompt is empty")),
        Some(s) => Ok(Some(s.to_string())),
    }
}

/// `neocode run --resume ID --queue TEXT`: the message joins the session's queue; the
/// process running the session (its lease holder) sends it. Says which process that is.
fn enqueue(loc: &Location, args: &RunArgs, text: &str) -> Result<(), Failure> {
    let key = match (&args.resume, args.r#continue) {
        (Some(id), _) => id.clone(),
        (None, true) => "last".to_string(),
        (None, false) => {
            return Err(Failure::usage(
                "--queue needs --resume ID or --continue: it queues into an existing session",
            ));
        }
    };
    if text.trim().is_empty() {
        return Err(Failure::usage("the message to queue is empty"));
    }
    let (sessions, id) = super::open_for_id(loc, &key)?;
    let q = sessions.enqueue(&id, text, args.steer)?;
    let short = &id[..id.len().min(8)];
    let when = if args.steer {
        "at its turn's next tool boundary"
    } else {
        "when its turn ends"
    };
    let line = match Lease::acquire(sessions.data_dir(), &id) {
        Err(LeaseError::Busy { pid }) => {
            let who = pid.map_or("another process".to_string(), |p| format!("pid {p}"));
            format!(
                "queued #{} in session {short}: {who} runs it and sends it {when}",
                q.id
            )
        }
        _ => format!(
            "queued #{} in session {short}: nothing runs it now; it is sent when the session is next opened (neocode --resume {short})",
            q.id
        ),
    };
    let mut out = Out::stdout();
    out.line(&line)?;
    out.finish()
}

/// Runs `neocode run`.
#[expect(clippy::too_many_lines)]
pub fn run(loc: &Location, args: &RunArgs) -> Result<(), Failure> {
    if let Some(text) = &args.queue {
        return enqueue(loc, args, text);
    }
    let overrides = Overrides {
        model: args.model.clone(),
        base_url: args.base_url.clone(),
        approval: args.approve,
        api: args.api,
        provider: args.provider.clone(),
    };
    let settings = Settings::load(&loc.home, &overrides).map_err(Failure::usage)?;
    let target = match (&args.resume, args.r#continue) {
        (Some(id), _) => Target::Resume(id.clone()),
        (None, true) => Target::Resume("last".into()),
        (None, false) => Target::New,
    };
    // A resumed session that keeps a [providers.NAME] profile runs on it: the agent decides
    // when it opens the session.
    if let (ProviderStatus::Missing(m), Target::New) = (settings.provider_status(), &target) {
        return Err(Failure::usage(m));
    }
    let prompt = read_prompt(args.prompt.as_deref())?;
    if prompt.is_none() && target == Target::New {
        return Err(Failure::usage(
            "a prompt is needed (or --resume/--continue to answer what is pending); see neocode run --help",
        ));
    }
    let sessions = Sessions::open(loc)?;
    let limits = RuntimeLimits {
        max_turns: args.max_turns,
        max_tool_calls: args.max_tool_calls,
        max_input_tokens: args.max_input_tokens,
        max_output_tokens: args.max_output_tokens,
        max_wall_secs: args.max_wall_secs,
        max_cost_usd: args.max_cost,
    };
    // Resuming a plan run without a new prompt goes on with the plan (seed 000 §5: the
    // session's plan decides which executor resumes it).
    let plan_run = args.plan
        || match (&target, &prompt) {
            (Target::Resume(key), None) => sessions
                .resolve(key)
                .and_then(|id| sessions.load(&id))
                .is_ok_and(|s| plan_goal(&s).is_some()),
            _ => false,
        };
    if plan_run
        && prompt.is_none()
        && let Target::Resume(key) = &target
        && let Some((id, n)) = finished_plan(&sessions, key)
    {
        // Nothing is left to run: say so instead of printing the plan as if it ran.
        let short = &id[..id.len().min(8)];
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "neocode: the plan run of session {short} already finished ({n} of {n} steps completed); nothing was run. Give a new goal to plan again: neocode run --resume {short} --plan \"...\""
        );
        return Ok(());
    }
    if !plan_run && (args.retry_failed || args.yes || args.width != 1) {
        return Err(Failure::usage(
            "--yes, --width and --retry-failed apply to plan runs (--plan, or --resume of a plan run)",
        ));
    }
    if args.width == 0 {
        return Err(Failure::usage("--width must be at least 1"));
    }
    let agent = Agent::new(sessions, settings);
    install_sigint();
    let view = View {
        json: args.json,
        out_closed: false,
        text_open: false,
        interactive: std::io::stdin().is_terminal() && std::io::stderr().is_terminal(),
        kinds: Default::default(),
    };
    let (done_tx, done) = std::sync::mpsc::channel();
    // The printer answers approvals with the turn's own commands, given when it is built.
    let sink = Sink::new(move |commands: &Commands| Printer {
        view,
        commands: commands.clone(),
        done: Some(done_tx),
    });
    let op = if plan_run {
        Op::Plan(PlanRequest {
            goal: prompt,
            width: args.width,
            retry_failed: args.retry_failed,
            approved: args.yes,
            limits,
            approval: args.approve,
        })
    } else {
        Op::Turn(TurnRequest {
            prompt,
            images: Vec::new(),
            limits,
            approval: args.approve,
            adopt: None,
            results: Vec::new(),
        })
    };
    let handle = match agent.submit(target, op, sink) {
        Ok(OpOutcome::Started(s)) => s.handle,
        Ok(_) => return Err(Failure::runtime("the agent started no turn")),
        Err(e) => return Err(op_failure(e)),
    };
    let finished = wait(&handle, &done);
    let id = handle.session_id.clone();
    // The printer ends its text when the turn's thread drops it.
    handle.join();
    restore_sigint();
    match finished {
        FinishReason::Completed => Ok(()),
        FinishReason::Cancelled if plan_run => Err(Failure {
            code: 130,
            lines: vec![format!(
                "cancelled; finished steps are kept. Resume the plan run with: neocode run --resume {id}"
            )],
        }),
        FinishReason::Cancelled => Err(Failure {
            code: 130,
            lines: vec![format!(
                "cancelled; what arrived is kept. Continue with: neocode run --resume {id} \"...\""
            )],
        }),
        FinishReason::LimitReached(why) => Err(Failure {
            code: 3,
            lines: vec![format!(
                "{}; the session is paused. Raise the limit to go on, e.g. neocode run --resume {id} {} N",
                sanitize::line(&why),
                crate::runtime::agent::ledger::flag_for(&why)
            )],
        }),
        FinishReason::Failed {
            code: FailCode::PlanFailed,
            message,
        } => Err(Failure::runtime(format!(
            "plan run failed: {}; session {id}. Retry the failed steps with: neocode run --resume {id} --retry-failed",
            sanitize::line(&message)
        ))),
        FinishReason::Failed { code, message } => Err(Failure::runtime(format!(
            "{} ({code}); session {id}",
            sanitize::line(&message)
        ))),
    }
}

/// Waits for the turn's finish; the first Ctrl-C cancels it.
fn wait(
    handle: &crate::runtime::agent::TurnHandle,
    done: &std::sync::mpsc::Receiver<FinishReason>,
) -> FinishReason {
    let mut cancel_sent = false;
    loop {
        if INTERRUPTED.load(Ordering::SeqCst) && !cancel_sent {
            cancel_sent = true;
            handle.cancel();
            // A second Ctrl-C ends neocode at once.
            restore_sigint();
        }
        match done.recv_timeout(Duration::from_millis(50)) {
            Ok(reason) => return reason,
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                return FinishReason::Failed {
                    code: FailCode::Internal,
                    message: "the turn ended without saying why".into(),
                };
            }
        }
    }
}

/// The session `key` names and its plan's step count, when every step of its plan completed.
fn finished_plan(sessions: &Sessions, key: &str) -> Option<(String, usize)> {
    let id = sessions.resolve(key).ok()?;
    let s = sessions.load(&id).ok()?;
    let plan = s.header.plan.as_ref().filter(|p| !p.steps.is_empty())?;
    plan.steps
        .iter()
        .all(|st| s.plan_progress.status(&st.id) == crate::session::StepStatus::Completed)
        .then_some((id, plan.steps.len()))
}

/// `run`'s end of the turn port: the turn's own thread prints each event and answers what it
/// asks (on the terminal); the finish reason goes back to the main thread, which waits for it
/// and for Ctrl-C.
struct Printer {
    view: View,
    /// The running turn's commands (the sink is built with them).
    commands: Commands,
    done: Option<std::sync::mpsc::Sender<FinishReason>>,
}

impl TurnSink for Printer {
    fn event(&mut self, ev: TurnEvent) {
        if let Some(cmd) = self.view.show(&ev) {
            let _ = self.commands.send(cmd);
        }
        if let TurnEvent::Finished { reason, .. } = ev
            && let Some(done) = self.done.take()
        {
            let _ = done.send(reason);
        }
    }
}

impl Drop for Printer {
    fn drop(&mut self) {
        self.view.end_text();
    }
}

struct View {
    json: bool,
    out_closed: bool,
    /// Answer text was printed without a final newline yet.
    text_open: bool,
    interactive: bool,
    /// Approval class of each call seen (MCP tools are not in the built-in registry).
    kinds: std::collections::HashMap<String, tools::ToolKind>,
}

fn short(s: &str, n: usize) -> String {
    let line = sanitize::line(s.lines().next().unwrap_or(""));
    let mut t: String = line.chars().take(n).collect();
    if line.chars().count() > n || s.lines().nth(1).is_some() {
        t.push('…');
    }
    t
}

impl View {
    fn write(&mut self, b: &[u8]) {
        if self.out_closed {
            return;
        }
        // Unbuffered on purpose: deltas are shown as they arrive. A closed pipe stops the
        // printing, not the turn (the session is still written).
        let mut o = std::io::stdout().lock();
        if o.write_all(b).and_then(|_| o.flush()).is_err() {
            self.out_closed = true;
        }
    }

    fn end_text(&mut self) {
        if self.text_open && !self.json {
            self.write(b"\n");
        }
        self.text_open = false;
    }

    fn note(&mut self, s: &str) {
        if self.json {
            return;
        }
        self.end_text();
        let mut e = std::io::stderr().lock();
        let _ = writeln!(e, "{s}");
    }

    /// Prints an event; returns the answer to an approval request.
    fn show(&mut self, ev: &TurnEvent) -> Option<TurnCommand> {
        if self.json {
            for v in crate::bridge::protocol::turn_lines(ev) {
                // Model and tool text: C1 and bidi characters escaped, losslessly.
                let mut line = sanitize::json(&v.to_string()).into_owned();
                line.push('\n');
                self.write(line.as_bytes());
            }
        }
        match ev {
            TurnEvent::TextDelta(t) if !self.json => {
                self.write(sanitize::text(t).as_bytes());
                self.text_open = !t.ends_with('\n');
            }
            TurnEvent::ToolCall {
                call,
                kind,
                summary,
            } => {
                self.kinds.insert(call.id.clone(), *kind);
                self.note(&format!("→ {}", short(summary, 100)))
            }
            TurnEvent::ToolResult {
                text,
                is_error,
                permission,
                ..
            } => self.tool_result(text, *is_error, permission.as_ref()),
            TurnEvent::Warning { message, .. }
            | TurnEvent::Compacting { message }
            | TurnEvent::CompactionFailed { message } => {
                self.note(&format!("neocode: warning: {}", sanitize::line(message)))
            }
            TurnEvent::ApprovalNeeded {
                call,
                summary,
                reason,
                rules,
            } => return Some(self.approval(call, summary, reason, rules)),
            TurnEvent::PlanProposed {
                plan,
                layers,
                approved,
            } => {
                if !self.json {
                    self.note(&plan_text(plan, layers));
                }
                if !approved {
                    return Some(self.plan_answer());
                }
            }
            TurnEvent::StepStarted {
                step_id,
                title,
                session_id,
                retry,
            } => {
                if let Some(r) = retry {
                    self.note(&format!("neocode: {}", sanitize::line(r)));
                }
                self.note(&format!(
                    "▶ step {}: {} (conversation {})",
                    sanitize::line(step_id),
                    short(title, 80),
                    &session_id[..session_id.len().min(8)]
                ));
            }
            TurnEvent::Step { event, .. } => {
                // The step's own lines; the json form was written above with its step id.
                let json = std::mem::replace(&mut self.json, false);
                let answer = if json { None } else { self.show(event) };
                self.json = json;
                return answer;
            }
            TurnEvent::StepFinished {
                step_id,
                outcome,
                elapsed_ms,
                ..
            } => {
                let id = sanitize::line(step_id);
                let secs = *elapsed_ms as f64 / 1000.0;
                self.note(&match outcome {
                    Ok(answer) => format!("✔ step {id} done in {secs:.1} s: {}", short(answer, 80)),
                    Err(f) if f.error_type == "skipped" => {
                        format!("⊘ step {id} {}", short(&f.message, 100))
                    }
                    Err(f) => format!(
                        "✗ step {id} failed ({}): {}",
                        sanitize::line(&f.error_type),
                        short(&f.message, 100)
                    ),
                });
            }
            _ => {}
        }
        None
    }

    /// A call's result, and why it ran without asking (or did not run) when a rule or a hook
    /// decided.
    fn tool_result(&mut self, text: &str, is_error: bool, permission: Option<&Permission>) {
        let mark = if is_error {
            "✗"
        } else if text.contains(crate::tui::app::CANCELLED_MARK) {
            // Killed by the cancel: never "✓".
            "⊘"
        } else {
            "✓"
        };
        self.note(&format!("  {mark} {}", short(text, 100)));
        if let Some(p) = permission.filter(|p| p.by == "rule" || p.by == "hook") {
            self.note(&format!("    {}", sanitize::line(&p.describe())));
        }
    }

    /// Asks whether to run the proposed plan.
    fn plan_answer(&mut self) -> TurnCommand {
        self.end_text();
        let mut err = std::io::stderr().lock();
        if !self.interactive {
            let _ = writeln!(
                err,
                "neocode: the plan needs your approval and there is no terminal to ask on; rerun with --yes to run it"
            );
            return TurnCommand::RejectPlan;
        }
        let _ = write!(err, "Run this plan? [y]es / [n]o / [d]rop <step ids>: ");
        let _ = err.flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        let mut words = answer.split_whitespace();
        match words.next().map(str::to_ascii_lowercase).as_deref() {
            Some("y" | "yes") => TurnCommand::ApprovePlan,
            Some("d" | "drop") => TurnCommand::EditPlan {
                drop: words
                    .flat_map(|w| w.split(','))
                    .filter(|w| !w.is_empty())
                    .map(str::to_string)
                    .collect(),
            },
            _ => TurnCommand::RejectPlan,
        }
    }

    fn approval(
        &mut self,
        call: &crate::session::ToolCall,
        summary: &str,
        reason: &str,
        rules: &[String],
    ) -> TurnCommand {
        self.end_text();
        let mut err = std::io::stderr().lock();
        if !self.interactive {
            let kind = self.kinds.get(&call.id).copied().unwrap_or_else(|| {
                tools::spec(&call.name).map_or(tools::ToolKind::Command, |s| s.kind)
            });
            // An `ask` rule or hook asks under every policy: no flag lifts it.
            let fix = if reason.starts_with("the rule `") || reason.starts_with("a PreToolUse hook")
            {
                "answer it on a terminal, or allow it with a rule (neocode rules check)".to_string()
            } else {
                format!(
                    "rerun with --approve {} to allow it",
                    approval::policy_allowing(kind)
                )
            };
            let msg = format!(
                "{} needs approval ({}) and there is no terminal to ask on; {fix}",
                short(summary, 80),
                sanitize::line(reason)
            );
            let _ = writeln!(err, "neocode: denied: {msg}");
            return TurnCommand::Deny {
                call_id: call.id.clone(),
                reason: Some(msg),
            };
        }
        let choices = match rules.len() {
            0 => "[y]es / [n]o (no rule can allow this call, so there is no \"always\")",
            1 => "[y]es / [n]o / [a]lways (proposes a rule)",
            _ => "[y]es / [n]o / [a]lways (proposes a rule for each part)",
        };
        let _ = write!(
            err,
            "Allow {}? ({})\n  {choices}: ",
            short(summary, 100),
            sanitize::line(reason)
        );
        loop {
            let _ = err.flush();
            let mut answer = String::new();
            let _ = std::io::stdin().lock().read_line(&mut answer);
            match answer.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => {
                    return TurnCommand::Approve {
                        call_id: call.id.clone(),
                        always: false,
                    };
                }
                "a" | "always" if rules.is_empty() => {
                    let _ = write!(
                        err,
                        "  No rule can allow this call ({}): [y]es / [n]o: ",
                        sanitize::line(reason)
                    );
                }
                "a" | "always" => {
                    let (rules, scope) = always_rules(&mut err, rules);
                    return TurnCommand::AlwaysAllow {
                        call_id: call.id.clone(),
                        rules,
                        scope,
                    };
                }
                _ => {
                    return TurnCommand::Deny {
                        call_id: call.id.clone(),
                        reason: None,
                    };
                }
            }
        }
    }
}

/// A line typed on the terminal, trimmed.
fn read_answer() -> String {
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    line.trim().to_string()
}

/// Asks which rules an "always" answer keeps (the proposed ones, each of which can be
/// retyped or left out) and where: this session (the default), this workspace or
/// everywhere. One rule is shown with `Rule:` and kept with Enter; several are listed
/// together, numbered, and a number changes that one.
fn always_rules(err: &mut impl Write, proposed: &[String]) -> (Vec<String>, RuleScope) {
    let mut rules: Vec<String> = proposed.to_vec();
    if let [only] = proposed {
        let _ = write!(
            err,
            "  Rule: {}\n  Enter keeps it, or type the rule to keep: ",
            sanitize::line(only)
        );
        let _ = err.flush();
        let typed = read_answer();
        if !typed.is_empty() {
            rules = vec![typed];
        }
    } else {
        loop {
            let _ = writeln!(err, "  Rules, one for each part of the command:");
            for (i, r) in rules.iter().enumerate() {
                let _ = writeln!(err, "    {}. {}", i + 1, sanitize::line(r));
            }
            let _ = write!(
                err,
                "  Enter keeps them all, or type a rule's number to change it: "
            );
            let _ = err.flush();
            let typed = read_answer();
            let Some(n) = typed
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=rules.len()).contains(n))
            else {
                break;
            };
            let _ = write!(
                err,
                "  Rule {n}: {}\n  Enter keeps it, type the rule to keep, or - to leave it out: ",
                sanitize::line(&rules[n - 1])
            );
            let _ = err.flush();
            match read_answer().as_str() {
                "" => {}
                "-" => {
                    rules.remove(n - 1);
                }
                other => rules[n - 1] = other.to_string(),
            }
            if rules.is_empty() {
                break;
            }
        }
    }
    let what = match rules.as_slice() {
        [] => {
            let _ = writeln!(err, "  No rule kept: the call runs once.");
            return (rules, RuleScope::Session);
        }
        [one] => format!("`{}`", sanitize::line(one)),
        many => format!("these {} rules", many.len()),
    };
    let _ = write!(
        err,
        "  Keep {what} for [s]this session / [w]this workspace (.neocode/permissions.toml) / [e]verywhere (config.toml): "
    );
    let _ = err.flush();
    let scope = match read_answer().to_ascii_lowercase().chars().next() {
        Some('w') => RuleScope::Workspace,
        Some('e') => RuleScope::Everywhere,
        _ => RuleScope::Session,
    };
    let _ = writeln!(err, "  Kept for {}.", scope.label());
    (rules, scope)
}

/// A plan as its layers, one step a line.
fn plan_text(plan: &crate::session::Plan, layers: &[Vec<String>]) -> String {
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    let mut out = format!(
        "Plan: {} in {}",
        plural(plan.steps.len(), "step"),
        plural(layers.len(), "layer")
    );
    for (i, layer) in layers.iter().enumerate() {
        for (j, id) in layer.iter().enumerate() {
            let Some(s) = plan.steps.iter().find(|s| &s.id == id) else {
                continue;
            };
            let n = if j == 0 {
                format!("{:>3}.", i + 1)
            } else {
                "    ".to_string()
            };
            let after = if s.depends_on.is_empty() {
                String::new()
            } else {
                format!("  (after {})", sanitize::line(&s.depends_on.join(", ")))
            };
            out.push_str(&format!(
                "\n{n} {}  {}{after}",
                sanitize::line(&s.id),
                short(&s.title, 80)
            ));
        }
    }
    out
}

/// Runs `neocode compact <ID>`.
pub fn compact(loc: &Location, key: &str) -> Result<(), Failure> {
    let settings = Settings::load(&loc.home, &Overrides::default()).map_err(Failure::usage)?;
    let (sessions, id) = super::open_for_id(loc, key)?;
    let agent = Agent::new(sessions, settings);
    let c = agent.compact(&id).map_err(start_failure)?;
    let mut out = Out::stdout();
    out.line(&format!("compacted {id}: {}", c.describe()))?;
    out.finish()
}
