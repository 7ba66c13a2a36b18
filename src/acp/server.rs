//! The ACP connection over stdin/stdout: the handshake and the session methods, each a
//! handler that answers from the hub and the agent.

use std::path::PathBuf;

use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, CloseSessionRequest, CloseSessionResponse,
    ForkSessionRequest, ForkSessionResponse, Implementation, InitializeRequest, InitializeResponse,
    ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, LoadSessionResponse,
    McpCapabilities, McpServer, NewSessionRequest, NewSessionResponse, PromptCapabilities,
    PromptRequest, ResumeSessionRequest, ResumeSessionResponse, SessionCapabilities,
    SessionCloseCapabilities, SessionConfigOption, SessionForkCapabilities, SessionInfo,
    SessionListCapabilities, SessionMode, SessionModeState, SessionNotification,
    SessionResumeCapabilities, SetSessionConfigOptionRequest, SetSessionConfigOptionResponse,
    SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, on_receive_notification, on_receive_request};

use super::error::AcpError;
use super::hub::{Hub, OpenSession};
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
        .mcp_capabilities(McpCapabilities::new().http(true))
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

/// Opens the session for prompts (the editor's tools and the lease taken): its modes and
/// config options, for the answer.
fn open_for_prompts(
    hub: &Hub,
    open: OpenSession,
    id: &str,
    servers: &[McpServer],
    cx: &ConnectionTo<Client>,
) -> Result<(SessionModeState, Vec<SessionConfigOption>), AcpError> {
    let current = open.approval;
    let open = hub.with_editor(open, id, servers, cx);
    hub.open(id, open)?;
    let config = super::model::options(&hub.session(id)?, id);
    Ok((modes(current), config))
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
    let (modes, config) = open_for_prompts(hub, open, &header.id, &req.mcp_servers, cx)?;
    Ok(NewSessionResponse::new(header.id)
        .modes(modes)
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
    let cwd = open.cwd.clone();
    // The lease first: a session another process has open is refused before any replay.
    let (modes, config) = open_for_prompts(hub, open, &id, &req.mcp_servers, cx)?;
    for update in updates::replay(&session.messages, &cwd) {
        cx.send_notification(SessionNotification::new(id.clone(), update))
            .map_err(|e| AcpError::Connection(e.to_string()))?;
    }
    Ok(LoadSessionResponse::new()
        .modes(modes)
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
    let (modes, config) = open_for_prompts(hub, open, &id, &req.mcp_servers, cx)?;
    Ok(ResumeSessionResponse::new()
        .modes(modes)
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
    let (modes, config) = open_for_prompts(hub, open, &header.id, &req.mcp_servers, cx)?;
    Ok(ForkSessionResponse::new(header.id)
        .modes(modes)
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

/// Registers on `$builder` one handler a request type, each answering with its `$call` run on
/// its own clone of the hub (named `$hub` in the call).
macro_rules! answering {
    ($builder:expr, $hub:ident; $(|$req:ident: $ty:ty, $cx:pat_param| $call:expr),+ $(,)?) => {
        $builder$(.on_receive_request(
            {
                let $hub = $hub.clone();
                async move |$req: $ty, responder, $cx: ConnectionTo<Client>| {
                    answer(responder, $call)
                }
            },
            on_receive_request!(),
        ))+
    };
}

async fn connection(hub: Hub) -> Result<(), agent_client_protocol::Error> {
    let agent = Agent.v1().name("neocode");
    let agent = answering!(agent, hub;
        |req: InitializeRequest, _cx| {
            let caps = &req.client_capabilities;
            let fs = &caps.fs;
            hub.set_client_caps(fs.read_text_file, fs.write_text_file, caps.terminal);
            Ok(initialize(&req))
        },
        |req: NewSessionRequest, cx| new_session(&hub, &req, &cx),
        |req: LoadSessionRequest, cx| load_session(&hub, &req, &cx),
        |req: ListSessionsRequest, _cx| list_sessions(&hub, &req),
    );
    let h_prompt = hub.clone();
    let agent = agent.on_receive_request(
        async move |req: PromptRequest, responder: Responder<_>, cx: ConnectionTo<Client>| {
            // The turn's task answers when the turn ends; an error before it starts is
            // answered here.
            match turn::start(&h_prompt, &req) {
                Ok(run) => cx.spawn(turn::stream(run, responder, cx.clone())),
                Err(e) => responder.respond_with_error(e.rpc()),
            }
        },
        on_receive_request!(),
    );
    let agent = answering!(agent, hub;
        |req: ResumeSessionRequest, cx| resume_session(&hub, &req, &cx),
        |req: ForkSessionRequest, cx| fork_session(&hub, &req, &cx),
        |req: CloseSessionRequest, _cx| {
            // Closing waits for a running turn to stop: off the connection's threads.
            let hub = hub.clone();
            let id = req.session_id.to_string();
            tokio::task::spawn_blocking(move || hub.close(&id))
                .await
                .unwrap_or_else(|e| Err(AcpError::Connection(e.to_string())))
                .map(|()| CloseSessionResponse::new())
        },
        |req: SetSessionModeRequest, _cx| set_mode(&hub, &req),
        |req: SetSessionConfigOptionRequest, _cx| {
            super::model::set(&hub, &req).map(SetSessionConfigOptionResponse::new)
        },
    );
    agent
        .on_receive_notification(
            async move |n: CancelNotification, _cx: ConnectionTo<Client>| {
                hub.cancel(&n.session_id.to_string());
                Ok(())
            },
            on_receive_notification!(),
        )
        .connect_to(super::stdio::transport())
        .await
}
