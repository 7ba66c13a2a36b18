//! A dev-only writer process for concurrency and crash tests: opens a workspace through the
//! runtime, appends messages to one session and prints `committed <seq>` (one line per
//! committed message, flushed after each commit). Exits non-zero with the error otherwise.
//!
//! `writer --home H --workdir W --session ID --count N [--batch B]`
//!
//! The session is created if it does not exist yet (another writer may create it first).
// Tests, benchmarks and examples may unwrap: a failure there is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::PathBuf;

use neocode::runtime::{Location, Sessions};
use neocode::session::{AppendMeta, NewMessage, NewSession, Role, StoreError, WorkspacePaths};

struct Args {
    home: Option<PathBuf>,
    workdir: PathBuf,
    session: String,
    count: u64,
    batch: u64,
}

fn parse_args() -> Result<Args, String> {
    let mut home = None;
    let mut workdir = None;
    let mut session = None;
    let mut count = None;
    let mut batch = 1;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--home" => home = Some(PathBuf::from(val()?)),
            "--workdir" => workdir = Some(PathBuf::from(val()?)),
            "--session" => session = Some(val()?),
            "--count" => count = Some(val()?.parse().map_err(|e| format!("--count: {e}"))?),
            "--batch" => batch = val()?.parse().map_err(|e| format!("--batch: {e}"))?,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let batch: u64 = batch;
    if batch == 0 {
        return Err("--batch must be 1 or more".into());
    }
    Ok(Args {
        home,
        workdir: workdir.ok_or("--workdir is required")?,
        session: session.ok_or("--session is required")?,
        count: count.ok_or("--count is required")?,
        batch,
    })
}

fn run() -> Result<(), String> {
    let args = parse_args()?;
    let loc = match &args.home {
        Some(home) => Location {
            home: home.clone(),
            paths: WorkspacePaths::resolve(home, &args.workdir).map_err(|e| e.to_string())?,
        },
        None => Location::resolve(Some(&args.workdir)).map_err(|e| e.to_string())?,
    };
    let rt = Sessions::open(&loc).map_err(|e| e.to_string())?;
    match rt.new_session(NewSession {
        id: Some(args.session.clone()),
        title: format!("writer {}", args.session),
        ..NewSession::default()
    }) {
        Ok(_) | Err(StoreError::AlreadyExists(_)) => {}
        Err(e) => return Err(e.to_string()),
    }
    let meta = AppendMeta {
        provider: Some("writer".into()),
        model: Some("writer-1".into()),
        workdir: None,
        ..AppendMeta::default()
    };
    let pid = std::process::id();
    let stdout = std::io::stdout();
    let mut written = 0;
    while written < args.count {
        let n = args.batch.min(args.count - written);
        let msgs: Vec<NewMessage> = (0..n)
            .map(|i| {
                NewMessage::text(
                    if (written + i) % 2 == 0 {
                        Role::User
                    } else {
                        Role::Assistant
                    },
                    format!("writer {pid} message {}", written + i),
                )
            })
            .collect();
        let seqs = rt
            .append(&args.session, &msgs, &meta)
            .map_err(|e| e.to_string())?;
        let mut out = stdout.lock();
        for s in seqs {
            writeln!(out, "committed {s}").map_err(|e| e.to_string())?;
        }
        out.flush().map_err(|e| e.to_string())?;
        written += n;
    }
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("writer: {e}");
        std::process::exit(1);
    }
}
