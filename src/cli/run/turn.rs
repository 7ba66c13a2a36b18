//! Running `neocode run` and `neocode compact`: the turn (or plan) is submitted to the agent,
//! printed as it goes, and its finish becomes the exit code.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use serde_json::Value;

use super::args::{OutputFormat, RunArgs};
use super::headless::{self, Before};
use super::input;
use super::print::{Printer, View};
use super::schema::{OutputSchema, SchemaError};
use super::worktree;
use crate::cli::common::{Failure, open_for_id};
use crate::cli::out::Out;
use crate::runtime::agent::{
    Agent, Commands, FailCode, FinishReason, Lease, LeaseError, Op, OpError, OpOutcome,
    PlanRequest, Sink, StartCode, StartError, Target, TurnRequest, plan_goal,
};
use crate::runtime::config::{Overrides, ProviderStatus, Settings};
use crate::runtime::{Location, Sessions};
use crate::sanitize;
use crate::session::{RuntimeLimits, Usage};

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
    let (sessions, id) = open_for_id(loc, &key)?;
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

/// What stdout carries, from `--json` and `--output-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Text,
    /// `--json`: the turn's event lines, as before `--output-format`.
    Events,
    Json,
    StreamJson,
}

impl Format {
    fn of(args: &RunArgs) -> Format {
        match (args.json, args.output_format) {
            (true, _) => Format::Events,
            (false, None | Some(OutputFormat::Text)) => Format::Text,
            (false, Some(OutputFormat::Json)) => Format::Json,
            (false, Some(OutputFormat::StreamJson)) => Format::StreamJson,
        }
    }

    fn view(self, quiet: bool) -> View {
        match self {
            Format::Text => View::new(false, false, quiet),
            Format::Events | Format::StreamJson => View::new(true, false, true),
            Format::Json => View::new(false, true, quiet),
        }
    }
}

/// Runs `neocode run`.
pub fn run(loc: &Location, args: &RunArgs) -> Result<(), Failure> {
    if let Some(text) = &args.queue {
        return enqueue(loc, args, text);
    }
    let schema = args
        .output_schema
        .as_deref()
        .map(OutputSchema::load)
        .transpose()
        .map_err(|e| Failure::usage(sanitize::line(&e.to_string()).into_owned()))?;
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
    let warn = !args.quiet && Format::of(args) == Format::Text;
    let expanded = super::command::expand(loc, args.prompt.as_deref(), warn)?;
    let arg = expanded.as_deref().or(args.prompt.as_deref());
    let input = input::read(arg, args.prompt_file.as_deref())?;
    let mut prompt = input.text;
    if prompt.is_none() && target == Target::New {
        return Err(Failure::usage(
            "a prompt is needed (or --resume/--continue to answer what is pending); see neocode run --help",
        ));
    }
    if let Some(s) = &schema {
        match prompt.as_mut() {
            Some(p) => p.push_str(&s.instruction()),
            None => return Err(Failure::usage("--output-schema needs a prompt")),
        }
    }
    let (sessions, worktree) = worktree::enter(Sessions::open(loc)?, args.worktree)?;
    let plan_run = is_plan_run(args, &sessions, &target, prompt.as_ref());
    check_plan_flags(args, &sessions, &target, plan_run, prompt.is_none())?;
    let before = match &target {
        Target::Resume(key) => Before::of(&sessions, Some(key)),
        _ => Before::default(),
    };
    let agent = Agent::new(sessions.clone(), settings);
    let format = Format::of(args);
    if format == Format::StreamJson {
        headless::print_line(&headless::run_start());
    }
    if let Some(note) = &input.cut_note {
        if format == Format::StreamJson {
            headless::print_line(&headless::warning("stdin_truncated", note));
        } else if !args.quiet && format != Format::Events {
            let _ = writeln!(std::io::stderr().lock(), "neocode: warning: {note}");
        }
    }
    let mut op = op(args, plan_run, prompt, limits(args));
    if let (Op::Turn(t), Some(s)) = (&mut op, &schema) {
        t.output_schema = Some(s.value().clone());
    }
    install_sigint();
    let first = one_turn(&agent, target, op, format.view(args.quiet));
    let ran = first.and_then(|t| match &schema {
        Some(s) => with_schema(&agent, &sessions, s, t, before, format, args),
        None => Ok((t, None, None)),
    });
    restore_sigint();
    if let Some(wt) = &worktree {
        worktree::report(wt, ran.as_ref().ok().map(|(t, ..)| t.session_id.as_str()));
    }
    let (turn, structured, schema_error) = ran?;
    finish(
        &sessions,
        args,
        format,
        before,
        turn,
        structured,
        schema_error,
        plan_run,
    )
}

/// The checks a plan run's flags need; a finished plan run resumed without a goal ends here
/// (said on stderr).
fn check_plan_flags(
    args: &RunArgs,
    sessions: &Sessions,
    target: &Target,
    plan_run: bool,
    no_prompt: bool,
) -> Result<(), Failure> {
    if plan_run
        && no_prompt
        && let Target::Resume(key) = target
        && let Some((id, n)) = finished_plan(sessions, key)
    {
        // Nothing is left to run: say so instead of printing the plan as if it ran.
        let short = &id[..id.len().min(8)];
        let _ = writeln!(
            std::io::stderr().lock(),
            "neocode: the plan run of session {short} already finished ({n} of {n} steps completed); nothing was run. Give a new goal to plan again: neocode run --resume {short} --plan \"...\""
        );
        return Err(Failure::quiet());
    }
    if !plan_run && (args.retry_failed || args.yes || args.width != 1) {
        return Err(Failure::usage(
            "--yes, --width and --retry-failed apply to plan runs (--plan, or --resume of a plan run)",
        ));
    }
    if args.width == 0 {
        return Err(Failure::usage("--width must be at least 1"));
    }
    Ok(())
}

/// One turn (or plan run) through the agent port, shown by `view`; returns how it finished.
fn one_turn(agent: &Agent, target: Target, op: Op, view: View) -> Result<Turn, Failure> {
    let (done_tx, done) = std::sync::mpsc::channel();
    // The printer answers approvals with the turn's own commands, given when it is built.
    let sink = Sink::new(move |commands: &Commands| Printer::new(view, commands.clone(), done_tx));
    let handle = match agent.submit(target, op, sink) {
        Ok(OpOutcome::Started(s)) => s.handle,
        Ok(_) => return Err(Failure::runtime("the agent started no turn")),
        Err(e) => return Err(op_failure(e)),
    };
    let (reason, usage) = wait(&handle, &done);
    let session_id = handle.session_id.clone();
    // The printer ends its text when the turn's thread drops it.
    handle.join();
    Ok(Turn {
        session_id,
        reason,
        usage,
    })
}

/// How one turn finished.
struct Turn {
    session_id: String,
    reason: FinishReason,
    usage: Usage,
}

/// `--output-schema`: checks the answer of a completed turn; an invalid one is sent back once
/// to be fixed (a second turn in the session). Returns the last turn (usage summed), the
/// valid document, or the error that remained.
fn with_schema(
    agent: &Agent,
    sessions: &Sessions,
    schema: &OutputSchema,
    first: Turn,
    before: Before,
    format: Format,
    args: &RunArgs,
) -> Result<(Turn, Option<Value>, Option<SchemaError>), Failure> {
    if first.reason != FinishReason::Completed {
        return Ok((first, None, None));
    }
    let err = match schema.check(&headless::answer(sessions, &first.session_id, before)) {
        Ok(doc) => return Ok((first, Some(doc), None)),
        Err(e) => e,
    };
    if !args.quiet && matches!(format, Format::Text | Format::Json) {
        let _ = writeln!(
            std::io::stderr().lock(),
            "neocode: warning: {}; asking the model once to fix it",
            sanitize::line(&err.to_string())
        );
    } else if format == Format::StreamJson {
        headless::print_line(&headless::warning("output_schema_retry", &err.to_string()));
    }
    let op = Op::Turn(TurnRequest {
        prompt: Some(schema.fix_prompt(&err)),
        images: Vec::new(),
        limits: RuntimeLimits::default(),
        approval: args.approve,
        adopt: None,
        results: Vec::new(),
        output_schema: Some(schema.value().clone()),
    });
    let target = Target::Resume(first.session_id.clone());
    let second = one_turn(agent, target, op, format.view(args.quiet))?;
    let turn = Turn {
        usage: headless::add(first.usage, second.usage),
        ..second
    };
    if turn.reason != FinishReason::Completed {
        return Ok((turn, None, None));
    }
    Ok(
        match schema.check(&headless::answer(sessions, &turn.session_id, before)) {
            Ok(doc) => (turn, Some(doc), None),
            Err(e) => (turn, None, Some(e)),
        },
    )
}

/// Prints the result (json formats), writes `-o FILE`, and turns the finish into the exit
/// code.
#[allow(clippy::too_many_arguments)]
fn finish(
    sessions: &Sessions,
    args: &RunArgs,
    format: Format,
    before: Before,
    turn: Turn,
    structured: Option<Value>,
    schema_error: Option<SchemaError>,
    plan_run: bool,
) -> Result<(), Failure> {
    let mut res = outcome(turn.reason.clone(), &turn.session_id, plan_run);
    if res.is_ok()
        && let Some(e) = &schema_error
    {
        res = Err(Failure::runtime(
            sanitize::line(&e.to_string()).into_owned(),
        ));
    }
    let answer = headless::answer(sessions, &turn.session_id, before);
    if let Some(path) = &args.output
        && let Err(e) = std::fs::write(path, &answer)
        && res.is_ok()
    {
        res = Err(Failure::runtime(format!(
            "cannot write the answer to {}: {e}",
            path.display()
        )));
    }
    if matches!(format, Format::Json | Format::StreamJson) {
        let end = headless::Ended {
            session_id: &turn.session_id,
            reason: &turn.reason,
            usage: turn.usage,
            exit_code: res.as_ref().err().map_or(0, |f| f.code),
            error: res.as_ref().err().and_then(|f| f.lines.first().cloned()),
            structured,
        };
        headless::print_line(&headless::result(sessions, before, &answer, &end));
    }
    res
}

/// The limits the flags set for this run.
fn limits(args: &RunArgs) -> RuntimeLimits {
    RuntimeLimits {
        max_turns: args.max_turns,
        max_tool_calls: args.max_tool_calls,
        max_input_tokens: args.max_input_tokens,
        max_output_tokens: args.max_output_tokens,
        max_wall_secs: args.max_wall_secs,
        max_cost_usd: args.max_cost,
    }
}

/// Whether this run is a plan run: `--plan`, or a resumed plan run given no new prompt.
fn is_plan_run(
    args: &RunArgs,
    sessions: &Sessions,
    target: &Target,
    prompt: Option<&String>,
) -> bool {
    // Resuming a plan run without a new prompt goes on with the plan (seed 000 §5: the
    // session's plan decides which executor resumes it).
    args.plan
        || match (&target, &prompt) {
            (Target::Resume(key), None) => sessions
                .resolve(key)
                .and_then(|id| sessions.load(&id))
                .is_ok_and(|s| plan_goal(&s).is_some()),
            _ => false,
        }
}

/// What to submit: the plan run or the one turn.
fn op(args: &RunArgs, plan_run: bool, prompt: Option<String>, limits: RuntimeLimits) -> Op {
    if plan_run {
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
            output_schema: None,
        })
    }
}

/// The run's result from how its turn finished: what to say and the exit code.
fn outcome(finished: FinishReason, id: &str, plan_run: bool) -> Result<(), Failure> {
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
        FinishReason::Failed {
            code: FailCode::PlanConflict,
            message,
        } => Err(Failure::runtime(format!(
            "plan run stopped on a conflict: {}; session {id}. After merging or undoing by hand, resume with: neocode run --resume {id}",
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
    done: &std::sync::mpsc::Receiver<(FinishReason, Usage)>,
) -> (FinishReason, Usage) {
    let mut cancel_sent = false;
    loop {
        if INTERRUPTED.load(Ordering::SeqCst) && !cancel_sent {
            cancel_sent = true;
            handle.cancel();
            // A second Ctrl-C ends neocode at once.
            restore_sigint();
        }
        match done.recv_timeout(Duration::from_millis(50)) {
            Ok(finished) => return finished,
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                let reason = FinishReason::Failed {
                    code: FailCode::Internal,
                    message: "the turn ended without saying why".into(),
                };
                return (reason, Usage::default());
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

/// Runs `neocode compact <ID>`.
pub fn compact(loc: &Location, key: &str) -> Result<(), Failure> {
    let settings = Settings::load(&loc.home, &Overrides::default()).map_err(Failure::usage)?;
    let (sessions, id) = open_for_id(loc, key)?;
    let agent = Agent::new(sessions, settings);
    let c = agent.compact(&id).map_err(start_failure)?;
    let mut out = Out::stdout();
    out.line(&format!("compacted {id}: {}", c.describe()))?;
    out.finish()
}
