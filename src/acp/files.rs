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

fn failed(e: &agent_client_protocol::Error) -> FileAccessError {
    FileAccessError(crate::sanitize::line(&format!("the editor said: {e}")).into_owned())
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
        let cx = self.cx.clone();
        self.rt
            .block_on(async move { cx.send_request(req).block_task().await })
            .map(|r| r.content)
            .map_err(|e| failed(&e))
    }

    fn write_text(&self, abs: &Path, content: &str) -> Result<(), FileAccessError> {
        let req = WriteTextFileRequest::new(self.session.clone(), abs.to_path_buf(), content);
        let cx = self.cx.clone();
        self.rt
            .block_on(async move { cx.send_request(req).block_task().await })
            .map(|_| ())
            .map_err(|e| failed(&e))
    }
}
