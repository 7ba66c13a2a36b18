//! The editor's terminal, when it offers one (`terminal: true` in its capabilities):
//! `run_command` hands it the sandboxed argv it would exec itself, and it runs there through
//! `terminal/create`, `terminal/wait_for_exit`, `terminal/output` and `terminal/release`
//! (`terminal/kill` first on a cancel or the time limit). The call's `tool_call_update`
//! carries the terminal, so the editor shows it live.

use std::sync::{Arc, Mutex, PoisonError};

use agent_client_protocol::v1::schema::{
    CreateTerminalRequest, KillTerminalRequest, ReleaseTerminalRequest, TerminalExitStatus,
    TerminalId, TerminalOutputRequest, WaitForTerminalExitRequest,
};
use tokio::sync::mpsc::WeakUnboundedSender;

use super::editor::{ANSWER_WITHIN, Asked, Editor};
use crate::runtime::agent::TurnEvent;
use crate::runtime::tools::{CommandTerminal, TerminalCommand, TerminalError, TerminalExit};

/// What the prompt's stream carries to the editor, in the order it happened: the turn's
/// events, and the terminals its commands run in.
pub(crate) enum Fed {
    Event(TurnEvent),
    /// Call `call_id` runs in the editor's terminal `terminal_id`.
    Terminal {
        call_id: String,
        terminal_id: String,
    },
}

/// The running prompt's stream of a session, while one runs (weak: the stream ends when the
/// turn's own sender is dropped).
pub(crate) type Feed = Arc<Mutex<Option<WeakUnboundedSender<Fed>>>>;

/// How often a wait looks at the cancel flag.
const TICK: std::time::Duration = std::time::Duration::from_millis(50);

/// One session's commands in the editor's terminal. Its calls block the turn's thread.
#[derive(Debug)]
pub(crate) struct EditorTerminal {
    pub(crate) editor: Editor,
    pub(crate) feed: Feed,
}

/// How the wait for the command ended.
enum Waited {
    Exited(TerminalExitStatus),
    TimedOut,
    Cancelled,
}

impl EditorTerminal {
    /// Tells the prompt's stream that the call runs in terminal `id`.
    fn show(&self, call_id: &str, id: &TerminalId) {
        let feed = self.feed.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(tx) = feed.as_ref().and_then(WeakUnboundedSender::upgrade) {
            let _ = tx.send(Fed::Terminal {
                call_id: call_id.to_string(),
                terminal_id: id.to_string(),
            });
        }
    }

    /// Waits for the command's end, its time limit or a cancel, whichever comes first.
    async fn wait(&self, id: &TerminalId, cmd: &TerminalCommand) -> Result<Waited, Asked> {
        let req = WaitForTerminalExitRequest::new(self.editor.session.clone(), id.clone());
        let waiting = self.editor.cx.send_request(req).block_task();
        tokio::pin!(waiting);
        let deadline = tokio::time::sleep(cmd.timeout);
        tokio::pin!(deadline);
        let mut tick = tokio::time::interval(TICK);
        loop {
            tokio::select! {
                answer = &mut waiting => return match answer {
                    Ok(r) => Ok(Waited::Exited(r.exit_status)),
                    Err(e) => Err(self.editor.failure(&e)),
                },
                () = &mut deadline => return Ok(Waited::TimedOut),
                _ = tick.tick() => {
                    if cmd.cancel.is_cancelled() {
                        return Ok(Waited::Cancelled);
                    }
                }
            }
        }
    }

    async fn drive(&self, cmd: &TerminalCommand) -> Result<TerminalExit, Asked> {
        let (editor, within) = (&self.editor, ANSWER_WITHIN);
        let create = CreateTerminalRequest::new(editor.session.clone(), cmd.program.clone())
            .args(cmd.args.clone())
            .cwd(cmd.cwd.clone())
            .output_byte_limit(cmd.output_limit);
        let id = editor.ask(create, within).await?.terminal_id;
        self.show(&cmd.call_id, &id);
        let waited = self.wait(&id, cmd).await;
        let (session, tid) = (editor.session.clone(), id.clone());
        if matches!(waited, Ok(Waited::TimedOut | Waited::Cancelled)) {
            // A kill that fails leaves the release to end it.
            let kill = KillTerminalRequest::new(session.clone(), tid.clone());
            let _ = editor.ask(kill, within).await;
        }
        let output = match &waited {
            Err(Asked::Gone) => Err(Asked::Gone),
            _ => {
                let req = TerminalOutputRequest::new(session.clone(), tid.clone());
                editor.ask(req, within).await
            }
        };
        if !matches!(waited, Err(Asked::Gone)) {
            let release = ReleaseTerminalRequest::new(session, tid);
            let _ = editor.ask(release, within).await;
        }
        let waited = waited?;
        let output = output?;
        let status = match &waited {
            Waited::Exited(s) => Some(s.clone()),
            Waited::TimedOut | Waited::Cancelled => output.exit_status.clone(),
        };
        let exit_code = status
            .as_ref()
            .and_then(|s| s.exit_code)
            .and_then(|c| i32::try_from(c).ok());
        let signal = status
            .as_ref()
            .and_then(|s| s.signal.as_deref())
            .and_then(crate::runtime::tools::signal_number);
        Ok(TerminalExit {
            output: output.output,
            truncated: output.truncated,
            exit_code,
            signal,
            timed_out: matches!(waited, Waited::TimedOut),
            cancelled: matches!(waited, Waited::Cancelled),
        })
    }
}

impl CommandTerminal for EditorTerminal {
    fn run(&self, command: &TerminalCommand) -> Result<TerminalExit, TerminalError> {
        self.editor
            .block_on(self.drive(command))
            .map_err(|why| TerminalError(why.to_string()))
    }
}
