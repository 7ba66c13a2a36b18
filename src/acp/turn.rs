//! `session/prompt`: the prompt is submitted to the agent as an `Op::Turn`; its events are
//! streamed as `session/update`s, approvals become `session/request_permission`, and the
//! finish becomes the stop reason.

use agent_client_protocol::Client;
use agent_client_protocol::v1::schema::{
    ContentBlock, EmbeddedResourceResource, PermissionOption, PermissionOptionKind, PromptRequest,
    PromptResponse, ReadTextFileRequest, RequestPermissionOutcome, RequestPermissionRequest,
    SessionNotification, SessionUpdate, StopReason, ToolCallUpdate, ToolCallUpdateFields,
    Usage as TokenUsage, UsageUpdate,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};

use super::error::AcpError;
use super::hub::{Hub, OpenSession};
use super::terminal::Fed;
use super::updates;
use crate::runtime::agent::{
    FailCode, FinishReason, Op, OpOutcome, Sink, Target, TurnCommand, TurnEvent, TurnRequest,
};
use crate::session::Usage;
use std::sync::PoisonError;

/// The most prompt text one `session/prompt` takes (1 MiB, after its blocks are joined): a
/// larger prompt is a JSON-RPC error, never stored.
pub(crate) const PROMPT_CAP: usize = 1 << 20;

/// The prompt's blocks as one message: text as is, resources as their text under their
/// URI, links as their URI.
pub(crate) fn prompt_text(blocks: &[ContentBlock]) -> String {
    let mut parts = Vec::new();
    for b in blocks {
        match b {
            ContentBlock::Text(t) => parts.push(t.text.clone()),
            ContentBlock::ResourceLink(l) => parts.push(format!("@{}", l.uri)),
            ContentBlock::Resource(r) => match &r.resource {
                EmbeddedResourceResource::TextResourceContents(t) => {
                    parts.push(format!("{}:\n```\n{}\n```", t.uri, t.text));
                }
                _ => parts.push("(a binary resource was attached; it is not read)".into()),
            },
            _ => parts.push("(an attachment of a kind neocode does not read was left out)".into()),
        }
    }
    parts.join("\n\n")
}

/// The stop reason of a finished turn; a failure is the prompt's JSON-RPC error.
fn stop_reason(reason: &FinishReason) -> Result<StopReason, AcpError> {
    match reason {
        FinishReason::Completed => Ok(StopReason::EndTurn),
        FinishReason::Cancelled => Ok(StopReason::Cancelled),
        FinishReason::LimitReached(what) if what.contains("token") => Ok(StopReason::MaxTokens),
        FinishReason::LimitReached(_) => Ok(StopReason::MaxTurnRequests),
        FinishReason::Failed {
            code: FailCode::PromptRefused,
            ..
        } => Ok(StopReason::Refusal),
        FinishReason::Failed { code, message } => Err(AcpError::Turn(format!("{code}: {message}"))),
    }
}

/// The turn's token usage as the prompt response carries it.
fn turn_usage(u: Usage) -> TokenUsage {
    TokenUsage::new(
        u.input_tokens.saturating_add(u.output_tokens),
        u.input_tokens,
        u.output_tokens,
    )
}

/// The session's context after a model reply (`usage_update`): the tokens the reply's
/// request read plus those it wrote (what the next request starts from), of the configured
/// window. neocode keeps no prices, so no cost.
fn context_used(u: Usage, window: u64) -> SessionUpdate {
    SessionUpdate::UsageUpdate(UsageUpdate::new(
        u.input_tokens.saturating_add(u.output_tokens),
        window,
    ))
}

/// A prompt's turn, started: [`stream`] carries it to the client.
pub(crate) struct Running {
    hub: Hub,
    open: OpenSession,
    id: String,
    rx: tokio::sync::mpsc::UnboundedReceiver<Fed>,
}

/// Starts the prompt's turn (fails before anything is stored when the session is unknown,
/// busy, or the prompt empty).
pub(crate) fn start(hub: &Hub, req: &PromptRequest) -> Result<Running, AcpError> {
    let id = req.session_id.to_string();
    let open = hub.session(&id)?;
    if hub.is_running(&id) {
        return Err(AcpError::Busy(id));
    }
    let text = prompt_text(&req.prompt);
    if text.trim().is_empty() {
        return Err(AcpError::EmptyPrompt);
    }
    if text.len() > PROMPT_CAP {
        return Err(AcpError::PromptTooLarge {
            bytes: text.len(),
            cap: PROMPT_CAP,
        });
    }
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    // The editor's terminal feeds the same stream, so a terminal is shown after its call.
    *open.feed.lock().unwrap_or_else(PoisonError::into_inner) = Some(tx.downgrade());
    let sink = Sink::to(move |e: TurnEvent| {
        let _ = tx.send(Fed::Event(e));
    });
    let turn = TurnRequest {
        prompt: Some(text),
        approval: Some(open.approval),
        ..TurnRequest::default()
    };
    // The turn takes the session's lease while it runs; the connection takes it back after.
    hub.release_for_turn(&id);
    let submitted = open
        .agent
        .submit(Target::Resume(id.clone()), Op::Turn(turn), sink);
    let started = match submitted {
        Ok(OpOutcome::Started(s)) => s,
        Ok(_) => {
            hub.retake(&id)?;
            return Err(AcpError::Turn("the agent started no turn".into()));
        }
        Err(e) => {
            hub.retake(&id)?;
            return Err(e.into());
        }
    };
    hub.running(&id, started.handle);
    Ok(Running {
        hub: hub.clone(),
        open,
        id,
        rx,
    })
}

/// Streams the turn's events to the client until it finishes, then answers the prompt.
/// It runs on a task of the connection, so the connection goes on reading (cancel,
/// permission answers) meanwhile.
pub(crate) async fn stream(
    run: Running,
    responder: Responder<PromptResponse>,
    cx: ConnectionTo<Client>,
) -> Result<(), agent_client_protocol::Error> {
    let Running {
        hub,
        open,
        id,
        mut rx,
    } = run;
    let mut finish = None;
    let mut commands = updates::Commands::default();
    let reads = hub.client_reads();
    let window = open.agent.settings().context_window;
    while let Some(fed) = rx.recv().await {
        let event = match fed {
            Fed::Event(event) => event,
            Fed::Terminal {
                call_id,
                terminal_id,
            } => {
                let update = commands.in_terminal(&call_id, &terminal_id);
                let _ = cx.send_notification(SessionNotification::new(id.clone(), update));
                continue;
            }
        };
        // A sub-agent's question is asked like the turn's own (its summary names it).
        let asked = match &event {
            TurnEvent::Subagent { event, .. } => event.as_ref(),
            e => e,
        };
        if let TurnEvent::ApprovalNeeded {
            call,
            summary,
            rules,
            ..
        } = asked
        {
            let cmd = ask(&cx, &id, &call.id, summary, !rules.is_empty()).await;
            let _ = open
                .agent
                .submit(Target::Resume(id.clone()), Op::Command(cmd), Sink::none());
        }
        if let TurnEvent::Finished { reason, usage } = &event {
            finish = Some((reason.clone(), *usage));
        }
        let buffers = buffers(&cx, &id, &event, &open.cwd, reads).await;
        let mut out = updates::from_event(&event, &open.cwd, &mut commands, &buffers);
        if let TurnEvent::AssistantStored { usage, .. } = &event {
            out.push(context_used(*usage, window));
        }
        for update in out {
            // A client that went away is handled when its stdin ends.
            let _ = cx.send_notification(SessionNotification::new(id.clone(), update));
        }
    }
    open.feed
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    // The sink is dropped: the turn's thread has ended (or is about to).
    if let Some(handle) = hub.finished(&id) {
        let _ = tokio::task::spawn_blocking(move || handle.join()).await;
    }
    // Another process may have taken the lease in between: then it runs the session, and this
    // connection's next prompt says so.
    let _ = hub.retake(&id);
    let (reason, usage) = finish.unwrap_or((FinishReason::Cancelled, Usage::default()));
    match stop_reason(&reason) {
        Ok(stop) => responder.respond(PromptResponse::new(stop).usage(turn_usage(usage))),
        Err(e) => responder.respond_with_error(e.rpc()),
    }
}

/// The editor's buffer of the file an edit call in `event` changes, when the client reads
/// files for the agent (`reads`): the diff's old text is then what the edit will change, not
/// the disk. A file the editor cannot read is left to the disk.
async fn buffers(
    cx: &ConnectionTo<Client>,
    session: &str,
    event: &TurnEvent,
    cwd: &std::path::Path,
    reads: bool,
) -> updates::Buffers {
    let mut out = updates::Buffers::default();
    let Some(path) = reads.then(|| updates::edited_path(event, cwd)).flatten() else {
        return out;
    };
    let req = ReadTextFileRequest::new(session.to_string(), path.clone());
    let within = super::editor::ANSWER_WITHIN;
    if let Ok(Ok(r)) = tokio::time::timeout(within, cx.send_request(req).block_task()).await {
        out.insert(path, r.content);
    }
    out
}

/// Asks the client about a call that needs approval; its answer as the turn's command (a
/// cancelled or failed request denies the call; a client that went away cancels the turn).
async fn ask(
    cx: &ConnectionTo<Client>,
    session: &str,
    call_id: &str,
    summary: &str,
    always: bool,
) -> TurnCommand {
    let mut options = vec![PermissionOption::new(
        "allow_once",
        "Allow once",
        PermissionOptionKind::AllowOnce,
    )];
    if always {
        options.push(PermissionOption::new(
            "allow_always",
            "Always allow",
            PermissionOptionKind::AllowAlways,
        ));
    }
    options.push(PermissionOption::new(
        "reject_once",
        "Reject",
        PermissionOptionKind::RejectOnce,
    ));
    let fields = ToolCallUpdateFields::new().title(crate::sanitize::line(summary).into_owned());
    let req = RequestPermissionRequest::new(
        session.to_string(),
        ToolCallUpdate::new(call_id.to_string(), fields),
        options,
    );
    let deny = TurnCommand::Deny {
        call_id: call_id.to_string(),
        reason: None,
    };
    let answer = match cx.send_request(req).block_task().await {
        Ok(answer) => answer,
        // The client went away while asked: the turn is cancelled here, before it could go
        // on to the model with a denial nobody gave.
        Err(e) if super::editor::client_gone(cx, &e) => return TurnCommand::Cancel,
        Err(_) => return deny,
    };
    match answer.outcome {
        RequestPermissionOutcome::Selected(s) => match &*s.option_id.0 {
            "allow_once" => TurnCommand::Approve {
                call_id: call_id.to_string(),
                always: false,
            },
            "allow_always" => TurnCommand::Approve {
                call_id: call_id.to_string(),
                always: true,
            },
            _ => deny,
        },
        _ => deny,
    }
}
