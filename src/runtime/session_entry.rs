//! The ways into a workspace's [`Sessions`] that rewind guards: opening a store (a rewind a
//! kill interrupted is finished first) and importing a session file (its recorded changes
//! masked and checked as a rewind would write them).

use crate::session::file::{self, SessionFile};
use crate::session::{Result, SessionHeader, Store};

use super::location::Location;
use super::sessions::Sessions;

impl Sessions {
    /// Opens (creating as needed) the workspace's store.
    /// A rewind a kill interrupted is finished first (see [`super::rewind::recover`]).
    pub fn open(loc: &Location) -> Result<Sessions> {
        let sessions = Sessions::with_store(Store::open(loc.paths.clone())?);
        super::rewind::recover(&sessions);
        Ok(sessions)
    }

    /// Opens the store only if it exists (for read-only commands on a fresh workspace).
    pub(crate) fn open_existing(loc: &Location) -> Result<Option<Sessions>> {
        let sessions = Store::open_existing(loc.paths.clone())?.map(Sessions::with_store);
        if let Some(s) = &sessions {
            super::rewind::recover(s);
        }
        Ok(sessions)
    }

    /// Imports a session file; `new_id` gives it a fresh id.
    pub fn import(&self, doc: &SessionFile, new_id: bool) -> Result<SessionHeader> {
        file::import(&self.store, doc, new_id)
    }

    /// The session's file changes and the snapshots they refer to (`export --with-files`).
    pub(crate) fn export_files(&self, id: &str) -> Result<file::FileSnapshots> {
        file::export_files(&self.store, id)
    }

    /// Imports a session file and its snapshots, consuming them. A session file is someone
    /// else's word about this workspace: the file changes it records for a control file
    /// (`.git`, `.neocode`), neocode's home or a path outside the workspace are left out
    /// (returned as `path: why` lines), and every recorded mode is made at most 0755, so a
    /// later rewind can write neither.
    pub(crate) fn import_file(
        &self,
        doc: SessionFile,
        mut files: file::FileSnapshots,
        new_id: bool,
    ) -> Result<(SessionHeader, Vec<String>)> {
        let mut left_out = Vec::new();
        let home = self.home().to_path_buf();
        files.file_changes.retain_mut(|c| {
            if let Some(why) = super::rewind::refusal(self.root(), Some(&home), &c.path) {
                left_out.push(format!("{}: {why}", c.path));
                return false;
            }
            c.before = super::rewind::masked(std::mem::replace(
                &mut c.before,
                crate::session::FileState::Unknown,
            ));
            c.after = super::rewind::masked(std::mem::replace(
                &mut c.after,
                crate::session::FileState::Unknown,
            ));
            true
        });
        let header = file::import_owned(&self.store, doc, files, new_id)?;
        Ok((header, left_out))
    }
}
