//! One session's link to the editor, shared by its files and its terminal: the connection,
//! the runtime their blocking calls wait on, the session's id, and what to do when the editor
//! goes away.

use std::future::Future;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;

/// How long the editor may take to answer one request (it normally answers at once; a client
/// that went away must not hold the turn forever).
pub(crate) const ANSWER_WITHIN: std::time::Duration = std::time::Duration::from_secs(30);

/// Whether a request failed because the client is gone (its stdin closed or the connection
/// ended), rather than because it answered with an error.
pub(crate) fn client_gone(cx: &ConnectionTo<Client>, e: &agent_client_protocol::Error) -> bool {
    agent_client_protocol::is_incoming_transport_closed(e)
        || agent_client_protocol::is_connection_terminated(e)
        || cx.is_incoming_closed()
}

/// Why a request to the editor failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Asked {
    #[error("the editor went away")]
    Gone,
    #[error("{0}")]
    Failed(String),
}

/// The editor side of one session.
pub(crate) struct Editor {
    pub(crate) cx: ConnectionTo<Client>,
    pub(crate) rt: tokio::runtime::Handle,
    pub(crate) session: String,
    /// Cancels the session's running turn: called when the editor went away during a
    /// request, so the tool's failure never reaches the model.
    pub(crate) on_gone: Box<dyn Fn() + Send + Sync>,
}

impl std::fmt::Debug for Editor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Editor")
            .field("session", &self.session)
            .finish()
    }
}

impl Editor {
    /// Why request `e` failed: the editor went away, or it answered with an error.
    pub(crate) fn failure(&self, e: &agent_client_protocol::Error) -> Asked {
        if client_gone(&self.cx, e) {
            Asked::Gone
        } else {
            Asked::Failed(format!("the editor said: {e}"))
        }
    }

    /// Sends `req` and waits for the answer, at most `within`.
    pub(crate) async fn ask<R>(
        &self,
        req: R,
        within: std::time::Duration,
    ) -> Result<R::Response, Asked>
    where
        R: agent_client_protocol::JsonRpcRequest + Send + 'static,
        R::Response: Send + 'static,
    {
        match tokio::time::timeout(within, self.cx.send_request(req).block_task()).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => Err(self.failure(&e)),
            Err(_) => Err(Asked::Failed(format!(
                "the editor did not answer within {} s",
                within.as_secs()
            ))),
        }
    }

    /// Runs `work` on the turn's thread until it ends; when the editor went away, the turn is
    /// cancelled and the failure says so.
    pub(crate) fn block_on<T>(
        &self,
        work: impl Future<Output = Result<T, Asked>>,
    ) -> Result<T, Asked> {
        let r = self.rt.block_on(work);
        if matches!(r, Err(Asked::Gone)) {
            (self.on_gone)();
        }
        r
    }
}
