//! Why an ACP request failed, worded for the editor (one line), and its JSON-RPC error.

use agent_client_protocol::ErrorCode;

use crate::runtime::agent::OpError;
use crate::runtime::config::ConfigError;
use crate::session::StoreError;

/// A failed ACP request or a server that could not run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AcpError {
    /// The session id is not one this connection opened or loaded.
    #[error("unknown session `{0}`: create it with session/new or open it with session/load")]
    UnknownSession(String),
    /// The working directory is not a workspace neocode can use.
    #[error("cannot use `{dir}` as a workspace: {why}")]
    Workspace {
        /// The client's cwd.
        dir: String,
        /// Why, in words.
        why: String,
    },
    /// No model is configured.
    #[error("{0}")]
    Config(String),
    /// The session already runs a prompt in this connection.
    #[error("session `{0}` is already running a prompt; cancel it first")]
    Busy(String),
    /// Another process holds the session's lease (another editor or `neocode` runs it).
    #[error(
        "session `{id}` is in use by {holder} (another editor or neocode process has it open); close it there first"
    )]
    Leased {
        /// The session.
        id: String,
        /// Who holds the lease (`pid N`).
        holder: String,
    },
    /// The prompt is larger than neocode takes in one message.
    #[error(
        "the prompt is {bytes} bytes; neocode takes at most {cap} bytes (1 MiB) of prompt text: attach large files as resource links instead"
    )]
    PromptTooLarge {
        /// The prompt's size in bytes.
        bytes: usize,
        /// The cap.
        cap: usize,
    },
    /// The turn failed.
    #[error("{0}")]
    Turn(String),
    /// `session/set_mode` named no mode neocode has.
    #[error("unknown mode `{0}`: the modes are ask, auto-edit and never-ask")]
    UnknownMode(String),
    /// `session/set_config_option` named no option neocode has.
    #[error("unknown config option `{0}`: the only one is `model`")]
    UnknownConfig(String),
    /// `session/set_config_option` chose no model the option lists.
    #[error("unknown model choice `{0}`: pick one the `model` option lists")]
    UnknownModel(String),
    /// The prompt carried nothing to say.
    #[error("the prompt is empty")]
    EmptyPrompt,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The agent refused the op.
    #[error(transparent)]
    Op(#[from] OpError),
    /// The settings cannot be read.
    #[error(transparent)]
    Settings(#[from] ConfigError),
    /// The connection failed (stdin or stdout).
    #[error("the ACP connection failed: {0}")]
    Connection(String),
}

impl AcpError {
    /// The JSON-RPC error the editor receives: invalid params for what the request got
    /// wrong, internal error for the rest; the message is one sanitised line.
    pub(crate) fn rpc(&self) -> agent_client_protocol::Error {
        let msg = crate::sanitize::line(&self.to_string()).into_owned();
        let code = match self {
            AcpError::UnknownSession(_)
            | AcpError::Workspace { .. }
            | AcpError::EmptyPrompt
            | AcpError::UnknownMode(_)
            | AcpError::UnknownConfig(_)
            | AcpError::UnknownModel(_)
            | AcpError::PromptTooLarge { .. }
            | AcpError::Leased { .. }
            | AcpError::Busy(_)
            | AcpError::Store(
                StoreError::NotFound { .. }
                | StoreError::Ambiguous { .. }
                | StoreError::InvalidId { .. }
                | StoreError::NoSuchSeq { .. },
            ) => ErrorCode::INVALID_PARAMS,
            _ => ErrorCode::INTERNAL_ERROR,
        };
        agent_client_protocol::Error::new(code, msg)
    }
}
