//! Running one hook command and reading what it said.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::spec::{HookCommand, HookEvent, HookOutcome, HookRun, PermissionDecision};

/// Bytes of stdout and of stderr kept per run; the rest is read and dropped.
pub(crate) const OUTPUT_KEEP: usize = 8 * 1024;

/// How long the output pipes may stay open after the hook exits or is killed (a background
/// child still holding them) before the run gives up reading them.
const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// The environment variables a hook never sees (neocode's and the providers' keys).
pub(crate) fn strip_keys(cmd: &mut Command) {
    for k in ["NEOCODE_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"] {
        cmd.env_remove(k);
    }
}

struct Captured {
    kept: Vec<u8>,
    cut: bool,
}

fn reader<R: Read + Send + 'static>(mut r: R) -> mpsc::Receiver<Captured> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut cut = false;
        let mut buf = [0u8; 8192];
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = OUTPUT_KEEP.saturating_sub(kept.len());
                    if n > room {
                        cut = true;
                    }
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
            }
        }
        let _ = tx.send(Captured { kept, cut });
    });
    rx
}

fn kill_group(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        // SAFETY: kill(2) on the hook's own process group (its pid, set by process_group(0)).
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

/// Runs `c` with `stdin` in `root`.
pub(super) fn run_one(c: &HookCommand, root: &Path, stdin: &[u8]) -> HookRun {
    let started = Instant::now();
    let mut run = HookRun {
        event: c.event,
        command: c.command.clone(),
        file: c.file.clone(),
        exit_code: None,
        timed_out: false,
        duration_ms: 0,
        stdout: String::new(),
        stderr: String::new(),
        output_cut: false,
        spawn_error: None,
    };
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(&c.command)
        .current_dir(root)
        .env("NEOCODE_PROJECT_DIR", root)
        .env("CLAUDE_PROJECT_DIR", root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    strip_keys(&mut cmd);
    let mut child = match cmd.spawn() {
        Ok(ch) => ch,
        Err(e) => {
            run.spawn_error = Some(format!("cannot start it: {e}"));
            return run;
        }
    };
    let pid = child.id();
    if let Some(mut input) = child.stdin.take() {
        let data = stdin.to_vec();
        // A hook that never reads its input must not stall the run.
        std::thread::spawn(move || {
            let _ = input.write_all(&data);
        });
    }
    let out_rx = child.stdout.take().map(reader);
    let err_rx = child.stderr.take().map(reader);
    let deadline = started + c.timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if Instant::now() >= deadline => {
                kill_group(pid);
                run.timed_out = true;
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => {
                kill_group(pid);
                let _ = child.wait();
                run.spawn_error = Some(format!("cannot wait for it: {e}"));
                break None;
            }
        }
    };
    run.exit_code = status.and_then(|s| s.code());
    // Read what is left; a background child holding the pipes open past the hook's own
    // exit is killed with the group when the grace runs out.
    let grace_end = Instant::now() + DRAIN_GRACE;
    let take = |rx: Option<mpsc::Receiver<Captured>>| -> Option<Captured> {
        let rx = rx?;
        let wait = grace_end.saturating_duration_since(Instant::now());
        match rx.recv_timeout(wait) {
            Ok(c) => Some(c),
            Err(_) => {
                kill_group(pid);
                rx.recv_timeout(DRAIN_GRACE).ok()
            }
        }
    };
    if let Some(o) = take(out_rx) {
        run.output_cut |= o.cut;
        run.stdout = String::from_utf8_lossy(&o.kept).into_owned();
    }
    if let Some(e) = take(err_rx) {
        run.output_cut |= e.cut;
        run.stderr = String::from_utf8_lossy(&e.kept).into_owned();
    }
    run.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    run
}

fn first_line(s: &str) -> &str {
    s.trim().lines().next().unwrap_or("")
}

/// Folds one run into the event's outcome.
pub(super) fn interpret(event: HookEvent, r: &HookRun, o: &mut HookOutcome) {
    let who = format!("{} hook `{}`", event.name(), r.command);
    if let Some(e) = &r.spawn_error {
        o.errors.push(format!("{who}: {e}"));
        return;
    }
    if r.timed_out {
        o.errors.push(format!(
            "{who} was killed after {:.1}s (its timeout)",
            r.duration_ms as f64 / 1000.0
        ));
        return;
    }
    match r.exit_code {
        Some(0) => {}
        Some(2) if event.can_block() => {
            let reason = r.stderr.trim();
            let reason = if reason.is_empty() {
                format!("blocked by {who}")
            } else {
                reason.to_string()
            };
            block(o, reason);
            if event == HookEvent::PreToolUse {
                raise(o, PermissionDecision::Deny, o.block.clone());
            }
            return;
        }
        Some(code) => {
            let detail = first_line(&r.stderr);
            o.errors.push(if detail.is_empty() {
                format!("{who} exited with {code}")
            } else {
                format!("{who} exited with {code}: {detail}")
            });
            return;
        }
        None => {
            o.errors.push(format!("{who} was ended by a signal"));
            return;
        }
    }
    // Exit 0: JSON on stdout may decide; plain text is context for the prompt events.
    let out = r.stdout.trim();
    let json = if out.starts_with('{') {
        serde_json::from_str::<Value>(out).ok()
    } else {
        None
    };
    let Some(v) = json else {
        if matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart) && !out.is_empty()
        {
            o.additional_context.push(out.to_string());
        }
        return;
    };
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    if v.get("continue").and_then(Value::as_bool) == Some(false) {
        o.stop
            .get_or_insert(s(&v, "stopReason").unwrap_or_else(|| format!("stopped by {who}")));
    }
    if let Some(m) = s(&v, "systemMessage") {
        o.messages.push(m);
    }
    let reason = s(&v, "reason");
    match s(&v, "decision").as_deref() {
        Some("block") if event.can_block() => {
            block(
                o,
                reason
                    .clone()
                    .unwrap_or_else(|| format!("blocked by {who}")),
            );
            if event == HookEvent::PreToolUse {
                raise(o, PermissionDecision::Deny, reason);
            }
        }
        // Claude Code's older PreToolUse form.
        Some("approve") if event == HookEvent::PreToolUse => {
            raise(o, PermissionDecision::Allow, reason);
        }
        _ => {}
    }
    if let Some(h) = v.get("hookSpecificOutput") {
        if event == HookEvent::PreToolUse {
            let why = s(h, "permissionDecisionReason");
            match s(h, "permissionDecision").as_deref() {
                Some("allow") => raise(o, PermissionDecision::Allow, why),
                Some("ask") => raise(o, PermissionDecision::Ask, why),
                Some("deny") => {
                    block(o, why.clone().unwrap_or_else(|| format!("denied by {who}")));
                    raise(o, PermissionDecision::Deny, why);
                }
                Some(other) => o.errors.push(format!(
                    "{who}: unknown permissionDecision `{other}` (allow, deny, ask)"
                )),
                None => {}
            }
        }
        if let Some(ctx) = s(h, "additionalContext") {
            o.additional_context.push(ctx);
        }
    }
}

fn block(o: &mut HookOutcome, reason: String) {
    o.block.get_or_insert(reason);
}

/// Keeps the strongest permission decision (deny > ask > allow).
fn raise(o: &mut HookOutcome, d: PermissionDecision, reason: Option<String>) {
    if o.permission.as_ref().is_none_or(|(cur, _)| d < *cur) {
        o.permission = Some((d, reason));
    }
}
