//! The editor's files, when it offers them (`fs.readTextFile` / `fs.writeTextFile` in its
//! capabilities): `read_file`, `write_file` and `edit_file` read and write through
//! `fs/read_text_file` / `fs/write_text_file`, so the model reads the editor's unsaved
//! buffers and its edits land in them. The tools' path checks and rewind records stay theirs.

use std::path::Path;

use agent_client_protocol::v1::schema::{ReadTextFileRequest, WriteTextFileRequest};

use super::editor::{ANSWER_WITHIN, Editor};
use crate::runtime::tools::{FileAccess, FileAccessError};

/// One session's files in the editor. Its calls block the turn's thread (never a task of the
/// connection) until the editor answers.
#[derive(Debug)]
pub(crate) struct EditorFiles {
    pub(crate) editor: Editor,
    pub(crate) read: bool,
    pub(crate) write: bool,
}

impl EditorFiles {
    /// Sends `req` to the editor and waits for its answer, at most [`ANSWER_WITHIN`].
    fn ask<R>(&self, req: R) -> Result<R::Response, FileAccessError>
    where
        R: agent_client_protocol::JsonRpcRequest + Send + 'static,
        R::Response: Send + 'static,
    {
        self.editor
            .block_on(self.editor.ask(req, ANSWER_WITHIN))
            .map_err(|why| FileAccessError(crate::sanitize::line(&why.to_string()).into_owned()))
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
        let req = ReadTextFileRequest::new(self.editor.session.clone(), abs.to_path_buf());
        self.ask(req).map(|r| r.content)
    }

    fn write_text(&self, abs: &Path, content: &str) -> Result<(), FileAccessError> {
        let req =
            WriteTextFileRequest::new(self.editor.session.clone(), abs.to_path_buf(), content);
        self.ask(req).map(|_| ())
    }
}
