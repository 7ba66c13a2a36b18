//! The ACP connection over stdin/stdout: the handshake and the session methods, each a
//! handler that answers from the hub and the agent.

use std::path::PathBuf;

use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, CloseSessionRequest, CloseSessionResponse,
    ForkSessionRequest, ForkSessionResponse, Implementation, InitializeRequest, InitializeResponse,
    ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, LoadSessionResponse,
    McpCapabilities, NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest,
    ResumeSessionRequest, ResumeSessionResponse, SessionCapabilities, SessionCloseCapabilities,
    SessionForkCapabilities, SessionInfo, SessionListCapabilities, SessionMode, SessionModeState,
    SessionNotification, SessionResumeCapabilities, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, on_receive_notification, on_receive_request};

use super::error::AcpError;
use super::hub::Hub;
use super::{turn, updates};
use crate::runtime::config::ApprovalPolicy;
use crate::session::{ListQuery, NewSession, PageKey};

/// Sessions per `session/list` page.
const PAGE: usize = 50;

/// Answers a request with its result or its error (a closed connection ends the server).
fn answer<T: agent_client_protocol::JsonRpcResponse>(
    responder: Responder<T>,
    result: Result<T, AcpError>,
) -> Result<(), agent_client_protocol::Error> {
    match result {
        Ok(v) => responder.respond(v),
        Err(e) => responder.respond_with_error(e.rpc()),
    }
}

fn initialize(req: &InitializeRequest) -> InitializeResponse {
    let caps = AgentCapabilities::new()
        .load_session(true)
        .mcp_capabilities(McpCapabilities::new())
        .prompt_capabilities(PromptCapabilities::new().embedded_context(true))
        .session_capabilities(
            SessionCapabilities::new()
                .list(SessionListCapabilities::new())
                .resume(SessionResumeCapabilities::new())
                .fork(SessionForkCapabilities::new())
                .close(SessionCloseCapabilities::new()),
        );
    InitializeResponse::new(req.protocol_version)
        .agent_capabilities(caps)
        .agent_info(Implementation::new("neocode", env!("CARGO_PKG_VERSION")))
}

/// The session modes: neocode's approval policies, `current` selected.
fn modes(current: ApprovalPolicy) -> SessionModeState {
    let modes = [
        (
            ApprovalPolicy::Ask,
            "Ask",
            "Reads run; edits and commands ask.",
        ),
        (
            ApprovalPolicy::AutoEdit,
            "Auto-edit",
            "Reads and edits run; commands ask.",
        ),
        (
            ApprovalPolicy::NeverAsk,
            "Never ask",
            "Nothing asks (commands still ask when the sandbox is not enforced).",
        ),
    ]
    .into_iter()
    .map(|(p, name, what)| SessionMode::new(p.as_str(), name).description(what.to_string()))
    .collect();
    SessionModeState::new(current.as_str(), modes)
}

/// `session/set_mode`: the session's next prompts run with that approval policy.
fn set_mode(hub: &Hub, req: &SetSessionModeRequest) -> Result<SetSessionModeResponse, AcpError> {
    let mode = req.mode_id.0.to_string();
    let policy = ApprovalPolicy::parse(&mode).ok_or(AcpError::UnknownMode(mode))?;
    hub.set_mode(&req.session_id.to_string(), policy)?;
    Ok(SetSessionModeResponse::new())
}

/// `session/new`: a new neocode session in the cwd's workspace (listed by `neocode --list`).
fn new_session(
    hub: &Hub,
    req: &NewSessionRequest,
    cx: &ConnectionTo<Client>,
) -> Result<NewSessionResponse, AcpError> {
    let open = hub.workspace(&req.cwd)?;
    let header = open.sessions.new_session(NewSession {
        model: open.agent.model_name().unwrap_or_default(),
        workdir: req.cwd.display().to_string(),
        ..NewSession::default()
    })?;
    let current = open.approval;
    let open = hub.with_editor(open, &header.id, &req.mcp_servers, cx);
    hub.open(&header.id, open)?;
    let config = super::model::options(&hub.session(&header.id)?, &header.id);
    Ok(NewSessionResponse::new(header.id)
        .modes(modes(current))
        .config_options(config))
}

/// `session/load`: the stored transcript replayed as updates, then the answer.
fn load_session(
    hub: &Hub,
    req: &LoadSessionRequest,
    cx: &ConnectionTo<Client>,
) -> Result<LoadSessionResponse, AcpError> {
    let open = hub.workspace(&req.cwd)?;
    let id = open.sessions.resolve(&req.session_id.to_string())?;
    let session = open.sessions.load(&id)?;
    let (cwd, current) = (open.cwd.clone(), open.approval);
    // The lease first: a session another process has open is refused before any replay.
    let open = hub.with_editor(open, &id, &req.mcp_servers, cx);
    hub.open(&id, open)?;
    for update in updates::replay(&session.messages, &cwd) {
        cx.send_notification(SessionNotification::new(id.clone(), update))
            .map_err(|e| AcpError::Connection(e.to_string()))?;
    }
    let config = super::model::options(&hub.session(&id)?, &id);
    Ok(LoadSessionResponse::new()
        .modes(modes(current))
        .config_options(config))
}

/// `session/resume`: the stored session opened for prompts, without replaying it.
fn resume_session(
    hub: &Hub,
    req: &ResumeSessionRequest,
    cx: &ConnectionTo<Client>,
) -> Result<ResumeSessionResponse, AcpError> {
    let open = hub.workspace(&req.cwd)?;
    let id = open.sessions.resolve(&req.session_id.to_string())?;
    let current = open.approval;
    let open = hub.with_editor(open, &id, &req.mcp_servers, cx);
    hub.open(&id, open)?;
    let config = super::model::options(&hub.session(&id)?, &id);
    Ok(ResumeSessionResponse::new()
        .modes(modes(current))
        .config_options(config))
}

/// The message a fork ends at, when the request names one: `_meta.neocode.atMessage`, the
/// message's seq (1-based, as `neocode --fork` counts), 0 for an empty fork.
fn fork_point(req: &ForkSessionRequest) -> Option<i64> {
    req.meta
        .as_ref()?
        .get("neocode")?
        .get("atMessage")?
        .as_i64()
}

/// `session/fork`: a new session holding the source's messages (up to the named message, or
/// all), listed by `neocode --list` with the source as its parent, opened for prompts.
fn fork_session(
    hub: &Hub,
    req: &ForkSessionRequest,
    cx: &ConnectionTo<Client>,
) -> Result<ForkSessionResponse, AcpError> {
    let open = hub.workspace(&req.cwd)?;
    let source = open.sessions.resolve(&req.session_id.to_string())?;
    let header = open.sessions.fork(&source, fork_point(req))?;
    let current = open.approval;
    let open = hub.with_editor(open, &header.id, &req.mcp_servers, cx);
    hub.open(&header.id, open)?;
    let config = super::model::options(&hub.session(&header.id)?, &header.id);
    Ok(ForkSessionResponse::new(header.id)
        .modes(modes(current))
        .config_options(config))
}

/// A page cursor: the last row's key, `<updated ms>.<rowid>`.
fn cursor(key: &PageKey) -> String {
    format!("{}.{}", key.updated_at_ms, key.rowid)
}

fn parse_cursor(s: &str) -> Option<PageKey> {
    let (ms, row) = s.split_once('.')?;
    Some(PageKey {
        updated_at_ms: ms.parse().ok()?,
        rowid: row.parse().ok()?,
    })
}

/// `session/list`: the workspace's sessions by last activity, newest first (as `--list`).
fn list_sessions(hub: &Hub, req: &ListSessionsRequest) -> Result<ListSessionsResponse, AcpError> {
    let cwd = match &req.cwd {
        Some(c) => c.clone(),
        None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
    };
    let open = hub.workspace(&cwd)?;
    let page = open.sessions.list(&ListQuery {
        limit: PAGE,
        after: req.cursor.as_deref().and_then(parse_cursor),
        ..ListQuery::default()
    })?;
    let infos = page
        .items
        .iter()
        .map(|s| {
            let title = if s.title.is_empty() {
                &s.first_prompt
            } else {
                &s.title
            };
            let updated = chrono::DateTime::from_timestamp_millis(s.updated_at_ms)
                .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
            let dir = if s.workdir.is_empty() {
                cwd.clone()
            } else {
                PathBuf::from(&s.workdir)
            };
            SessionInfo::new(s.id.clone(), dir)
                .title(crate::sanitize::line(title).into_owned())
                .updated_at(updated)
        })
        .collect();
    Ok(ListSessionsResponse::new(infos).next_cursor(page.next.as_ref().map(cursor)))
}

/// Serves ACP on stdin/stdout until the client closes stdin; turns still running then are
/// cancelled and stored before it returns.
pub(crate) fn serve() -> Result<(), AcpError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| AcpError::Connection(e.to_string()))?;
    let hub = Hub::default();
    let result = runtime.block_on(connection(hub.clone()));
    hub.shut_down();
    result.map_err(|e| AcpError::Connection(e.to_string()))
}

async fn connection(hub: Hub) -> Result<(), agent_client_protocol::Error> {
    let (h_new, h_load, h_list, h_prompt, h_cancel, h_mode) = (
        hub.clone(),
        hub.clone(),
        hub.clone(),
        hub.clone(),
        hub.clone(),
        hub.clone(),
    );
    let (h_resume, h_fork, h_close, h_init, h_config) =
        (hub.clone(), hub.clone(), hub.clone(), hub.clone(), hub);
    Agent
        .v1()
        .name("neocode")
        .on_receive_request(
            async move |req: InitializeRequest, responder, _cx: ConnectionTo<Client>| {
                let caps = &req.client_capabilities;
                let fs = &caps.fs;
                h_init.set_client_caps(fs.read_text_file, fs.write_text_file, caps.terminal);
                responder.respond(initialize(&req))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: NewSessionRequest, responder, cx: ConnectionTo<Client>| {
                answer(responder, new_session(&h_new, &req, &cx))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionRequest, responder, cx: ConnectionTo<Client>| {
                answer(responder, load_session(&h_load, &req, &cx))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ListSessionsRequest, responder, _cx: ConnectionTo<Client>| {
                answer(responder, list_sessions(&h_list, &req))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest, responder: Responder<_>, cx: ConnectionTo<Client>| {
                // The turn's task answers when the turn ends; an error before it starts is
                // answered here.
                match turn::start(&h_prompt, &req) {
                    Ok(run) => cx.spawn(turn::stream(run, responder, cx.clone())),
                    Err(e) => responder.respond_with_error(e.rpc()),
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ResumeSessionRequest, responder, cx: ConnectionTo<Client>| {
                answer(responder, resume_session(&h_resume, &req, &cx))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ForkSessionRequest, responder, cx: ConnectionTo<Client>| {
                answer(responder, fork_session(&h_fork, &req, &cx))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: CloseSessionRequest, responder, _cx: ConnectionTo<Client>| {
                // Closing waits for a running turn to stop: off the connection's threads.
                let hub = h_close.clone();
                let id = req.session_id.to_string();
                let closed = tokio::task::spawn_blocking(move || hub.close(&id))
                    .await
                    .unwrap_or_else(|e| Err(AcpError::Connection(e.to_string())));
                answer(responder, closed.map(|()| CloseSessionResponse::new()))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: SetSessionModeRequest, responder, _cx: ConnectionTo<Client>| {
                answer(responder, set_mode(&h_mode, &req))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: SetSessionConfigOptionRequest,
                        responder,
                        _cx: ConnectionTo<Client>| {
                answer(
                    responder,
                    super::model::set(&h_config, &req).map(SetSessionConfigOptionResponse::new),
                )
            },
            on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: CancelNotification, _cx: ConnectionTo<Client>| {
                h_cancel.cancel(&n.session_id.to_string());
                Ok(())
            },
            on_receive_notification!(),
        )
        .connect_to(super::stdio::transport())
        .await
}
