//! What one ACP connection holds: the agent of each workspace it opened, the sessions it
//! created or loaded, and the turns running in them (for `session/cancel` and a client that
//! goes away).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use super::error::AcpError;
use super::terminal::Feed;
use crate::runtime::agent::{Agent, Op, Sink, Target, TurnCommand, TurnHandle};
use crate::runtime::config::{ApprovalPolicy, Overrides, ProviderStatus, Settings};
use crate::runtime::lease::{Lease, LeaseError};
use crate::runtime::{Location, Sessions};

/// A session this connection opened: the agent of its workspace.
#[derive(Clone)]
pub(crate) struct OpenSession {
    pub(crate) agent: Agent,
    pub(crate) sessions: Sessions,
    pub(crate) cwd: PathBuf,
    /// The approval policy `session/set_mode` chose (default: the settings').
    pub(crate) approval: ApprovalPolicy,
    /// Where the editor's terminal tells the running prompt's stream which terminal a
    /// command runs in.
    pub(crate) feed: Feed,
}

#[derive(Default)]
struct State {
    /// Agents (and their sessions) by workspace root.
    agents: HashMap<PathBuf, (Agent, Sessions)>,
    sessions: HashMap<String, OpenSession>,
    /// Running turns by session id.
    running: HashMap<String, TurnHandle>,
    /// The leases of the open sessions no turn runs in: while an editor has a session open,
    /// no other process runs it (a turn takes the lease over while it runs).
    leases: HashMap<String, Lease>,
    /// The client reads / writes files for the agent (`fs` of its capabilities).
    fs: (bool, bool),
    /// The client runs commands in its terminal for the agent (`terminal`).
    terminal: bool,
}

/// Takes session `id`'s lease for this connection; busy names the process holding it.
fn take_lease(sessions: &Sessions, id: &str) -> Result<Lease, AcpError> {
    Lease::acquire(sessions.data_dir(), id).map_err(|e| match e {
        LeaseError::Busy { pid } => AcpError::Leased {
            id: id.to_string(),
            holder: pid.map_or_else(|| "another process".to_string(), |p| format!("pid {p}")),
        },
        LeaseError::Io(m) => AcpError::Connection(m),
    })
}

/// The connection's sessions and turns, shared by its handlers.
#[derive(Clone, Default)]
pub(crate) struct Hub {
    state: Arc<Mutex<State>>,
}

impl Hub {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The agent and sessions of `cwd`'s workspace (opened once per connection); fails when
    /// no model is configured.
    pub(crate) fn workspace(&self, cwd: &Path) -> Result<OpenSession, AcpError> {
        let loc = Location::resolve(Some(cwd)).map_err(|e| AcpError::Workspace {
            dir: cwd.display().to_string(),
            why: e.to_string(),
        })?;
        let cwd = cwd.to_path_buf();
        if let Some((agent, sessions)) = self.lock().agents.get(&loc.paths.root) {
            return Ok(OpenSession {
                approval: agent.settings().approval,
                agent: agent.clone(),
                sessions: sessions.clone(),
                cwd,
                feed: Feed::default(),
            });
        }
        let settings = Settings::load(&loc.home, &Overrides::default())?;
        if let ProviderStatus::Missing(m) = settings.provider_status() {
            return Err(AcpError::Config(m));
        }
        let sessions = Sessions::open(&loc)?;
        let agent = Agent::new(sessions.clone(), settings);
        self.lock()
            .agents
            .insert(loc.paths.root, (agent.clone(), sessions.clone()));
        Ok(OpenSession {
            approval: agent.settings().approval,
            agent,
            sessions,
            cwd,
            feed: Feed::default(),
        })
    }

    /// `initialize`: the client's file capabilities (read, write) and whether it runs
    /// commands in its terminal, for the sessions it opens.
    pub(crate) fn set_client_caps(&self, read: bool, write: bool, terminal: bool) {
        let mut state = self.lock();
        state.fs = (read, write);
        state.terminal = terminal;
    }

    /// Whether the client reads files for the agent (`fs.readTextFile`).
    pub(crate) fn client_reads(&self) -> bool {
        self.lock().fs.0
    }

    /// `open` for session `id` with what the editor brings: its MCP `servers` start beside
    /// the configured ones, its files are read and written through it, and commands run in
    /// its terminal, when it offers them (seam: `Agent::with_front_end`).
    pub(crate) fn with_editor(
        &self,
        mut open: OpenSession,
        id: &str,
        servers: &[agent_client_protocol::v1::schema::McpServer],
        cx: &agent_client_protocol::v1::ConnectionTo<agent_client_protocol::Client>,
    ) -> OpenSession {
        let ((read, write), terminal) = {
            let state = self.lock();
            (state.fs, state.terminal)
        };
        if servers.is_empty() && !read && !write && !terminal {
            return open;
        }
        let editor = || {
            let (agent, session) = (open.agent.clone(), id.to_string());
            super::editor::Editor {
                cx: cx.clone(),
                rt: tokio::runtime::Handle::current(),
                session: id.to_string(),
                on_gone: Box::new(move || {
                    let op = Op::Command(TurnCommand::Cancel);
                    let _ = agent.submit(Target::Resume(session.clone()), op, Sink::none());
                }),
            }
        };
        let files = (read || write).then(|| {
            Arc::new(super::files::EditorFiles {
                editor: editor(),
                read,
                write,
            }) as Arc<dyn crate::runtime::tools::FileAccess>
        });
        let shell = terminal.then(|| {
            Arc::new(super::terminal::EditorTerminal {
                editor: editor(),
                feed: open.feed.clone(),
            }) as Arc<dyn crate::runtime::tools::CommandTerminal>
        });
        open.agent = open
            .agent
            .with_front_end(super::mcp::configs(servers), files, shell);
        open
    }

    /// Remembers a session this connection created, loaded, resumed or forked, and takes its
    /// lease (kept until `session/close` or the end of the connection); fails, naming the
    /// holder, when another process has it.
    pub(crate) fn open(&self, id: &str, session: OpenSession) -> Result<(), AcpError> {
        let mut state = self.lock();
        if !state.leases.contains_key(id) && !state.running.contains_key(id) {
            let lease = take_lease(&session.sessions, id)?;
            state.leases.insert(id.to_string(), lease);
        }
        state.sessions.insert(id.to_string(), session);
        Ok(())
    }

    /// Hands the session's lease to the turn about to start (it takes it itself).
    pub(crate) fn release_for_turn(&self, id: &str) {
        drop(self.lock().leases.remove(id));
    }

    /// Takes the session's lease back after its turn (or a turn that did not start), while
    /// the session is still open here.
    pub(crate) fn retake(&self, id: &str) -> Result<(), AcpError> {
        let mut state = self.lock();
        let Some(open) = state.sessions.get(id) else {
            return Ok(());
        };
        if state.leases.contains_key(id) || state.running.contains_key(id) {
            return Ok(());
        }
        let lease = take_lease(&open.sessions, id)?;
        state.leases.insert(id.to_string(), lease);
        Ok(())
    }

    /// `session/close`: the session's running turn (if any) is cancelled and waited for, then
    /// the session is forgotten and its lease released, so another process can run it.
    pub(crate) fn close(&self, id: &str) -> Result<(), AcpError> {
        self.session(id)?;
        let handle = {
            let mut state = self.lock();
            state.sessions.remove(id);
            drop(state.leases.remove(id));
            state.running.remove(id)
        };
        if let Some(handle) = handle {
            handle.cancel();
            handle.join();
        }
        Ok(())
    }

    /// A session this connection opened.
    pub(crate) fn session(&self, id: &str) -> Result<OpenSession, AcpError> {
        self.lock()
            .sessions
            .get(id)
            .cloned()
            .ok_or_else(|| AcpError::UnknownSession(id.to_string()))
    }

    /// `session/set_mode`: the session's prompts from now on run with `approval`.
    pub(crate) fn set_mode(&self, id: &str, approval: ApprovalPolicy) -> Result<(), AcpError> {
        let mut state = self.lock();
        let open = state
            .sessions
            .get_mut(id)
            .ok_or_else(|| AcpError::UnknownSession(id.to_string()))?;
        open.approval = approval;
        Ok(())
    }

    /// Whether a turn of this connection runs in the session.
    pub(crate) fn is_running(&self, id: &str) -> bool {
        self.lock().running.contains_key(id)
    }

    /// Keeps a started turn until [`Hub::finished`].
    pub(crate) fn running(&self, id: &str, handle: TurnHandle) {
        self.lock().running.insert(id.to_string(), handle);
    }

    /// The turn of the session ended: its thread is joined off the caller's task.
    pub(crate) fn finished(&self, id: &str) -> Option<TurnHandle> {
        self.lock().running.remove(id)
    }

    /// `session/cancel`: the session's running turn (if any) stops; what arrived is kept.
    pub(crate) fn cancel(&self, id: &str) {
        let Ok(open) = self.session(id) else { return };
        if self.is_running(id) {
            let op = Op::Command(TurnCommand::Cancel);
            let _ = open
                .agent
                .submit(Target::Resume(id.to_string()), op, Sink::none());
        }
    }

    /// The client went away: every running turn is cancelled and waited for, so each is
    /// stored as cancelled before the process exits.
    pub(crate) fn shut_down(&self) {
        let running: Vec<TurnHandle> = {
            let mut state = self.lock();
            state.sessions.clear();
            state.running.drain().map(|(_, h)| h).collect()
        };
        for handle in running {
            handle.cancel();
            handle.join();
        }
    }
}
