//! The editor's files, when it offers them (`fs.readTextFile` / `fs.writeTextFile` in its
//! capabilities): `read_file`, `write_file` and `edit_file` read and write through
//! `fs/read_text_file` / `fs/write_text_file`, so the model reads the editor's unsaved
//! buffers and its edits land in them. The tools' path checks and rewind records stay theirs.

use std::path::Path;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{ReadTextFileRequest, WriteTextFileRequest};

use crate::runtime::tools::{FileAccess, FileAccessError};

/// One session's files in the editor. Its calls block the turn's thread (never a task of the
/// connection) until the editor answers.
pub(crate) struct EditorFiles {
    pub(crate) cx: ConnectionTo<Client>,
    pub(crate) rt: tokio::runtime::Handle,
    pub(crate) session: String,
    pub(crate) read: bool,
    pub(crate) write: bool,
    /// Cancels the session's running turn: called when the editor went away during a
    /// request, so the tool's failure never reaches the model.
    pub(crate) on_gone: Box<dyn Fn() + Send + Sync>,
}

impl std::fmt::Debug for EditorFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EditorFiles")
            .field("session", &self.session)
            .field("read", &self.read)
            .field("write", &self.write)
            .finish()
    }
}

/// Whether a request failed because the client is gone (its stdin closed or the connection
/// ended), rather than because it answered with an error.
pub(crate) fn client_gone(cx: &ConnectionTo<Client>, e: &agent_client_protocol::Error) -> bool {
    agent_client_protocol::is_incoming_transport_closed(e)
        || agent_client_protocol::is_connection_terminated(e)
        || cx.is_incoming_closed()
}

/// How long the editor may take to answer one file request (it normally answers at once; a
/// client that went away must not hold the turn forever).
pub(crate) const ANSWER_WITHIN: std::time::Duration = std::time::Duration::from_secs(30);

fn failed(e: &agent_client_protocol::Error) -> FileAccessError {
    FileAccessError(crate::sanitize::line(&format!("the editor said: {e}")).into_owned())
}

impl EditorFiles {
    /// Sends `req` to the editor and waits for its answer, at most [`ANSWER_WITHIN`].
    fn ask<R>(&self, req: R) -> Result<R::Response, FileAccessError>
    where
        R: agent_client_protocol::JsonRpcRequest + Send + 'static,
        R::Response: Send + 'static,
    {
        let cx = self.cx.clone();
        let answer = self.rt.block_on(async move {
            tokio::time::timeout(ANSWER_WITHIN, cx.send_request(req).block_task()).await
        });
        match answer {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) if client_gone(&self.cx, &e) => {
                (self.on_gone)();
                Err(FileAccessError("the editor went away".into()))
            }
            Ok(Err(e)) => Err(failed(&e)),
            Err(_) => Err(FileAccessError(format!(
                "the editor did not answer within {} s",
                ANSWER_WITHIN.as_secs()
            ))),
        }
    }
}

impl FileAccess for EditorFiles {
    fn reads(&self) -> bool {
        self.read
    }

    fn writes(&self) -> bool {
        self.write
    }

    fn read_text(&self, abs: &Path) -> Result<String, FileAccessError> {
        let req = ReadTextFileRequest::new(self.session.clone(), abs.to_path_buf());
        self.ask(req).map(|r| r.content)
    }

    fn write_text(&self, abs: &Path, content: &str) -> Result<(), FileAccessError> {
        let req = WriteTextFileRequest::new(self.session.clone(), abs.to_path_buf(), content);
        self.ask(req).map(|_| ())
    }
}
