//! The workspace session store: one SQLite database per workspace, behind intent-named methods.
//!
//! One `Store` type; its methods live by domain, one file each (as codex's `state` crate):
//! `core` opens the database and lends connections, `sessions` creates, lists and resolves
//! headers, `messages` appends, loads and replaces transcripts, `fork` copies a session,
//! `assets` keeps files beside the database, `files` the before-images of the workspace
//! files sessions changed and the rewind journal, `search` queries the full-text index,
//! `steps` records plan progress, `queue` keeps messages typed while a turn runs, and
//! `import` writes whole sessions from a file.

mod assets;
mod core;
mod files;
mod fork;
mod import;
pub(crate) mod imported;
mod messages;
mod queue;
mod rows;
mod search;
mod sessions;
mod steps;
mod turn;

pub use core::{Clock, Store, now_ms, validate_id};
pub(crate) use import::{BulkImport, BulkOutcome, Prepared};
pub use queue::QueuedMessage;
pub use sessions::{NewSession, SessionOverview, conversation_key};
pub use steps::StepConversation;

#[cfg(test)]
mod tests {
    use crate::session::{AppendMeta, NewMessage, NewSession, Role, Store, WorkspacePaths};

    fn paths(tmp: &tempfile::TempDir) -> WorkspacePaths {
        WorkspacePaths {
            root: tmp.path().join("ws"),
            dir: tmp.path().join("data"),
        }
    }

    #[test]
    fn reads_inside_read_consistent_see_one_state_while_another_handle_writes() {
        let tmp = tempfile::tempdir().unwrap();
        let reader = Store::open(paths(&tmp)).unwrap();
        // Another handle (its own connections), as another process would be.
        let writer = Store::open(paths(&tmp)).unwrap();
        let id = reader.create_session(NewSession::default()).unwrap().id;
        let say = |text: &str| {
            writer
                .append_messages(
                    &id,
                    &[NewMessage::text(Role::User, text)],
                    &AppendMeta::default(),
                )
                .unwrap();
        };
        say("first");
        let (before, during, overview) = reader
            .read_consistent(|| {
                let before = reader.summary(&id)?.message_count;
                say("second, written between two reads");
                let during = reader.load_messages(&id, 1, i64::MAX)?.len();
                // A read that opens a transaction of its own joins this one.
                let overview = reader.load_overview(&id, 10)?.tail.len();
                Ok((before, during, overview))
            })
            .unwrap();
        assert_eq!((before, during, overview), (1, 1, 1));
        assert_eq!(
            reader.summary(&id).unwrap().message_count,
            2,
            "seen after it"
        );
        assert_eq!(reader.load_messages(&id, 1, i64::MAX).unwrap().len(), 2);
    }
}
